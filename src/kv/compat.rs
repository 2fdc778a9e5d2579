//! A phase's summary in the formats scripts already parse: YCSB 0.17's
//! `[OP], Metric, value` lines (TextMeasurementsExporter over its HDR
//! histograms) and db_bench's `Stats::Report` line (RocksDB's
//! tools/db_bench_tool.cc), so they read iolab's output unchanged.

use super::dbbench::Bench;
use super::phase::PhaseOutcome;
use super::recorder::KvOp;
use crate::measure::histogram::LatencyHistogram;

/// A double as Java's `Double.toString` writes it (YCSB prints its means
/// and throughput so): at least one decimal, `E` notation outside
/// [10^-3, 10^7).
pub fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let with_point = |m: String| if m.contains('.') { m } else { m + ".0" };
    if d == 0.0 || (1e-3..1e7).contains(&d.abs()) {
        return with_point(format!("{d}"));
    }
    let e = format!("{d:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    format!("{}E{exp}", with_point(mantissa.to_string()))
}

/// Whole microseconds, as YCSB records them (`(end - start) / 1000`).
fn whole_us(ns: u64) -> u64 {
    ns / 1000
}

/// YCSB's lines for one measurement: operations, average, min, max, the
/// 95th and 99th percentiles (its default `hdrhistogram.percentiles`),
/// then the return codes when given.
fn measurement(label: &str, ops: u64, h: &LatencyHistogram, returns: &[(&str, u64)]) -> String {
    let mut s = format!("[{label}], Operations, {ops}\n");
    let Some(st) = h.stats() else {
        return s;
    };
    s += &format!(
        "[{label}], AverageLatency(us), {}\n",
        java_double(st.mean_ns / 1e3)
    );
    s += &format!("[{label}], MinLatency(us), {}\n", whole_us(st.min_ns));
    s += &format!("[{label}], MaxLatency(us), {}\n", whole_us(st.max_ns));
    for p in [95u32, 99] {
        let v = whole_us(st.percentile(p as f64).unwrap_or(st.max_ns));
        s += &format!("[{label}], {p}thPercentileLatency(us), {v}\n");
    }
    for (code, n) in returns.iter().filter(|(_, n)| *n > 0) {
        s += &format!("[{label}], Return={code}, {n}\n");
    }
    s
}

/// The measurement YCSB files `op` under: the parts of a read-modify-write
/// are its READ and UPDATE (YCSB's DBWrapper times them as such).
fn ycsb_kind(op: KvOp) -> KvOp {
    match op {
        KvOp::RmwRead => KvOp::Read,
        KvOp::RmwUpdate => KvOp::Update,
        k => k,
    }
}

/// Each YCSB measurement's operations and histogram (service or
/// intended-start time), in KvOp order.
fn merged(
    o: &PhaseOutcome,
    hists: &[Option<LatencyHistogram>],
) -> Vec<(KvOp, u64, LatencyHistogram)> {
    let mut out: Vec<(KvOp, u64, LatencyHistogram)> = Vec::new();
    for k in KvOp::ALL {
        let Some(h) = hists[k.idx()].as_ref().filter(|h| !h.is_empty()) else {
            continue;
        };
        let (into, n) = (ycsb_kind(k), o.rec.ops[k.idx()]);
        match out.iter_mut().find(|(o, _, _)| *o == into) {
            Some((_, ops, m)) => {
                *ops += n;
                m.merge(h);
            }
            None => out.push((into, n, h.clone())),
        }
    }
    out.sort_by_key(|(k, _, _)| *k);
    out
}

/// YCSB 0.17's summary of a phase: `[OVERALL]` run time and throughput,
/// each operation's measurement with its return codes (reads of keys
/// not there: `Return=NOT_FOUND`), then the `Intended-` measurements of a
/// paced run, in that order as YCSB exports them.
pub fn ycsb_lines(o: &PhaseOutcome) -> String {
    let secs = (o.duration_ns as f64 / 1e9).max(1e-9);
    let total: u64 = KvOp::ALL
        .iter()
        .filter(|k| !matches!(k, KvOp::RmwRead | KvOp::RmwUpdate))
        .map(|k| o.rec.ops[k.idx()])
        .sum();
    let mut s = format!("[OVERALL], RunTime(ms), {}\n", o.duration_ns / 1_000_000);
    s += &format!(
        "[OVERALL], Throughput(ops/sec), {}\n",
        java_double(total as f64 / secs)
    );
    for (k, ops, h) in merged(o, &o.rec.service) {
        let not_found = if k == KvOp::Read { o.rec.not_found } else { 0 };
        let ok = ops.saturating_sub(not_found);
        let returns = [("OK", ok), ("NOT_FOUND", not_found)];
        s += &measurement(k.ycsb_label(), ops, &h, &returns);
    }
    for (k, ops, h) in merged(o, &o.rec.intended) {
        s += &measurement(&format!("Intended-{}", k.ycsb_label()), ops, &h, &[]);
    }
    s
}

/// The operations db_bench counts for `bench`: readwhilewriting's writer
/// is left out of the merge (`SetExcludeFromMerge`), so only reads count.
fn counted(bench: Bench, o: &PhaseOutcome) -> (u64, u64) {
    let kinds: &[KvOp] = match bench {
        Bench::ReadWhileWriting => &[KvOp::Read],
        _ => &KvOp::ALL,
    };
    kinds.iter().fold((0, 0), |(n, b), k| {
        (n + o.rec.ops[k.idx()], b + o.rec.bytes[k.idx()])
    })
}

/// db_bench's message after the rate: the reads that found their key.
/// RocksDB's readrandom and seekrandom end theirs with a newline.
fn message(bench: Bench, o: &PhaseOutcome) -> String {
    let ops = |k: KvOp| o.rec.ops[k.idx()];
    match bench {
        Bench::ReadRandom | Bench::ReadWhileWriting | Bench::SeekRandom => {
            let reads = ops(KvOp::Read) + ops(KvOp::Seek);
            let found = reads.saturating_sub(o.rec.not_found);
            format!("({found} of {reads} found)\n")
        }
        Bench::ReadRandomWriteRandom => {
            let (r, w) = (ops(KvOp::Read), ops(KvOp::Write));
            let found = r.saturating_sub(o.rec.not_found);
            format!("( reads:{r} writes:{w} total:{} found:{found})", r + w)
        }
        _ => String::new(),
    }
}

/// db_bench's `Stats::Report` line for a benchmark run by `threads`
/// threads (readwhilewriting: its readers):
/// `readrandom   :       3.345 micros/op 298953 ops/sec 10.000 seconds
/// 2989534 operations;   33.1 MB/s (2989534 of 2989534 found)`.
/// micros/op is db_bench's sum of the threads' times per operation;
/// iolab's threads start together, so that is threads x wall / operations.
pub fn dbbench_line(bench: Bench, o: &PhaseOutcome, threads: usize) -> String {
    let (done, bytes) = counted(bench, o);
    let done = done.max(1);
    let elapsed = (o.duration_ns as f64 / 1e9).max(1e-9);
    let mut extra = String::new();
    if bytes > 0 {
        extra = format!("{:6.1} MB/s", bytes as f64 / 1_048_576.0 / elapsed);
    }
    let msg = message(bench, o);
    if !msg.is_empty() {
        if !extra.is_empty() {
            extra.push(' ');
        }
        extra += &msg;
    }
    format!(
        "{:<12} : {:11.3} micros/op {} ops/sec {:.3} seconds {done} operations;{}{extra}\n",
        bench.name(),
        threads.max(1) as f64 * elapsed * 1e6 / done as f64,
        (done as f64 / elapsed) as i64,
        elapsed,
        if extra.is_empty() { "" } else { " " },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::recorder::KvRecorder;

    /// A phase of `dur_ns` with each kind's service times (ns) and bytes.
    fn outcome(ops: &[(KvOp, &[u64], u64)], not_found: u64, dur_ns: u64) -> PhaseOutcome {
        let kinds: Vec<KvOp> = ops.iter().map(|o| o.0).collect();
        let mut rec = KvRecorder::new(&kinds, false);
        for (k, lats, bytes) in ops {
            for (i, l) in lats.iter().enumerate() {
                let b = if i == 0 { *bytes } else { 0 };
                rec.record(*k, 1_000, 1_000 + l, None, 1, b);
            }
        }
        rec.seal();
        rec.not_found = not_found;
        PhaseOutcome {
            rec,
            load: Default::default(),
            series: Vec::new(),
            duration_ns: dur_ns,
            interrupted: false,
            max_backlog_ns: 0,
            lsm: None,
        }
    }

    #[test]
    fn doubles_read_as_javas() {
        assert_eq!(java_double(149.0866), "149.0866");
        assert_eq!(java_double(149.0), "149.0");
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(1.0e7), "1.0E7");
        assert_eq!(java_double(12_345_678.9), "1.23456789E7");
        assert_eq!(java_double(0.00015), "1.5E-4");
    }

    /// Issue 44 item 14: YCSB prints Min, Max and the percentiles as whole
    /// microseconds and a `Return=` line per status; iolab printed
    /// decimals, a 50th percentile YCSB does not, and no return codes.
    #[test]
    fn ycsb_lines_are_ycsbs() {
        let o = outcome(
            &[
                (KvOp::Read, &[27_296, 65_471, 165_503], 300),
                (KvOp::RmwRead, &[40_000], 100),
                (KvOp::Rmw, &[90_000], 200),
            ],
            1,
            2_500_000_000,
        );
        let s = ycsb_lines(&o);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "[OVERALL], RunTime(ms), 2500");
        assert_eq!(lines[1], "[OVERALL], Throughput(ops/sec), 1.6");
        // The read half of a read-modify-write is a READ, as in YCSB.
        assert!(s.contains("[READ], Operations, 4\n"), "{s}");
        assert!(s.contains("[READ], MinLatency(us), 27\n"), "{s}");
        assert!(s.contains("[READ], Return=OK, 3\n"), "{s}");
        assert!(s.contains("[READ], Return=NOT_FOUND, 1\n"), "{s}");
        assert!(s.contains("[READ-MODIFY-WRITE], Return=OK, 1\n"), "{s}");
        assert!(!s.contains("RMW-READ") && !s.contains("50th"), "{s}");
        for l in &lines[2..] {
            let (head, value) = l.rsplit_once(", ").unwrap();
            if head.ends_with("AverageLatency(us)") {
                assert!(value.parse::<f64>().is_ok() && value.contains('.'), "{l}");
            } else {
                assert!(value.parse::<u64>().is_ok(), "an integer: {l}");
            }
        }
    }

    /// Issue 44 item 14: db_bench's line, which scripts match with
    /// `^(\S+)\s+:\s+(\d+\.\d+) micros/op (\d+) ops/sec`.
    #[test]
    fn dbbench_line_is_db_benchs() {
        let lat = [3_000u64; 1000];
        let o = outcome(&[(KvOp::Read, &lat, 116_000)], 0, 2_000_000_000);
        assert_eq!(
            dbbench_line(Bench::ReadRandom, &o, 2),
            "readrandom   :    4000.000 micros/op 500 ops/sec 2.000 seconds 1000 operations;    0.1 MB/s (1000 of 1000 found)\n\n"
        );
        let o = outcome(&[(KvOp::Write, &lat[..10], 0)], 0, 1_000_000_000);
        assert_eq!(
            dbbench_line(Bench::FillRandom, &o, 1),
            "fillrandom   :  100000.000 micros/op 10 ops/sec 1.000 seconds 10 operations;\n"
        );
    }

    /// readwhilewriting: only the readers count, as db_bench leaves its
    /// writer out of the merged statistics.
    #[test]
    fn readwhilewriting_counts_the_readers() {
        let o = outcome(
            &[
                (KvOp::Read, &[1_000; 40], 0),
                (KvOp::Write, &[1_000; 60], 0),
            ],
            4,
            1_000_000_000,
        );
        let l = dbbench_line(Bench::ReadWhileWriting, &o, 4);
        assert!(
            l.contains(" 40 ops/sec 1.000 seconds 40 operations; (36 of 40 found)"),
            "{l}"
        );
    }
}
