//! Compare several results files: match points by their params, take the
//! median over repeated rounds with its spread, and give every value as a
//! ratio to the first file (the baseline). A difference is marked as noise
//! when the rounds' ranges overlap, or (without rounds) when it is under the
//! noise threshold. Renders as a terminal table and an HTML page.

use std::collections::{BTreeMap, BTreeSet};

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table as CTable};

use crate::analysis::baseline::Spread;
use crate::figures::fmt;
use crate::figures::{Basis, Direction, FigureId, Measure};
use crate::report::charts::{latency, Table};
use crate::report::svg::{self, esc, BarChart};
use crate::results::{Point, Results};

/// A run to compare, with a short label (file name).
pub struct Run {
    pub label: String,
    pub results: Results,
}

/// The point's main latency, or its clat where only that was reported
/// (fio output without total-latency percentiles): the percentile overlay.
fn main_or_clat(p: &Point) -> Option<&crate::measure::histogram::LatStats> {
    p.main_lat().or_else(|| {
        ["read", "write"]
            .iter()
            .find_map(|k| p.ops.get(*k).and_then(|o| o.clat.as_ref()))
    })
}

/// One run's value for a matched point: median of its rounds and their range.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub value: f64,
    pub min: f64,
    pub max: f64,
    pub rounds: usize,
}

impl Cell {
    fn spread(&self) -> Spread {
        Spread {
            median: self.value,
            min: self.min,
            max: self.max,
            n: self.rounds,
        }
    }
}

/// One matched point and metric across runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    /// The params the row's points share in every run.
    pub key: Vec<(String, String)>,
    pub measure: Measure,
    pub cells: Vec<Option<Cell>>,
}

impl Row {
    /// Ratio of run `i` to the baseline.
    pub fn ratio(&self, i: usize) -> Option<f64> {
        let b = self.cells.first()?.as_ref()?;
        let c = self.cells.get(i)?.as_ref()?;
        c.spread().ratio_to(&b.spread())
    }

    /// Is the difference of run `i` from the baseline inside the noise?
    pub fn in_noise(&self, i: usize, noise_pct: f64) -> bool {
        let (Some(Some(b)), Some(Some(c))) = (self.cells.first(), self.cells.get(i)) else {
            return false;
        };
        if b.rounds > 1 || c.rounds > 1 {
            // Overlapping ranges of the rounds: not a difference we can claim.
            return c.spread().overlaps(&b.spread());
        }
        self.ratio(i)
            .is_some_and(|r| (r - 1.0).abs() * 100.0 < noise_pct)
    }
}

/// A point's identity for matching: (param, value) pairs.
type Key = Vec<(String, String)>;

/// Params that never identify a point for matching.
const IGNORED: [&str; 4] = ["step", "round", "rep", "repeat"];

/// Keys used for matching: `by`, or the keys every run has on its points.
pub fn match_keys(runs: &[Run], by: Option<&[String]>) -> Vec<String> {
    if let Some(b) = by {
        return b.to_vec();
    }
    let mut common: Option<BTreeSet<String>> = None;
    for r in runs {
        let keys: BTreeSet<String> = r
            .results
            .points
            .iter()
            .flat_map(|p| p.params.keys().cloned())
            .filter(|k| !IGNORED.contains(&k.as_str()))
            .collect();
        common = Some(match common {
            None => keys,
            Some(c) => c.intersection(&keys).cloned().collect(),
        });
    }
    let mut keys: Vec<String> = common.unwrap_or_default().into_iter().collect();
    // Points of one run that match on these keys are rounds of one job and
    // are pooled; where they differ in another param (a rate one has and
    // the other has not, another medium), they are different jobs: that
    // param joins the keys.
    loop {
        let split = splitting_params(runs, &keys);
        if split.is_empty() {
            return keys;
        }
        keys.extend(split);
        keys.sort();
    }
}

/// The params (not `IGNORED`) whose value (or absence) differs between
/// points of one run that `keys` would pool, for the first such group.
fn splitting_params(runs: &[Run], keys: &[String]) -> Vec<String> {
    for r in runs {
        let mut groups: BTreeMap<Key, Vec<&Point>> = BTreeMap::new();
        for p in &r.results.points {
            groups.entry(key_of(p, keys)).or_default().push(p);
        }
        for pts in groups.values().filter(|g| g.len() > 1) {
            let names: BTreeSet<&String> = pts.iter().flat_map(|p| p.params.keys()).collect();
            let split: Vec<String> = names
                .into_iter()
                .filter(|n| {
                    !IGNORED.contains(&n.as_str())
                        && !keys.contains(n)
                        && pts
                            .iter()
                            .any(|p| p.params.get(*n) != pts[0].params.get(*n))
                })
                .cloned()
                .collect();
            if !split.is_empty() {
                return split;
            }
        }
    }
    Vec::new()
}

fn key_of(p: &Point, keys: &[String]) -> Vec<(String, String)> {
    keys.iter()
        .map(|k| (k.clone(), p.params.get(k).cloned().unwrap_or_default()))
        .collect()
}

/// "randread 4k qd8": pattern and block size always, other params when they vary.
fn point_label(k: &Key, varying: &BTreeSet<&str>) -> String {
    const ORDER: [&str; 6] = ["rw", "bs", "mix", "qd", "batch", "jobs"];
    let mut keys: Vec<&(String, String)> = k
        .iter()
        .filter(|(n, v)| !v.is_empty() && (n == "rw" || n == "bs" || varying.contains(n.as_str())))
        .collect();
    keys.sort_by_key(|(n, _)| ORDER.iter().position(|o| o == n).unwrap_or(ORDER.len()));
    let batched = keys.iter().any(|(n, _)| n == "batch");
    keys.iter()
        .filter(|(n, _)| !(batched && n == "qd"))
        .map(|(n, v)| match n.as_str() {
            "rw" | "bs" => v.clone(),
            "qd" => format!("qd{v}"),
            "batch" => format!("batch{v}"),
            "mix" => format!("mix{v}"),
            "jobs" => format!("j{v}"),
            _ => format!("{n}={v}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The measures a group of matched points is compared on: for each
/// figure (`figures`, or the defaults of the points' kind), the measures
/// any point has. Latencies pair like with like: where one point has a
/// percentile only of completion latency (fio's default), every point's
/// row is its completion latency.
fn group_measures(points: &[&Point], figures: Option<&[FigureId]>) -> Vec<Measure> {
    let fams: BTreeSet<crate::results::Family> = points.iter().map(|p| p.family()).collect();
    let mut out: Vec<Measure> = Vec::new();
    let wanted: Vec<FigureId> = match figures {
        Some(f) => f.to_vec(),
        None => {
            let mut v: Vec<FigureId> = Vec::new();
            for f in &fams {
                for id in crate::figures::defaults(*f) {
                    if !v.contains(id) {
                        v.push(*id);
                    }
                }
            }
            v
        }
    };
    for fig in wanted {
        let mut ms: Vec<Measure> = Vec::new();
        for p in points {
            for m in Measure::of_point(fig, p) {
                if !ms.contains(&m) {
                    ms.push(m);
                }
            }
        }
        let completion: Vec<Option<String>> = ms
            .iter()
            .filter(|m| m.basis == Some(Basis::Completion))
            .map(|m| m.op.clone())
            .collect();
        ms.retain(|m| !(m.basis == Some(Basis::Total) && completion.contains(&m.op)));
        out.extend(ms);
    }
    out
}

/// Match points across runs; rows ordered as in the baseline, then new
/// ones; per matched point the measures of `figures` (default: per kind).
pub fn compare(runs: &[Run], keys: &[String], figures: Option<&[FigureId]>) -> Vec<Row> {
    let mut order: Vec<Vec<(String, String)>> = Vec::new();
    let mut names: BTreeMap<Vec<(String, String)>, String> = BTreeMap::new();
    // run -> key -> points
    let mut by_run: Vec<BTreeMap<Key, Vec<&Point>>> = Vec::new();
    for r in runs {
        let mut m: BTreeMap<_, Vec<&Point>> = BTreeMap::new();
        for p in &r.results.points {
            let k = key_of(p, keys);
            if !order.contains(&k) {
                order.push(k.clone());
                names.insert(k.clone(), p.name.clone());
            }
            m.entry(k).or_default().push(p);
        }
        by_run.push(m);
    }
    let varying: BTreeSet<&str> = keys
        .iter()
        .filter(|key| {
            order
                .iter()
                .filter_map(|k| k.iter().find(|(n, _)| n == *key).map(|(_, v)| v))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .map(|k| k.as_str())
        .collect();
    for k in &order {
        let label = point_label(k, &varying);
        if !label.is_empty() {
            names.insert(k.clone(), label);
        }
    }
    let mut rows = Vec::new();
    for k in &order {
        let all: Vec<&Point> = by_run
            .iter()
            .filter_map(|m| m.get(k))
            .flatten()
            .copied()
            .collect();
        for measure in group_measures(&all, figures) {
            let cells: Vec<Option<Cell>> = by_run
                .iter()
                .map(|m| {
                    let v: Vec<f64> = m.get(k)?.iter().filter_map(|p| measure.of(p)).collect();
                    let s = Spread::of(&v)?;
                    Some(Cell {
                        rounds: s.n,
                        value: s.median,
                        min: s.min,
                        max: s.max,
                    })
                })
                .collect();
            if cells.iter().any(|c| c.is_some()) {
                rows.push(Row {
                    label: names.get(k).cloned().unwrap_or_default(),
                    key: k.clone(),
                    measure,
                    cells,
                });
            }
        }
    }
    rows
}

/// Rows with a value in at least two runs: what was really compared.
pub fn matched(rows: &[Row]) -> usize {
    rows.iter()
        .filter(|r| r.cells.iter().filter(|c| c.is_some()).count() >= 2)
        .count()
}

/// The latency bases the rows use, each with what it means: a reader
/// learns that "(clat)" is fio's completion latency.
pub fn bases_note(rows: &[Row]) -> String {
    let used: BTreeSet<Basis> = rows.iter().filter_map(|r| r.measure.basis).collect();
    used.iter()
        .map(|b| format!("{}: {}\n", b.name(), b.meaning()))
        .collect()
}

fn cell_text(c: &Option<Cell>, m: &Measure) -> String {
    match c {
        None => "-".into(),
        Some(c) if c.rounds > 1 => format!(
            "{} ({}..{}, n={})",
            m.format(c.value),
            m.format(c.min),
            m.format(c.max),
            c.rounds
        ),
        Some(c) => m.format(c.value),
    }
}

fn ratio_text(row: &Row, i: usize, noise: f64) -> String {
    match row.ratio(i) {
        None => "-".into(),
        Some(r) => format!(
            "{:.2}x{}",
            r,
            if row.in_noise(i, noise) { " ~" } else { "" }
        ),
    }
}

/// The comparison as a plain table (also used for HTML and CSV).
pub fn table(runs: &[Run], rows: &[Row], noise: f64) -> Table {
    let mut t = Table::default();
    t.headers.push("point".into());
    t.headers.push("metric".into());
    for (i, r) in runs.iter().enumerate() {
        t.headers.push(r.label.clone());
        if i > 0 {
            t.headers.push(format!("{} / {}", r.label, runs[0].label));
        }
    }
    for row in rows {
        let mut cells = vec![row.label.clone(), row.measure.label()];
        for i in 0..runs.len() {
            cells.push(cell_text(&row.cells[i], &row.measure));
            if i > 0 {
                cells.push(ratio_text(row, i, noise));
            }
        }
        t.rows.push(cells);
    }
    t
}

pub fn terminal(runs: &[Run], rows: &[Row], noise: f64) -> String {
    let t = table(runs, rows, noise);
    let mut c = CTable::new();
    c.load_preset(UTF8_BORDERS_ONLY);
    c.set_header(t.headers.clone());
    for r in &t.rows {
        c.add_row(r.clone());
    }
    for i in 2..t.headers.len() {
        if let Some(col) = c.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut o = format!("baseline: {}\n", runs[0].label);
    o.push_str(&c.to_string());
    o.push_str(&format!(
        "\n~ = inside the noise (ranges of repeated rounds overlap, or under {noise}% without rounds)\n"
    ));
    let unmatched = rows
        .iter()
        .filter(|r| r.cells.iter().any(|c| c.is_none()))
        .count();
    if unmatched > 0 {
        o.push_str(&format!(
            "{unmatched} row(s) have no match in some run (-)\n"
        ));
    }
    if matched(rows) == 0 {
        o.push_str("nothing matched: no point has a value in two runs (compare matches points by their parameters; see `matched by`, or choose keys with --by)\n");
    }
    o.push_str(&bases_note(rows));
    o
}

/// `--fail-if-slower PCT`: every ratio outside the noise that is worse than
/// the baseline by more than `pct` percent (lower throughput, higher
/// latency), as "point metric: run x0.87".
pub fn slower(runs: &[Run], rows: &[Row], noise: f64, pct: f64) -> Vec<String> {
    let mut out = Vec::new();
    for row in rows {
        for (i, run) in runs.iter().enumerate().skip(1) {
            let Some(r) = row.ratio(i) else { continue };
            let worse = match row.measure.figure.def().direction {
                Direction::HigherIsBetter => r < 1.0 - pct / 100.0,
                Direction::LowerIsBetter => r > 1.0 + pct / 100.0,
                Direction::Neither => false,
            };
            if worse && !row.in_noise(i, noise) {
                out.push(format!(
                    "{} {}: {} {}",
                    row.label,
                    row.measure.label(),
                    run.label,
                    fmt::times(r)
                ));
            }
        }
    }
    out
}

/// The comparison as JSON: runs, and per row the cells and ratios.
pub fn json(runs: &[Run], rows: &[Row], noise: f64) -> serde_json::Value {
    serde_json::json!({
        "baseline": runs[0].label,
        "runs": runs.iter().map(|r| r.label.clone()).collect::<Vec<_>>(),
        "noise_pct": noise,
        "rows": rows.iter().map(|row| serde_json::json!({
            "point": row.label,
            "metric": row.measure.label(),
            "figure": row.measure.figure.def().key,
            "op": row.measure.op,
            "basis": row.measure.basis.map(|b| b.name()),
            "unit": row.measure.figure.def().unit.name(),
            "cells": row.cells.iter().map(|c| c.as_ref().map(|c| serde_json::json!({
                "value": c.value, "min": c.min, "max": c.max, "rounds": c.rounds,
            }))).collect::<Vec<_>>(),
            "ratios": (0..runs.len()).map(|i| row.ratio(i)).collect::<Vec<_>>(),
            "in_noise": (0..runs.len()).map(|i| i > 0 && row.in_noise(i, noise)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// At most this many matched points get a percentile overlay.
const MAX_OVERLAYS: usize = 6;

/// Latency percentiles of each matched point, one line per run (the first
/// point of the run with the row's key), on the "nines" axis.
fn percentile_overlays(runs: &[Run], rows: &[Row], keys: &[String]) -> Vec<String> {
    let mut seen: Vec<&Vec<(String, String)>> = Vec::new();
    let mut out = Vec::new();
    for row in rows {
        if seen.contains(&&row.key) || out.len() >= MAX_OVERLAYS {
            continue;
        }
        seen.push(&row.key);
        let mut series = Vec::new();
        for (i, run) in runs.iter().enumerate() {
            let Some(p) = run
                .results
                .points
                .iter()
                .find(|p| key_of(p, keys) == row.key)
            else {
                continue;
            };
            let Some(l) = main_or_clat(p) else {
                continue;
            };
            let pts = latency::percentile_line(&run.label, l);
            if !pts.is_empty() {
                series.push(svg::Series {
                    label: run.label.clone(),
                    points: pts,
                    dashed: i > 0,
                    color: i,
                    line: true,
                });
            }
        }
        if series.len() < 2 {
            continue;
        }
        out.push(latency::percentile_chart(
            format!("Latency percentiles: {}", row.label),
            series,
        ));
    }
    out
}

/// A ratio cell's shade: none where a value is missing or the figure is
/// no score, grey inside the noise, green better, red worse.
fn ratio_class(row: &Row, run: usize, noise: f64) -> &'static str {
    let Some(r) = row.ratio(run) else {
        return "";
    };
    if row.in_noise(run, noise) {
        return "noise";
    }
    match row.measure.figure.def().direction {
        Direction::Neither => "",
        Direction::HigherIsBetter if r > 1.0 => "up",
        Direction::LowerIsBetter if r < 1.0 => "up",
        _ => "down",
    }
}

pub fn html(runs: &[Run], rows: &[Row], keys: &[String], noise: f64) -> String {
    let t = table(runs, rows, noise);
    let mut o = String::from(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>iolab comparison</title><style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:16px}table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}td:first-child,td:nth-child(2),th{text-align:left}th{background:#f0f0f0}td.noise{color:#888}td.up{background:#e6f4ea}td.down{background:#fde8e8}svg.chart{width:100%;height:auto;max-width:900px}</style></head><body><h1>iolab comparison</h1>"#,
    );
    o.push_str(&format!(
        "<p>Baseline: <b>{}</b>. Ratios are run / baseline; grey ratios lie inside the noise (overlapping ranges of repeated rounds, or under {noise}% without rounds).</p><ul>",
        esc(&runs[0].label)
    ));
    for r in runs {
        let p = &r.results.provenance;
        o.push_str(&format!(
            "<li><b>{}</b>: {} {} point(s), {} {}</li>",
            esc(&r.label),
            esc(&r.results.kind),
            r.results.points.len(),
            esc(&p.hostname),
            esc(&p.started_at)
        ));
    }
    o.push_str("</ul>");
    // One bar chart per figure and basis compared (IOPS, bandwidth,
    // latencies), the matched points (and operation types) grouped by run.
    let mut groups: Vec<(FigureId, Option<Basis>)> = Vec::new();
    for r in rows {
        let g = (r.measure.figure, r.measure.basis);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    // Ratios to the baseline, not absolute values: points whose values
    // differ by decades (1 MiB and 4 KiB IOPS, QD1 and QD32 latency) are
    // all readable on one axis; the values are in the table below.
    for (fig, basis) in groups {
        // Only points with a ratio in every run: a missing value is no bar.
        let sel: Vec<&Row> = rows
            .iter()
            .filter(|r| r.measure.figure == fig && r.measure.basis == basis)
            .filter(|r| (1..runs.len()).all(|i| r.ratio(i).is_some()))
            .collect();
        if sel.is_empty() {
            continue;
        }
        let base = runs.first().map_or("", |r| r.label.as_str());
        let name = Measure {
            figure: fig,
            op: None,
            basis,
        }
        .label();
        o.push_str(&svg::bar_chart_with(
            &BarChart {
                title: format!("{name} relative to {base}, per point"),
                y_title: format!("{name} / {base}'s{}", fig.def().direction.hint()),
                y_fmt: |v| format!("{v:.2}x"),
                categories: sel
                    .iter()
                    .map(|r| match &r.measure.op {
                        Some(op) => format!("{} {op}", r.label),
                        None => r.label.clone(),
                    })
                    .collect(),
                stacks: runs
                    .iter()
                    .enumerate()
                    .skip(1)
                    .map(|(i, run)| {
                        (
                            run.label.clone(),
                            sel.iter().map(|r| r.ratio(i).unwrap_or(f64::NAN)).collect(),
                        )
                    })
                    .collect(),
                stacked: false,
            },
            &svg::BarOverlay {
                reference: Some((1.0, format!("{base} = 1"))),
                ..svg::BarOverlay::default()
            },
        ));
    }
    for chart in percentile_overlays(runs, rows, keys) {
        o.push_str(&chart);
    }
    o.push_str("<table><thead><tr>");
    for h in &t.headers {
        o.push_str(&format!("<th>{}</th>", esc(h)));
    }
    o.push_str("</tr></thead><tbody>");
    for (row, cells) in rows.iter().zip(&t.rows) {
        o.push_str("<tr>");
        for (ci, c) in cells.iter().enumerate() {
            // Columns: point, metric, run 0, then (run i, ratio i) for i >= 1.
            let class = if ci >= 3 && (ci - 3) % 2 == 1 {
                ratio_class(row, (ci - 3) / 2 + 1, noise)
            } else {
                ""
            };
            o.push_str(&format!("<td class=\"{class}\">{}</td>", esc(c)));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>");
    let note = bases_note(rows);
    if !note.is_empty() {
        o.push_str("<p>Latency bases:</p><ul>");
        for l in note.lines() {
            o.push_str(&format!("<li>{}</li>", esc(l)));
        }
        o.push_str("</ul>");
    }
    o.push_str("</body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(v: f64, min: f64, max: f64, rounds: usize) -> Option<Cell> {
        Some(Cell {
            value: v,
            min,
            max,
            rounds,
        })
    }

    /// Issue 31 item 2: a QD32 closed-loop job and a 2000 IOPS paced job
    /// of one file were pooled as `8678 (1968..15.4k, n=2)`.
    #[test]
    fn different_jobs_are_never_pooled() {
        use crate::plan::job::{Arrival, JobSpec, OpenLoop};
        let closed = JobSpec {
            qd: 32,
            ..JobSpec::default()
        };
        let paced = JobSpec {
            open_loop: Some(OpenLoop {
                rate_iops: 2000.0,
                arrival: Arrival::Poisson,
            }),
            ..closed.clone()
        };
        let run = |label: &str, jobs: &[&JobSpec]| {
            let mut r = Results::new("device", crate::results::Provenance::default());
            for (j, iops) in jobs.iter().zip([15_400.0, 1968.0]) {
                r.points
                    .push(crate::analysis::testutil::point(j, iops, 1e5, 200_000));
            }
            Run {
                label: label.into(),
                results: r,
            }
        };
        // The second run has no paced job: "rate" is not a param of all runs.
        let runs = [run("a", &[&closed, &paced]), run("b", &[&closed])];
        let keys = match_keys(&runs, None);
        assert!(keys.iter().any(|k| k == "rate"), "{keys:?}");
        let rows = compare(&runs, &keys, Some(&[FigureId::Iops]));
        assert_eq!(rows.len(), 2, "one row per job");
        let a: Vec<usize> = rows
            .iter()
            .map(|r| r.cells[0].as_ref().unwrap().rounds)
            .collect();
        assert_eq!(a, vec![1, 1], "nothing pooled");
        assert!(
            rows[1].cells[1].is_none(),
            "the paced job has no match in b"
        );
    }

    /// Little's law on a point: 14,000 IOPS at a mean of 1 ms is 14 in
    /// flight; 4 KiB and 64 KiB half and half issue 34 KiB on average.
    #[test]
    fn in_flight_and_average_block() {
        let j = crate::plan::job::JobSpec::default();
        let mut p = crate::analysis::testutil::point(&j, 14_000.0, 1e6, 2_000_000);
        assert!((Measure::whole(FigureId::InFlight).of(&p).unwrap() - 14.0).abs() < 1e-6);
        p.total.iops = 1000.0;
        p.ops.get_mut("read").unwrap().iops = 1000.0;
        p.total.mib_s = 1000.0 * 34.0 * 1024.0 / (1u64 << 20) as f64;
        assert!((Measure::whole(FigureId::AvgBlock).of(&p).unwrap() - 34.0 * 1024.0).abs() < 1e-6);
    }

    #[test]
    fn ratios_and_noise() {
        let row = Row {
            label: "x".into(),
            key: Vec::new(),
            measure: Measure::whole(FigureId::Iops),
            cells: vec![
                cell(100.0, 100.0, 100.0, 1),
                cell(103.0, 103.0, 103.0, 1),
                cell(150.0, 150.0, 150.0, 1),
                None,
            ],
        };
        assert_eq!(row.ratio(1), Some(1.03));
        assert!(row.in_noise(1, 5.0));
        assert!(!row.in_noise(2, 5.0));
        assert_eq!(row.ratio(3), None);
        assert!(!row.in_noise(3, 5.0));
        // With rounds, overlapping ranges decide, not the threshold.
        let row = Row {
            label: "y".into(),
            key: Vec::new(),
            measure: Measure::latency(FigureId::LatMean, "read", Basis::Total),
            cells: vec![cell(100.0, 90.0, 110.0, 3), cell(120.0, 111.0, 130.0, 3)],
        };
        assert!(!row.in_noise(1, 50.0));
    }
}
