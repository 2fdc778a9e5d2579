//! The end of `iolab remote` on the terminal: one line per workload and
//! transport (IOPS and mean latency beside DAS, CPU per I/O on both
//! sides), then the unloaded latency breakdown, each point's per-host
//! table (`--hosts`), and the database on each volume beside DAS (`--db`).

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};

use super::remote_errors;
use crate::figures::fmt::format_count;
use crate::plan::parse::format_ns;
use crate::results::sections::remote::STAGES;
use crate::results::Results;

pub fn remote_summary(r: &Results, elapsed_s: f64) -> String {
    let mut o = format!(
        "iolab remote: {} point(s) in {:.0} s{}\n",
        r.points.len(),
        elapsed_s,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    if let Some(remote) = r.extra.remote() {
        o.push_str(&format!(
            "link: {}{}\n",
            remote.topology,
            remote
                .note
                .clone()
                .flatten()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ));
        if let Some(list) = &remote.initiators {
            let kernel: Vec<String> = list
                .iter()
                .map(|i| format!("{} {}", i.module, i.kernel))
                .collect();
            o.push_str(&format!(
                "initiators: user space (iolab's nbd and nvme-tcp engines, libiscsi); kernel modules: {}\n",
                kernel.join(", ")
            ));
        }
        o.push('\n');
    }
    o.push_str(&remote_table(r));
    o.push_str(&hosts_tables(r));
    o.push_str(&db_table(r));
    for w in super::summary::warnings(r) {
        o.push_str(&format!("warning: {w}\n"));
    }
    o
}

/// The per-host table of every point measured on several hosts (`remote
/// --hosts`), as `device` and `kv` print them; empty without.
fn hosts_tables(r: &Results) -> String {
    let mut o = String::new();
    for p in &r.points {
        if let Some(h) = &p.extra.hosts {
            o.push_str(&format!(
                "{}
{}

",
                p.name,
                super::hosts_table::terminal(p, h)
            ));
        }
    }
    o
}

/// Each transport beside DAS, then the breakdowns; empty without remote points.
pub fn remote_table(r: &Results) -> String {
    let error_notes: String = remote_errors::notes(r)
        .iter()
        .map(|n| format!("note: {n}\n"))
        .collect();
    if r.analysis.remote.is_empty() {
        return error_notes;
    }
    let mut o = String::new();
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    let errors = remote_errors::any_in_rows(r);
    let mut header = vec![
        "workload",
        "transport",
        "IOPS",
        "vs DAS",
        "mean",
        "vs DAS",
        "p95",
        "CPU/IO ini",
        "CPU/IO tgt",
    ];
    if errors {
        header.push("errors");
    }
    header.push("cache ini / tgt");
    t.set_header(header);
    let caching = caching_of(r);
    let ratio = |v: Option<f64>| v.map(|x| format!("{x:.2}x")).unwrap_or_default();
    let us = |v: Option<f64>| v.map(|x| format!("{x:.1}us")).unwrap_or_default();
    for x in &r.analysis.remote {
        let mut row = vec![
            x.workload.clone(),
            x.transport.clone(),
            format_count(x.iops),
            ratio(x.iops_vs_das),
            x.mean_ns.map(format_ns).unwrap_or_default(),
            ratio(x.mean_vs_das),
            x.p95_ns.map(|v| format_ns(v as f64)).unwrap_or_default(),
            us(x.host_cpu_us_per_io),
            us(x.target_cpu_us_per_io),
        ];
        if errors {
            row.push(remote_errors::count(&x.errors));
        }
        row.push(
            caching
                .iter()
                .find(|(l, _, _)| *l == x.transport)
                .map(|(_, i, t)| format!("{i} / {t}"))
                .unwrap_or_default(),
        );
        t.add_row(row);
    }
    for i in 2..(9 + usize::from(errors)) {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    o.push_str(&format!("{t}\n"));
    for (label, _, tgt) in caching.iter().filter(|(_, _, t)| t.starts_with("buffered")) {
        o.push_str(&format!(
            "note: {label}'s target is {tgt} while DAS is O_DIRECT: its ratios to DAS set a cache against the device\n"
        ));
    }
    o.push_str(&error_notes);
    let remote = r.extra.remote();
    let breakdowns = remote.as_ref().and_then(|v| v.breakdown.as_ref());
    for (label, b) in breakdowns.into_iter().flatten() {
        let stages: Vec<String> = b
            .stages()
            .iter()
            .map(|(n, v)| format!("{n} {}", format_ns(*v)))
            .collect();
        o.push_str(&format!(
            "\nbreakdown over {label} (QD1, {} requests, mean {}): {}\n  initiator: {}\n",
            b.requests,
            format_ns(b.latency_ns),
            stages.join(" + "),
            b.covers(0).unwrap_or(b.initiator_scope())
        ));
        for (i, name) in STAGES.iter().enumerate().skip(1) {
            if let Some(c) = b.covers(i) {
                o.push_str(&format!("  {name}: {c}\n"));
            }
        }
    }
    o
}

/// (label, initiator's caching, target's caching) of each transport, as
/// the run recorded them (older files: none).
pub fn caching_of(r: &Results) -> Vec<(String, String, String)> {
    let Some(remote) = r.extra.remote() else {
        return Vec::new();
    };
    remote
        .transports
        .iter()
        .filter_map(|t| {
            Some((
                t.label.clone(),
                t.initiator_cache.clone()?,
                t.target_cache.clone()?,
            ))
        })
        .collect()
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

    /// Issue 46: `remote --hosts` prints each point's per-host table, as
    /// `device` and `kv` do.
    #[test]
    fn the_summary_has_the_per_host_tables() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report/remote-nbd.json"
        );
        let mut r = Results::read(std::path::Path::new(path)).unwrap();
        assert!(!remote_summary(&r, 1.0).contains("all 2 hosts"));
        let p = &mut r.points[0];
        crate::results::ext::on_hosts(p, &["h1", "h2"]);
        let text = remote_summary(&r, 1.0);
        assert!(
            text.contains("all 2 hosts") && text.contains("h2"),
            "{text}"
        );
    }

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

#[cfg(test)]
mod caching_tests {
    use super::*;
    use crate::results::Param;

    /// The remote table and the report say how each end caches, and warn
    /// where a buffered target is set against DAS's O_DIRECT (an nbdkit
    /// file target's 5.39x "vs DAS" was a page cache against the disk).
    #[test]
    fn the_table_says_the_caching_of_both_ends() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report/remote-nbd.json"
        );
        let mut r = Results::read(std::path::Path::new(path)).unwrap();
        let cached =
            |label: &str, ini: &str, tgt: &str| crate::results::sections::RemoteTransport {
                label: label.into(),
                initiator_cache: Some(ini.into()),
                target_cache: Some(tgt.into()),
                ..Default::default()
            };
        r.extra.remote.as_mut().unwrap().transports = vec![
            cached("das", "O_DIRECT", "-"),
            cached("nbd-iolab", "none (user-space initiator)", "O_DIRECT"),
            cached(
                "nbd-nbdkit-memory",
                "none (user-space initiator)",
                "buffered (page cache)",
            ),
        ];
        let t = remote_table(&r);
        assert!(t.contains("cache ini / tgt"), "{t}");
        assert!(t.contains("none (user-space initiator) / O_DIRECT"), "{t}");
        assert!(
            t.contains("note: nbd-nbdkit-memory's target is buffered"),
            "{t}"
        );
        let s = crate::report::charts::remote::local_vs_remote(&r).unwrap();
        assert!(s.table.headers.iter().any(|h| h == "target cache"));
        assert!(
            s.note.contains("nbd-nbdkit-memory: the target is buffered"),
            "{}",
            s.note
        );
        // A point through a remote engine is not called "buffered".
        let nbd = r
            .points
            .iter()
            .find(|p| p.param(Param::Engine) == Some("nbd"))
            .unwrap();
        let head = crate::report::terminal::point_block(nbd);
        assert!(
            head.lines()
                .next()
                .unwrap()
                .contains("user-space initiator, no page cache"),
            "{head}"
        );
    }
}

#[cfg(test)]
mod breakdown_scope_tests {
    use super::*;

    /// Issue 44 item 11: each breakdown says what its initiator stage
    /// covers, on the terminal and in the report's table.
    #[test]
    fn each_breakdown_says_what_its_initiator_stage_covers() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report/remote-nbd.json"
        );
        let mut r = Results::read(std::path::Path::new(path)).unwrap();
        let b = r.extra.remote.as_mut().unwrap().breakdown.as_mut().unwrap();
        b.insert(
            "das".into(),
            serde_json::from_value(serde_json::json!({"requests": 10, "initiator_ns": 2000.0, "fabric_out_ns": 0.0, "target_ns": 0.0, "device_ns": 50000.0, "fabric_back_ns": 0.0, "latency_ns": 52000.0, "engine_stamps": false})).unwrap(),
        );
        let t = remote_table(&r);
        let scope = |label: &str| {
            let at = t.find(&format!("breakdown over {label} ")).expect(&t);
            t[at..].lines().nth(1).unwrap().to_string()
        };
        assert!(scope("das").contains("kernel's submission path"), "{t}");
        assert!(
            scope("nbd-iolab").contains("the send and receive calls are in the next stage"),
            "{t}"
        );
        let s = crate::report::charts::remote::breakdown(&r).unwrap();
        let covers = |label: &str| {
            s.table
                .rows
                .iter()
                .find(|row| row[0] == label && row[1] == "initiator")
                .map(|row| row[4].clone())
                .unwrap()
        };
        assert!(covers("das").contains("kernel's submission path"));
        assert!(covers("nbd-iolab").contains("user space only"));
    }
}
