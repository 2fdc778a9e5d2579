//! A point measured on several hosts (`--hosts`): one row per host beside
//! the aggregate (operations, throughput in the point's figure, MiB/s, the
//! main operation type's mean and p99 latency, the
//! agent's CPU, when the host was released relative to the common start),
//! the start skew, and the hosts lost. Shared by the terminal, the
//! Markdown and the HTML report.

use crate::figures;
use crate::plan::parse::format_ns;
use crate::results::ext::HostsInfo;
use crate::results::Point;

/// The table's header: throughput in the point's own figure (IOPS, ops/s),
/// the latency of the main operation type, named in its column.
pub const HEADER: [&str; 9] = [
    "host",
    "ops",
    "throughput",
    "MiB/s",
    "latency of",
    "mean",
    "p99",
    "CPU %",
    "released",
];

/// One row per host, then the aggregate, as cells of `HEADER`.
pub fn rows(p: &Point, h: &HostsInfo) -> Vec<Vec<String>> {
    rows_of(p, h, "hosts")
}

/// `rows` of parts called `noun` (hosts, instances).
fn rows_of(p: &Point, h: &HostsInfo, noun: &str) -> Vec<Vec<String>> {
    let lat = |ns: Option<f64>| ns.map(format_ns).unwrap_or_else(|| "-".into());
    let tput = figures::throughput(p.family()).def();
    let rate = |v: f64| tput.with_unit(v);
    let op = p.main_op().unwrap_or("-").to_string();
    let mut out: Vec<Vec<String>> = h
        .per_host
        .iter()
        .map(|r| {
            vec![
                r.host.clone(),
                r.ops.to_string(),
                rate(r.iops),
                format!("{:.1}", r.mib_s),
                op.clone(),
                lat(r.lat_mean_ns),
                lat(r.lat_p99_ns.map(|v| v as f64)),
                format!("{:.0}", r.cpu.usr_pct + r.cpu.sys_pct),
                format!("{:+.0} us", r.start_offset_ns as f64 / 1e3),
            ]
        })
        .collect();
    let main = p.main_lat();
    out.push(vec![
        format!("all {} {noun}", h.per_host.len()),
        p.total.ops.to_string(),
        rate(p.total.iops),
        format!("{:.1}", p.total.mib_s),
        op,
        lat(main.map(|l| l.mean_ns)),
        lat(main.and_then(|l| l.percentile(99.0)).map(|v| v as f64)),
        format!("{:.0}", p.cpu.usr_pct + p.cpu.sys_pct),
        format!("skew {:.0} us", h.start_skew_ns as f64 / 1e3),
    ]);
    // The target host measured (remote --target-host): its whole machine's CPU.
    if let Some(t) = &h.target_host {
        let none = || "-".to_string();
        out.push(vec![
            format!("target {}", t.host),
            none(),
            none(),
            none(),
            none(),
            none(),
            none(),
            format!("{:.0}", t.cpu.usr_pct + t.cpu.sys_pct),
            format!("iowait {:.0}%", t.cpu.iowait_pct),
        ]);
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
            target_host: None,
        };
        let rows = rows(p, &h);
        assert_eq!(HEADER[2], "throughput");
        assert!(rows[0][2].ends_with(" ops/s"), "{:?}", rows[0]);
        assert_eq!(
            rows[0][HEADER.iter().position(|c| *c == "latency of").unwrap()],
            "read"
        );
        assert!(rows[1][0].starts_with("all 1 hosts"));
    }
}
