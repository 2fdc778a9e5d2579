//! Terminal tables: one compact block per point (IOPS, MiB/s, latency per op
//! kind, CPU, device utilization) followed by its warnings.

use crate::figures::fmt::format_count;
use crate::plan::engines::EngineKind;
use crate::results::Param;
use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};

use crate::figures::fmt;
use crate::figures::{self, Basis, FigureId, Measure};
use crate::plan::parse::format_ns;
use crate::results::{Point, Results, VerifyStats};
fn lat_cell(v: Option<u64>) -> String {
    v.map(|x| format_ns(x as f64)).unwrap_or_else(|| "-".into())
}

/// The op cell of `point_block`: the operation type and the basis of its
/// latencies where not the total ("read, from issue"; fio's clat-only
/// percentiles: "read (percentiles: clat)").
fn op_label(p: &Point, op: &str) -> String {
    let basis = Measure::of_point(FigureId::LatP99, p)
        .into_iter()
        .find(|m| m.op.as_deref() == Some(op) && m.basis != Some(Basis::FromIntended))
        .and_then(|m| m.basis);
    match basis {
        Some(Basis::FromIssue) => format!("{op}, from issue"),
        Some(Basis::Completion) => format!("{op} (percentiles: clat)"),
        _ => op.to_string(),
    }
}

/// MiB/s of an operation type (or over all), "-" where the point's kind
/// has none (a kv phase counts operations, not bytes).
fn mib_cell(p: &Point, op: Option<&String>) -> String {
    let m = Measure {
        figure: FigureId::MibS,
        op: op.cloned(),
        basis: None,
    };
    m.of(p).map_or("-".into(), |v| format!("{v:.1}"))
}

/// How the point's requests were cached on this side: a remote engine's
/// requests reach no page cache here, whatever `direct` says.
fn caching(p: &Point) -> &'static str {
    let engine = p.param(Param::Engine).and_then(EngineKind::parse);
    EngineKind::caching_label(engine, p.direct)
}

/// The block of text printed for one point: its throughput in its kind's
/// figure (IOPS, ops/s), MiB/s where its kind moves bytes, latencies per
/// operation type naming their basis where it is not the total.
pub fn point_block(p: &Point) -> String {
    let mut out = String::new();
    let secs = p.duration_ns as f64 / 1e9;
    out.push_str(&format!(
        "{}  ({:.1} s measured{}, {})\n",
        p.name,
        secs,
        if p.ramp_ns > 0 {
            format!(" after {:.1} s ramp", p.ramp_ns as f64 / 1e9)
        } else {
            String::new()
        },
        caching(p)
    ));
    if let Some(info) = &p.extra.oltp {
        out += &crate::report::oltp_terminal::point_text(p, info);
        for w in &p.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        return out;
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    let tput = figures::throughput(p.family()).def();
    t.set_header(vec![
        "op",
        tput.name,
        "MiB/s",
        "mean",
        "p50",
        "p99",
        "p99.9",
        "max",
        "slat mean",
    ]);
    let open_loop = p.extra.open_loop.as_ref();
    for (name, o) in &p.ops {
        let lat = o.lat.as_ref();
        t.add_row(vec![
            op_label(p, name),
            format_count(o.iops),
            mib_cell(p, Some(name)),
            lat.map(|l| format_ns(l.mean_ns))
                .unwrap_or_else(|| "-".into()),
            lat_cell(lat.and_then(|l| l.percentile(50.0))),
            lat_cell(lat.and_then(|l| l.percentile(99.0))),
            lat_cell(lat.and_then(|l| l.percentile(99.9))),
            lat_cell(lat.map(|l| l.max_ns)),
            o.slat
                .as_ref()
                .map(|s| format_ns(s.mean_ns))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    // Open loop: what a client sees, from the time each request was due.
    for (name, l) in open_loop.iter().flat_map(|ol| &ol.lat_from_intended) {
        t.add_row(vec![
            format!("{name}, from intended"),
            String::new(),
            String::new(),
            format_ns(l.mean_ns),
            lat_cell(l.percentile(50.0)),
            lat_cell(l.percentile(99.0)),
            lat_cell(l.percentile(99.9)),
            lat_cell(Some(l.max_ns)),
            String::new(),
        ]);
    }
    if p.ops.len() > 1 {
        t.add_row(vec![
            "total".into(),
            format_count(p.total.iops),
            mib_cell(p, None),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    for i in 1..9 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    out.push_str(&t.to_string());
    out.push('\n');
    if let Some(ol) = open_loop {
        out.push_str(&format!(
            "open loop ({} arrivals): target {} IOPS, achieved {} ({:.1}%); issue delay p99 {}; {} late by more than {} ({:.1}%)\n",
            ol.arrival,
            format_count(ol.target_iops),
            format_count(ol.achieved_iops),
            ol.achieved_fraction * 100.0,
            lat_cell(ol.issue_delay.as_ref().and_then(|d| d.percentile(99.0))),
            ol.late,
            format_ns(ol.late_threshold_ns as f64),
            ol.late_fraction * 100.0
        ));
    }
    if let Some(b) = &p.batch {
        out.push_str(&format!(
            "batch k={}: {} batches, batch mean {} p99 {}; per block mean {} p50 {} p99 {}\n",
            b.k,
            b.batches,
            format_ns(b.batch_lat.mean_ns),
            lat_cell(b.batch_lat.percentile(99.0)),
            format_ns(b.per_block_mean_ns),
            format_ns(b.per_block_p50_ns),
            format_ns(b.per_block_p99_ns)
        ));
    }
    out.push_str(&format!(
        "cpu: usr {:.1}% sys {:.1}%{}  ctx {} vol / {} invol",
        p.cpu.usr_pct,
        p.cpu.sys_pct,
        cpu_per_io(p),
        p.cpu.ctx_voluntary,
        p.cpu.ctx_involuntary
    ));
    if let Some(d) = &p.device {
        out.push_str(&format!(
            "   device {}: util {:.1}%  read {} ios {:.1} MiB  write {} ios {:.1} MiB",
            d.device,
            d.util_pct,
            d.read_ios,
            d.read_bytes as f64 / (1 << 20) as f64,
            d.write_ios,
            d.write_bytes as f64 / (1 << 20) as f64
        ));
    }
    out.push('\n');
    if let Some(v) = &p.verify {
        out.push_str(&verify_lines(v));
    }
    for (e, n) in &p.errors {
        out.push_str(&format!("errors: {n} x {e}\n"));
    }
    for w in &p.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// What `--verify` found: units checked, mismatches (the first ten located)
/// and units never stamped.
fn verify_lines(v: &VerifyStats) -> String {
    let mut out = format!(
        "verify: {} blocks checked, {} mismatch{}",
        v.blocks_checked,
        v.mismatches,
        if v.mismatches == 1 { "" } else { "es" }
    );
    if v.never_written > 0 {
        out.push_str(&format!(
            ", {} blocks never written with --verify (not checked)",
            v.never_written
        ));
    }
    out.push('\n');
    for m in v.first_mismatches.iter().take(10) {
        out.push_str(&format!(
            "  mismatch at offset {}: {}\n",
            m.offset, m.reason
        ));
    }
    out
}

/// A compact block per point: its throughput in its kind's figure (IOPS,
/// ops/s, txn/s), MiB/s where bytes are the point, and a latency row per
/// operation type that ran, each naming its basis (open loop: from the
/// intended start first, then from the actual issue).
pub fn points_table(r: &Results) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(vec![
        "point",
        "throughput",
        "MiB/s",
        "latency of",
        "mean",
        "p99",
        "max",
    ]);
    for p in &r.points {
        for (i, row) in point_rows(p).into_iter().enumerate() {
            let mut cells = if i == 0 {
                let fig = figures::throughput(p.family());
                let tput = Measure::whole(fig).of(p);
                vec![
                    p.name.clone(),
                    tput.map_or("-".into(), |v| fig.def().with_unit(v)),
                    Measure::whole(FigureId::MibS)
                        .of(p)
                        .map_or("-".into(), |v| format!("{v:.1}")),
                ]
            } else {
                vec![String::new(), String::new(), String::new()]
            };
            cells.extend(row);
            t.add_row(cells);
        }
    }
    for i in [1, 2, 4, 5, 6] {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("{t}\n")
}

/// The latency cells of a point: per operation type and basis, what it
/// is of, mean, p99, max; one "-" row where no latency was measured.
fn point_rows(p: &Point) -> Vec<Vec<String>> {
    let mut means = Measure::of_point(FigureId::LatMean, p);
    means.sort_by_key(|m| m.basis != Some(Basis::FromIntended));
    let rows: Vec<Vec<String>> = means
        .iter()
        .map(|m| {
            let at = |figure| {
                Measure {
                    figure,
                    ..m.clone()
                }
                .of(p)
                .map_or("-".into(), fmt::ns3)
            };
            let of = match m.basis {
                Some(Basis::Total) | None => m.op.clone().unwrap_or_default(),
                Some(b) => format!("{}, {}", m.op.as_deref().unwrap_or(""), b.name()),
            };
            vec![
                of,
                at(FigureId::LatMean),
                at(FigureId::LatP99),
                at(FigureId::LatMax),
            ]
        })
        .collect();
    if rows.is_empty() {
        return vec![vec!["-".into(), "-".into(), "-".into(), "-".into()]];
    }
    rows
}

/// All points (with their per-host and per-instance tables), then
/// run-level warnings.
pub fn results_text(r: &Results) -> String {
    let mut out = String::new();
    for p in &r.points {
        out.push_str(&point_block(p));
        out.push('\n');
        if let Some(act) = &p.extra.act {
            out.push_str(&super::act_terminal::table(act));
            out.push('\n');
        }
        if let Some(h) = &p.extra.hosts {
            out.push_str(&super::hosts_table::terminal(p, h));
            out.push('\n');
        }
        if let Some(i) = &p.extra.instances {
            out.push_str(&super::hosts_table::instances_terminal(p, i));
            out.push('\n');
        }
    }
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    if r.interrupted {
        out.push_str("interrupted: the results hold the jobs measured before the signal\n");
    }
    out
}

/// The end of `iolab run`: headlines, a compact line per point and the
/// warnings; over several media, their comparison, the overhead and the
/// warnings (`media_terminal::summary`).
pub fn run_summary(r: &Results, elapsed_s: f64) -> String {
    let mut o = format!(
        "iolab run: {} point(s) in {:.0} s{}\n\n",
        r.points.len(),
        elapsed_s,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    if r.extra.media.is_some() {
        for line in super::media_terminal::summary(r) {
            o.push_str(&line);
            o.push('\n');
        }
        return o;
    }
    for h in super::summary::headlines(r) {
        o.push_str(&format!(
            "  {:<28} {:>24}   ({})\n",
            h.label, h.value, h.detail
        ));
    }
    o.push('\n');
    o.push_str(&points_table(r));
    o.push_str(&super::remote_terminal::remote_table(r));
    o.push_str(&super::remote_terminal::db_table(r));
    for w in super::summary::warnings(r) {
        o.push_str(&format!("warning: {w}\n"));
    }
    o
}

/// The process's CPU time per request (the NVMe-oF study's "CPU per I/O",
/// what a remote protocol costs the initiator), when there were requests.
fn cpu_per_io(p: &Point) -> String {
    let cpu_ns = p.cpu.user_ns + p.cpu.sys_ns;
    match p.total.ops {
        0 => String::new(),
        n => format!(" ({} per I/O)", format_ns(cpu_ns as f64 / n as f64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Results {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report")
            .join(name);
        Results::read(&path).unwrap()
    }

    /// Issue 46: `report --format text` has each point's per-host table,
    /// as the terminal, Markdown and HTML have.
    #[test]
    fn text_has_the_per_host_tables() {
        let mut r = fixture("kv-ycsb-rocksdb.json");
        assert!(!results_text(&r).contains("all 2 hosts"));
        for p in &mut r.points {
            crate::results::ext::on_hosts(p, &["h1", "h2"]);
        }
        let text = results_text(&r);
        assert!(text.contains("h2") && text.contains("p99.9"), "{text}");
        assert!(text.matches("start skew").count() >= r.points.len());
    }

    /// Issue 44 items 2 and 5: run's table gave a mixed kv phase the reads'
    /// mean beside all operations' throughput, loads no latency, and open
    /// loop only the latency from the actual issue, unlabelled.
    #[test]
    fn run_table_names_each_latency_and_its_basis() {
        let t = points_table(&fixture("kv-ycsb-rocksdb.json"));
        assert!(t.contains("ops/s") && !t.contains("IOPS"), "{t}");
        let update = t.lines().find(|l| l.contains(" update ")).expect(&t);
        assert!(update.contains("16.4us"), "{update}");
        let load = t.lines().find(|l| l.contains("ycsb-a.load")).expect(&t);
        assert!(load.contains("insert") && load.contains("11.0us"), "{load}");
        let t = points_table(&fixture("device-loadlat.json"));
        assert!(t.contains("read, from intended start"), "{t}");
        assert!(t.contains("read, from issue"), "{t}");
        let t = points_table(&fixture("oltp-postgres.json"));
        assert!(t.contains("txn/s") && t.contains("new_order"), "{t}");
        assert!(!t.contains("IOPS"), "{t}");
    }

    /// `report --format text` said IOPS and MiB/s over a kv phase's
    /// operations, and nothing of fio's clat-only percentiles.
    #[test]
    fn a_point_block_names_its_kind_and_basis() {
        let r = fixture("kv-ycsb-rocksdb.json");
        let b = point_block(&r.points[0]);
        assert!(b.contains("ops/s") && !b.contains("IOPS"), "{b}");
        let insert = b.lines().find(|l| l.contains("insert")).expect(&b);
        assert!(insert.contains(" - "), "no MiB/s for kv: {insert}");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report/fio-randread.json");
        let text = std::fs::read_to_string(path).unwrap();
        let r = crate::report::fio_json::from_fio_text(&text).unwrap();
        assert!(point_block(&r.points[0]).contains("read (percentiles: clat)"));
    }

    /// Which engines reach no page cache here is the engine's own fact
    /// (`EngineCaps::opens`), not a list of names in the view.
    #[test]
    fn a_remote_engine_is_said_to_reach_no_page_cache() {
        let mut p = fixture("device-loadlat.json").points[0].clone();
        p.direct = true;
        for (engine, says) in [
            ("nvme-tcp", "user-space initiator"),
            ("iscsi", "user-space initiator"),
            ("nbd", "user-space initiator"),
            ("io_uring", "O_DIRECT"),
        ] {
            p.params.insert("engine".into(), engine.into());
            assert!(caching(&p).starts_with(says), "{engine}: {}", caching(&p));
        }
    }

    #[test]
    fn counts() {
        assert_eq!(format_count(45_231.7), "45.2k");
        assert_eq!(format_count(2_500_000.0), "2.50M");
        assert_eq!(format_count(950.0), "950");
        assert_eq!(format_count(12.34), "12.3");
    }

    /// Issue 31 item 17: "1 mismatches".
    #[test]
    fn one_mismatch_is_singular() {
        let mut v = VerifyStats {
            blocks_checked: 10,
            mismatches: 1,
            never_written: 0,
            first_mismatches: vec![],
        };
        assert!(verify_lines(&v).starts_with("verify: 10 blocks checked, 1 mismatch\n"));
        v.mismatches = 2;
        assert!(verify_lines(&v).contains(", 2 mismatches"));
    }

    #[test]
    fn cpu_per_request() {
        let mut p = crate::analysis::testutil::point(&Default::default(), 1000.0, 50_000.0, 90_000);
        p.total.ops = 1000;
        p.cpu.user_ns = 3_000_000;
        p.cpu.sys_ns = 1_000_000;
        assert_eq!(cpu_per_io(&p), " (4.0us per I/O)");
        p.total.ops = 0;
        assert_eq!(cpu_per_io(&p), "");
    }
}
