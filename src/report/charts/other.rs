//! Charts for sections other verbs add: database (kv) throughput, latency
//! per operation, readers sweep and load statistics; per-request stage
//! breakdowns; steady-state convergence. Shapes are read tolerantly: a
//! missing or unknown field skips the chart instead of failing the report.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{param_u64, Section, Table};
use crate::analysis::steady::Criterion;
use crate::report::fmt;
use crate::report::svg::{self, Axis, BarChart, LineChart, Scale, Series};
use crate::results::{Point, Results};

/// (x, y, hover text)
type Pt = (f64, f64, String);

fn kv_points(r: &Results) -> Vec<&Point> {
    r.points
        .iter()
        .filter(|p| p.extra.contains_key("kv"))
        .collect()
}

/// Database sections: throughput per workload, latency per operation,
/// readers sweep, load statistics.
pub fn kv(r: &Results) -> Vec<Section> {
    let pts = kv_points(r);
    if pts.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let workload = |p: &Point| {
        p.params
            .get("workload")
            .cloned()
            .unwrap_or_else(|| p.name.clone())
    };
    let engine = |p: &Point| p.params.get("engine").cloned().unwrap_or_default();
    // Throughput per workload (not the readers sweep points).
    let plain: Vec<&Point> = pts
        .iter()
        .copied()
        .filter(|p| !p.params.contains_key("readers"))
        .collect();
    if !plain.is_empty() {
        let mut cats: Vec<String> = Vec::new();
        for p in &plain {
            let w = workload(p);
            if !cats.contains(&w) {
                cats.push(w);
            }
        }
        let engines: BTreeSet<String> = plain.iter().map(|p| engine(p)).collect();
        let mut table = Table::new(&["workload", "engine", "ops/s", "ops"]);
        let stacks: Vec<(String, Vec<f64>)> = engines
            .iter()
            .map(|e| {
                let v = cats
                    .iter()
                    .map(|w| {
                        plain
                            .iter()
                            .filter(|p| &engine(p) == e && &workload(p) == w)
                            .map(|p| p.total.iops)
                            .next_back()
                            .unwrap_or(0.0)
                    })
                    .collect();
                (
                    if e.is_empty() {
                        "ops/s".into()
                    } else {
                        e.clone()
                    },
                    v,
                )
            })
            .collect();
        for p in &plain {
            table.rows.push(vec![
                workload(p),
                engine(p),
                format!("{:.0}", p.total.iops),
                p.total.ops.to_string(),
            ]);
        }
        out.push(Section {
            id: "kv-throughput".into(),
            title: "Database throughput per workload".into(),
            note: "Operations per second of each workload phase, one bar per engine.".into(),
            svgs: vec![svg::bar_chart(&BarChart {
                title: "Throughput per workload".into(),
                y_title: "operations per second".into(),
                y_fmt: fmt::count,
                categories: cats,
                stacks,
                stacked: false,
            })],
            table,
        });
        // Latency per operation.
        let mut cats = Vec::new();
        let (mut mean, mut p99) = (Vec::new(), Vec::new());
        let mut table = Table::new(&[
            "workload", "engine", "op", "count", "mean ns", "p95 ns", "p99 ns", "max ns",
        ]);
        for p in &plain {
            for (op, o) in &p.ops {
                let Some(l) = &o.lat else { continue };
                let e = engine(p);
                cats.push(format!(
                    "{} {op}{}",
                    workload(p),
                    if engines.len() > 1 {
                        format!(" ({e})")
                    } else {
                        String::new()
                    }
                ));
                mean.push(l.mean_ns);
                p99.push(l.percentile(99.0).unwrap_or(0) as f64);
                table.rows.push(vec![
                    workload(p),
                    e,
                    op.clone(),
                    l.n.to_string(),
                    format!("{:.0}", l.mean_ns),
                    l.percentile(95.0).unwrap_or(0).to_string(),
                    l.percentile(99.0).unwrap_or(0).to_string(),
                    l.max_ns.to_string(),
                ]);
            }
        }
        if !cats.is_empty() {
            out.push(Section {
                id: "kv-latency".into(),
                title: "Database latency per operation".into(),
                note: "Client-side latency of each operation kind (from the intended start time when the run was rate-limited).".into(),
                svgs: vec![svg::bar_chart(&BarChart {
                    title: "Latency per operation".into(),
                    y_title: "latency".into(),
                    y_fmt: fmt::ns,
                    categories: cats,
                    stacks: vec![("mean".into(), mean), ("p99".into(), p99)],
                    stacked: false,
                })],
                table,
            });
        }
    }
    // Readers sweep.
    let sweep: Vec<&Point> = pts
        .iter()
        .copied()
        .filter(|p| param_u64(p, "readers").is_some())
        .collect();
    if sweep.len() >= 2 {
        let mut lines: BTreeMap<(String, String), Vec<Pt>> = BTreeMap::new();
        let mut table = Table::new(&["engine", "readers", "op", "ops/s"]);
        for p in &sweep {
            let n = param_u64(p, "readers").unwrap_or(0) as f64;
            for (op, o) in &p.ops {
                lines.entry((engine(p), op.clone())).or_default().push((
                    n,
                    o.iops,
                    format!(
                        "{} {op}, {n} readers: {} ops/s",
                        engine(p),
                        fmt::count(o.iops)
                    ),
                ));
                table.rows.push(vec![
                    engine(p),
                    n.to_string(),
                    op.clone(),
                    format!("{:.0}", o.iops),
                ]);
            }
        }
        let series: Vec<Series> = lines
            .into_iter()
            .enumerate()
            .map(|(i, ((e, op), mut v))| {
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    label: format!("{e} {op}").trim().to_string(),
                    points: v,
                    dashed: op != "read",
                    color: i,
                    line: true,
                }
            })
            .collect();
        let xs = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
        let ys = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        out.push(Section {
            id: "kv-readers".into(),
            title: "Readers sweep".into(),
            note: "Read and write throughput as reader threads are added next to one writer (readwhilewriting).".into(),
            svgs: vec![svg::line_chart(&LineChart {
                title: "Throughput vs reader threads".into(),
                x: Axis::new("reader threads", xs, fmt::plain),
                y: Axis::new("operations per second", ys, fmt::count),
                series,
                shade: None,
                marks: vec![],
                hlines: vec![],
            })],
            table,
        });
    }
    // Load statistics table.
    let mut cols: Vec<String> = Vec::new();
    let mut rows: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for p in &pts {
        let Some(load) = p.extra.get("kv").and_then(|k| k.get("load")) else {
            continue;
        };
        let mut flat = BTreeMap::new();
        flatten("", load, &mut flat, 0);
        for k in flat.keys() {
            if !cols.contains(k) {
                cols.push(k.clone());
            }
        }
        rows.push((p.name.clone(), flat));
    }
    if !rows.is_empty() {
        let mut table = Table::default();
        table.headers.push("point".into());
        table.headers.extend(cols.iter().cloned());
        for (name, flat) in rows {
            let mut row = vec![name];
            row.extend(
                cols.iter()
                    .map(|c| flat.get(c).cloned().unwrap_or_default()),
            );
            table.rows.push(row);
        }
        out.push(Section {
            id: "kv-load".into(),
            title: "Database load statistics".into(),
            note: "Wall, CPU, context switches, filesystem operations and sizes of each phase."
                .into(),
            svgs: vec![],
            table,
        });
    }
    out
}

/// Flatten scalar fields of a JSON object into "a.b" keys (two levels).
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>, depth: usize) {
    match v {
        Value::Object(m) if depth < 2 => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out, depth + 1);
            }
        }
        Value::Number(n) => {
            let s = n
                .as_f64()
                .map(|f| {
                    if f.fract() == 0.0 {
                        format!("{f:.0}")
                    } else {
                        format!("{f:.3}")
                    }
                })
                .unwrap_or_else(|| n.to_string());
            out.insert(prefix.to_string(), s);
        }
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        Value::Bool(b) => {
            out.insert(prefix.to_string(), b.to_string());
        }
        _ => {}
    }
}

/// The breakdown object of a point: `extra.breakdown` or `extra.trace.breakdown`.
fn breakdown_of(p: &Point) -> Option<&Value> {
    p.extra
        .get("breakdown")
        .or_else(|| p.extra.get("trace").and_then(|t| t.get("breakdown")))
        .filter(|b| b.get("stages").map(|s| s.is_array()).unwrap_or(false))
}

/// Stacked bars of mean time per stage of a request.
pub fn breakdown(r: &Results) -> Option<Section> {
    let pts: Vec<(&Point, &Value)> = r
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
    steady_from_analysis(r).or_else(|| steady_from_points(r))
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

/// Convergence from a point's own `extra.steady_state` object.
fn steady_from_points(r: &Results) -> Option<Section> {
    let mut series = Vec::new();
    let mut table = Table::new(&["point", "round", "value"]);
    let mut hlines = Vec::new();
    let mut shade = None;
    for (i, p) in r.points.iter().enumerate() {
        let Some(ss) = p.extra.get("steady_state").filter(|v| v.is_object()) else {
            continue;
        };
        let vals: Vec<f64> = ["rounds", "values", "series"]
            .iter()
            .find_map(|k| ss.get(*k).and_then(|v| v.as_array()))
            .map(|a| {
                a.iter()
                    .filter_map(|v| {
                        v.as_f64()
                            .or_else(|| v.get("value").and_then(|x| x.as_f64()))
                            .or_else(|| v.get("iops").and_then(|x| x.as_f64()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if vals.len() < 2 {
            continue;
        }
        let pts: Vec<(f64, f64, String)> = vals
            .iter()
            .enumerate()
            .map(|(k, v)| {
                table
                    .rows
                    .push(vec![p.name.clone(), (k + 1).to_string(), fmt::plain(*v)]);
                (
                    (k + 1) as f64,
                    *v,
                    format!("{} round {}: {}", p.name, k + 1, fmt::plain(*v)),
                )
            })
            .collect();
        if let Some(b) = ss.get("bounds").and_then(|b| b.as_array()) {
            for (v, l) in b
                .iter()
                .filter_map(|x| x.as_f64())
                .zip(["lower bound", "upper bound"])
            {
                hlines.push((v, l.to_string()));
            }
        }
        if let Some(w) = ss.get("window").and_then(|w| w.as_array()) {
            if let (Some(a), Some(b)) = (
                w.first().and_then(|x| x.as_f64()),
                w.get(1).and_then(|x| x.as_f64()),
            ) {
                shade = Some((a, b, "steady-state window".to_string()));
            }
        }
        series.push(Series {
            label: p.name.clone(),
            points: pts,
            dashed: false,
            color: i,
            line: true,
        });
    }
    if series.is_empty() {
        return None;
    }
    Some(Section {
        id: "steady-state".into(),
        title: "Steady-state convergence".into(),
        note: "The tracked value per round; steady when, over the window, the range and the slope stay within the bounds (SNIA PTS).".into(),
        svgs: vec![svg::line_chart(&LineChart {
            title: "Convergence".into(),
            x: Axis::new("round", Scale::Linear, fmt::plain),
            y: Axis::new("tracked value", Scale::Linear, fmt::count),
            series,
            shade,
            marks: vec![],
            hlines,
        })],
        table,
    })
}
