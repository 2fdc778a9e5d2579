//! Headline numbers of a results file (max 4k random IOPS, max bandwidth,
//! unloaded latency, best batching speedup) and the de-duplicated list of
//! warnings, shared by the terminal summary, HTML and Markdown.

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

pub fn headlines(r: &Results) -> Vec<Headline> {
    let mut out = Vec::new();
    let dev = || r.points.iter().filter(|p| !p.extra.contains_key("kv"));
    let small_random =
        |p: &&Point| rw_of(p).starts_with("rand") && bs_of(p).is_some_and(|b| b <= 4096);
    for (label, want) in [
        ("max 4k random read IOPS", 100),
        ("max 4k random write IOPS", 0),
    ] {
        if let Some(p) = best(
            dev()
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
        if let Some(p) = best(dev().filter(|p| read_pct(p) == Some(want)), |p| {
            p.total.mib_s
        }) {
            if p.total.mib_s > 0.0 {
                out.push(Headline {
                    label: label.into(),
                    value: format!("{} MiB/s", fmt::mib(p.total.mib_s)),
                    detail: p.name.clone(),
                });
            }
        }
    }
    // Unloaded latency: QD1, not batched, smallest block.
    for (label, want) in [
        ("QD1 random read latency", 100),
        ("QD1 random write latency", 0),
    ] {
        let p = dev()
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
    if let Some(s) = crate::report::charts::device::batching(r) {
        // rows: rw, bs, k, per-block, speedup
        if let Some(row) = s
            .table
            .rows
            .iter()
            .max_by(|a, b| parse(&a[4]).total_cmp(&parse(&b[4])))
        {
            out.push(Headline {
                label: "best batching speedup".into(),
                value: fmt::times(parse(&row[4])),
                detail: format!("{} {} at k={}", row[0], row[1], row[2]),
            });
        }
    }
    let kv: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| p.extra.contains_key("kv"))
        .collect();
    if let Some(p) = best(kv.into_iter(), |p| p.total.iops) {
        out.push(Headline {
            label: "max database ops/s".into(),
            value: fmt::count(p.total.iops),
            detail: p.name.clone(),
        });
    }
    out
}

fn parse(s: &str) -> f64 {
    s.parse().unwrap_or(0.0)
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
