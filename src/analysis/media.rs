//! Storage media side by side: the same workloads on several targets,
//! interleaved by rounds, each normalized to a baseline target. Generic
//! over what a point measures: any point of a campaign pass (`pass_of`:
//! the typed `Point::pass`, or an older file's `medium` and `round`
//! params) takes part, and its throughput is `total.iops` (IOPS of
//! device points, operations per second of kv points) or NOPM (OLTP
//! points): each row's `unit`. The baseline is the setup
//! marked baseline (`--baseline`), else the first target of round 1.
//!
//! Ratios are taken within a round (a target against the baseline
//! measured minutes apart, not hours), then summarized over the rounds:
//! the median, the range, and a noise mark when the range straddles 1.0
//! (`analysis::baseline`, the one comparison with a baseline). Beside
//! them each row has `ratio`, the ratio of the medians a table shows side
//! by side: with noisy rounds the two can differ, and a table must say
//! which one it prints.
//! A point marked interrupted (a job or kv phase stopped early by Ctrl-C)
//! is partial and takes no part: its round counts as missing.

use crate::results::sections::LegacyMediaRow;
use crate::results::Param;
use std::borrow::Cow;
use std::collections::BTreeMap;

use super::baseline::{median, paired_ratios, ratio, Spread};
use crate::measure::histogram::LatencyHistogram;
pub use crate::results::analysis::media::{MediaAnalysis, MediaRow};
use crate::results::pass::prefixed;
use crate::results::{PassId, Point};

/// One measured round of a workload on a target.
struct Measured<'a> {
    point: &'a Point,
    throughput: f64,
    mean_lat_ns: Option<f64>,
}

/// The pass a point belongs to: its typed `pass`, or (files written
/// before it existed) the `medium`, `round`, `baseline` and `part` params
/// with the workload after the name's `LABEL rN: ` prefix.
pub fn pass_of(p: &Point) -> Option<Cow<'_, PassId>> {
    if let Some(id) = &p.pass {
        return Some(Cow::Borrowed(id));
    }
    let setup = p.param(Param::Medium)?;
    let round = p.param_num(Param::Round)?;
    Some(Cow::Owned(PassId {
        setup: setup.to_string(),
        round,
        baseline: p.param(Param::Baseline) == Some(setup),
        part: p.param(Param::Part).map(str::to_string),
        workload: legacy_workload(p, setup, round).to_string(),
    }))
}

/// The workload in an older file's point name, after `LABEL rN: `.
fn legacy_workload<'a>(p: &'a Point, setup: &str, round: u32) -> &'a str {
    let prefix = prefixed(setup, round, "");
    p.name
        .strip_prefix(&prefix)
        .or_else(|| p.name.split_once(": ").map(|x| x.1))
        .unwrap_or(&p.name)
}

/// Whether a point is part of a media comparison (partial points are not).
pub fn is_media_point(p: &Point) -> bool {
    pass_of(p).is_some() && !p.is_interrupted()
}

/// The workload a media point measured (its whole name outside a pass).
pub fn workload_of(p: &Point) -> Cow<'_, str> {
    match pass_of(p) {
        Some(Cow::Borrowed(id)) => Cow::Borrowed(id.workload.as_str()),
        Some(Cow::Owned(id)) => Cow::Owned(id.workload),
        None => Cow::Borrowed(p.name.as_str()),
    }
}

/// The baseline setup of passes: the one marked baseline (a file before
/// the typed pass: the `baseline` param), else the first setup of round 1.
fn baseline_of(all: &[&Point], passes: &[(&Point, Cow<'_, PassId>)]) -> Option<String> {
    let marked = all.iter().filter_map(|p| pass_of(p)).find(|id| id.baseline);
    if let Some(id) = marked {
        return Some(id.setup.clone());
    }
    let legacy = all
        .iter()
        .filter(|p| p.pass.is_none())
        .find_map(|p| p.param(Param::Baseline).filter(|_| pass_of(p).is_some()));
    legacy.map(str::to_string).or_else(|| {
        let first = passes
            .iter()
            .find(|(_, id)| id.round == 1)
            .or(passes.first());
        first.map(|(_, id)| id.setup.clone())
    })
}

/// Mean latency over every operation kind, weighted by their counts.
pub fn mean_lat_ns(p: &Point) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0u64);
    for o in p.ops.values() {
        if let Some(l) = &o.lat {
            sum += l.mean_ns * l.n as f64;
            n += l.n;
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// The media comparison of `points`, if any point belongs to a pass.
pub fn analyze(points: &[&Point]) -> Option<MediaAnalysis> {
    let media: Vec<(&Point, Cow<'_, PassId>)> = points
        .iter()
        .filter(|p| !p.is_interrupted())
        .filter_map(|p| pass_of(p).map(|id| (*p, id)))
        .collect();
    media.first()?;
    let baseline = baseline_of(points, &media)?;
    let mut targets: Vec<String> = Vec::new();
    let mut workloads: Vec<String> = Vec::new();
    // (workload, target) -> round -> measured (a repeated round keeps the last)
    let mut by: BTreeMap<(String, String), BTreeMap<u32, Measured>> = BTreeMap::new();
    let mut ordered: Vec<&(&Point, Cow<'_, PassId>)> = media.iter().collect();
    // Round 1's order is the order the targets were given.
    ordered.sort_by_key(|(_, id)| id.round);
    for (_, id) in &ordered {
        if !targets.contains(&id.setup) {
            targets.push(id.setup.clone());
        }
    }
    for (p, id) in &media {
        if !workloads.contains(&id.workload) {
            workloads.push(id.workload.clone());
        }
        by.entry((id.workload.clone(), id.setup.clone()))
            .or_default()
            .insert(
                id.round,
                Measured {
                    point: p,
                    // TPC-C's figure, not transactions of every kind.
                    throughput: p.extra.oltp.as_ref().map_or(p.total.iops, |o| o.nopm),
                    mean_lat_ns: mean_lat_ns(p),
                },
            );
    }
    let empty = BTreeMap::new();
    let mut rows = Vec::new();
    for w in &workloads {
        let base = by.get(&(w.clone(), baseline.clone())).unwrap_or(&empty);
        for t in &targets {
            let Some(rounds) = by.get(&(w.clone(), t.clone())) else {
                continue;
            };
            rows.push(row(w, t, t == &baseline, rounds, base));
        }
    }
    Some(MediaAnalysis {
        baseline,
        rounds: by.values().map(|r| r.len() as u32).max().unwrap_or(0),
        targets,
        workloads,
        rows,
    })
}

fn row(
    workload: &str,
    target: &str,
    is_baseline: bool,
    rounds: &BTreeMap<u32, Measured>,
    base: &BTreeMap<u32, Measured>,
) -> MediaRow {
    let tp = paired_ratios(rounds, base, |m| Some(m.throughput));
    let lat = paired_ratios(rounds, base, |m| m.mean_lat_ns);
    let spread = Spread::of(&tp);
    let device = rounds.values().any(|m| m.point.job.is_some());
    let oltp = rounds.values().any(|m| m.point.extra.oltp.is_some());
    let mib: Vec<f64> = rounds.values().map(|m| m.point.total.mib_s).collect();
    MediaRow {
        workload: workload.to_string(),
        target: target.to_string(),
        unit: match (device, oltp) {
            (true, _) => "IOPS",
            (false, true) => "NOPM",
            (false, false) => "ops/s",
        }
        .into(),
        rounds: rounds.len() as u32,
        throughput: median(&rounds.values().map(|m| m.throughput).collect::<Vec<_>>())
            .unwrap_or(0.0),
        mib_s: median(&mib).filter(|v| *v > 0.0),
        mean_lat_ns: median(
            &rounds
                .values()
                .filter_map(|m| m.mean_lat_ns)
                .collect::<Vec<_>>(),
        ),
        paired_rounds: tp.len() as u32,
        vs_baseline: spread.map(|s| s.median),
        vs_min: spread.map(|s| s.min),
        vs_max: spread.map(|s| s.max),
        noise: !is_baseline && spread.is_some_and(|s| s.straddles_one()),
        lat_vs_baseline: median(&lat),
        ratio: of_medians(rounds, base, |m| Some(m.throughput)),
        lat_ratio: of_medians(rounds, base, |m| m.mean_lat_ns),
        points: rounds.values().map(|m| m.point.name.clone()).collect(),
    }
}

/// The median of `f` over this row's rounds over the baseline's: the
/// ratio of the two values a table shows side by side.
fn of_medians(
    rounds: &BTreeMap<u32, Measured>,
    base: &BTreeMap<u32, Measured>,
    f: impl Fn(&Measured) -> Option<f64>,
) -> Option<f64> {
    let m = |r: &BTreeMap<u32, Measured>| median(&r.values().filter_map(&f).collect::<Vec<_>>());
    ratio(m(rounds)?, m(base)?)
}

/// The latency distribution of a row: every round's read and write
/// histograms merged, so the CDF is over all the requests the rounds
/// made (None when the points carry no histograms).
pub fn merged_latency(points: &[Point], row: &MediaRow) -> Option<LatencyHistogram> {
    let mut merged = LatencyHistogram::new();
    for p in points.iter().filter(|p| row.points.contains(&p.name)) {
        for key in ["read.lat", "write.lat"] {
            if let Some(h) = p.histograms.get(key) {
                merged.merge(&LatencyHistogram::decode(h).ok()?);
            }
        }
    }
    (!merged.is_empty()).then_some(merged)
}

/// The rows as `extra.media.rows` held them before the typed analysis
/// (job, medium, iops, vs_baseline, vs_min, vs_max, noise), for readers
/// of older files' shape.
/// A row's throughput and mean latency over its baseline row's: the
/// ratios of the values a table shows side by side (`MediaRow::ratio` and
/// `lat_ratio`, worked out again for files written before they existed).
pub fn shown_ratios(m: &MediaAnalysis, r: &MediaRow) -> (Option<f64>, Option<f64>) {
    let base = m
        .rows
        .iter()
        .find(|b| b.workload == r.workload && b.target == m.baseline);
    match base {
        Some(b) => (
            r.ratio.or_else(|| ratio(r.throughput, b.throughput)),
            r.lat_ratio
                .or_else(|| super::baseline::ratio_of(r.mean_lat_ns, b.mean_lat_ns)),
        ),
        None => (r.ratio, r.lat_ratio),
    }
}

pub fn legacy_rows(a: &MediaAnalysis) -> Vec<LegacyMediaRow> {
    a.rows
        .iter()
        .filter(|r| r.vs_baseline.is_some())
        .map(|r| LegacyMediaRow {
            job: r.workload.clone(),
            medium: r.target.clone(),
            iops: r.throughput,
            vs_baseline: r.vs_baseline,
            vs_min: r.vs_min,
            vs_max: r.vs_max,
            noise: r.noise,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::job::JobSpec;

    fn point(medium: &str, round: u32, iops: f64, mean_ns: f64) -> Point {
        let spec = JobSpec::default();
        let mut p = crate::analysis::testutil::point(&spec, iops, mean_ns, 90_000);
        p.name = format!("{medium} r{round}: randread-4k-qd1");
        p.params.insert("medium".into(), medium.into());
        p.params.insert("round".into(), round.to_string());
        p.total.iops = iops;
        p
    }

    fn run(pts: &[Point]) -> MediaAnalysis {
        analyze(&pts.iter().collect::<Vec<_>>()).unwrap()
    }

    fn row<'a>(a: &'a MediaAnalysis, t: &str) -> &'a MediaRow {
        a.rows.iter().find(|r| r.target == t).unwrap()
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    /// Issue 31 item 1: a table printed 57758 ops/s beside a baseline's
    /// 72011 with "1.07x" (the median of two noisy per-round ratios). The
    /// ratio of the values shown is kept beside it and is what tables print
    /// first.
    #[test]
    fn the_ratio_of_the_values_shown_is_kept_beside_the_per_round_ones() {
        let mut pts = Vec::new();
        for (r, (base, other)) in [(100.0, 52.0), (44.0, 71.28)].into_iter().enumerate() {
            pts.push(point("ssd", r as u32 + 1, base, 1000.0));
            pts.push(point("nvme", r as u32 + 1, other, 1000.0));
        }
        let a = run(&pts);
        let nvme = row(&a, "nvme");
        assert!(close(nvme.vs_baseline, (0.52 + 1.62) / 2.0), "{nvme:?}");
        let shown = nvme.throughput / row(&a, "ssd").throughput;
        assert!(close(nvme.ratio, shown), "{nvme:?}");
        assert!(close(shown_ratios(&a, nvme).0, shown));
        // Files written before `ratio` existed: worked out from the rows.
        let mut old = a.clone();
        old.rows
            .iter_mut()
            .for_each(|r| (r.ratio, r.lat_ratio) = (None, None));
        let nvme_old = row(&old, "nvme");
        assert!(close(shown_ratios(&old, nvme_old).0, shown));
    }

    #[test]
    fn ratios_are_per_round_with_their_range_and_noise_marked() {
        let mut pts = Vec::new();
        for (r, [e, x, w]) in [
            [100.0, 110.0, 200.0],
            [100.0, 95.0, 210.0],
            [90.0, 99.0, 180.0],
        ]
        .into_iter()
        .enumerate()
        {
            let r = r as u32 + 1;
            pts.push(point("ext4", r, e, 1000.0));
            pts.push(point("xfs", r, x, 1000.0 * e / x));
            pts.push(point("raw", r, w, 500.0));
        }
        let a = run(&pts);
        assert_eq!(a.baseline, "ext4", "the first target of round 1");
        assert_eq!(a.rounds, 3);
        assert_eq!(a.targets, ["ext4", "xfs", "raw"]);
        assert_eq!(a.workloads, ["randread-4k-qd1"]);
        let xfs = row(&a, "xfs");
        assert!(close(xfs.vs_baseline, 1.1), "{xfs:?}");
        assert!(close(xfs.vs_min, 0.95) && close(xfs.vs_max, 1.1), "{xfs:?}");
        assert!(xfs.noise);
        assert!(close(xfs.lat_vs_baseline, 1.0 / 1.1), "{xfs:?}");
        let raw = row(&a, "raw");
        assert!(close(raw.vs_baseline, 2.0) && !raw.noise, "{raw:?}");
        assert_eq!(raw.throughput, 200.0);
        assert!(close(raw.lat_vs_baseline, 0.5));
        assert_eq!(raw.unit, "IOPS");
        assert_eq!(raw.points.len(), 3);
        let base = row(&a, "ext4");
        assert_eq!((base.vs_baseline, base.noise), (Some(1.0), false));
        assert_eq!(legacy_rows(&a).len(), 3);
    }

    #[test]
    fn the_baseline_param_wins_and_a_missing_round_is_left_out() {
        let mut pts = vec![
            point("a", 1, 100.0, 1.0),
            point("b", 1, 200.0, 1.0),
            point("b", 2, 300.0, 1.0),
            point("a", 2, 100.0, 1.0),
            // b has a round 3; a does not (interrupted, or skipped).
            point("b", 3, 900.0, 1.0),
        ];
        for p in &mut pts {
            p.params.insert("baseline".into(), "a".into());
        }
        let a = run(&pts);
        assert_eq!(a.baseline, "a");
        let b = row(&a, "b");
        assert_eq!((b.rounds, b.paired_rounds), (3, 2));
        assert!(close(b.vs_baseline, 2.5) && close(b.vs_min, 2.0) && close(b.vs_max, 3.0));
        assert_eq!(b.throughput, 300.0, "median of 200, 300, 900");
        for p in &mut pts {
            p.params.insert("baseline".into(), "b".into());
        }
        let a = run(&pts);
        assert_eq!(a.baseline, "b");
        let ra = row(&a, "a");
        assert_eq!(ra.paired_rounds, 2);
        assert!(close(ra.vs_baseline, (0.5 + 1.0 / 3.0) / 2.0));
    }

    #[test]
    fn a_baseline_with_zero_throughput_gives_no_ratio() {
        let pts = vec![
            point("base", 1, 0.0, 1.0),
            point("other", 1, 100.0, 1.0),
            point("base", 2, 0.0, 1.0),
            point("other", 2, 120.0, 1.0),
        ];
        let a = run(&pts);
        let o = row(&a, "other");
        assert_eq!((o.vs_baseline, o.vs_min, o.vs_max), (None, None, None));
        assert!(!o.noise && o.paired_rounds == 0);
        assert_eq!(o.throughput, 110.0);
        let json = serde_json::to_string(&a).unwrap();
        assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
        assert!(legacy_rows(&a).is_empty());
    }

    #[test]
    fn kv_points_count_operations_and_others_are_ignored() {
        let mut kv = point("tmpfs", 1, 5000.0, 1.0);
        kv.job = None;
        kv.name = "tmpfs r1: ycsb-a run".into();
        let plain = crate::analysis::testutil::point(&JobSpec::default(), 1.0, 1.0, 1);
        let a = analyze(&[&plain, &kv]).unwrap();
        assert_eq!(a.workloads, ["ycsb-a run"]);
        assert_eq!(a.rows[0].unit, "ops/s");
        assert!(analyze(&[&plain]).is_none());
    }

    #[test]
    fn kv_phases_are_workloads_and_a_partial_phase_is_left_out() {
        let mut pts = Vec::new();
        for (r, t, phase, ops) in [
            (1, "a", "ycsb-a.load", 100.0),
            (1, "a", "ycsb-a.run", 200.0),
            (1, "b", "ycsb-a.load", 150.0),
            (1, "b", "ycsb-a.run", 100.0),
            (2, "b", "ycsb-a.load", 300.0),
            (2, "b", "ycsb-a.run", 400.0),
            (2, "a", "ycsb-a.load", 100.0),
            (2, "a", "ycsb-a.run", 100.0),
        ] {
            let mut p = point(t, r, ops, 1.0);
            p.job = None;
            p.name = format!("{t} r{r}: {phase}");
            pts.push(p);
        }
        // Round 2 of b's run phase was stopped early.
        pts[5].extra.interrupted = Some(true);
        let a = run(&pts);
        assert_eq!(a.workloads, ["ycsb-a.load", "ycsb-a.run"]);
        let find = |w: &str, t: &str| {
            a.rows
                .iter()
                .find(|r| r.workload == w && r.target == t)
                .unwrap()
        };
        let load = find("ycsb-a.load", "b");
        assert!(
            close(load.vs_baseline, 2.25) && load.paired_rounds == 2,
            "{load:?}"
        );
        let run_b = find("ycsb-a.run", "b");
        assert_eq!((run_b.rounds, run_b.paired_rounds), (1, 1), "{run_b:?}");
        assert!(close(run_b.vs_baseline, 0.5), "{run_b:?}");
        assert_eq!(find("ycsb-a.run", "a").vs_baseline, Some(1.0));
    }

    #[test]
    fn the_latency_of_a_row_merges_every_round() {
        let mut pts = vec![point("a", 1, 1.0, 1.0), point("a", 2, 1.0, 1.0)];
        for (i, p) in pts.iter_mut().enumerate() {
            let mut h = LatencyHistogram::new();
            for v in 0..100 {
                h.record(1000 * (i as u64 + 1) + v);
            }
            p.histograms.insert("read.lat".into(), h.encode());
        }
        let a = run(&pts);
        let merged = merged_latency(&pts, &a.rows[0]).unwrap();
        assert_eq!(merged.len(), 200);
        pts[1].histograms.clear();
        assert_eq!(merged_latency(&pts, &a.rows[0]).unwrap().len(), 100);
        pts[0].histograms.clear();
        assert!(merged_latency(&pts, &a.rows[0]).is_none());
    }

    #[test]
    fn workload_is_the_name_after_the_prefix() {
        let mut p = point("stripe:2", 2, 1.0, 1.0);
        p.name = "stripe:2 r2: seq: read".into();
        assert_eq!(workload_of(&p), "seq: read");
        p.name = "no prefix".into();
        assert_eq!(workload_of(&p), "no prefix");
    }

    #[test]
    fn the_typed_pass_is_read_and_older_files_analyse_the_same() {
        let legacy: Vec<Point> = [
            ("a", 1, 100.0),
            ("b", 1, 150.0),
            ("b", 2, 300.0),
            ("a", 2, 100.0),
        ]
        .iter()
        .map(|&(t, r, v)| {
            let mut p = point(t, r, v, 1.0);
            p.params.insert("baseline".into(), "b".into());
            p
        })
        .collect();
        // The same points as this version writes them: the typed pass, and
        // names and params no reader of the analysis looks at.
        let typed: Vec<Point> = legacy
            .iter()
            .map(|p| {
                let mut q = p.clone();
                let id = pass_of(p).unwrap().into_owned();
                q.params.clear();
                q.name = format!("renamed {}", q.name.len());
                q.pass = Some(id);
                q
            })
            .collect();
        let (old, new) = (run(&legacy), run(&typed));
        assert_eq!(old.baseline, "b");
        assert_eq!(new.baseline, "b");
        assert_eq!(new.workloads, ["randread-4k-qd1"]);
        assert_eq!(old.targets, new.targets);
        assert!(close(
            row(&new, "a").vs_baseline,
            (100.0 / 150.0 + 100.0 / 300.0) / 2.0
        ));
        assert_eq!(row(&old, "a").vs_baseline, row(&new, "a").vs_baseline);
        let json = serde_json::to_value(&typed[0]).unwrap();
        assert_eq!(json["pass"]["setup"], "a");
        assert!(serde_json::to_value(&legacy[0])
            .unwrap()
            .get("pass")
            .is_none());
        let back: Point = serde_json::from_value(json).unwrap();
        assert_eq!(back.pass, typed[0].pass);
    }

    #[test]
    fn an_interrupted_mark_is_read_in_either_form() {
        let mut p = point("a", 1, 1.0, 1.0);
        assert!(is_media_point(&p));
        p.warnings
            .push("interrupted: the phase was stopped early".into());
        assert!(!is_media_point(&p), "an older file's warning");
        let mut q = point("a", 1, 1.0, 1.0);
        q.mark_interrupted("interrupted before the end of the job: this point is partial");
        assert_eq!(q.extra.interrupted, Some(true));
        assert_eq!(q.warnings.len(), 1);
        assert!(!is_media_point(&q));
    }
}
