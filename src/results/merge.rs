//! The exact merge of points measured at the same time (the hosts of a
//! fleet pass, the concurrent jobs of a fio job file's group): HDR
//! histograms added bucket by bucket (never percentiles averaged),
//! operations, bytes, IOPS and bandwidth summed (the parts measured the
//! same window), per-second series added by index on the common start,
//! open-loop statistics summed with the latency from the intended start
//! from the merged histograms, oltp sections summed (`oltp`).

mod oltp;

use std::collections::{BTreeMap, BTreeSet};

use crate::measure::histogram::LatencyHistogram;
use crate::measure::rusage::CpuStats;
use crate::results::ext::OpenLoopStats;
use crate::results::{OpStats, Point, SeriesPoint, Totals, VerifyStats};

/// Whose CPU the parts' `cpu` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuOf {
    /// Each part's own process (hosts): summed.
    Summed,
    /// One process for all of them (concurrent jobs of one run): each part
    /// measured the same process, so the longest part's is the whole.
    OneProcess,
}

fn merge_histograms<'a>(encoded: impl Iterator<Item = &'a String>) -> Option<LatencyHistogram> {
    let mut acc: Option<LatencyHistogram> = None;
    for e in encoded {
        // A histogram that does not decode is left out rather than guessed
        // (a peer's were validated, bounded, when they were received).
        if let Ok(h) = LatencyHistogram::decode(e) {
            match acc.as_mut() {
                Some(a) => a.merge(&h),
                None => acc = Some(h),
            }
        }
    }
    acc
}

fn merged_ops(
    points: &[&Point],
    hists: &BTreeMap<String, LatencyHistogram>,
) -> BTreeMap<String, OpStats> {
    let mut ops: BTreeMap<String, OpStats> = BTreeMap::new();
    for p in points {
        for (kind, o) in &p.ops {
            let e = ops.entry(kind.clone()).or_insert(OpStats {
                ops: 0,
                bytes: 0,
                iops: 0.0,
                mib_s: 0.0,
                slat: None,
                clat: None,
                lat: None,
            });
            e.ops += o.ops;
            e.bytes += o.bytes;
            e.iops += o.iops;
            e.mib_s += o.mib_s;
        }
    }
    for (kind, o) in ops.iter_mut() {
        let stats = |t: &str| hists.get(&format!("{kind}.{t}")).and_then(|h| h.stats());
        o.slat = stats("slat");
        o.clat = stats("clat");
        o.lat = stats("lat");
    }
    ops
}

fn merged_series(points: &[&Point]) -> Vec<SeriesPoint> {
    // Each part's short tail folded first: the parts end a few microseconds
    // apart, and a tail some parts have and others not is no second.
    let parts: Vec<std::borrow::Cow<'_, [SeriesPoint]>> = points
        .iter()
        .map(|p| crate::results::series::folded(&p.series))
        .collect();
    let len = parts.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut merged: Vec<SeriesPoint> = (0..len)
        .map(|i| {
            let secs: Vec<&SeriesPoint> = parts.iter().filter_map(|s| s.get(i)).collect();
            let iops: f64 = secs.iter().map(|s| s.iops).sum();
            let weighted: f64 = secs.iter().map(|s| s.mean_ns * s.iops).sum();
            let all_hist = secs.len() == points.len() && secs.iter().all(|s| s.clat_hist.is_some());
            let hist = all_hist
                .then(|| merge_histograms(secs.iter().filter_map(|s| s.clat_hist.as_ref())))
                .flatten();
            SeriesPoint {
                t_s: secs[0].t_s,
                len_s: secs.iter().map(|s| s.len_s).fold(0.0, f64::max),
                iops,
                mib_s: secs.iter().map(|s| s.mib_s).sum(),
                mean_ns: if iops > 0.0 { weighted / iops } else { 0.0 },
                // Without every host's histogram of the second, the largest
                // p99 is an upper bound of the merged one, never an average.
                p99_ns: match &hist {
                    Some(h) => Some(h.value_at_percentile(99.0)),
                    None => secs.iter().filter_map(|s| s.p99_ns).max(),
                },
                clat_hist: hist.map(|h| h.encode()),
            }
        })
        .collect();
    crate::results::series::fold_short_tail(&mut merged);
    merged
}

/// Counters summed, wall the longest: percentages are of one CPU, summed
/// over the processes (per-part figures are in the rows).
fn summed_cpu(points: &[&Point]) -> CpuStats {
    let mut c = CpuStats::default();
    for p in points {
        let h = &p.cpu;
        c.wall_ns = c.wall_ns.max(h.wall_ns);
        c.user_ns += h.user_ns;
        c.sys_ns += h.sys_ns;
        c.usr_pct += h.usr_pct;
        c.sys_pct += h.sys_pct;
        c.ctx_voluntary += h.ctx_voluntary;
        c.ctx_involuntary += h.ctx_involuntary;
        c.fs_in_blocks += h.fs_in_blocks;
        c.fs_out_blocks += h.fs_out_blocks;
        c.major_faults += h.major_faults;
        c.minor_faults += h.minor_faults;
    }
    c
}

/// The parts' verification counts added (a mismatch on any part is one
/// of the whole), the first mismatches kept up to the usual 64.
fn merged_verify(points: &[&Point]) -> Option<VerifyStats> {
    let parts: Vec<&VerifyStats> = points.iter().filter_map(|p| p.verify.as_ref()).collect();
    if parts.is_empty() {
        return None;
    }
    Some(VerifyStats {
        blocks_checked: parts.iter().map(|v| v.blocks_checked).sum(),
        mismatches: parts.iter().map(|v| v.mismatches).sum(),
        never_written: parts.iter().map(|v| v.never_written).sum(),
        first_mismatches: parts
            .iter()
            .flat_map(|v| v.first_mismatches.iter().cloned())
            .take(64)
            .collect(),
    })
}

/// The parts' open-loop statistics as one, when every part ran open loop:
/// rates, counts and backlogs summed (the largest backlog the largest),
/// the latency from the intended start from the merged `*.lat_intended`
/// histograms; the issue delay, which has no histogram in the point, is
/// the part's with the largest p99 (an upper bound of the whole's).
fn merged_open_loop(
    points: &[&Point],
    hists: &BTreeMap<String, LatencyHistogram>,
) -> Option<OpenLoopStats> {
    let parts: Vec<&OpenLoopStats> = points
        .iter()
        .map(|p| p.extra.open_loop.as_ref())
        .collect::<Option<_>>()?;
    let first = parts.first()?;
    let target_iops: f64 = parts.iter().map(|o| o.target_iops).sum();
    let achieved_iops: f64 = parts.iter().map(|o| o.achieved_iops).sum();
    let late: u64 = parts.iter().map(|o| o.late).sum();
    let measured: u64 = parts.iter().map(|o| o.measured).sum();
    let lat_from_intended = ["read", "write"]
        .iter()
        .filter_map(|k| {
            let h = hists.get(&format!("{k}.lat_intended"))?;
            Some((k.to_string(), h.stats()?))
        })
        .collect();
    Some(OpenLoopStats {
        target_iops,
        achieved_iops,
        achieved_fraction: if target_iops > 0.0 {
            achieved_iops / target_iops
        } else {
            0.0
        },
        arrival: first.arrival.clone(),
        jobs: parts.iter().map(|o| o.jobs).sum(),
        late,
        measured,
        late_fraction: if measured > 0 {
            late as f64 / measured as f64
        } else {
            0.0
        },
        late_threshold_ns: first.late_threshold_ns,
        max_backlog: parts.iter().map(|o| o.max_backlog).max().unwrap_or(0),
        final_backlog: parts.iter().map(|o| o.final_backlog).sum(),
        issue_delay: parts
            .iter()
            .filter_map(|o| o.issue_delay.as_ref())
            .max_by_key(|d| d.percentile(99.0).unwrap_or(d.max_ns))
            .cloned(),
        lat_from_intended,
    })
}

/// The parts' points as one (`None` without parts): named and tagged as
/// the first; warnings prefixed with `KIND LABEL:`.
pub fn merge_points(parts: &[(&str, &Point)], kind: &str, cpu: CpuOf) -> Option<Point> {
    let first = parts.first()?.1;
    let points: Vec<&Point> = parts.iter().map(|(_, p)| *p).collect();
    let keys: BTreeSet<&String> = points.iter().flat_map(|p| p.histograms.keys()).collect();
    let hists: BTreeMap<String, LatencyHistogram> = keys
        .into_iter()
        .filter_map(|k| {
            merge_histograms(points.iter().filter_map(|p| p.histograms.get(k)))
                .map(|h| (k.clone(), h))
        })
        .collect();
    let total = Totals {
        ops: points.iter().map(|p| p.total.ops).sum(),
        bytes: points.iter().map(|p| p.total.bytes).sum(),
        iops: points.iter().map(|p| p.total.iops).sum(),
        mib_s: points.iter().map(|p| p.total.mib_s).sum(),
    };
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for p in &points {
        for (k, n) in &p.errors {
            *errors.entry(k.clone()).or_default() += n;
        }
    }
    let longest = points.iter().max_by_key(|p| p.duration_ns).copied()?;
    Some(Point {
        name: first.name.clone(),
        pass: first.pass.clone(),
        job: first.job.clone(),
        params: first.params.clone(),
        started_at: first.started_at.clone(),
        duration_ns: longest.duration_ns,
        ramp_ns: first.ramp_ns,
        direct: points.iter().all(|p| p.direct),
        ops: merged_ops(&points, &hists),
        total,
        batch: None,
        cpu: match cpu {
            CpuOf::Summed => summed_cpu(&points),
            CpuOf::OneProcess => longest.cpu,
        },
        device: match cpu {
            CpuOf::Summed => None,
            CpuOf::OneProcess => longest.device.clone(),
        },
        series: merged_series(&points),
        verify: merged_verify(&points),
        errors,
        warnings: parts
            .iter()
            .flat_map(|(label, p)| {
                p.warnings
                    .iter()
                    .map(move |w| format!("{kind} {label}: {w}"))
            })
            .collect(),
        histograms: hists.iter().map(|(k, h)| (k.clone(), h.encode())).collect(),
        extra: crate::results::PointExt {
            open_loop: merged_open_loop(&points, &hists),
            oltp: oltp::merge(
                &parts
                    .iter()
                    .map(|(l, p)| (*l, p.extra.oltp.as_deref()))
                    .collect::<Vec<_>>(),
                kind,
                &hists,
            )
            .map(Box::new),
            ..Default::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_counts_add_up() {
        let p = |mismatches: u64| -> Point {
            let mut p: Point = serde_json::from_value(serde_json::json!({
                "name": "p", "params": {}, "started_at": "t", "duration_ns": 1u64,
                "ramp_ns": 0, "direct": true, "ops": {},
                "total": {"ops": 1, "bytes": 1, "iops": 1.0, "mib_s": 1.0},
                "cpu": crate::measure::rusage::CpuStats::default(),
                "series": [], "warnings": [], "histograms": {},
            }))
            .unwrap();
            p.verify = Some(VerifyStats {
                blocks_checked: 10,
                mismatches,
                never_written: 0,
                first_mismatches: Vec::new(),
            });
            p
        };
        let (a, b) = (p(0), p(2));
        let m = merge_points(&[("a", &a), ("b", &b)], "host", CpuOf::Summed).unwrap();
        let v = m.verify.unwrap();
        assert_eq!((v.blocks_checked, v.mismatches), (20, 2));
    }

    /// Issue 46: open-loop parts merge into the whole's open loop (rates
    /// and counts summed, the latency from the intended start from the
    /// added histograms); a part without one leaves none.
    #[test]
    fn open_loop_parts_merge_into_the_whole() {
        let part = |late: u64, lat_ns: u64| -> Point {
            let mut h = LatencyHistogram::new();
            for _ in 0..100 {
                h.record(lat_ns);
            }
            let mut p: Point = serde_json::from_value(serde_json::json!({
                "name": "p", "params": {}, "started_at": "t", "duration_ns": 1u64,
                "ramp_ns": 0, "direct": true, "ops": {},
                "total": {"ops": 100, "bytes": 1, "iops": 100.0, "mib_s": 1.0},
                "cpu": crate::measure::rusage::CpuStats::default(),
                "series": [], "warnings": [], "histograms": {},
            }))
            .unwrap();
            p.histograms.insert("read.lat_intended".into(), h.encode());
            p.extra.open_loop = Some(OpenLoopStats {
                achieved_fraction: 1.0,
                achieved_iops: 100.0,
                arrival: "uniform".into(),
                final_backlog: 1,
                issue_delay: None,
                jobs: 1,
                lat_from_intended: BTreeMap::new(),
                late,
                late_fraction: late as f64 / 100.0,
                late_threshold_ns: 1000,
                max_backlog: late,
                measured: 100,
                target_iops: 100.0,
            });
            p
        };
        let (a, b) = (part(0, 1_000), part(10, 9_000));
        let m = merge_points(&[("a", &a), ("b", &b)], "host", CpuOf::Summed).unwrap();
        let o = m.extra.open_loop.unwrap();
        assert_eq!((o.target_iops, o.achieved_iops, o.jobs), (200.0, 200.0, 2));
        assert_eq!(
            (o.late, o.measured, o.max_backlog, o.final_backlog),
            (10, 200, 10, 2)
        );
        assert!((o.late_fraction - 0.05).abs() < 1e-12);
        let lat = &o.lat_from_intended["read"];
        assert_eq!(lat.n, 200);
        assert!(lat.percentile(99.0).unwrap() >= 8_000, "{lat:?}");
        let mut closed = part(0, 1_000);
        closed.extra.open_loop = None;
        let m = merge_points(&[("a", &a), ("c", &closed)], "host", CpuOf::Summed).unwrap();
        assert!(m.extra.open_loop.is_none());
    }

    /// Issue 44 item 6: two hosts, one ending 30 us into a third second:
    /// the merged series has two seconds, no third at the tail's rate.
    #[test]
    fn a_host_s_short_tail_is_no_merged_second() {
        let sec = |t: f64, len: f64, iops: f64| SeriesPoint {
            t_s: t,
            len_s: len,
            iops,
            mib_s: 0.0,
            mean_ns: 1.0,
            p99_ns: None,
            clat_hist: None,
        };
        let p = |series: Vec<SeriesPoint>| -> Point {
            let mut p: Point = serde_json::from_value(serde_json::json!({
                "name": "p", "params": {}, "started_at": "t", "duration_ns": 2_000_000_000u64,
                "ramp_ns": 0, "direct": true, "ops": {},
                "total": {"ops": 1, "bytes": 1, "iops": 1.0, "mib_s": 1.0},
                "cpu": crate::measure::rusage::CpuStats::default(),
                "series": [], "warnings": [], "histograms": {},
            }))
            .unwrap();
            p.series = series;
            p
        };
        let a = p(vec![sec(0.0, 1.0, 100.0), sec(1.0, 1.0, 100.0)]);
        let b = p(vec![
            sec(0.0, 1.0, 100.0),
            sec(1.0, 1.0, 100.0),
            sec(2.0, 30e-6, 3.0 / 30e-6),
        ]);
        let m = merge_points(&[("a", &a), ("b", &b)], "host", CpuOf::Summed).unwrap();
        assert_eq!(m.series.len(), 2);
        assert!(m.series[1].iops < 204.0, "{}", m.series[1].iops);
    }
}
