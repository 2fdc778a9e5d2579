//! Steady-state detection over rounds (SNIA PTS): in a window of the last
//! `w` rounds (5), the range max - min stays within 20% of the window mean
//! AND the excursion of the least-squares line across the window stays
//! within 10% of the mean. fio's `steadystate` checks one criterion; both
//! of its modes are offered too.

use std::collections::BTreeMap;

pub use crate::results::analysis::steady::{Criterion, SteadyMetric, WindowCheck};
use crate::results::ext::SteadyRound;

use super::types::SteadyGroup;

use super::{key_text, key_without};
use crate::error::usage;
use crate::results::Point;

impl Criterion {
    /// `snia`, `fio-range` or `fio-slope`; `limit_pct` for the fio modes.
    pub fn parse(s: &str, limit_pct: f64) -> anyhow::Result<Criterion> {
        if !(limit_pct > 0.0 && limit_pct < 1000.0) {
            return Err(usage(
                "--steady-limit",
                format!("{limit_pct} is not a percentage"),
            ));
        }
        let limit = limit_pct / 100.0;
        match s {
            "snia" => Ok(Criterion::Snia),
            "fio-range" | "fio" => Ok(Criterion::FioRange { limit }),
            "fio-slope" => Ok(Criterion::FioSlope { limit }),
            o => Err(usage(
                "--steady-criterion",
                format!("'{o}' is not snia, fio-range or fio-slope"),
            )),
        }
    }
}

impl SteadyMetric {
    pub fn parse(s: &str) -> anyhow::Result<SteadyMetric> {
        match s {
            "iops" => Ok(SteadyMetric::Iops),
            "bw" | "bandwidth" => Ok(SteadyMetric::Bw),
            "lat" | "latency" => Ok(SteadyMetric::Lat),
            o => Err(usage(
                "--steady-state",
                format!("'{o}' is not iops, bw or lat"),
            )),
        }
    }

    /// The name in the results file: "iops", "bw" or "lat".
    pub fn name(self) -> &'static str {
        match self {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
            SteadyMetric::Lat => "lat",
        }
    }

    pub fn of(self, p: &Point) -> Option<f64> {
        match self {
            SteadyMetric::Iops => Some(p.total.iops),
            SteadyMetric::Bw => Some(p.total.mib_s),
            SteadyMetric::Lat => p.main_lat().map(|l| l.mean_ns),
        }
    }
}

/// Check the window of the last `w` values of `series`.
pub fn check(series: &[f64], w: usize, c: Criterion) -> Option<WindowCheck> {
    if w < 2 || series.len() < w {
        return None;
    }
    let first = series.len() - w;
    let win = &series[first..];
    let n = w as f64;
    let mean = win.iter().sum::<f64>() / n;
    let max = win.iter().cloned().fold(f64::MIN, f64::max);
    let min = win.iter().cloned().fold(f64::MAX, f64::min);
    let xm = (n - 1.0) / 2.0;
    let sxy: f64 = win
        .iter()
        .enumerate()
        .map(|(i, y)| (i as f64 - xm) * (y - mean))
        .sum();
    let sxx: f64 = (0..w).map(|i| (i as f64 - xm).powi(2)).sum();
    let slope = sxy / sxx;
    let excursion = (slope * (n - 1.0)).abs();
    let max_deviation = win.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max);
    let m = mean.abs();
    let steady = m > 0.0
        && match c {
            Criterion::Snia => max - min <= 0.20 * m && excursion <= 0.10 * m,
            Criterion::FioRange { limit } => max_deviation <= limit * m,
            Criterion::FioSlope { limit } => slope.abs() <= limit * m,
        };
    Some(WindowCheck {
        first_round: first,
        last_round: series.len() - 1,
        mean,
        range: max - min,
        slope,
        excursion,
        max_deviation,
        steady,
    })
}

/// The first window (in round order) that is steady, if any.
pub fn detect(series: &[f64], w: usize, c: Criterion) -> Option<WindowCheck> {
    (w..=series.len()).find_map(|end| check(&series[..end], w, c).filter(|r| r.steady))
}

/// Steady-state runs found in the points (`extra.steady`).
pub fn analyze(points: &[Point]) -> Vec<SteadyGroup> {
    let mut groups: BTreeMap<BTreeMap<String, String>, Vec<(&Point, &SteadyRound)>> =
        BTreeMap::new();
    for p in points {
        if let Some(s) = &p.extra.steady {
            if s.tracked {
                groups.entry(key_without(p, &[])).or_default().push((p, s));
            }
        }
    }
    groups
        .into_iter()
        .map(|(g, rounds)| {
            let s0 = rounds[0].1;
            let (metric, crit, w) = (s0.metric, s0.criterion, s0.window);
            let series: Vec<f64> = rounds
                .iter()
                .map(|(p, _)| metric.of(p).unwrap_or(0.0))
                .collect();
            let found = detect(&series, w, crit);
            SteadyGroup {
                group: key_text(&g),
                metric,
                criterion: crit,
                window: w,
                steady: found.is_some(),
                window_check: found.or_else(|| check(&series, w, crit)),
                rounds: series,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converging_series_is_steady() {
        // Exponential approach to 10000 with small noise.
        let s: Vec<f64> = (0..20)
            .map(|i| {
                10_000.0
                    + 30_000.0 * (-(i as f64) / 2.0).exp()
                    + if i % 2 == 0 { 50.0 } else { -50.0 }
            })
            .collect();
        let r = detect(&s, 5, Criterion::Snia).expect("converges");
        assert!(r.first_round >= 2 && r.first_round < 10, "{r:?}");
        assert!(r.range <= 0.2 * r.mean && r.excursion <= 0.1 * r.mean);
    }

    #[test]
    fn drifting_and_noisy_series_are_not() {
        // 3% per round drift: range passes (12%) but the slope excursion is 12%.
        let drift: Vec<f64> = (0..25).map(|i| 1000.0 * 1.03f64.powi(i)).collect();
        assert!(detect(&drift, 5, Criterion::Snia).is_none());
        // fio's range-only check accepts the same drift at 20%.
        assert!(detect(&drift, 5, Criterion::FioRange { limit: 0.2 }).is_some());
        // Alternating +-15%: slope is small, range 30% fails.
        let noisy: Vec<f64> = (0..25)
            .map(|i| if i % 2 == 0 { 1150.0 } else { 850.0 })
            .collect();
        assert!(detect(&noisy, 5, Criterion::Snia).is_none());
        assert!(detect(&noisy, 5, Criterion::FioSlope { limit: 0.1 }).is_some());
        assert!(check(&noisy[..3], 5, Criterion::Snia).is_none());
    }

    #[test]
    fn parse() {
        assert_eq!(Criterion::parse("snia", 20.0).unwrap(), Criterion::Snia);
        assert_eq!(
            Criterion::parse("fio-slope", 10.0).unwrap(),
            Criterion::FioSlope { limit: 0.1 }
        );
        assert!(Criterion::parse("x", 10.0).is_err());
        assert!(SteadyMetric::parse("bw").is_ok() && SteadyMetric::parse("q").is_err());
    }
}
