//! Comparisons between points that differ in one parameter: read/write
//! asymmetry, random/sequential ratio, and the peak points of a run.

use crate::results::Param;
use std::collections::BTreeMap;

use super::types::{Asymmetry, PeakRef, Peaks, RandomVsSequential};

use super::{key_text, key_without};
use crate::results::Point;

fn peak_of(points: &[&Point], f: impl Fn(&Point) -> Option<f64>, max: bool) -> Option<PeakRef> {
    let best = points
        .iter()
        .filter_map(|p| f(p).filter(|v| v.is_finite() && *v > 0.0).map(|v| (v, p)))
        .max_by(|a, b| {
            let o = a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal);
            if max {
                o
            } else {
                o.reverse()
            }
        });
    best.map(|(v, p)| PeakRef {
        point: p.name.clone(),
        value: v,
    })
}

/// Highest IOPS, highest MiB/s, lowest mean and p99 latency.
pub fn peaks(points: &[&Point]) -> Peaks {
    let closed: Vec<&Point> = points
        .iter()
        .copied()
        .filter(|p| p.extra.open_loop.is_none())
        .collect();
    Peaks {
        max_iops: peak_of(&closed, |p| Some(p.total.iops), true),
        max_mib_s: peak_of(&closed, |p| Some(p.total.mib_s), true),
        min_mean_lat_ns: peak_of(&closed, |p| p.main_lat().map(|l| l.mean_ns), false),
        min_p99_lat_ns: peak_of(
            &closed,
            |p| {
                p.main_lat()
                    .and_then(|l| l.percentile(99.0))
                    .map(|v| v as f64)
            },
            false,
        ),
    }
}

/// Pairs of points equal except for `rw`, mapped by `pair`.
fn pairs<'a>(
    points: &[&'a Point],
    pair: &[(&str, &str)],
) -> Vec<(BTreeMap<String, String>, &'a Point, &'a Point)> {
    let mut by_key: BTreeMap<(BTreeMap<String, String>, String), &Point> = BTreeMap::new();
    for p in points {
        if p.extra.open_loop.is_some() {
            continue;
        }
        let rw = p.param(Param::Rw).map(str::to_string).unwrap_or_default();
        by_key.insert((key_without(p, &["rw", "mix"]), rw), p);
    }
    let mut out = Vec::new();
    for ((k, rw), a) in &by_key {
        for (x, y) in pair {
            if rw == x {
                if let Some(b) = by_key.get(&(k.clone(), y.to_string())) {
                    out.push((k.clone(), *a, *b));
                }
            }
        }
    }
    out
}

/// a / b when both are known and b is positive.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn mean_lat(p: &Point) -> Option<f64> {
    p.main_lat().map(|l| l.mean_ns)
}

/// Write vs read of the same job: IOPS, bandwidth and mean latency ratios.
pub fn asymmetry(points: &[&Point]) -> Vec<Asymmetry> {
    pairs(points, &[("read", "write"), ("randread", "randwrite")])
        .into_iter()
        .map(|(k, r, w)| Asymmetry {
            group: key_text(&k),
            read: r.name.clone(),
            write: w.name.clone(),
            write_over_read_iops: w.total.iops / r.total.iops.max(1e-9),
            write_over_read_mib_s: w.total.mib_s / r.total.mib_s.max(1e-9),
            write_over_read_mean_lat: ratio(mean_lat(w), mean_lat(r)),
        })
        .collect()
}

/// Random vs sequential of the same job: bandwidth and mean latency ratios.
pub fn random_vs_sequential(points: &[&Point]) -> Vec<RandomVsSequential> {
    pairs(points, &[("randread", "read"), ("randwrite", "write")])
        .into_iter()
        .map(|(k, r, s)| RandomVsSequential {
            group: key_text(&k),
            random: r.name.clone(),
            sequential: s.name.clone(),
            random_over_sequential_mib_s: r.total.mib_s / s.total.mib_s.max(1e-9),
            random_over_sequential_mean_lat: ratio(mean_lat(r), mean_lat(s)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::job::{JobSpec, Pattern};

    fn spec(p: Pattern) -> JobSpec {
        JobSpec {
            pattern: p,
            ..Default::default()
        }
    }

    #[test]
    fn ratios_and_peaks() {
        let pts = [
            point(&spec(Pattern::Read), 4000.0, 250_000.0, 400_000),
            point(&spec(Pattern::Write), 2200.0, 450_000.0, 900_000),
            point(&spec(Pattern::RandRead), 1000.0, 1_000_000.0, 2_000_000),
            point(&spec(Pattern::RandWrite), 500.0, 2_000_000.0, 4_000_000),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let a = serde_json::to_value(asymmetry(&refs)).unwrap();
        assert_eq!(a.as_array().unwrap().len(), 2);
        let seq = a
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["read"] == pts[0].name)
            .unwrap();
        assert!((seq["write_over_read_iops"].as_f64().unwrap() - 0.55).abs() < 1e-9);
        let r = serde_json::to_value(random_vs_sequential(&refs)).unwrap();
        let rr = r
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["random"] == pts[2].name)
            .unwrap();
        assert!((rr["random_over_sequential_mib_s"].as_f64().unwrap() - 0.25).abs() < 1e-9);
        let p = serde_json::to_value(peaks(&refs)).unwrap();
        assert_eq!(p["max_iops"]["point"], pts[0].name);
        assert_eq!(p["min_mean_lat_ns"]["point"], pts[0].name);
    }
}
