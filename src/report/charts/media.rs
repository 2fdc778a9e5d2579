//! The "storage media side by side" sections (`iolab device --make` and
//! several `--target`s; kv and OLTP runs whose points carry `medium` and
//! `round`): throughput of every target normalized to the baseline as
//! grouped bars (one group per workload, one bar per target, the range
//! over the rounds as a whisker, a mark where the range straddles 1.0), the
//! speedup table (workload x target), and for device jobs each workload's
//! latency CDF with one line per target, over the merged histograms of all
//! its rounds. Everything comes from `analysis.media`; the CDFs from the
//! points' histograms.

use super::remote_db::cdf_series;
use super::{Section, Table};
use crate::analysis::media::{merged_latency, MediaAnalysis, MediaRow};
use crate::figures::fmt;
use crate::report::svg::{self, Axis, BarChart, BarOverlay, LineChart, Scale};
use crate::results::Results;

fn find<'a>(m: &'a MediaAnalysis, workload: &str, target: &str) -> Option<&'a MediaRow> {
    m.rows
        .iter()
        .find(|r| r.workload == workload && r.target == target)
}

/// "per round 1.53x (1.40..1.60)", with " ~noise" when marked, after
/// the ratio of the medians shown beside it when they differ.
fn ratio_text(m: &MediaAnalysis, r: &MediaRow) -> String {
    let rounds = match (r.vs_baseline, r.vs_min, r.vs_max) {
        (Some(v), Some(lo), Some(hi)) => format!(
            "per round {} ({:.2}..{:.2}){}",
            fmt::times(v),
            lo,
            hi,
            if r.noise { " ~noise" } else { "" }
        ),
        _ => return "no ratio".into(),
    };
    match crate::analysis::media::shown_ratios(m, r).0 {
        Some(v) if (v - r.vs_baseline.unwrap_or(v)).abs() >= 0.005 => {
            format!("{} of the medians; {rounds}", fmt::times(v))
        }
        _ => rounds,
    }
}

/// The grouped bars of one ratio, [target][workload].
fn ratio_bars(m: &MediaAnalysis, title: &str, y: &str, latency: bool) -> String {
    let mut overlay = BarOverlay {
        mark_title: "noise: the range over the rounds straddles 1.0".into(),
        reference: Some((1.0, format!("baseline ({})", m.baseline))),
        ..Default::default()
    };
    let mut stacks = Vec::new();
    for t in &m.targets {
        let rows: Vec<Option<&MediaRow>> = m.workloads.iter().map(|w| find(m, w, t)).collect();
        let value = |r: &MediaRow| {
            if latency {
                r.lat_vs_baseline
            } else {
                r.vs_baseline
            }
        };
        stacks.push((
            t.clone(),
            rows.iter()
                .map(|r| r.and_then(value).unwrap_or(0.0))
                .collect(),
        ));
        if !latency {
            overlay.ranges.push(
                rows.iter()
                    .map(|r| r.and_then(|r| r.vs_min.zip(r.vs_max)))
                    .collect(),
            );
            overlay
                .marked
                .push(rows.iter().map(|r| r.is_some_and(|r| r.noise)).collect());
        }
        overlay.titles.push(
            rows.iter()
                .map(|r| {
                    r.map(|r| match (latency, r.lat_vs_baseline) {
                        (true, Some(v)) => format!(
                            "{}: {t} mean latency {} of {}'s",
                            r.workload,
                            fmt::times(v),
                            m.baseline
                        ),
                        _ => format!(
                            "{}: {t} {} {}, {}",
                            r.workload,
                            fmt::count(r.throughput),
                            r.unit,
                            ratio_text(m, r)
                        ),
                    })
                })
                .collect(),
        );
    }
    svg::bar_chart_with(
        &BarChart {
            title: title.into(),
            y_title: y.into(),
            y_fmt: fmt::times,
            categories: m.workloads.clone(),
            stacks,
            stacked: false,
        },
        &overlay,
    )
}

/// Throughput of every target relative to the baseline, and the speedup
/// table.
pub fn media(r: &Results) -> Option<Section> {
    let m = r.analysis.media.as_ref()?;
    if m.rows.is_empty() {
        return None;
    }
    let mut headers = vec!["workload".to_string()];
    headers.extend(m.targets.iter().cloned());
    let mut table = Table {
        headers,
        rows: Vec::new(),
    };
    for w in &m.workloads {
        let mut row = vec![w.clone()];
        row.extend(
            m.targets
                .iter()
                .map(|t| find(m, w, t).map(|r| ratio_text(m, r)).unwrap_or_default()),
        );
        table.rows.push(row);
    }
    let unit = m.rows.first().map_or("IOPS", |r| r.unit.as_str());
    let mut svgs = vec![ratio_bars(
        m,
        &format!(
            "Throughput relative to {} (median of per-round ratios)",
            m.baseline
        ),
        &format!("{unit} / {} {unit}", m.baseline),
        false,
    )];
    if m.rows.iter().any(|r| r.lat_vs_baseline.is_some()) {
        svgs.push(ratio_bars(
            m,
            &format!(
                "Mean latency relative to {} (median of per-round ratios)",
                m.baseline
            ),
            &format!("mean latency / {}'s", m.baseline),
            true,
        ));
    }
    Some(Section {
        id: "media".into(),
        title: "Storage media side by side".into(),
        note: format!(
            "The same workloads on every target, interleaved by rounds ({} round(s), the order reversed every other round). Each bar is a target's throughput over the baseline's ({}) in the same round, the median over the rounds; the whisker is the range of the per-round ratios, and ~ marks a target whose range straddles 1.0 (not told apart from the baseline). The table holds the same ratios, and the ratio of the median throughputs where it differs from them (noisy rounds).",
            m.rounds, m.baseline
        ),
        svgs,
        table,
    })
}

/// Each device workload's latency CDF, one line per target, and the
/// numbers behind the bars.
pub fn media_latency(r: &Results) -> Option<Section> {
    let m = r.analysis.media.as_ref()?;
    if m.rows.is_empty() {
        return None;
    }
    let mut table = Table::new(&[
        "workload",
        "target",
        "rounds",
        "throughput",
        "MiB/s",
        "mean latency",
        "mean latency / baseline's",
        "p50 (all rounds)",
        "p99 (all rounds)",
    ]);
    let mut svgs = Vec::new();
    for w in &m.workloads {
        let mut series = Vec::new();
        for (i, t) in m.targets.iter().enumerate() {
            let Some(row) = find(m, w, t) else { continue };
            let merged = (row.unit == "IOPS")
                .then(|| merged_latency(&r.points, row))
                .flatten();
            table.rows.push(vec![
                w.clone(),
                t.clone(),
                row.rounds.to_string(),
                format!("{} {}", fmt::count(row.throughput), row.unit),
                row.mib_s.map(fmt::mib).unwrap_or_default(),
                row.mean_lat_ns.map(fmt::ns).unwrap_or_default(),
                crate::analysis::media::shown_ratios(m, row)
                    .1
                    .map(fmt::times)
                    .unwrap_or_default(),
                pct(&merged, 50.0),
                pct(&merged, 99.0),
            ]);
            if let Some(h) = &merged {
                series.push(cdf_series(t, i, h, "requests"));
            }
        }
        if series.is_empty() {
            continue;
        }
        let scale = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
        svgs.push(svg::line_chart(&LineChart {
            title: format!("Latency CDF, {w}"),
            x: Axis::new("latency", scale, fmt::ns),
            y: Axis::new("requests at or below (%)", Scale::Linear, fmt::plain),
            series,
            shade: None,
            marks: vec![],
            hlines: vec![],
        }));
    }
    Some(Section {
        id: "media-latency".into(),
        title: "Latency on each target".into(),
        note: "For each device workload, the latency CDF of every target over the merged histograms of all its rounds (reads and writes), so each line holds every request the rounds made; the table gives the medians over the rounds and the percentiles of the merged distribution.".into(),
        svgs,
        table,
    })
}

fn pct(h: &Option<crate::measure::histogram::LatencyHistogram>, p: f64) -> String {
    h.as_ref()
        .and_then(|h| h.stats())
        .and_then(|s| s.percentile(p))
        .map(|v| fmt::ns(v as f64))
        .unwrap_or_default()
}
