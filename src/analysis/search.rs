//! Latency-target search (fio's `latency_target`, done as a search): the
//! largest QD or rate whose latency percentile meets a target, found by
//! doubling until the target is missed, then bisecting. The searcher is
//! pure: the caller runs each proposed value and reports whether it met
//! the target. `analyze` reads the steps back from the points.

use std::collections::BTreeMap;

use crate::results::ext::TargetStepInfo;

use super::types::{LatencyTargetGroup, TargetStep};

use super::{key_text, key_without};
use crate::results::Point;

/// Doubling-then-bisection over a positive variable.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSearch {
    /// Largest value seen meeting the target, smallest seen missing it.
    pub best: Option<f64>,
    pub worst: Option<f64>,
    max: f64,
    integer: bool,
    /// Bisection stops when the interval is within this fraction (rates).
    rel_tol: f64,
}

impl TargetSearch {
    /// Search a whole number (QD) in 1..=max, or a rate in (0, max].
    pub fn new(max: f64, integer: bool) -> TargetSearch {
        TargetSearch {
            best: None,
            worst: None,
            max,
            integer,
            rel_tol: 0.05,
        }
    }

    /// Record the outcome at `value`; returns the next value to try, or
    /// `None` when the search is over (the answer is `best`).
    pub fn observe(&mut self, value: f64, meets: bool) -> Option<f64> {
        if meets {
            self.best = Some(self.best.map_or(value, |b| b.max(value)));
        } else {
            self.worst = Some(self.worst.map_or(value, |w| w.min(value)));
        }
        match (self.best, self.worst) {
            (_, None) => {
                let next = (value * 2.0).min(self.max);
                (next > value).then_some(next)
            }
            (None, Some(_)) => None,
            (Some(lo), Some(hi)) => {
                let mid = if self.integer {
                    ((lo + hi) / 2.0).floor()
                } else {
                    (lo + hi) / 2.0
                };
                let done = if self.integer {
                    hi - lo <= 1.0
                } else {
                    (hi - lo) <= self.rel_tol * hi
                };
                (!done && mid > lo && mid < hi).then_some(mid)
            }
        }
    }
}

/// Answers and steps of every latency-target search in the points.
pub fn analyze(points: &[Point]) -> Vec<LatencyTargetGroup> {
    let mut groups: BTreeMap<BTreeMap<String, String>, Vec<(&Point, &TargetStepInfo)>> =
        BTreeMap::new();
    for p in points {
        if let Some(t) = &p.extra.latency_target {
            groups
                .entry(key_without(p, &["qd", "rate"]))
                .or_default()
                .push((p, t));
        }
    }
    groups
        .into_iter()
        .map(|(g, steps)| {
            let t0 = steps[0].1;
            let answer = steps
                .iter()
                .filter(|(_, t)| t.meets)
                .map(|(_, t)| t.value)
                .fold(None::<f64>, |a, v| Some(a.map_or(v, |a| a.max(v))));
            LatencyTargetGroup {
                group: key_text(&g),
                variable: Some(t0.variable.clone()),
                target_ns: Some(t0.target_ns),
                percentile: Some(t0.percentile),
                answer,
                steps: steps
                    .iter()
                    .map(|(p, t)| TargetStep {
                        point: p.name.clone(),
                        value: Some(t.value),
                        measured_ns: t.measured_ns,
                        meets: Some(t.meets),
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walk the search against a known threshold and return (answer, steps).
    fn walk(threshold: f64, max: f64, integer: bool, start: f64) -> (Option<f64>, Vec<f64>) {
        let mut s = TargetSearch::new(max, integer);
        let mut v = Some(start);
        let mut steps = Vec::new();
        while let Some(x) = v {
            steps.push(x);
            assert!(steps.len() < 64, "search does not end");
            v = s.observe(x, x <= threshold);
        }
        (s.best, steps)
    }

    #[test]
    fn qd_search_finds_the_largest_meeting() {
        let (ans, steps) = walk(23.0, 4096.0, true, 1.0);
        assert_eq!(ans, Some(23.0));
        assert_eq!(&steps[..6], &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0]);
        assert_eq!(walk(4096.0, 4096.0, true, 1.0).0, Some(4096.0));
        assert_eq!(walk(0.5, 4096.0, true, 1.0).0, None);
    }

    #[test]
    fn rate_search_within_tolerance() {
        let (ans, _) = walk(7300.0, 100_000.0, false, 100.0);
        let a = ans.unwrap();
        assert!((7300.0 * 0.95..=7300.0).contains(&a), "{a}");
    }

    proptest::proptest! {
        #[test]
        fn qd_search_is_exact(t in 1u32..5000) {
            let (ans, _) = walk(t as f64, 4096.0, true, 1.0);
            proptest::prop_assert_eq!(ans, Some((t as f64).min(4096.0)));
        }
    }
}
