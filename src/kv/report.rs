//! Terminal output of `iolab kv`: YCSB-style per-operation summary lines,
//! iolab's percentile table, and the load statistics of each phase.

use super::phase::PhaseOutcome;
use super::recorder::KvOp;
use crate::plan::parse::format_ns;
pub use crate::plan::parse::human_bytes as human;
use crate::results::Point;
use comfy_table::Table;

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// YCSB's `[OP], Metric, value` lines (latencies in microseconds).
pub fn ycsb_lines(o: &PhaseOutcome) -> String {
    let mut s = String::new();
    let secs = o.duration_ns as f64 / 1e9;
    let total: u64 = KvOp::ALL
        .iter()
        .filter(|k| !matches!(k, KvOp::RmwRead | KvOp::RmwUpdate))
        .map(|k| o.rec.ops[k.idx()])
        .sum();
    s += &format!(
        "[OVERALL], RunTime(ms), {:.0}\n",
        o.duration_ns as f64 / 1e6
    );
    s += &format!(
        "[OVERALL], Throughput(ops/sec), {:.1}\n",
        total as f64 / secs.max(1e-9)
    );
    for k in KvOp::ALL {
        let Some(st) = o.rec.service[k.idx()].as_ref().and_then(|h| h.stats()) else {
            continue;
        };
        let l = k.ycsb_label();
        s += &format!("[{l}], Operations, {}\n", o.rec.ops[k.idx()]);
        s += &format!("[{l}], AverageLatency(us), {:.3}\n", st.mean_ns / 1e3);
        s += &format!("[{l}], MinLatency(us), {:.3}\n", us(st.min_ns));
        s += &format!("[{l}], MaxLatency(us), {:.3}\n", us(st.max_ns));
        for p in [50.0, 95.0, 99.0] {
            s += &format!(
                "[{l}], {p:.0}thPercentileLatency(us), {:.3}\n",
                us(st.percentile(p).unwrap_or(0))
            );
        }
        if let Some(ist) = o.rec.intended[k.idx()].as_ref().and_then(|h| h.stats()) {
            s += &format!(
                "[Intended-{l}], AverageLatency(us), {:.3}\n",
                ist.mean_ns / 1e3
            );
            s += &format!(
                "[Intended-{l}], 99thPercentileLatency(us), {:.3}\n",
                us(ist.percentile(99.0).unwrap_or(0))
            );
        }
    }
    s
}

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

/// The load statistics block (Symas-style).
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
        "dev read",
        "dev written",
        "write amp (dev / kv bytes)",
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
        l.db_size_bytes.map_or("-".into(), human),
        dr,
        dw,
        l.write_amplification
            .map(|w| format!("{w:.2}"))
            .unwrap_or_else(|| "-".into()),
    ]);
    t.to_string()
}
