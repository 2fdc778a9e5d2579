//! ACT's verdict on a `--profile act` point: the per-second table merged
//! into slices (an hour each, as act_latency reports a 24 h test) and each
//! slice judged by ACT's standard acceptance.

use crate::results::ext::act::{ActCriterion, ActInterval, ActLagStop, ActSlice, ActVerdict};

/// act_latency's default slice: one hour.
pub const SLICE_S: f64 = 3600.0;

/// ACT's standard acceptance: in every hour, fewer than 5% of the reads
/// over 1 ms, 1% over 8 ms and 0.1% over 64 ms.
pub const CRITERIA: [(u64, f64); 3] = [(1, 5.0), (8, 1.0), (64, 0.1)];

pub fn criteria() -> Vec<ActCriterion> {
    CRITERIA
        .iter()
        .map(|&(over_ms, max_pct)| ActCriterion { over_ms, max_pct })
        .collect()
}

/// Whether percentages over `thresholds_ms` meet every criterion (strictly
/// fewer; a threshold missing from the table cannot pass).
pub fn passes(thresholds_ms: &[u64], over_pct: &[f64]) -> bool {
    CRITERIA.iter().all(|&(ms, max)| {
        thresholds_ms
            .iter()
            .position(|&t| t == ms)
            .and_then(|i| over_pct.get(i))
            .is_some_and(|&p| p < max)
    })
}

/// The intervals merged into slices of `slice_s` seconds by their start
/// (the last one as long as what is left), each slice's percentages
/// weighted by its intervals' reads, and each judged.
pub fn slices(rows: &[ActInterval], thresholds_ms: &[u64], slice_s: f64) -> Vec<ActSlice> {
    let slice_s = if slice_s > 0.0 { slice_s } else { SLICE_S };
    let mut out: Vec<(u64, Vec<&ActInterval>)> = Vec::new();
    for r in rows {
        let k = (r.t_s.max(0.0) / slice_s).floor() as u64;
        match out.last_mut() {
            Some((last, group)) if *last == k => group.push(r),
            _ => out.push((k, vec![r])),
        }
    }
    out.into_iter()
        .map(|(k, group)| {
            let reads: u64 = group.iter().map(|r| r.reads).sum();
            let width = group.first().map_or(0, |r| r.over_pct.len());
            let over_pct: Vec<f64> = (0..width)
                .map(|i| {
                    let over: f64 = group
                        .iter()
                        .map(|r| r.over_pct.get(i).copied().unwrap_or(0.0) * r.reads as f64)
                        .sum();
                    if reads == 0 {
                        0.0
                    } else {
                        over / reads as f64
                    }
                })
                .collect();
            let t_s = k as f64 * slice_s;
            let end = group.last().map_or(t_s, |r| r.t_s + 1.0);
            ActSlice {
                t_s,
                len_s: (end - t_s).clamp(0.0, slice_s),
                reads,
                pass: passes(thresholds_ms, &over_pct),
                over_pct,
            }
        })
        .collect()
}

/// The run's verdict: every slice passed and no stream stopped the test.
pub fn verdict(slices: &[ActSlice], lag_stop: Option<&ActLagStop>) -> ActVerdict {
    let failed = slices.iter().filter(|s| !s.pass).count() as u64;
    ActVerdict {
        pass: failed == 0 && !slices.is_empty() && lag_stop.is_none(),
        criteria: criteria(),
        failed_slices: failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];

    fn row(t_s: f64, reads: u64, over: [f64; 7]) -> ActInterval {
        ActInterval {
            t_s,
            reads,
            over_pct: over.to_vec(),
        }
    }

    #[test]
    fn a_slice_passes_only_under_every_limit() {
        assert!(passes(&T, &[4.99, 3.0, 2.0, 0.99, 0.5, 0.2, 0.09]));
        assert!(
            !passes(&T, &[5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
            "5% is not fewer than 5%"
        );
        assert!(
            !passes(&T, &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0]),
            "1% over 8 ms"
        );
        assert!(
            !passes(&T, &[0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.1]),
            "0.1% over 64 ms"
        );
        assert!(!passes(&[1, 2], &[0.0, 0.0]), "no 8 ms column");
    }

    #[test]
    fn a_day_is_24_hourly_slices_each_judged() {
        // One row a minute for 24 h; the 5th hour's reads are slow.
        let rows: Vec<ActInterval> = (0..24 * 60)
            .map(|m| {
                let slow = (4 * 60..5 * 60).contains(&m);
                let p1 = if slow { 6.0 } else { 1.0 };
                row(m as f64 * 60.0, 100, [p1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
            })
            .collect();
        let s = slices(&rows, &T, SLICE_S);
        assert_eq!(s.len(), 24);
        assert_eq!(s[1].t_s, 3600.0);
        assert_eq!(s[0].reads, 6000);
        assert!(s.iter().enumerate().all(|(i, x)| x.pass == (i != 4)));
        let v = verdict(&s, None);
        assert!(!v.pass);
        assert_eq!(v.failed_slices, 1);
        assert!(verdict(&[s[0].clone()], None).pass);
    }

    #[test]
    fn slices_weigh_rows_by_reads_and_a_short_run_is_one_slice() {
        let rows = vec![
            row(0.0, 100, [0.0; 7]),
            row(1.0, 300, [10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
        ];
        let s = slices(&rows, &T, SLICE_S);
        assert_eq!(s.len(), 1);
        assert!((s[0].over_pct[0] - 7.5).abs() < 1e-9);
        assert_eq!(s[0].len_s, 2.0);
        assert!(!s[0].pass);
    }

    #[test]
    fn a_lag_stop_fails_the_run() {
        let s = slices(&[row(0.0, 10, [0.0; 7])], &T, SLICE_S);
        let lag = ActLagStop {
            stream: "large-block writes".into(),
            lag_ms: 10_500.0,
            max_lag_s: 10.0,
        };
        assert!(verdict(&s, None).pass);
        assert!(!verdict(&s, Some(&lag)).pass);
    }
}
