//! Device charts: IOPS and bandwidth vs block size, latency per block,
//! batching speedup, block size x mix heat map, load-latency curve.

use crate::results::Param;
use std::collections::{BTreeMap, BTreeSet};

use super::{batch_of, bs_of, is_device, is_write, label, read_pct, varying, Section, Table};
use crate::analysis::types::{LatSummary, LoadPoint};
use crate::figures::fmt;
use crate::figures::FigureId;
use crate::report::svg::{self, Axis, LineChart, Scale, Series};
use crate::results::{Point, Results};

type Group<'a> = (String, Vec<&'a Point>);

/// Group points by every param except `free` (the x axis), keeping groups
/// with at least two distinct x values, sorted by x inside.
fn groups_over<'a>(
    pts: &[&'a Point],
    free: &str,
    x: impl Fn(&Point) -> Option<u64>,
) -> Vec<Group<'a>> {
    let mut g: BTreeMap<Vec<(String, String)>, Vec<&Point>> = BTreeMap::new();
    for p in pts {
        if x(p).is_none() {
            continue;
        }
        let key: Vec<(String, String)> = p
            .params
            .iter()
            .filter(|(k, _)| k.as_str() != free && k.as_str() != "step")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        g.entry(key).or_default().push(p);
    }
    let mut out: Vec<(Vec<&Point>, BTreeSet<u64>)> = g
        .into_values()
        .map(|mut v| {
            v.sort_by_key(|p| x(p));
            let xs: BTreeSet<u64> = v.iter().filter_map(|p| x(p)).collect();
            (v, xs)
        })
        .filter(|(_, xs)| xs.len() >= 2)
        .collect();
    // Reads before writes, queue depths before batches, each by size.
    out.sort_by_key(|(v, _)| {
        v.first().map(|p| {
            (
                is_write(p),
                super::rw_of(p).to_string(),
                batch_of(p).is_some(),
                batch_of(p).unwrap_or(0),
                super::param_u64(p, Param::Qd).unwrap_or(0),
                super::param_u64(p, Param::Jobs).unwrap_or(0),
            )
        })
    });
    let all: Vec<&Point> = out.iter().flat_map(|(v, _)| v.iter().copied()).collect();
    let mut keys = varying(&all, &[free, "step"]);
    // The pattern always shows: read solid vs write dashed needs a name.
    if !keys.iter().any(|k| k == "rw") {
        keys.insert(0, "rw".into());
    }
    out.into_iter()
        .map(|(v, _)| (label(v[0], &keys), v))
        .collect()
}

fn main_mean(p: &Point) -> Option<f64> {
    p.main_lat().map(|l| l.mean_ns)
}

/// IOPS and MiB/s vs block size, a line per QD or batch size.
pub fn bs_sweep(r: &Results) -> Option<Section> {
    let pts: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| is_device(p) && matches!(read_pct(p), Some(0) | Some(100)))
        .collect();
    let groups = groups_over(&pts, "bs", bs_of);
    if groups.is_empty() {
        return None;
    }
    let mut table = Table::new(&["series", "bs", "IOPS", "MiB/s", "mean lat", "p99 lat"]);
    let mut iops = Vec::new();
    let mut bw = Vec::new();
    for (i, (name, ps)) in groups.iter().enumerate() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for p in ps {
            let bs = bs_of(p).unwrap_or(0) as f64;
            a.push((
                bs,
                p.total.iops,
                format!(
                    "{name}, bs {}: {} IOPS",
                    fmt::bytes(bs),
                    fmt::count(p.total.iops)
                ),
            ));
            b.push((
                bs,
                p.total.mib_s,
                format!(
                    "{name}, bs {}: {} MiB/s",
                    fmt::bytes(bs),
                    fmt::mib(p.total.mib_s)
                ),
            ));
            table.rows.push(vec![
                name.clone(),
                fmt::bytes(bs),
                format!("{:.0}", p.total.iops),
                format!("{:.2}", p.total.mib_s),
                super::main_latency(p, FigureId::LatMean),
                super::main_latency(p, FigureId::LatP99),
            ]);
        }
        let dashed = is_write(ps[0]);
        iops.push(Series {
            label: name.clone(),
            points: a,
            dashed,
            color: i,
            line: true,
        });
        bw.push(Series {
            label: name.clone(),
            points: b,
            dashed,
            color: i,
            line: true,
        });
    }
    let xaxis = Axis::new("block size", Scale::Log2, fmt::bytes);
    let chart = |title: &str, ytitle: &str, series: Vec<Series>, f: fn(f64) -> String| {
        let scale = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        svg::line_chart(&LineChart {
            title: title.into(),
            x: xaxis.clone(),
            y: Axis::new(ytitle, scale, f),
            series,
            shade: None,
            marks: vec![],
            hlines: vec![],
        })
    };
    Some(Section {
        id: "bs-sweep".into(),
        title: "IOPS and bandwidth vs block size".into(),
        note: "One line per queue depth or batch size; reads solid, writes dashed.".into(),
        svgs: vec![
            chart("IOPS vs block size", "IOPS", iops, fmt::count),
            chart("Bandwidth vs block size", "bandwidth (MiB/s)", bw, fmt::mib),
        ],
        table,
    })
}

/// Per-block time: batch time / K for batched points, mean latency otherwise.
pub fn per_block_ns(p: &Point) -> Option<f64> {
    match &p.batch {
        Some(b) if b.per_block_mean_ns > 0.0 => Some(b.per_block_mean_ns),
        _ => main_mean(p),
    }
}

/// Latency per block vs block size.
pub fn latency_per_block(r: &Results) -> Option<Section> {
    let pts: Vec<&Point> = r.points.iter().filter(|p| is_device(p)).collect();
    let groups = groups_over(&pts, "bs", bs_of);
    if groups.is_empty() {
        return None;
    }
    let mut table = Table::new(&["series", "bs", "per-block ns"]);
    let mut series = Vec::new();
    for (i, (name, ps)) in groups.iter().enumerate() {
        let mut v = Vec::new();
        for p in ps {
            let Some(y) = per_block_ns(p) else { continue };
            let bs = bs_of(p).unwrap_or(0) as f64;
            v.push((
                bs,
                y,
                format!("{name}, bs {}: {} per block", fmt::bytes(bs), fmt::ns(y)),
            ));
            table
                .rows
                .push(vec![name.clone(), fmt::bytes(bs), format!("{y:.0}")]);
        }
        series.push(Series {
            label: name.clone(),
            points: v,
            dashed: is_write(ps[0]),
            color: i,
            line: true,
        });
    }
    let scale = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    Some(Section {
        id: "latency-per-block".into(),
        title: "Latency per block vs block size".into(),
        note: "Batched points: batch time / K (the time one block costs when K are in flight); others: mean request latency.".into(),
        svgs: vec![svg::line_chart(&LineChart {
            title: "Latency per block vs block size".into(),
            x: Axis::new("block size", Scale::Log2, fmt::bytes),
            y: Axis::new("time per block", scale, fmt::ns),
            series,
            shade: None,
            marks: vec![],
            hlines: vec![],
        })],
        table,
    })
}

/// Every k measured in a batching group (for any block size).
fn ks_of(g: &crate::analysis::types::BatchingGroup) -> Vec<f64> {
    g.per_bs
        .iter()
        .flat_map(|b| b.speedup.iter().map(|c| c.k as f64))
        .collect()
}

/// Whether a series' x values have no value of `all` between two
/// neighbours: then a line between them draws only what was measured.
fn gapless(xs: impl Iterator<Item = f64>, all: &[f64]) -> bool {
    let mut xs: Vec<f64> = xs.collect();
    xs.sort_by(f64::total_cmp);
    xs.windows(2)
        .all(|w| !all.iter().any(|x| *x > w[0] && *x < w[1]))
}

/// Batching speedup = per-block time at the smallest K / per-block time at K.
pub fn batching(r: &Results) -> Option<Section> {
    batching_from_analysis(r)
}

/// Speedup vs k (a line per block size) and vs B (a line per k) from
/// `analysis.batching`, with the effective parallelism marked.
fn batching_from_analysis(r: &Results) -> Option<Section> {
    let groups = &r.analysis.batching;
    if groups.is_empty() {
        return None;
    }
    let mut table = Table::new(&["group", "bs", "k", "per-block ns", "MiB/s", "speedup"]);
    let mut vs_k = Vec::new();
    let mut marks = Vec::new();
    // (group, k) -> [(bs, speedup)]
    let mut by_k: BTreeMap<(String, u64), Vec<(f64, f64)>> = BTreeMap::new();
    let mut notes = Vec::new();
    let multi = groups.len() > 1;
    for g in groups {
        let group = g.group.clone();
        let prefix = if multi {
            format!("{group} ")
        } else {
            String::new()
        };
        for b in &g.per_bs {
            let bs = b.bs as f64;
            let mut v = Vec::new();
            for c in &b.speedup {
                let (k, s) = (c.k as f64, c.speedup);
                v.push((
                    k,
                    s,
                    format!(
                        "{prefix}B={} k={k}: speedup {}",
                        fmt::bytes(bs),
                        fmt::times(s)
                    ),
                ));
                by_k.entry((group.clone(), k as u64))
                    .or_default()
                    .push((bs, s));
                let f = |x: f64| format!("{x:.0}");
                table.rows.push(vec![
                    group.clone(),
                    fmt::bytes(bs),
                    format!("{k}"),
                    f(c.per_block_ns),
                    f(c.mib_s),
                    format!("{s:.3}"),
                ]);
            }
            if v.len() >= 2 {
                // A line only where no k measured for another B lies between
                // two of this B's: never draw across k values not measured.
                let line = gapless(v.iter().map(|p| p.0), &ks_of(g));
                vs_k.push(Series {
                    label: format!("{prefix}B={}", fmt::bytes(bs)),
                    points: v,
                    dashed: group.contains("write"),
                    color: vs_k.len(),
                    line,
                });
            }
        }
        if let Some(p) = &g.parallelism {
            let (k, s) = (p.k_at_max as f64, p.max_speedup);
            marks.push((k, s, format!("parallelism {}", fmt::times(s))));
            notes.push(format!(
                "{}effective parallelism {} at B={}, k={}; 90% of it from k={}",
                prefix,
                fmt::times(s),
                fmt::bytes(p.bs as f64),
                k,
                p.k_reaching_90pct
            ));
        }
    }
    if vs_k.is_empty() {
        return None;
    }
    let mut svgs = vec![svg::line_chart(&LineChart {
        title: "Batching speedup vs batch size k".into(),
        x: Axis::new(
            "batch size k (requests submitted together)",
            Scale::Log2,
            fmt::plain,
        ),
        y: Axis::new(
            "speedup (per-block time at k=1 / at k)",
            Scale::Linear,
            fmt::times,
        ),
        series: vs_k,
        shade: None,
        marks,
        hlines: vec![],
    })];
    let all_bs: BTreeMap<String, Vec<f64>> = groups
        .iter()
        .map(|g| {
            (
                g.group.clone(),
                g.per_bs.iter().map(|b| b.bs as f64).collect(),
            )
        })
        .collect();
    let vs_b: Vec<Series> = by_k
        .iter()
        .filter(|((_, k), v)| v.len() >= 2 && *k > 1)
        .enumerate()
        .map(|(i, ((group, k), v))| Series {
            label: if multi {
                format!("{group} k={k}")
            } else {
                format!("k={k}")
            },
            points: v
                .iter()
                .map(|&(bs, s)| {
                    (
                        bs,
                        s,
                        format!("k={k} B={}: speedup {}", fmt::bytes(bs), fmt::times(s)),
                    )
                })
                .collect(),
            dashed: group.contains("write"),
            color: i,
            line: gapless(v.iter().map(|p| p.0), &all_bs[group]),
        })
        .collect();
    if !vs_b.is_empty() {
        svgs.push(svg::line_chart(&LineChart {
            title: "Batching speedup vs block size B".into(),
            x: Axis::new("block size B", Scale::Log2, fmt::bytes),
            y: Axis::new("speedup vs k=1 at the same B", Scale::Linear, fmt::times),
            series: vs_b,
            shade: None,
            marks: vec![],
            hlines: vec![],
        }));
    }
    Some(Section {
        id: "batching".into(),
        title: "Batching parallelism".into(),
        note: format!(
            "Submit k requests at once and wait for all k (Bingmann's batched access). Speedup = per-block time at k=1 / per-block time at k: how much parallelism the device turns into throughput. {}.",
            notes.join("; ")
        ),
        svgs,
        table,
    })
}

/// Block size x read/write mix heat map of IOPS (random patterns).
pub fn heat_map(r: &Results) -> Option<Section> {
    let pts: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| is_device(p) && batch_of(p).is_none() && super::rw_of(p).starts_with("rand"))
        .collect();
    // Pick the queue depth with the most cells.
    let mut by_qd: BTreeMap<String, BTreeMap<(u64, u64), f64>> = BTreeMap::new();
    for p in &pts {
        let qd = p.param(Param::Qd).map(str::to_string).unwrap_or_default();
        if let (Some(bs), Some(mix)) = (bs_of(p), read_pct(p)) {
            by_qd.entry(qd).or_default().insert((bs, mix), p.total.iops);
        }
    }
    let (qd, cells) = by_qd.into_iter().max_by_key(|(_, c)| c.len())?;
    let bss: BTreeSet<u64> = cells.keys().map(|k| k.0).collect();
    let mixes: BTreeSet<u64> = cells.keys().map(|k| k.1).collect();
    let mixed = mixes.iter().any(|m| *m != 0 && *m != 100);
    if bss.len() < 2 || mixes.len() < 2 || !mixed {
        return None;
    }
    let mixes: Vec<u64> = mixes.into_iter().rev().collect();
    let mut table = Table::new(&["bs", "read %", "IOPS"]);
    let values: Vec<Vec<Option<f64>>> = bss
        .iter()
        .map(|bs| {
            mixes
                .iter()
                .map(|m| {
                    let v = cells.get(&(*bs, *m)).copied();
                    if let Some(v) = v {
                        table.rows.push(vec![
                            fmt::bytes(*bs as f64),
                            m.to_string(),
                            format!("{v:.0}"),
                        ]);
                    }
                    v
                })
                .collect()
        })
        .collect();
    Some(Section {
        id: "heat-map".into(),
        title: "IOPS by block size and read/write mix".into(),
        note: format!("Random I/O at queue depth {qd}; each cell is total IOPS."),
        svgs: vec![svg::heat_map(&svg::HeatMap {
            title: format!("IOPS, block size x read/write mix (qd {qd})"),
            x_title: "read / write %".into(),
            y_title: "block size".into(),
            cols: mixes.iter().map(|m| format!("{m}/{}", 100 - m)).collect(),
            rows: bss.iter().map(|b| fmt::bytes(*b as f64)).collect(),
            values,
            fmt: fmt::count,
            unit: "IOPS".into(),
        })],
        table,
    })
}

/// Mean, p95 and p99 latency vs achieved IOPS for open-loop points: from
/// `analysis.load_latency` when present (latency from the intended issue
/// time solid, from the actual issue dashed, the analysis' knee marked).
pub fn load_latency(r: &Results) -> Option<Section> {
    load_latency_from_analysis(r)
}

/// Which latency of a curve point: from the intended or the actual issue.
type LatView = fn(&LoadPoint) -> Option<&LatSummary>;
/// Which statistic of a latency summary.
type LatField = fn(&LatSummary) -> Option<f64>;

/// The two views of a load point's latency: (name, accessor, dashed).
const LOAD_VIEWS: [(&str, LatView, bool); 2] = [
    ("intended", |c| Some(&c.lat_from_intended), false),
    ("issue", |c| c.lat_from_issue.as_ref(), true),
];

/// The statistics drawn per view: (name, accessor, colour).
const LOAD_STATS: [(&str, LatField, usize); 3] = [
    ("mean", |l| Some(l.mean_ns), 0),
    ("p95", |l| l.p95_ns.map(|v| v as f64), 4),
    ("p99", |l| l.p99_ns.map(|v| v as f64), 1),
];

fn load_latency_from_analysis(r: &Results) -> Option<Section> {
    let groups = &r.analysis.load_latency;
    let mut svgs = Vec::new();
    let mut table = Table::new(&[
        "group",
        "target IOPS",
        "achieved IOPS",
        "mean (intended)",
        "p95 (intended)",
        "p99 (intended)",
        "mean (issue)",
        "p95 (issue)",
        "p99 (issue)",
        "late issues",
    ]);
    let mut notes = Vec::new();
    for g in groups {
        let curve = &g.curve;
        if curve.is_empty() {
            continue;
        }
        let group = g.group.clone();
        let mut series = Vec::new();
        for (view, key, dashed) in LOAD_VIEWS {
            for (name, field, color) in LOAD_STATS {
                let points: Vec<(f64, f64, String)> = curve
                    .iter()
                    .filter_map(|c| {
                        let x = c.achieved_iops;
                        let y = field(key(c)?)?;
                        Some((
                            x,
                            y,
                            format!(
                                "{} IOPS (target {}): {name} {view} {}",
                                fmt::count(x),
                                fmt::count(c.target_iops),
                                fmt::ns(y)
                            ),
                        ))
                    })
                    .collect();
                if !points.is_empty() {
                    series.push(Series {
                        label: format!("{name} ({view})"),
                        points,
                        dashed,
                        color,
                        line: true,
                    });
                }
            }
        }
        let ns = |v: Option<f64>| v.map(|x| format!("{x:.0}")).unwrap_or_default();
        for c in curve {
            let stat = |view: LatView, field: LatField| ns(view(c).and_then(field));
            table.rows.push(vec![
                group.clone(),
                ns(Some(c.target_iops)),
                ns(Some(c.achieved_iops)),
                stat(LOAD_VIEWS[0].1, LOAD_STATS[0].1),
                stat(LOAD_VIEWS[0].1, LOAD_STATS[1].1),
                stat(LOAD_VIEWS[0].1, LOAD_STATS[2].1),
                stat(LOAD_VIEWS[1].1, LOAD_STATS[0].1),
                stat(LOAD_VIEWS[1].1, LOAD_STATS[1].1),
                stat(LOAD_VIEWS[1].1, LOAD_STATS[2].1),
                c.late_fraction
                    .map(|f| format!("{:.1}%", 100.0 * f))
                    .unwrap_or_default(),
            ]);
        }
        let mut marks = Vec::new();
        if let Some((x, y)) = g
            .knee
            .as_ref()
            .and_then(|k| Some((k.achieved_iops, k.p99_ns? as f64)))
        {
            marks.push((
                x,
                y,
                format!(
                    "knee ~{} IOPS (p99 from the intended start under {}x the lowest rate's)",
                    fmt::count(x),
                    g.knee_factor
                ),
            ));
        }
        if series.is_empty() {
            continue;
        }
        let scale = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        notes.push(format!(
            "{group}{}",
            g.closed_loop_max_iops
                .map(|m| format!(": closed-loop max {} IOPS", fmt::count(m)))
                .unwrap_or_default()
        ));
        svgs.push(svg::line_chart(&LineChart {
            title: if groups.len() > 1 {
                format!("Load-latency curve: {}", transport_first(&group))
            } else {
                "Load-latency curve".to_string()
            },
            x: Axis::new("achieved IOPS", Scale::Linear, fmt::count),
            y: Axis::new("latency", scale, fmt::ns),
            series,
            shade: None,
            marks,
            hlines: vec![],
        }));
    }
    if svgs.is_empty() {
        return None;
    }
    Some(Section {
        id: "load-latency".into(),
        title: "Latency under load".into(),
        note: format!("Open-loop runs (requests issued on a schedule) at rising target rates: latency vs the throughput achieved. Solid: measured from the intended issue time (what a client sees, no coordinated omission); dashed: from the actual issue (what fio's rate_iops reports). The knee marks the highest load whose p99 from the intended issue time stays under the knee factor x that of the lowest rate. {}.", notes.join("; ")),
        svgs,
        table,
    })
}

/// A group's label with its transport first ("nbd-iolab, arrival=poisson
/// ..."), so a title cut for width still says which transport it is.
fn transport_first(group: &str) -> String {
    let (transport, rest): (Vec<&str>, Vec<&str>) = group
        .split(' ')
        .partition(|kv| kv.starts_with("transport="));
    match transport.first() {
        Some(t) => format!("{}, {}", &t["transport=".len()..], rest.join(" ")),
        None => group.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::gapless;

    #[test]
    fn batching_lines_never_cross_k_values_that_were_not_measured() {
        let all = [1.0, 4.0, 16.0, 64.0];
        assert!(gapless([1.0, 4.0, 16.0].into_iter(), &all));
        assert!(!gapless([1.0, 64.0].into_iter(), &all));
        assert!(gapless([64.0, 16.0].into_iter(), &all));
    }

    #[test]
    fn a_load_latency_title_names_the_transport_first() {
        assert_eq!(
            super::transport_first("arrival=poisson bs=4k qd=8 transport=nbd-iolab"),
            "nbd-iolab, arrival=poisson bs=4k qd=8"
        );
        assert_eq!(super::transport_first("bs=4k qd=8"), "bs=4k qd=8");
    }
}
