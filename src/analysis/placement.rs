//! `--sweep placement`: every job's off-node point beside its on-node
//! point (equal in every parameter but `placement`), with IOPS and the
//! main operation's mean and p99 latency as off/on ratios, as Intel's
//! "NVMe in Linux" study reported its NUMA penalty.

use super::baseline::{ratio, ratio_of};
use super::{key_text, key_without};
pub use crate::results::analysis::placement::PlacementPenalty;
use crate::results::{Param, Point};

/// One row per on-node/off-node pair, in point order.
pub fn analyze(points: &[&Point]) -> Vec<PlacementPenalty> {
    let side = |p: &Point, s: &str| p.param(Param::Placement) == Some(s);
    let node = |p: &Point| p.job.as_ref().and_then(|j| j.numa_node);
    let p99 = |p: &Point| {
        p.main_lat()
            .and_then(|l| l.percentile(99.0))
            .map(|v| v as f64)
    };
    let mean = |p: &Point| p.main_lat().map(|l| l.mean_ns);
    points
        .iter()
        .filter(|p| side(p, "on-node"))
        .filter_map(|on| {
            let key = key_without(on, &[Param::Placement.key()]);
            let off = points.iter().find(|p| {
                side(p, "off-node") && key_without(p, &[Param::Placement.key()]) == key
            })?;
            Some(PlacementPenalty {
                group: key_text(&key),
                iops_off_over_on: ratio(off.total.iops, on.total.iops),
                mean_lat_off_over_on: ratio_of(mean(off), mean(on)),
                off_node: node(off),
                off_point: off.name.clone(),
                on_node: node(on),
                on_point: on.name.clone(),
                p99_lat_off_over_on: ratio_of(p99(off), p99(on)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::job::{JobSpec, PlacementSide};

    fn placed(side: PlacementSide, node: u32) -> JobSpec {
        JobSpec {
            numa_node: Some(node),
            mem_node: Some(node),
            placement: Some(side),
            ..Default::default()
        }
    }

    #[test]
    fn off_node_over_on_node_per_job() {
        let on = point(&placed(PlacementSide::OnNode, 1), 1000.0, 100.0, 200);
        let off = point(&placed(PlacementSide::OffNode, 0), 800.0, 125.0, 300);
        let other = point(&JobSpec::default(), 5.0, 1.0, 1);
        let rows = analyze(&[&off, &other, &on]);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.on_node, r.off_node), (Some(1), Some(0)));
        assert!((r.iops_off_over_on.unwrap() - 0.8).abs() < 1e-9);
        assert!((r.mean_lat_off_over_on.unwrap() - 1.25).abs() < 1e-9);
        assert!((r.p99_lat_off_over_on.unwrap() - 1.5).abs() < 1e-9);
        assert!(!r.group.contains("placement"));
        assert!(analyze(&[&on]).is_empty());
    }
}
