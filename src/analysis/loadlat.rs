//! The load-latency curve of open-loop points: achieved IOPS against mean,
//! p50, p95, p99 and p99.9 latency measured from the *intended* issue time
//! (and the actual-issue view next to it), the knee (highest load whose
//! p99 stays under `factor` x the unloaded p99) and the saturation point
//! (the first load whose achieved rate falls short of the target, or the
//! highest achieved rate).

use std::collections::BTreeMap;

use super::types::{Knee, LoadLatencyGroup, LoadPoint, Saturation};

use super::{key_text, key_without, lat_summary};
use crate::measure::histogram::LatStats;
use crate::results::Point;

/// A load point falls short when it achieves less than this share of its target.
pub const SHORTFALL: f64 = 0.95;
/// Rates a group needs before it has a knee.
pub const MIN_CURVE_POINTS: usize = 2;

struct Row<'a> {
    p: &'a Point,
    target: f64,
    achieved: f64,
    intended: LatStats,
}

fn intended_of(p: &Point) -> Option<(f64, LatStats)> {
    let ol = p.extra.open_loop.as_ref()?;
    Some((ol.target_iops, ol.intended_main()?.clone()))
}

pub fn analyze(points: &[Point], knee_factor: f64) -> Vec<LoadLatencyGroup> {
    let mut groups: BTreeMap<BTreeMap<String, String>, Vec<Row>> = BTreeMap::new();
    for p in points {
        if let Some((target, intended)) = intended_of(p) {
            groups
                .entry(key_without(p, &["rate"]))
                .or_default()
                .push(Row {
                    p,
                    target,
                    achieved: p.total.iops,
                    intended,
                });
        }
    }
    let mut out = Vec::new();
    for (g, mut rows) in groups {
        rows.sort_by(|a, b| {
            a.target
                .partial_cmp(&b.target)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let closed_max = points
            .iter()
            .filter(|p| {
                p.extra.is_closed_loop_max()
                    && key_without(p, &["rate", "arrival"])
                        == key_without(rows[0].p, &["rate", "arrival"])
            })
            .map(|p| p.total.iops)
            .next_back();
        let unloaded_p99 = rows[0].intended.percentile(99.0).unwrap_or(0) as f64;
        let limit = knee_factor * unloaded_p99;
        // A knee is a bend in a curve: one rate has none.
        let knee = rows
            .iter()
            .take_while(|r| (r.intended.percentile(99.0).unwrap_or(u64::MAX) as f64) < limit)
            .last()
            .filter(|_| rows.len() >= MIN_CURVE_POINTS);
        let first_short = rows.iter().find(|r| r.achieved < SHORTFALL * r.target);
        let max_achieved = rows.iter().max_by(|a, b| {
            a.achieved
                .partial_cmp(&b.achieved)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let curve: Vec<LoadPoint> = rows
            .iter()
            .map(|r| LoadPoint {
                point: r.p.name.clone(),
                target_iops: r.target,
                achieved_iops: r.achieved,
                lat_from_intended: lat_summary(&r.intended),
                lat_from_issue: r.p.main_lat().map(lat_summary),
                late_fraction: r.p.extra.open_loop.as_ref().map(|o| o.late_fraction),
            })
            .collect();
        out.push(LoadLatencyGroup {
            group: key_text(&g),
            closed_loop_max_iops: closed_max,
            unloaded_p99_ns: unloaded_p99,
            knee_factor,
            knee: knee.map(|r| Knee {
                point: r.p.name.clone(),
                target_iops: r.target,
                achieved_iops: r.achieved,
                p99_ns: r.intended.percentile(99.0),
            }),
            saturation: Saturation {
                first_short_target_iops: first_short.map(|r| r.target),
                first_short_achieved_iops: first_short.map(|r| r.achieved),
                max_achieved_iops: max_achieved.map(|r| r.achieved),
            },
            curve,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::{lat, point};
    use crate::plan::job::{Arrival, JobSpec, OpenLoop};
    use crate::results::OpenLoopStats;

    /// Open-loop points at `rates` on a device of 10k IOPS and 100 us
    /// service time (an M/D/1-like p99).
    fn curve(rates: &[f64]) -> Vec<Point> {
        let mut pts = Vec::new();
        for &rate in rates {
            let spec = JobSpec {
                open_loop: Some(OpenLoop {
                    rate_iops: rate,
                    arrival: Arrival::Poisson,
                }),
                ..Default::default()
            };
            let rho: f64 = rate / 10_000.0;
            let achieved = rate.min(10_000.0);
            let p99 = if rho < 1.0 {
                (100_000.0 * (1.0 + rho / (1.0 - rho))) as u64
            } else {
                1_000_000_000
            };
            let mut p = point(&spec, achieved, p99 as f64 / 2.0, 100_000);
            p.extra.open_loop = Some(OpenLoopStats {
                target_iops: rate,
                lat_from_intended: [("read".to_string(), lat(p99 as f64 / 2.0, p99))].into(),
                ..Default::default()
            });
            pts.push(p);
        }
        pts
    }

    #[test]
    fn knee_and_saturation() {
        let pts = curve(&[1000.0, 3000.0, 5000.0, 7000.0, 9000.0, 11000.0, 13000.0]);
        let v = serde_json::to_value(analyze(&pts, 2.0)).unwrap();
        let g = &v[0];
        // p99 = 100us * (1 + rho/(1-rho)): 2x at rho = 0.5, so the knee is 5000.
        assert_eq!(g["knee"]["target_iops"], 5000.0, "{g}");
        assert_eq!(g["saturation"]["first_short_target_iops"], 11000.0);
        assert_eq!(g["saturation"]["max_achieved_iops"], 10000.0);
        assert_eq!(g["curve"].as_array().unwrap().len(), 7);
        let v3 = serde_json::to_value(analyze(&pts, 4.0)).unwrap();
        assert_eq!(v3[0]["knee"]["target_iops"], 7000.0);
    }

    /// One rate is a point, not a curve: no knee (issue 31 item 7: a job
    /// with one rate_iops printed "knee 1961 IOPS").
    #[test]
    fn one_rate_has_no_knee() {
        let g = &analyze(&curve(&[2000.0]), 2.0)[0];
        assert!(
            g.knee.is_none(),
            "{:?}",
            g.knee.as_ref().map(|k| k.target_iops)
        );
        assert_eq!(g.curve.len(), 1);
        let two = &analyze(&curve(&[1000.0, 3000.0]), 2.0)[0];
        assert!(two.knee.is_some());
    }
}
