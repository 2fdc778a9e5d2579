//! Terminal output of `iolab kv`: iolab's percentile table and the load
//! statistics of each phase (YCSB's and db_bench's own lines: `kv::compat`).

use super::phase::PhaseOutcome;
use crate::measure::write_amp::{ratio, whole_device, PER_KV_BYTES};
use crate::plan::parse::format_ns;
pub use crate::plan::parse::human_bytes as human;
use crate::results::ext::kv::LoadStats;
use crate::results::Point;
use comfy_table::Table;

/// Full percentiles per op kind (service and, when paced, intended).
pub fn latency_table(p: &Point) -> String {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    let under = p.extra.kv.as_ref().and_then(|k| k.under.as_ref());
    let under_head = under
        .map(|u| format!("<= {}", format_ns(u.threshold_ns as f64)))
        .unwrap_or_else(|| "<= limit".into());
    t.set_header([
        "op",
        "latency",
        "ops",
        "ops/s",
        "mean",
        "stdev",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        &under_head,
    ]);
    let intended = p.extra.kv.as_ref().map(|k| &k.intended_lat);
    for (name, st) in &p.ops {
        let mut rows = vec![("service", st.lat.clone())];
        if let Some(i) = intended.and_then(|m| m.get(name)) {
            rows.push(("intended", Some(i.clone())));
        }
        for (label, lat) in rows {
            let Some(l) = lat else { continue };
            let pc = |q: f64| format_ns(l.percentile(q).unwrap_or(0) as f64);
            t.add_row([
                name.clone(),
                label.to_string(),
                st.ops.to_string(),
                format!("{:.0}", st.iops),
                format_ns(l.mean_ns),
                format_ns(l.stdev_ns),
                pc(50.0),
                pc(90.0),
                pc(99.0),
                pc(99.9),
                pc(99.99),
                format_ns(l.max_ns as f64),
                match under.and_then(|u| u.share_pct.get(name)) {
                    Some(pct) if label == "service" => format!("{pct:.1}%"),
                    _ => String::new(),
                },
            ]);
        }
    }
    t.to_string()
}

/// The load statistics block (Symas-style): the database's logical size
/// (its files' lengths) apart from what it holds allocated on disk
/// (RocksDB preallocates its WAL), and the write amplification named by
/// its denominator, `-` when not measured (`load_notes` says why).
pub fn load_table(o: &PhaseOutcome) -> String {
    let l = &o.load;
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header([
        "wall",
        "user",
        "sys",
        "CPU%",
        "ctx vol",
        "ctx invol",
        "fs in",
        "fs out",
        "db size",
        "db allocated (incl. prealloc)",
        "dev read",
        "dev written",
        PER_KV_BYTES,
    ]);
    let secs = |ns: u64| format!("{:.2}s", ns as f64 / 1e9);
    let (dr, dw) = l
        .device
        .as_ref()
        .map(|d| (human(d.read_bytes), human(d.write_bytes)))
        .unwrap_or(("-".into(), "-".into()));
    t.add_row([
        secs(l.wall_ns),
        secs(l.cpu.user_ns),
        secs(l.cpu.sys_ns),
        format!("{:.0}", l.cpu.cpu_pct()),
        l.cpu.ctx_voluntary.to_string(),
        l.cpu.ctx_involuntary.to_string(),
        l.cpu.fs_in_blocks.to_string(),
        l.cpu.fs_out_blocks.to_string(),
        l.db_apparent_bytes.map_or("-".into(), human),
        l.db_size_bytes.map_or("-".into(), human),
        dr,
        dw,
        l.write_amplification
            .map(|w| format!("{w:.2}"))
            .unwrap_or_else(|| "-".into()),
    ]);
    t.to_string()
}

/// The lines under the load table: whose bytes the device columns are,
/// and why the write amplification is `-`. A server at `--server-url`
/// (no device, no size) gets none: nothing of this machine's disk is its.
pub fn load_notes(l: &LoadStats) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(d) = &l.device {
        out.push(format!("  dev read/written: {}", whole_device(&d.device)));
    }
    let measured = ratio(l.device.as_ref(), Some(l.logical_written_bytes));
    if let (None, Err(why), Some(_)) = (l.write_amplification, measured, &l.db_size_bytes) {
        out.push(format!("  write amp: not measured: {}", why.words()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::recorder::KvRecorder;
    use crate::measure::diskstats::DeviceStats;

    fn phase(load: LoadStats) -> PhaseOutcome {
        PhaseOutcome {
            rec: KvRecorder::new(&[], false),
            load,
            series: Vec::new(),
            duration_ns: 1,
            interrupted: false,
            max_backlog_ns: 0,
            lsm: None,
        }
    }

    /// Issue 44 item 7: a RocksDB phase printed `db size 74.4 MiB` (its
    /// preallocated WAL) for 429 KiB of database, and `write amp (dev /
    /// kv bytes) 0.00` when nothing had reached the device yet.
    #[test]
    fn db_size_is_logical_and_an_unmeasured_write_amp_is_not_zero() {
        let load = LoadStats {
            device: Some(DeviceStats {
                device: "vda".into(),
                ..Default::default()
            }),
            db_size_bytes: Some(78_014_464),
            db_apparent_bytes: Some(439_603),
            logical_written_bytes: 300_000,
            write_amplification: None,
            ..Default::default()
        };
        let t = load_table(&phase(load.clone()));
        let row = t.lines().nth(3).unwrap();
        let (size, alloc) = (
            row.find("429.3 KiB").unwrap(),
            row.find("74.4 MiB").unwrap(),
        );
        assert!(size < alloc, "db size first, then allocated: {t}");
        assert!(t.contains("db allocated (incl. prealloc)"), "{t}");
        assert!(
            t.contains("write amp (device bytes / kv bytes written)"),
            "{t}"
        );
        let last = row
            .trim_end_matches(['│', ' '])
            .rsplit("   ")
            .next()
            .unwrap();
        assert_eq!(last.trim(), "-", "{t}");
        let notes = load_notes(&load).join("\n");
        assert!(
            notes.contains("vda (whole device, all processes)"),
            "{notes}"
        );
        assert!(
            notes.contains("write amp: not measured: nothing reached the device"),
            "{notes}"
        );
    }
}
