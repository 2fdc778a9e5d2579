//! A point measured on several hosts (`--hosts`): one row per host beside
//! the aggregate (operations, IOPS, MiB/s, mean and p99 latency, the
//! agent's CPU, when the host was released relative to the common start),
//! the start skew, and the hosts lost. Shared by the terminal, the
//! Markdown and the HTML report.

use crate::plan::parse::format_ns;
use crate::results::ext::HostsInfo;
use crate::results::Point;

use super::terminal::format_count;

/// The table's header.
pub const HEADER: [&str; 8] = [
    "host", "ops", "IOPS", "MiB/s", "mean", "p99", "CPU %", "released",
];

/// One row per host, then the aggregate, as cells of `HEADER`.
pub fn rows(p: &Point, h: &HostsInfo) -> Vec<Vec<String>> {
    rows_of(p, h, "hosts")
}

/// `rows` of parts called `noun` (hosts, instances).
fn rows_of(p: &Point, h: &HostsInfo, noun: &str) -> Vec<Vec<String>> {
    let lat = |ns: Option<f64>| ns.map(format_ns).unwrap_or_else(|| "-".into());
    let mut out: Vec<Vec<String>> = h
        .per_host
        .iter()
        .map(|r| {
            vec![
                r.host.clone(),
                r.ops.to_string(),
                format_count(r.iops),
                format!("{:.1}", r.mib_s),
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
        format_count(p.total.iops),
        format!("{:.1}", p.total.mib_s),
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
