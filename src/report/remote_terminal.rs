//! The end of `iolab remote` on the terminal: one line per workload and
//! transport (IOPS and mean latency beside DAS, CPU per I/O on both
//! sides), then the unloaded latency breakdown, and the database on each
//! volume beside DAS (`--db`).

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};

use super::terminal::format_count;
use crate::plan::parse::format_ns;
use crate::results::Results;
use crate::target::stamps::Breakdown;

pub fn remote_summary(r: &Results, elapsed_s: f64) -> String {
    let mut o = format!(
        "iolab remote: {} point(s) in {:.0} s{}\n",
        r.points.len(),
        elapsed_s,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    if let Some(remote) = r.extra.get("remote") {
        let topo = remote["topology"].as_str().unwrap_or("?");
        o.push_str(&format!(
            "link: {topo}{}\n",
            remote["note"]
                .as_str()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ));
        if let Some(list) = remote["initiators"].as_array() {
            let kernel: Vec<String> = list
                .iter()
                .map(|i| {
                    format!(
                        "{} {}",
                        i["module"].as_str().unwrap_or("?"),
                        i["kernel"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            o.push_str(&format!(
                "initiators: user space (iolab's nbd and nvme-tcp engines, libiscsi); kernel modules: {}\n",
                kernel.join(", ")
            ));
        }
        o.push('\n');
    }
    o.push_str(&remote_table(r));
    o.push_str(&db_table(r));
    for w in super::summary::warnings(r) {
        o.push_str(&format!("warning: {w}\n"));
    }
    o
}

/// Each transport beside DAS, then the breakdowns; empty without remote points.
pub fn remote_table(r: &Results) -> String {
    if r.analysis.remote.is_empty() {
        return String::new();
    }
    let mut o = String::new();
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(vec![
        "workload",
        "transport",
        "IOPS",
        "vs DAS",
        "mean",
        "vs DAS",
        "p95",
        "CPU/IO ini",
        "CPU/IO tgt",
    ]);
    let ratio = |v: Option<f64>| v.map(|x| format!("{x:.2}x")).unwrap_or_default();
    let us = |v: Option<f64>| v.map(|x| format!("{x:.1}us")).unwrap_or_default();
    for x in &r.analysis.remote {
        t.add_row(vec![
            x.workload.clone(),
            x.transport.clone(),
            format_count(x.iops),
            ratio(x.iops_vs_das),
            x.mean_ns.map(format_ns).unwrap_or_default(),
            ratio(x.mean_vs_das),
            x.p95_ns.map(|v| format_ns(v as f64)).unwrap_or_default(),
            us(x.host_cpu_us_per_io),
            us(x.target_cpu_us_per_io),
        ]);
    }
    for i in 2..9 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    o.push_str(&format!("{t}\n"));
    let breakdowns = r
        .extra
        .get("remote")
        .and_then(|v| v.get("breakdown"))
        .and_then(|v| v.as_object());
    for (label, v) in breakdowns.into_iter().flatten() {
        let Ok(b) = serde_json::from_value::<Breakdown>(v.clone()) else {
            continue;
        };
        let stages: Vec<String> = b
            .stages()
            .iter()
            .map(|(n, v)| format!("{n} {}", format_ns(*v)))
            .collect();
        o.push_str(&format!(
            "\nbreakdown over {label} (QD1, {} requests, mean {}): {}\n",
            b.requests,
            format_ns(b.latency_ns),
            stages.join(" + ")
        ));
    }
    o
}

/// The database on each volume beside DAS (`iolab remote --db`); empty
/// without database rows.
pub fn db_table(r: &Results) -> String {
    if r.analysis.remote_db.is_empty() {
        return String::new();
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(vec![
        "value size",
        "volume",
        "ops/s",
        "vs DAS",
        "read mean",
        "read p99",
        "write mean",
        "write p99",
    ]);
    let ns = |v: Option<f64>| v.map(format_ns).unwrap_or_default();
    for x in &r.analysis.remote_db {
        t.add_row(vec![
            format!("{} B", x.value_size),
            x.transport.clone(),
            format_count(x.ops_s),
            x.ops_vs_das.map(|v| format!("{v:.2}x")).unwrap_or_default(),
            ns(x.read_mean_ns),
            ns(x.read_p99_ns.map(|v| v as f64)),
            ns(x.write_mean_ns),
            ns(x.write_p99_ns.map(|v| v as f64)),
        ]);
    }
    for i in 2..8 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("\nRocksDB readrandomwriterandom on each volume:\n{t}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_table_shows_every_volume_beside_das() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report/remote-nbd.json"
        );
        let r = Results::read(std::path::Path::new(path)).unwrap();
        let text = db_table(&r);
        for want in [
            "800 B",
            "4096 B",
            "das",
            "nbd-iolab",
            "nbd-nbdkit-memory",
            "1.00x",
        ] {
            assert!(text.contains(want), "{want} missing from\n{text}");
        }
        assert_eq!(text.matches(" B ").count(), r.analysis.remote_db.len());
        assert!(remote_summary(&r, 1.0).contains("RocksDB readrandomwriterandom"));
    }
}
