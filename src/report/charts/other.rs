//! Charts for sections other verbs add: per-request stage breakdowns and
//! steady-state convergence (database charts are in `kv`). Shapes are read
//! tolerantly: a missing or unknown field skips the chart.

use serde_json::Value;

use super::{Section, Table};
use crate::analysis::steady::Criterion;
use crate::figures::fmt;
use crate::report::svg::{self, Axis, BarChart, LineChart, Scale, Series};
use crate::results::{Point, Results};

/// The breakdown of a point with stages (`PointExt::breakdown_json`).
fn breakdown_of(p: &Point) -> Option<Value> {
    p.extra
        .breakdown_json()
        .filter(|b| b.get("stages").map(|s| s.is_array()).unwrap_or(false))
}

/// Stacked bars of mean time per stage of a request.
pub fn breakdown(r: &Results) -> Option<Section> {
    let pts: Vec<(&Point, Value)> = r
        .points
        .iter()
        .filter_map(|p| breakdown_of(p).map(|b| (p, b)))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let mut stages: Vec<String> = Vec::new();
    for (_, b) in &pts {
        for s in b["stages"].as_array().into_iter().flatten() {
            if let Some(name) = s.get("stage").and_then(|v| v.as_str()) {
                if !stages.iter().any(|x| x == name) {
                    stages.push(name.to_string());
                }
            }
        }
    }
    let stage_of = |b: &'_ Value, stage: &str| -> Option<Value> {
        b["stages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s.get("stage").and_then(|v| v.as_str()) == Some(stage))
            .cloned()
    };
    // `per_request_ns` is the stage's contribution to the mean request (the
    // stages add up to it); `mean_ns` is per occurrence, like btt's, and
    // only stacks for stages every request passes once.
    let mean_of = |b: &Value, stage: &str| -> f64 {
        stage_of(b, stage)
            .and_then(|s| {
                s.get("per_request_ns")
                    .or_else(|| s.get("mean_ns"))
                    .and_then(|v| v.as_f64())
            })
            .unwrap_or(0.0)
    };
    let mut table = Table::new(&[
        "point",
        "stage",
        "per request ns",
        "mean per occurrence ns",
        "share",
    ]);
    for (p, b) in &pts {
        for st in &stages {
            let s = stage_of(b, st);
            let f = |k: &str| s.as_ref().and_then(|s| s.get(k)).and_then(|v| v.as_f64());
            table.rows.push(vec![
                p.name.clone(),
                st.clone(),
                format!("{:.0}", mean_of(b, st)),
                f("mean_ns").map(|v| format!("{v:.0}")).unwrap_or_default(),
                f("share")
                    .map(|s| format!("{:.1}%", s * 100.0))
                    .unwrap_or_default(),
            ]);
        }
    }
    let stacks = stages
        .iter()
        .map(|st| {
            (
                st.clone(),
                pts.iter().map(|(_, b)| mean_of(b, st)).collect(),
            )
        })
        .collect();
    Some(Section {
        id: "breakdown".into(),
        title: "Where the time of a request goes".into(),
        note: "Each stage's contribution to the mean request through the I/O stack (user, kernel submission, block layer, driver and device), stacked: the bars add up to the mean latency of the traced run. The table also gives the mean per occurrence (like btt).".into(),
        svgs: vec![svg::bar_chart(&BarChart {
            title: "Stage breakdown".into(),
            y_title: "time per request (stacked stages)".into(),
            y_fmt: fmt::ns,
            categories: pts.iter().map(|(p, _)| p.name.clone()).collect(),
            stacks,
            stacked: true,
        })],
        table,
    })
}

/// Steady-state convergence: the tracked value per round, the window and
/// its bounds, from `extra.steady_state` (`rounds`/`values` array, optional
/// `window` [start, end] and `bounds` [lo, hi]).
pub fn steady_state(r: &Results) -> Option<Section> {
    steady_from_analysis(r)
}

/// One convergence chart per group of `analysis.steady_state` (what
/// `iolab device --steady-state` writes): the tracked value per round, the
/// window shaded, its mean, the bounds (SNIA: 90% and 110% of the window
/// mean; fio-range: the limit) and the window's least-squares slope.
fn steady_from_analysis(r: &Results) -> Option<Section> {
    let groups = &r.analysis.steady_state;
    let mut svgs = Vec::new();
    let mut table = Table::new(&["group", "round", "value", "in window"]);
    for g in groups {
        let vals: Vec<f64> = g.rounds.iter().copied().filter(|v| v.is_finite()).collect();
        if vals.is_empty() {
            continue;
        }
        let group = g.group.clone();
        let metric = g.metric.name().to_string();
        let w = g.window_check.as_ref();
        let win = w.map(|w| (w.first_round as f64 + 1.0, w.last_round as f64 + 1.0));
        let pts: Vec<(f64, f64, String)> = vals
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let x = (k + 1) as f64;
                let inside = win.is_some_and(|(a, b)| x >= a && x <= b);
                table.rows.push(vec![
                    group.clone(),
                    (k + 1).to_string(),
                    fmt::plain(*v),
                    if inside { "yes" } else { "" }.into(),
                ]);
                (
                    x,
                    *v,
                    format!("round {}: {} {}", k + 1, fmt::plain(*v), metric),
                )
            })
            .collect();
        let mut series = vec![Series {
            label: format!("{metric} per round"),
            points: pts,
            dashed: false,
            color: 0,
            line: true,
        }];
        let mut hlines = Vec::new();
        if let (Some(w), Some((a, b))) = (w, win) {
            let mean = w.mean;
            hlines.push((mean, "window mean".to_string()));
            let half = match g.criterion {
                Criterion::FioRange { limit } => Some(limit),
                Criterion::FioSlope { .. } => None,
                Criterion::Snia => Some(0.10),
            };
            if let Some(h) = half {
                hlines.push((
                    mean * (1.0 + h),
                    format!("{:.0}% of mean", 100.0 * (1.0 + h)),
                ));
                hlines.push((
                    mean * (1.0 - h),
                    format!("{:.0}% of mean", 100.0 * (1.0 - h)),
                ));
            }
            {
                let slope = w.slope;
                let xm = (a + b) / 2.0;
                series.push(Series {
                    label: "window slope (least squares)".into(),
                    points: [a, b]
                        .iter()
                        .map(|&x| {
                            let y = mean + slope * (x - xm);
                            (x, y, format!("slope {} per round", fmt::plain(slope)))
                        })
                        .collect(),
                    dashed: true,
                    color: 1,
                    line: true,
                });
            }
        }
        let steady = g.steady;
        svgs.push(svg::line_chart(&LineChart {
            title: format!(
                "{group}: {}",
                if steady {
                    "steady state reached"
                } else {
                    "steady state NOT reached"
                }
            ),
            x: Axis::new("round", Scale::Linear, fmt::plain),
            y: Axis::new(&metric, Scale::Linear, fmt::count),
            series,
            shade: win.map(|(a, b)| (a, b, "steady-state window".to_string())),
            marks: vec![],
            hlines,
        }));
    }
    if svgs.is_empty() {
        return None;
    }
    Some(Section {
        id: "steady-state".into(),
        title: "Steady-state convergence".into(),
        note: "The tracked value per round; steady when, over the window (shaded), the values stay within the bounds and the least-squares slope is small (SNIA PTS: range within 20% and slope excursion within 10% of the window mean).".into(),
        svgs,
        table,
    })
}
