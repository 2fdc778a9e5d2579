//! A point measured on several hosts (`--hosts`): rows per host beside
//! the aggregate's (operations, throughput in the point's figure, MiB/s,
//! each operation type's mean, p50, p99 and p99.9 latency, the main type
//! first, the agent's CPU, when the host was released relative to the
//! common start), each host's group and each host group's merged row
//! (`--hosts @FILE.toml`),
//! the start skew, and the hosts lost. Shared by the terminal, the
//! Markdown and the HTML report.

use crate::figures;
use crate::plan::parse::format_ns;
use crate::results::ext::hosts::op_latencies;
use crate::results::ext::{HostsInfo, RowLatency};
use crate::results::Point;

/// The table's header: throughput in the point's own figure (IOPS, ops/s),
/// a row per operation type with its latency (the main type first).
pub const HEADER: [&str; 11] = [
    "host",
    "ops",
    "throughput",
    "MiB/s",
    "latency of",
    "mean",
    "p50",
    "p99",
    "p99.9",
    "CPU %",
    "released",
];

/// One row per host and operation type, then the aggregate's, as cells
/// of `HEADER`.
pub fn rows(p: &Point, h: &HostsInfo) -> Vec<Vec<String>> {
    rows_of(p, h, "hosts")
}

/// A host's (or the aggregate's) rows: its own cells on the first, its
/// further operation types' latencies below with the same name.
struct Part<'a> {
    name: String,
    ops: u64,
    iops: f64,
    mib_s: f64,
    lat: Vec<(String, RowLatency)>,
    cpu: f64,
    released: &'a str,
}

fn part_rows(part: Part, rate: &dyn Fn(f64) -> String) -> Vec<Vec<String>> {
    let ns = |v: Option<f64>| v.map(format_ns).unwrap_or_else(|| "-".into());
    let pct = |v: Option<u64>| ns(v.map(|v| v as f64));
    part.lat
        .iter()
        .enumerate()
        .map(|(i, (op, l))| {
            let first = i == 0;
            let own = |cell: String| if first { cell } else { String::new() };
            vec![
                part.name.clone(),
                own(part.ops.to_string()),
                own(rate(part.iops)),
                own(format!("{:.1}", part.mib_s)),
                op.clone(),
                ns(l.mean_ns),
                pct(l.p50_ns),
                pct(l.p99_ns),
                pct(l.p999_ns),
                own(format!("{:.0}", part.cpu)),
                own(part.released.to_string()),
            ]
        })
        .collect()
}

/// The aggregate's latencies: every operation type's, the main one first.
fn aggregate_latencies(p: &Point, main: Option<&str>) -> Vec<(String, RowLatency)> {
    let ops = op_latencies(&p.ops, main);
    if ops.is_empty() {
        return vec![(main.unwrap_or("-").to_string(), RowLatency::NONE)];
    }
    ops
}

/// `rows` of parts called `noun` (hosts, instances).
fn rows_of(p: &Point, h: &HostsInfo, noun: &str) -> Vec<Vec<String>> {
    let tput = figures::throughput(p.family()).def();
    let rate = |v: f64| tput.with_unit(v);
    let main = p.main_op();
    let mut out = Vec::new();
    // Each host (with its group), then each host group's merged row.
    for r in h.per_host.iter().chain(&h.groups) {
        let released = format!("{:+.0} us", r.start_offset_ns as f64 / 1e3);
        out.extend(part_rows(
            Part {
                name: r.label(),
                ops: r.ops,
                iops: r.iops,
                mib_s: r.mib_s,
                lat: r.latencies(main),
                cpu: r.cpu.usr_pct + r.cpu.sys_pct,
                released: &released,
            },
            &rate,
        ));
    }
    let skew = format!("skew {:.0} us", h.start_skew_ns as f64 / 1e3);
    out.extend(part_rows(
        Part {
            name: format!("all {} {noun}", h.per_host.len()),
            ops: p.total.ops,
            iops: p.total.iops,
            mib_s: p.total.mib_s,
            lat: aggregate_latencies(p, main),
            cpu: p.cpu.usr_pct + p.cpu.sys_pct,
            released: &skew,
        },
        &rate,
    ));
    // The target host measured (remote --target-host): its whole machine's CPU.
    if let Some(t) = &h.target_host {
        let mut row = vec!["-".to_string(); HEADER.len()];
        row[0] = format!("target {}", t.host);
        row[HEADER.len() - 2] = format!("{:.0}", t.cpu.usr_pct + t.cpu.sys_pct);
        row[HEADER.len() - 1] = format!("iowait {:.0}%", t.cpu.iowait_pct);
        out.push(row);
    }
    out
}

/// The lines under the table: the start skew's precision and the hosts lost.
pub fn notes(h: &HostsInfo) -> Vec<String> {
    let mut v = vec![format!(
        "start skew {:.0} us (clocks known to within ±{:.0} us)",
        h.start_skew_ns as f64 / 1e3,
        h.clock_uncertainty_ns as f64 / 1e3
    )];
    for l in &h.lost {
        v.push(format!("host {} was lost: {}", l.host, l.why));
    }
    if let Some(t) = &h.target_host {
        v.push(format!(
            "target host {}: usr {:.0}%, sys {:.0}%, iowait {:.0}% (of one CPU, the whole machine)",
            t.host, t.cpu.usr_pct, t.cpu.sys_pct, t.cpu.iowait_pct
        ));
    }
    v
}

/// The table for a terminal.
pub fn terminal(p: &Point, h: &HostsInfo) -> String {
    terminal_of(p, h, "hosts")
}

/// The table of a point's instances (`kv --instances`, `extra.instances`).
pub fn instances_terminal(p: &Point, h: &HostsInfo) -> String {
    terminal_of(p, h, "instances")
}

fn terminal_of(p: &Point, h: &HostsInfo, noun: &str) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    let mut header = HEADER.to_vec();
    if noun == "instances" {
        header[0] = "instance";
    }
    t.set_header(header);
    for r in rows_of(p, h, noun) {
        t.add_row(r);
    }
    let mut s = t.to_string();
    let notes = match noun {
        "instances" => vec![format!("start skew {:.0} us", h.start_skew_ns as f64 / 1e3)],
        _ => notes(h),
    };
    for n in notes {
        s.push_str(&format!("\n  {n}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ext::{ClockOffset, HostRow};

    /// Issue 44: a kv phase's per-host rows said "IOPS" and an unnamed
    /// mean (the reads'): its throughput is ops/s and the latency column
    /// names its operation type.
    #[test]
    fn a_kv_phase_per_host_is_ops_per_second_of_a_named_operation() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report/kv-ycsb-rocksdb.json");
        let r = crate::results::Results::read(&path).unwrap();
        let p = r.points.iter().find(|p| p.name == "ycsb-a.run").unwrap();
        let clock = ClockOffset {
            offset_ns: 0,
            uncertainty_ns: 0,
            rtt_ns: 0,
            probes: 0,
        };
        let h = HostsInfo {
            per_host: vec![HostRow::of("h1", p, clock, 0)],
            start_skew_ns: 0,
            clock_uncertainty_ns: 0,
            lost: Vec::new(),
            rate_per_host: None,
            target_host: None,
            groups: Vec::new(),
        };
        let rows = rows(p, &h);
        assert_eq!(HEADER[2], "throughput");
        assert!(rows[0][2].ends_with(" ops/s"), "{:?}", rows[0]);
        assert_eq!(
            rows[0][HEADER.iter().position(|c| *c == "latency of").unwrap()],
            "read"
        );
        // Issue 46: every operation type of the phase has its row, on the
        // host as on the aggregate.
        let of = HEADER.iter().position(|c| *c == "latency of").unwrap();
        let ops = |name: &str| -> Vec<&str> {
            rows.iter()
                .filter(|r| r[0].starts_with(name))
                .map(|r| r[of].as_str())
                .collect()
        };
        assert_eq!(ops("h1"), ["read", "update"], "{rows:?}");
        assert_eq!(ops("all 1 hosts"), ["read", "update"], "{rows:?}");
        let p999 = HEADER.iter().position(|c| *c == "p99.9").unwrap();
        assert_ne!(rows[1][p999], "-", "{:?}", rows[1]);
    }

    /// Host groups: each host's row names its group, each group has its
    /// row (`group NAME`) before the aggregate's, in the terminal's table
    /// (the report's Markdown and HTML read the same rows) and in the CSV.
    #[test]
    fn host_groups_have_their_rows_and_each_host_says_its_group() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report/kv-ycsb-rocksdb.json");
        let mut r = crate::results::Results::read(&path).unwrap();
        r.points.truncate(1);
        let p = &mut r.points[0];
        crate::results::ext::hosts::on_hosts(p, &["h1", "h2", "h3"]);
        let h = p.extra.hosts.as_mut().unwrap();
        for (row, g) in h.per_host.iter_mut().zip(["readers", "readers", "writers"]) {
            row.group = Some(g.into());
        }
        let mut g = h.per_host[0].clone();
        g.host = "group readers".into();
        g.group = None;
        h.groups = vec![g];
        let (p, h) = (&r.points[0], r.points[0].extra.hosts.as_ref().unwrap());
        let names: Vec<String> = rows(p, h)
            .into_iter()
            .map(|r| r[0].clone())
            .filter(|n| !n.is_empty())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(
            names,
            [
                "all 3 hosts",
                "group readers",
                "h1 [readers]",
                "h2 [readers]",
                "h3 [writers]"
            ]
        );
        let text = terminal(p, h);
        assert!(
            text.contains("group readers") && text.contains("h3 [writers]"),
            "{text}"
        );
        let csv = crate::report::csv::points_table(&r);
        let host = csv.headers.iter().position(|c| c == "host").unwrap();
        let in_csv: std::collections::BTreeSet<&str> =
            csv.rows.iter().map(|r| r[host].as_str()).collect();
        for n in ["all", "group readers", "h1 [readers]", "h3 [writers]"] {
            assert!(in_csv.contains(n), "{n}: {in_csv:?}");
        }
    }
}
