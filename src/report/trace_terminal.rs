//! `iolab trace` on a terminal: each traced configuration's stage table,
//! tracing overhead and lost events, and the summary table comparing them.

use crate::trace::config::ConfigResult;
use crate::trace::stages::render;

/// One traced configuration: its stage table, the tracing overhead and
/// whether events were lost.
pub fn config_text(r: &ConfigResult) -> String {
    let mut out = format!("\n== {} ==\n", r.label);
    if let Some(b) = &r.breakdown {
        out.push_str(&render(b));
    }
    let ov = match (r.untraced_mean_ns, r.overhead) {
        (Some(u), Some(o)) => format!(
            "tracing overhead: mean latency {:.1} us traced vs {:.1} us untraced ({:+.1}%), IOPS {:.0} vs {:.0}",
            r.traced_mean_ns / 1e3,
            u / 1e3,
            if r.overhead_pairs.len() > 1 { (r.traced_mean_ns / u - 1.0) * 100.0 } else { o * 100.0 },
            r.traced_iops,
            r.untraced_iops.unwrap_or(0.0)
        ),
        (Some(u), None) => format!("untraced: mean latency {:.1} us, IOPS {:.0}", u / 1e3, r.untraced_iops.unwrap_or(0.0)),
        _ => format!("traced: mean latency {:.1} us, IOPS {:.0}", r.traced_mean_ns / 1e3, r.traced_iops),
    };
    out.push_str(&format!("{ov}\n"));
    if r.overhead_pairs.len() > 1 {
        let v: Vec<String> = r
            .overhead_pairs
            .iter()
            .map(|o| format!("{:+.1}%", o * 100.0))
            .collect();
        out.push_str(&format!(
            "tracing overhead: median {:+.1}% over {} pairs in alternating order: {}\n",
            r.overhead.unwrap_or(0.0) * 100.0,
            v.len(),
            v.join(" ")
        ));
    }
    out.push_str(&crate::trace::point_tracer::events_text(r, "--buffer-kb"));
    out
}

/// The table comparing every configuration of an `iolab trace` run.
pub fn summary(all: &[ConfigResult]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header([
        "configuration",
        "mean us",
        "software us",
        "block us",
        "device us",
        "software %",
        "overhead",
    ]);
    for r in all {
        let Some(b) = &r.breakdown else { continue };
        let mean = b.total.mean_ns;
        let block: f64 = b
            .stages
            .iter()
            .filter(|s| {
                matches!(
                    s.stage.as_str(),
                    "Q2G" | "G2I" | "I2D" | "G2D" | "Q2M" | "M2D" | "Q2D"
                )
            })
            .map(|s| s.mean_ns * s.n as f64 / b.requests.max(1) as f64)
            .sum();
        t.add_row([
            r.label.clone(),
            format!("{:.1}", mean / 1e3),
            format!("{:.1}", mean * b.software_share / 1e3),
            format!("{:.1}", block / 1e3),
            format!("{:.1}", mean * b.device_share / 1e3),
            format!("{:.1}%", b.software_share * 100.0),
            r.overhead
                .map(|o| format!("{:+.1}%", o * 100.0))
                .unwrap_or_default(),
        ]);
    }
    t.to_string()
}
