//! Headline numbers of a results file (max 4k random IOPS, max bandwidth,
//! unloaded latency, batching parallelism, load-latency knee, steady
//! state, stack breakdown shares) and the de-duplicated list of
//! warnings, shared by the terminal summary, HTML and Markdown.

use crate::analysis::types::{LoadLatencyGroup, SteadyGroup};
use crate::report::charts::{batch_of, bs_of, param_u64, read_pct, rw_of};
use crate::report::fmt;
use crate::results::{Point, Results};

/// One headline: label, value, where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    pub label: String,
    pub value: String,
    pub detail: String,
}

fn best<'a>(
    pts: impl Iterator<Item = &'a Point>,
    key: impl Fn(&Point) -> f64,
) -> Option<&'a Point> {
    pts.max_by(|a, b| key(a).total_cmp(&key(b)))
}

/// Every headline of `r`, in the order they are shown.
pub fn headlines(r: &Results) -> Vec<Headline> {
    let mut out = throughput_headlines(r);
    out.extend(latency_headlines(r));
    out.extend(batching_headlines(r));
    out.extend(r.analysis.load_latency.iter().map(knee_headline));
    out.extend(r.analysis.steady_state.iter().map(steady_headline));
    out.extend(r.points.iter().filter_map(trace_headline));
    out.extend(kv_headline(r));
    out
}

/// Device points (not database operations).
fn device_points(r: &Results) -> impl Iterator<Item = &Point> {
    r.points.iter().filter(|p| !p.extra.contains_key("kv"))
}

/// Max 4k random IOPS and max bandwidth, read and write.
fn throughput_headlines(r: &Results) -> Vec<Headline> {
    let mut out = Vec::new();
    let small_random =
        |p: &&Point| rw_of(p).starts_with("rand") && bs_of(p).is_some_and(|b| b <= 4096);
    for (label, want) in [
        ("max 4k random read IOPS", 100),
        ("max 4k random write IOPS", 0),
    ] {
        if let Some(p) = best(
            device_points(r)
                .filter(small_random)
                .filter(|p| read_pct(p) == Some(want)),
            |p| p.total.iops,
        ) {
            out.push(Headline {
                label: label.into(),
                value: fmt::count(p.total.iops),
                detail: p.name.clone(),
            });
        }
    }
    for (label, want) in [("max read bandwidth", 100), ("max write bandwidth", 0)] {
        if let Some(p) = best(
            device_points(r).filter(|p| read_pct(p) == Some(want)),
            |p| p.total.mib_s,
        ) {
            if p.total.mib_s > 0.0 {
                out.push(Headline {
                    label: label.into(),
                    value: format!("{} MiB/s", fmt::mib(p.total.mib_s)),
                    detail: p.name.clone(),
                });
            }
        }
    }
    out
}

/// Unloaded latency: QD1, not batched, smallest block.
fn latency_headlines(r: &Results) -> Vec<Headline> {
    let mut out = Vec::new();
    for (label, want) in [
        ("QD1 random read latency", 100),
        ("QD1 random write latency", 0),
    ] {
        let p = device_points(r)
            .filter(|p| param_u64(p, "qd") == Some(1) && batch_of(p).is_none())
            .filter(|p| rw_of(p).starts_with("rand") && read_pct(p) == Some(want))
            .min_by_key(|p| bs_of(p).unwrap_or(u64::MAX));
        if let Some(l) = p.and_then(|p| p.main_lat().map(|l| (p, l))) {
            out.push(Headline {
                label: label.into(),
                value: format!(
                    "{} mean, {} p99",
                    fmt::ns(l.1.mean_ns),
                    fmt::ns(l.1.percentile(99.0).unwrap_or(0) as f64)
                ),
                detail: l.0.name.clone(),
            });
        }
    }
    out
}

/// The effective parallelism of every batching group.
fn batching_headlines(r: &Results) -> Vec<Headline> {
    let mut out = Vec::new();
    for g in &r.analysis.batching {
        if let Some(p) = &g.parallelism {
            out.push(Headline {
                label: "batching: effective parallelism".into(),
                value: fmt::times(p.max_speedup),
                detail: format!(
                    "{} B={} at k={}; 90% of it from k={}",
                    g.group,
                    fmt::bytes(p.bs as f64),
                    p.k_at_max,
                    p.k_reaching_90pct
                ),
            });
        }
    }
    out
}

/// The load-latency knee and saturation of one open-loop group.
fn knee_headline(g: &LoadLatencyGroup) -> Headline {
    Headline {
        label: "load-latency knee".into(),
        value: g.knee.as_ref().map_or("none".into(), |k| {
            format!("{} IOPS", fmt::count(k.achieved_iops))
        }),
        detail: format!(
            "p99 under {}x the unloaded {}; max achieved {} IOPS open loop",
            g.knee_factor,
            fmt::ns(g.unloaded_p99_ns),
            fmt::count(g.saturation.max_achieved_iops.unwrap_or(0.0))
        ),
    }
}

/// Whether a steady-state run converged.
fn steady_headline(g: &SteadyGroup) -> Headline {
    Headline {
        label: "steady state".into(),
        value: if g.steady {
            "reached".into()
        } else {
            "NOT reached".into()
        },
        detail: format!(
            "{} after {} round(s), {}",
            g.metric.name(),
            g.rounds.len(),
            g.group
        ),
    }
}

/// Software and device shares of a traced point.
fn trace_headline(p: &Point) -> Option<Headline> {
    let t = p.extra.trace.as_ref()?;
    let b = t.breakdown.as_ref()?;
    let (sw, dev) = (b.software_share, b.device_share);
    Some(Headline {
        label: "stack breakdown".into(),
        value: format!("{:.0}% software / {:.0}% device", 100.0 * sw, 100.0 * dev),
        detail: format!("{}: mean {} traced", p.name, fmt::ns(t.traced_mean_ns)),
    })
}

/// The fastest database point.
fn kv_headline(r: &Results) -> Option<Headline> {
    let kv = r.points.iter().filter(|p| p.extra.contains_key("kv"));
    let p = best(kv, |p| p.total.iops)?;
    Some(Headline {
        label: "max database ops/s".into(),
        value: fmt::count(p.total.iops),
        detail: p.name.clone(),
    })
}

/// Run warnings, then point warnings prefixed with the point name, without repeats.
pub fn warnings(r: &Results) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |w: String| {
        if !out.contains(&w) {
            out.push(w);
        }
    };
    for w in &r.warnings {
        push(w.clone());
    }
    // The same warning on many points is said once, naming how many.
    let mut counts: Vec<(String, Vec<String>)> = Vec::new();
    for p in &r.points {
        for w in &p.warnings {
            match counts.iter_mut().find(|(x, _)| x == w) {
                Some((_, names)) => names.push(p.name.clone()),
                None => counts.push((w.clone(), vec![p.name.clone()])),
            }
        }
    }
    for (w, names) in counts {
        if names.len() == 1 {
            push(format!("{}: {w}", names[0]));
        } else {
            push(format!("{} points ({}, ...): {w}", names.len(), names[0]));
        }
    }
    if r.interrupted {
        push(
            "the run was interrupted: this report holds the points measured before the signal"
                .into(),
        );
    } else if !r.complete {
        push("the results are incomplete (the run was still going or was killed)".into());
    }
    out
}
