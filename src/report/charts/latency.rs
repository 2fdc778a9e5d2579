//! Latency distribution charts (percentiles on a "nines" axis, CDF from the
//! encoded HDR histograms), per-second time series and CPU bars.

use super::{param_u64, Section, Table};
use crate::figures::fmt;
use crate::figures::{self, FigureId};
use crate::measure::histogram::{LatStats, LatencyHistogram};
use crate::measure::procstat::SystemCpu;
use crate::report::svg::{self, Axis, BarChart, LineChart, Scale, Series};
use crate::results::Family;
use crate::results::Param;
use crate::results::{Point, Results};

/// At most this many distributions per chart (more would be unreadable).
const MAX_LINES: usize = 10;

/// At most this many charts of distributions (one per queue depth).
const MAX_CHARTS: usize = 6;

/// One line of a distribution chart: (label, point, op kind).
type Dist<'a> = (String, &'a Point, String);

/// The distributions worth plotting: every point with a latency, in one
/// chart when they fit, else one chart per queue depth (or batch size),
/// each titled with it; `MAX_LINES` lines per chart.
fn lat_groups(r: &Results) -> Vec<(String, Vec<Dist<'_>>)> {
    let mut all = Vec::new();
    let everyone: Vec<&Point> = r.points.iter().collect();
    let names = unique_labels(&everyone);
    for (p, base) in r.points.iter().zip(names) {
        for (op, o) in &p.ops {
            if o.lat.is_some() || o.clat.is_some() {
                let base = base.clone();
                let label = if p.ops.len() > 1 {
                    format!("{base} {op}")
                } else {
                    base
                };
                all.push((label, p, op.clone()));
            }
        }
    }
    if all.len() <= MAX_LINES {
        return vec![(String::new(), all)];
    }
    let depth = |p: &Point| match param_u64(p, Param::Batch) {
        _ if p.family() != Family::Device => (2, 0, "database operations".to_string()),
        Some(k) => (1, k, format!("batch {k}")),
        None => {
            let qd = param_u64(p, Param::Qd).unwrap_or(1);
            (0, qd, format!("QD{qd}"))
        }
    };
    let mut groups: std::collections::BTreeMap<(u8, u64), (String, Vec<Dist<'_>>)> =
        std::collections::BTreeMap::new();
    for d in all {
        let (kind, n, title) = depth(d.1);
        let g = groups
            .entry((kind, n))
            .or_insert_with(|| (title, Vec::new()));
        if g.1.len() < MAX_LINES {
            g.1.push(d);
        }
    }
    groups.into_values().take(MAX_CHARTS).collect()
}

/// One chart per group of `lat_groups`: `points` gives a distribution's
/// line (None: no line), `chart` draws a group's lines.
fn group_charts<'r>(
    r: &'r Results,
    mut points: impl FnMut(&Dist<'r>) -> Option<Vec<(f64, f64, String)>>,
    chart: impl Fn(&str, Vec<Series>) -> String,
) -> Vec<String> {
    let mut svgs = Vec::new();
    for (group, sel) in lat_groups(r) {
        let series: Vec<Series> = sel
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                Some(Series {
                    label: d.0.clone(),
                    points: points(d)?,
                    dashed: d.2 == "write",
                    color: i,
                    line: true,
                })
            })
            .collect();
        if !series.is_empty() {
            svgs.push(chart(&group, series));
        }
    }
    svgs
}

/// "Latency by percentile" or "Latency by percentile (QD8)".
fn titled(base: &str, group: &str) -> String {
    if group.is_empty() {
        base.to_string()
    } else {
        format!("{base} ({group})")
    }
}

/// "randread 4k qd1" from the params, else the point name.
pub fn short_label(p: &Point) -> String {
    let job = job_label(p);
    // Points of a campaign's passes (several targets, transports or
    // rounds) would read alike: name the setup and the round.
    match crate::analysis::media::pass_of(p) {
        Some(id) if !job.starts_with(&id.setup) => format!("{} r{}: {job}", id.setup, id.round),
        // `iolab remote`'s points: the same jobs over every transport.
        _ => match p.param(Param::Transport) {
            Some(t) if !job.starts_with(t) => format!("{t}: {job}"),
            _ => job,
        },
    }
}

/// What a label may add to tell its point from another.
type Qualifier = dyn Fn(&Point) -> Option<String>;

/// `short_label` of each point, made unique within the set: a label two
/// points share gets, in turn, what sets its point apart: the read share
/// of a mix ("70% read"), the open-loop rate ("@30%" of the maximum,
/// "@5000/s"), the
/// steady-state round, the step ("(breakdown)"), then the point's name.
/// The main job's QD32 chart read "randread 4k qd32" six times.
pub fn unique_labels(points: &[&Point]) -> Vec<String> {
    let mut labels: Vec<String> = points.iter().map(|p| short_label(p)).collect();
    let qualifiers: [&Qualifier; 5] = [
        &|p| p.param(Param::Mix).map(|m| format!("{m}% read")),
        &|p| {
            // "@30%": 30% of the closed-loop maximum (legends hold 22 characters).
            let pct = p.extra.rate_pct_of_max.map(|pct| format!("@{pct:.0}%"));
            pct.or_else(|| {
                p.param(Param::Rate)
                    .or_else(|| p.param(Param::RateIops))
                    .map(|r| format!("@{r}/s"))
            })
        },
        &|p| {
            p.extra
                .steady
                .as_ref()
                .map(|s| format!("round {}", s.round))
        },
        &|p| p.param(Param::Step).map(|s| format!("({s})")),
        &|p| Some(format!("[{}]", p.name)),
    ];
    for q in qualifiers {
        let repeated: Vec<bool> = labels
            .iter()
            .map(|l| labels.iter().filter(|m| *m == l).count() > 1)
            .collect();
        if !repeated.contains(&true) {
            break;
        }
        for (i, p) in points.iter().enumerate() {
            if let Some(extra) = q(p).filter(|_| repeated[i]) {
                labels[i] = format!("{} {extra}", labels[i]);
            }
        }
    }
    labels
}

/// "randread 4k qd1", or the point's name for other kinds of points.
fn job_label(p: &Point) -> String {
    match (p.param(Param::Rw), p.param(Param::Bs)) {
        (Some(rw), Some(bs)) => {
            let depth = match p.param(Param::Batch) {
                Some(k) => format!("batch{k}"),
                None => format!("qd{}", p.param(Param::Qd).unwrap_or("1")),
            };
            format!("{rw} {bs} {depth}")
        }
        _ => p.name.clone(),
    }
}

fn lat_of<'a>(p: &'a Point, op: &str) -> Option<&'a LatStats> {
    p.ops
        .get(op)
        .and_then(|o| o.lat.as_ref().or(o.clat.as_ref()))
}

/// One distribution's points for a percentile chart: (percentile, ns,
/// hover text "label: p99 = 1.2ms").
pub fn percentile_line(label: &str, l: &LatStats) -> Vec<(f64, f64, String)> {
    l.percentile_points()
        .into_iter()
        .map(|(q, ns)| {
            let text = format!("{label}: p{} = {}", fmt::pctile(q), fmt::ns(ns));
            (q, ns, text)
        })
        .collect()
}

/// Latency against percentile on the "nines" axis (the report's chart and
/// `compare`'s overlays).
pub fn percentile_chart(title: String, series: Vec<Series>) -> String {
    let scale = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    svg::line_chart(&LineChart {
        title,
        x: Axis::new("percentile", Scale::Nines, fmt::pctile),
        y: Axis::new("latency", scale, fmt::ns),
        series,
        shade: None,
        marks: vec![],
        hlines: vec![],
    })
}

/// Latency percentiles on a "nines" axis: 50, 90, 99, 99.9 ... equally spaced.
pub fn percentiles(r: &Results) -> Option<Section> {
    let mut table = Table::new(&["series", "percentile", "latency ns"]);
    let svgs = group_charts(
        r,
        |(label, p, op)| {
            let v = percentile_line(label, lat_of(p, op)?);
            for (q, ns, _) in &v {
                table
                    .rows
                    .push(vec![label.clone(), fmt::pctile(*q), format!("{ns:.0}")]);
            }
            (!v.is_empty()).then_some(v)
        },
        |group, series| percentile_chart(titled("Latency by percentile", group), series),
    );
    if svgs.is_empty() {
        return None;
    }
    Some(Section {
        id: "percentiles".into(),
        title: "Latency percentiles".into(),
        note: format!(
            "{} by percentile; the x axis spreads the tail (each step is one more nine).",
            if r.points.iter().any(clat_only) {
                "Completion latency (clat: fio reported no total-latency percentiles; run fio with --lat_percentiles=1 for them)"
            } else {
                "Total latency (submission to completion)"
            }
        ),
        svgs,
        table,
    })
}

/// Thin a CDF to at most `n` points, keeping the first and last.
fn thin(v: Vec<(u64, f64)>, n: usize) -> Vec<(u64, f64)> {
    if v.len() <= n {
        return v;
    }
    let step = v.len() as f64 / (n - 1) as f64;
    let mut out: Vec<(u64, f64)> = (0..n - 1).map(|i| v[(i as f64 * step) as usize]).collect();
    out.push(*v.last().unwrap_or(&(0, 1.0)));
    out
}

/// Cumulative distribution of latency from the encoded histograms.
pub fn cdf(r: &Results) -> Option<Section> {
    let mut table = Table::new(&["series", "latency ns", "cumulative %"]);
    let svgs = group_charts(
        r,
        |(label, p, op)| {
            let key = [format!("{op}.lat"), format!("{op}.clat")]
                .into_iter()
                .find(|k| p.histograms.contains_key(k))?;
            let h = LatencyHistogram::decode(p.histograms.get(&key)?).ok()?;
            let v: Vec<(f64, f64, String)> = thin(h.cdf(), 150)
                .into_iter()
                .map(|(ns, f)| {
                    table.rows.push(vec![
                        label.clone(),
                        ns.to_string(),
                        format!("{:.4}", f * 100.0),
                    ]);
                    (
                        ns as f64,
                        f * 100.0,
                        format!(
                            "{label}: {:.3}% at or below {}",
                            f * 100.0,
                            fmt::ns(ns as f64)
                        ),
                    )
                })
                .collect();
            Some(v)
        },
        |group, series| {
            let scale = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
            svg::line_chart(&LineChart {
                title: titled("Latency CDF", group),
                x: Axis::new("latency", scale, fmt::ns),
                y: Axis::new("requests at or below (%)", Scale::Linear, fmt::plain),
                series,
                shade: None,
                marks: vec![],
                hlines: vec![],
            })
        },
    );
    if svgs.is_empty() {
        return None;
    }
    Some(Section {
        id: "cdf".into(),
        title: "Latency CDF".into(),
        note: "Share of requests completed within a latency, from the full HDR histograms (3 significant digits).".into(),
        svgs,
        table,
    })
}

/// A second's p99 where one was measured: files of older versions wrote
/// 0 for seconds without a histogram (kv and oltp points), shown as a
/// latency of 0 ns; no latency is 0.
fn p99_of(s: &crate::results::SeriesPoint) -> Option<u64> {
    s.p99_ns.filter(|&v| v > 0)
}

/// Per-second IOPS, bandwidth and latency of the points with a series; the
/// ramp (excluded from statistics) is shaded.
pub fn time_series(r: &Results) -> Option<Section> {
    let pts: Vec<&Point> = r.points.iter().filter(|p| p.series.len() >= 2).collect();
    if pts.is_empty() {
        return None;
    }
    // Many points: the longest few (more lines on one axis are unreadable).
    let mut sel = pts.clone();
    sel.sort_by_key(|p| std::cmp::Reverse(p.series.len()));
    sel.truncate(4);
    sel.sort_by_key(|p| r.points.iter().position(|q| std::ptr::eq(q, *p)));
    let ramp = sel.iter().map(|p| p.ramp_ns).max().unwrap_or(0) as f64 / 1e9;
    // Database points count operations, not I/Os, and move no bytes of
    // their own: no bandwidth chart or column of zeros for them.
    let moves_bytes = sel.iter().any(|p| p.total.bytes > 0);
    let rate = rate_unit(&sel);
    let mut table = Table::new(&["point", "t (s)", &rate, "MiB/s", "mean ns", "p99 ns"]);
    let mut iops = Vec::new();
    let mut bw = Vec::new();
    let mut lat = Vec::new();
    let names = unique_labels(&sel);
    for (i, p) in sel.iter().enumerate() {
        let off = p.ramp_ns as f64 / 1e9;
        let mut a = Vec::new();
        let mut b = Vec::new();
        let mut c = Vec::new();
        let seconds = crate::results::series::folded(&p.series);
        for s in seconds.iter() {
            let t = s.t_s + off;
            a.push((
                t,
                s.iops,
                format!(
                    "{} at {}: {} {rate}",
                    p.name,
                    fmt::secs(t),
                    fmt::count(s.iops)
                ),
            ));
            b.push((
                t,
                s.mib_s,
                format!(
                    "{} at {}: {} MiB/s",
                    p.name,
                    fmt::secs(t),
                    fmt::mib(s.mib_s)
                ),
            ));
            c.push((
                t,
                s.mean_ns,
                format!(
                    "{} at {}: mean {}{}",
                    p.name,
                    fmt::secs(t),
                    fmt::ns(s.mean_ns),
                    p99_of(s)
                        .map(|v| format!(", p99 {}", fmt::ns(v as f64)))
                        .unwrap_or_default()
                ),
            ));
            table.rows.push(vec![
                p.name.clone(),
                format!("{t:.1}"),
                format!("{:.0}", s.iops),
                format!("{:.2}", s.mib_s),
                format!("{:.0}", s.mean_ns),
                p99_of(s).map(|v| v.to_string()).unwrap_or_default(),
            ]);
        }
        let dashed = super::is_write(p);
        // Fewer than 3 seconds are a dot or a segment, not a line: in the
        // table only.
        if seconds.len() < 3 {
            continue;
        }
        for (v, dst) in [(a, &mut iops), (b, &mut bw), (c, &mut lat)] {
            dst.push(Series {
                label: names[i].clone(),
                points: v,
                dashed,
                color: i,
                line: true,
            });
        }
    }
    let shade = (ramp > 0.0).then(|| (0.0, ramp, "ramp (not measured)".to_string()));
    let lat_scale = latency_over_time_scale(&mut lat);
    let chart = |title: &str, ytitle: &str, series: Vec<Series>, f: fn(f64) -> String| {
        let scale = if title.starts_with("Mean latency") {
            lat_scale
        } else {
            Scale::Linear
        };
        svg::line_chart(&LineChart {
            title: title.into(),
            x: Axis::new("time (s)", Scale::Linear, fmt::plain),
            y: Axis::new(ytitle, scale, f),
            series,
            shade: shade.clone(),
            marks: vec![],
            hlines: vec![],
        })
    };
    Some(Section {
        id: "time-series".into(),
        title: "Time series".into(),
        note: {
            let mut note = if pts.len() > sel.len() {
                format!(
                    "Per-second values of the {} longest of {} points.",
                    sel.len(),
                    pts.len()
                )
            } else {
                "Per-second values of each point.".into()
            };
            if iops.is_empty() {
                note.push_str(" Each point has fewer than 3 seconds, too few for a line: the table holds them.");
            }
            note
        },
        svgs: if iops.is_empty() {
            Vec::new()
        } else {
            [
                Some(chart(&format!("{rate} over time"), &rate, iops, fmt::count)),
                moves_bytes
                    .then(|| chart("Bandwidth over time", "bandwidth (MiB/s)", bw, fmt::mib)),
                Some(chart(
                    "Mean latency over time",
                    "mean latency",
                    lat,
                    fmt::ns,
                )),
            ]
            .into_iter()
            .flatten()
            .collect()
        },
        table: if moves_bytes {
            table
        } else {
            without_column(table, "MiB/s")
        },
    })
}

/// What the points' per-second rate counts, by the catalogue's name of
/// their kind's throughput (txn/s, ops/s, IOPS); points of several kinds
/// name each ("throughput (IOPS, ops/s)").
fn rate_unit(points: &[&Point]) -> String {
    let kinds: std::collections::BTreeSet<Family> = points.iter().map(|p| p.family()).collect();
    let names: Vec<&str> = kinds
        .iter()
        .map(|k| figures::throughput(*k).def().name)
        .collect();
    match names.as_slice() {
        [one] => one.to_string(),
        [] => FigureId::Iops.def().name.to_string(),
        many => format!("throughput ({})", many.join(", ")),
    }
}

/// Linear shows change over time best; latencies of points more than 10x
/// apart (4 KiB beside 1 MiB) would sit flat at the bottom of it, so those
/// get a log axis (and an interval without requests, no latency to place
/// on it, is left out).
fn latency_over_time_scale(lat: &mut [Series]) -> Scale {
    if spread(lat) <= 10.0 {
        return Scale::Linear;
    }
    for s in lat.iter_mut() {
        s.points.retain(|p| p.1 > 0.0);
    }
    Scale::Log
}

/// Largest over smallest positive value of the series.
fn spread(series: &[Series]) -> f64 {
    let v = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = v
        .filter(|&y| y > 0.0)
        .fold((f64::MAX, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if hi > 0.0 {
        hi / lo
    } else {
        1.0
    }
}

/// `t` without the column named `name`.
fn without_column(mut t: Table, name: &str) -> Table {
    if let Some(i) = t.headers.iter().position(|h| h == name) {
        t.headers.remove(i);
        for row in &mut t.rows {
            row.remove(i);
        }
    }
    t
}

/// A point imported from fio whose latency percentiles are clat's.
fn clat_only(p: &Point) -> bool {
    p.warnings
        .iter()
        .any(|w| w.starts_with(crate::results::ext::FIO_CLAT_ONLY))
}

/// One machine-wide CPU share of a point's sample.
type CpuShare = fn(&SystemCpu) -> f64;

/// The machine-wide CPU shares drawn and tabled, in stacking order.
const MACHINE_CPU: [(&str, CpuShare); 4] = [
    ("usr", |m| m.usr_pct),
    ("sys", |m| m.sys_pct),
    ("iowait", |m| m.iowait_pct),
    ("steal", |m| m.steal_pct),
];

/// CPU per point in two scopes, never stacked together: the measuring
/// process (iolab's getrusage, or fio's usr_cpu/sys_cpu for imported fio
/// files) as a share of one CPU, and the whole machine (usr, sys, iowait,
/// steal from /proc/stat) as a share of all CPUs, where recorded.
pub fn cpu(r: &Results) -> Option<Section> {
    let pts: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| p.cpu.usr_pct + p.cpu.sys_pct > 0.0)
        .collect();
    if pts.is_empty() {
        return None;
    }
    let who = if r.kind == "fio" {
        "the fio job (fio's usr_cpu/sys_cpu)"
    } else {
        "the iolab process (getrusage, like fio's usr_cpu/sys_cpu)"
    };
    let categories: Vec<String> = unique_labels(&pts);
    let mut svgs = vec![svg::bar_chart(&BarChart {
        title: "Process CPU per point".into(),
        y_title: "% of one CPU".into(),
        y_fmt: fmt::pct,
        categories: categories.clone(),
        stacks: vec![
            (
                "usr".to_string(),
                pts.iter().map(|p| p.cpu.usr_pct).collect(),
            ),
            (
                "sys".to_string(),
                pts.iter().map(|p| p.cpu.sys_pct).collect(),
            ),
        ],
        stacked: true,
    })];
    let machine: Vec<Option<&SystemCpu>> = pts.iter().map(|p| p.extra.cpu.as_ref()).collect();
    let has_machine = machine.iter().any(Option::is_some);
    // /proc/stat's shares are of one CPU (they add up to 200% on two):
    // drawn and tabled as shares of all of them.
    let ncpu = r.provenance.cpu_count.max(1) as f64;
    if has_machine {
        let all_cpus = svg::BarOverlay {
            y_max: Some(100.0),
            ..Default::default()
        };
        svgs.push(svg::bar_chart_with(
            &BarChart {
                title: "Machine CPU per point (all CPUs)".into(),
                y_title: "% of all CPUs".into(),
                y_fmt: fmt::pct,
                categories,
                stacks: MACHINE_CPU
                    .iter()
                    .map(|(name, f)| {
                        let col = machine
                            .iter()
                            .map(|m| m.map_or(0.0, |m| f(m) / ncpu))
                            .collect();
                        (name.to_string(), col)
                    })
                    .collect(),
                stacked: true,
            },
            &all_cpus,
        ));
    }
    let mut head = vec![
        "point",
        "usr %",
        "sys %",
        "ctx voluntary",
        "ctx involuntary",
    ];
    let machine_heads: Vec<String> = MACHINE_CPU
        .iter()
        .map(|(name, _)| format!("machine {name} % of all CPUs"))
        .collect();
    if has_machine {
        head.extend(machine_heads.iter().map(String::as_str));
    }
    let mut table = Table::new(&head);
    for (p, m) in pts.iter().zip(&machine) {
        let mut row = vec![
            p.name.clone(),
            format!("{:.1}", p.cpu.usr_pct),
            format!("{:.1}", p.cpu.sys_pct),
            p.cpu.ctx_voluntary.to_string(),
            p.cpu.ctx_involuntary.to_string(),
        ];
        if has_machine {
            row.extend(
                MACHINE_CPU
                    .iter()
                    .map(|(_, f)| m.map_or(String::new(), |m| format!("{:.1}", f(m) / ncpu))),
            );
        }
        table.rows.push(row);
    }
    let machine_note = if has_machine {
        " The second chart is the whole machine over the same phase, as a share of all CPUs (iowait is time no process ran while I/O was outstanding)."
    } else {
        ""
    };
    Some(Section {
        id: "cpu".into(),
        title: "CPU".into(),
        note: format!(
            "CPU time of {who} as a share of one CPU over the measured phase.{machine_note}"
        ),
        svgs,
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::job::JobSpec;
    use crate::results::Provenance;

    fn sweep(qds: &[u32]) -> Results {
        let mut r = Results::new("device", Provenance::default());
        for (i, &qd) in qds.iter().enumerate() {
            let j = JobSpec {
                qd,
                ..JobSpec::default()
            };
            r.points
                .push(point(&j, 1e4 * (i + 1) as f64, 1e5, 200_000 + i as u64));
        }
        r
    }

    fn line(points: &[f64]) -> Series {
        Series {
            label: String::new(),
            points: points
                .iter()
                .enumerate()
                .map(|(i, &y)| (i as f64, y, String::new()))
                .collect(),
            dashed: false,
            color: 0,
            line: true,
        }
    }

    /// The main job's QD32 chart read "randread 4k qd32" six times (the
    /// maximum and five open-loop rates), its QD1 chart "randread 4k qd1"
    /// twice (the latency and the breakdown step): each label now names
    /// what sets its point apart, and labels that were unique stay.
    #[test]
    fn labels_that_repeat_name_the_rate_or_the_step() {
        let base = sweep(&[32]).points.remove(0);
        let mut pts = vec![base.clone()];
        for pct in [10.0, 30.0] {
            let mut p = base.clone();
            p.extra.rate_pct_of_max = Some(pct);
            pts.push(p);
        }
        let mut qd1 = sweep(&[1]).points.remove(0);
        qd1.params.insert("step".into(), "latency".into());
        let mut traced = qd1.clone();
        traced.params.insert("step".into(), "breakdown".into());
        pts.extend([qd1, traced]);
        let refs: Vec<&Point> = pts.iter().collect();
        let labels = unique_labels(&refs);
        assert_eq!(
            labels,
            [
                // Unique once the others say their rate.
                "randread 4k qd32".to_string(),
                "randread 4k qd32 @10%".to_string(),
                "randread 4k qd32 @30%".to_string(),
                "randread 4k qd1 (latency)".to_string(),
                "randread 4k qd1 (breakdown)".to_string(),
            ]
        );
        let alone = [&pts[1]];
        assert_eq!(unique_labels(&alone), ["randread 4k qd32"]);
    }

    /// Issue 31 item 8: the media report's legends read "randread 4k
    /// qd1" for every target and round.
    #[test]
    fn labels_of_a_campaigns_points_name_the_setup_and_round() {
        let mut p = sweep(&[1]).points.remove(0);
        assert_eq!(short_label(&p), "randread 4k qd1");
        p.pass = Some(crate::results::PassId {
            setup: "nvme".into(),
            round: 2,
            baseline: false,
            part: None,
            workload: "randread-4k-qd1".into(),
        });
        assert_eq!(short_label(&p), "nvme r2: randread 4k qd1");
    }

    /// Issue 31 item 17: the machine chart said "share of all CPUs" while
    /// its values added up to 200% on 2 CPUs.
    #[test]
    fn machine_cpu_is_a_share_of_all_cpus() {
        let mut r = sweep(&[1]);
        r.provenance.cpu_count = 2;
        r.points[0].cpu.usr_pct = 40.0;
        r.points[0].extra.cpu = Some(SystemCpu {
            usr_pct: 150.0,
            sys_pct: 50.0,
            iowait_pct: 0.0,
            idle_pct: 0.0,
            steal_pct: 0.0,
        });
        let s = cpu(&r).unwrap();
        let usr = s
            .table
            .headers
            .iter()
            .position(|h| h == "machine usr % of all CPUs");
        assert_eq!(s.table.rows[0][usr.unwrap()], "75.0");
    }

    /// Issue 31 item 17: shares of all CPUs end at 100%; the axis was
    /// rounded up "nicely" to 120% when the stack passed 100 by rounding.
    #[test]
    fn machine_cpu_axis_ends_at_100_percent() {
        for (usr, sys) in [(180.0, 10.0), (190.0, 10.8)] {
            let mut r = sweep(&[1]);
            r.provenance.cpu_count = 2;
            r.points[0].cpu.usr_pct = 40.0;
            r.points[0].extra.cpu = Some(SystemCpu {
                usr_pct: usr,
                sys_pct: sys,
                iowait_pct: 0.0,
                idle_pct: 0.0,
                steal_pct: 0.0,
            });
            let s = cpu(&r).unwrap();
            let ticks = crate::report::charts::timeline::tests::y_ticks(&s.svgs[1]);
            assert_eq!(
                ticks.last().map(String::as_str),
                Some("100%"),
                "{usr}+{sys}: {ticks:?}"
            );
        }
    }

    /// Issue 31 item 17: 4k lines sat flat under the 1m line.
    #[test]
    fn latency_over_time_goes_log_when_points_are_far_apart() {
        let mut near = vec![line(&[100e3, 120e3]), line(&[300e3, 0.0])];
        assert_eq!(latency_over_time_scale(&mut near), Scale::Linear);
        assert_eq!(near[1].points.len(), 2);
        let mut far = vec![line(&[100e3, 120e3]), line(&[20e6, 0.0])];
        assert_eq!(latency_over_time_scale(&mut far), Scale::Log);
        assert_eq!(far[1].points.len(), 1, "the empty interval left out");
    }

    #[test]
    fn report_latency_charts_draw_every_queue_depth_of_a_sweep() {
        let s = percentiles(&sweep(&[1, 8])).unwrap();
        assert_eq!(s.svgs.len(), 1);
        assert!(s.svgs[0].contains("qd1") && s.svgs[0].contains("qd8"));
        // Too many for one chart: one chart per queue depth, none dropped.
        let qds: Vec<u32> = (0..12).map(|i| 1 << (i % 3)).collect();
        let s = percentiles(&sweep(&qds)).unwrap();
        assert_eq!(s.svgs.len(), 3, "QD1, QD2, QD4");
        assert!(s.svgs[2].contains("(QD4)"));
    }
}
