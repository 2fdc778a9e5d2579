//! A few terminal lines about a run's analysis (the JSON has it all):
//! batching parallelism, load-latency knee, latency-target answers and
//! steady-state verdicts.

use crate::analysis::placement::PlacementPenalty;
use crate::analysis::types::{BatchingGroup, LatencyTargetGroup, LoadLatencyGroup, SteadyGroup};
use crate::analysis::Analysis;
use crate::plan::parse::{format_ns, format_size};

/// One line per batching group, load-latency group, latency-target search
/// and steady-state run.
pub fn analysis_lines(a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(a.batching.iter().filter_map(batching_line));
    out.extend(a.load_latency.iter().map(load_latency_line));
    out.extend(a.latency_target.iter().map(latency_target_line));
    out.extend(a.steady_state.iter().map(steady_line));
    out.extend(a.placement.iter().map(placement_line));
    out
}

/// `--sweep placement`: the off-node/on-node ratios of one job.
fn placement_line(g: &PlacementPenalty) -> String {
    let r = |v: Option<f64>| v.map_or("?".to_string(), |x| format!("{x:.3}"));
    let n = |v: Option<u32>| v.map_or("?".to_string(), |x| x.to_string());
    format!(
        "placement [{}]: off-node (node {}) / on-node (node {}): IOPS {}, mean latency {}, p99 latency {}",
        g.group,
        n(g.off_node),
        n(g.on_node),
        r(g.iops_off_over_on),
        r(g.mean_lat_off_over_on),
        r(g.p99_lat_off_over_on)
    )
}

/// A number as the JSON has it ("99.0", "null").
fn json_num(v: Option<f64>) -> String {
    serde_json::json!(v).to_string()
}

fn batching_line(g: &BatchingGroup) -> Option<String> {
    let p = g.parallelism.as_ref()?;
    Some(format!(
        "batching [{}]: effective parallelism {:.1}x (B={}, k={}); 90% of it at k={}",
        g.group,
        p.max_speedup,
        format_size(p.bs),
        p.k_at_max,
        p.k_reaching_90pct
    ))
}

fn load_latency_line(g: &LoadLatencyGroup) -> String {
    format!(
        "load-latency [{}]: knee {} (the highest rate whose p99 from the intended issue time stays under {}x the lowest rate's, {}); saturation: {}; max achieved {:.0} IOPS",
        g.group,
        match &g.knee {
            Some(k) => format!("{:.0} IOPS", k.achieved_iops),
            None if g.curve.len() < crate::analysis::loadlat::MIN_CURVE_POINTS =>
                "none: one rate is no curve (give --rate several rates)".to_string(),
            None => "none".to_string(),
        },
        g.knee_factor,
        format_ns(g.unloaded_p99_ns),
        g.saturation.first_short_target_iops.map_or(
            "not reached (every rate was achieved)".to_string(),
            |v| format!("the device fell short first at a target of {v:.0} IOPS")
        ),
        g.saturation.max_achieved_iops.unwrap_or(f64::NAN)
    )
}

fn latency_target_line(g: &LatencyTargetGroup) -> String {
    format!(
        "latency target [{}]: p{} <= {}: largest {} = {} ({} steps)",
        g.group,
        json_num(g.percentile),
        format_ns(g.target_ns.map_or(f64::NAN, |v| v as f64)),
        g.variable.as_deref().unwrap_or("?"),
        g.answer
            .map_or("none meets it".to_string(), |v| format!("{v:.0}")),
        g.steps.len()
    )
}

fn steady_line(g: &SteadyGroup) -> String {
    format!(
        "steady state [{}]: {} after {} round(s){}",
        g.group,
        if g.steady { "reached" } else { "NOT reached" },
        g.rounds.len(),
        match &g.window_check {
            None => String::new(),
            Some(w) => format!(
                " (window rounds {}..{}, mean {:.1}, range {:.1}%, excursion {:.1}%)",
                w.first_round as f64 + 1.0,
                w.last_round as f64 + 1.0,
                w.mean,
                100.0 * w.range / w.mean.abs(),
                100.0 * w.excursion / w.mean.abs()
            ),
        }
    )
}
