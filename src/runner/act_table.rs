//! ACT's table of a `--profile act` point: the small reads' percentages
//! over ACT's thresholds per interval of the point's series (each second's
//! histogram of completion times), and the point's `extra.act` section.

use std::time::Duration;

use crate::analysis::act;
use crate::measure::histogram::LatencyHistogram;
use crate::plan::act::{LargeBlockLoad, THRESHOLDS_MS};
use crate::results::ext::act::{ActInterval, ActLagStop, ActPoint};
use crate::results::Point;
use crate::runner::large_blocks::StreamOutcome;

/// Percent of a histogram's values over each of ACT's thresholds.
fn over_pct(h: &LatencyHistogram) -> Vec<f64> {
    THRESHOLDS_MS
        .iter()
        .map(|&ms| match h.is_empty() {
            true => 0.0,
            false => 100.0 * (1.0 - h.share_at_or_below(ms * 1_000_000)),
        })
        .collect()
}

/// ACT's table from the point's per-interval completion histograms (the
/// small reads: the large-block streams are not in the point's recorder).
pub fn table(p: &Point) -> (Vec<ActInterval>, Vec<f64>) {
    let mut all = LatencyHistogram::new();
    let mut rows = Vec::new();
    for s in &p.series {
        let Some(h) = s
            .clat_hist
            .as_deref()
            .and_then(|e| LatencyHistogram::decode(e).ok())
        else {
            continue;
        };
        all.merge(&h);
        rows.push(ActInterval {
            t_s: s.t_s,
            reads: h.len(),
            over_pct: over_pct(&h),
        });
    }
    (rows, over_pct(&all))
}

/// The point's `extra.act` section, judged by ACT's criteria per hour.
/// `read_lag`: the small reads' lag when they stopped the test.
pub fn section(
    p: &Point,
    load: &LargeBlockLoad,
    streams: &[StreamOutcome],
    read_lag: Option<Duration>,
) -> ActPoint {
    let (intervals, over) = table(p);
    let lags = [
        ("small reads", read_lag),
        (
            "large-block writes",
            streams.first().and_then(|o| o.lag_stop),
        ),
        ("large-block reads", streams.get(1).and_then(|o| o.lag_stop)),
    ];
    let lag_stop = lags.iter().find_map(|&(name, lag)| {
        lag.map(|lag| ActLagStop {
            stream: name.to_string(),
            lag_ms: lag.as_secs_f64() * 1e3,
            max_lag_s: load.max_lag_s.unwrap_or_default(),
        })
    });
    let slices = act::slices(&intervals, &THRESHOLDS_MS, act::SLICE_S);
    let verdict = act::verdict(&slices, lag_stop.as_ref());
    ActPoint {
        scale: load.scale,
        large_block_bytes: load.bs,
        large_block_rate_per_s: load.rate_per_s,
        large_block_writes: streams
            .first()
            .map(StreamOutcome::summary)
            .unwrap_or_default(),
        large_block_reads: streams
            .get(1)
            .map(StreamOutcome::summary)
            .unwrap_or_default(),
        thresholds_ms: THRESHOLDS_MS.to_vec(),
        intervals,
        over_pct: over,
        slice_s: Some(act::SLICE_S),
        slices,
        verdict: Some(verdict),
        lag_stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::SeriesPoint;

    fn second(t_s: f64, values: &[(u64, u64)]) -> SeriesPoint {
        let mut h = LatencyHistogram::new();
        for &(ns, n) in values {
            h.record_n(ns, n);
        }
        SeriesPoint {
            t_s,
            len_s: 1.0,
            iops: 0.0,
            mib_s: 0.0,
            mean_ns: 0.0,
            p99_ns: None,
            clat_hist: Some(h.encode()),
        }
    }

    #[test]
    fn the_table_counts_reads_over_each_threshold_per_interval() {
        let json = include_str!("../../tests/fixtures/report/device-loadlat.json");
        let r: crate::results::Results = serde_json::from_str(json).expect("fixture");
        let mut p = r.points[0].clone();
        p.series = vec![
            // 100 reads: 90 fast, 6 at 1.5 ms, 3 at 10 ms, 1 at 100 ms.
            second(
                0.0,
                &[
                    (200_000, 90),
                    (1_500_000, 6),
                    (10_000_000, 3),
                    (100_000_000, 1),
                ],
            ),
            second(1.0, &[(300_000, 100)]),
        ];
        let (rows, whole) = table(&p);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].reads, 100);
        let first: Vec<f64> = rows[0].over_pct.iter().map(|v| v.round()).collect();
        assert_eq!(first, [10.0, 4.0, 4.0, 4.0, 1.0, 1.0, 1.0]);
        assert!(rows[1].over_pct.iter().all(|&v| v == 0.0));
        assert!((whole[0] - 5.0).abs() < 1e-9, "{whole:?}");
    }
}
