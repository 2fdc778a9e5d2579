//! A per-second series' short last interval. A run that ends a few
//! microseconds into a new second leaves an interval whose rate, scaled to
//! a second, is a spike the device never did (223k IOPS from 12 requests in
//! 54 us). It is folded into the interval before it, whose rates are
//! recomputed over the combined length, when a series is recorded or
//! merged and again when one is drawn or exported (files written before
//! still carry the short interval).

use std::borrow::Cow;

use crate::measure::histogram::LatencyHistogram;
use crate::results::SeriesPoint;

/// A last interval shorter than this share of the one before it is folded.
pub const SHORT_TAIL_SHARE: f64 = 0.5;

/// Whether the last interval is short enough to be folded.
pub fn has_short_tail(series: &[SeriesPoint]) -> bool {
    match series {
        [.., prev, last] => {
            let nominal = if prev.len_s > 0.0 { prev.len_s } else { 1.0 };
            last.len_s < SHORT_TAIL_SHARE * nominal
        }
        _ => false,
    }
}

/// Fold a short last interval into the one before it (see the module doc).
pub fn fold_short_tail(series: &mut Vec<SeriesPoint>) {
    if !has_short_tail(series) {
        return;
    }
    let last = series.pop().expect("two intervals");
    let prev = series.last_mut().expect("two intervals");
    *prev = folded_pair(prev, &last);
}

/// The series as it is drawn and exported: borrowed unless folded.
pub fn folded(series: &[SeriesPoint]) -> Cow<'_, [SeriesPoint]> {
    if !has_short_tail(series) {
        return Cow::Borrowed(series);
    }
    let mut v = series.to_vec();
    fold_short_tail(&mut v);
    Cow::Owned(v)
}

fn folded_pair(a: &SeriesPoint, b: &SeriesPoint) -> SeriesPoint {
    let len = a.len_s + b.len_s;
    let (ops_a, ops_b) = (a.iops * a.len_s, b.iops * b.len_s);
    let ops = ops_a + ops_b;
    let mib = a.mib_s * a.len_s + b.mib_s * b.len_s;
    let clat_hist = match (&a.clat_hist, &b.clat_hist) {
        (Some(x), Some(y)) => match (LatencyHistogram::decode(x), LatencyHistogram::decode(y)) {
            (Ok(mut hx), Ok(hy)) => {
                hx.merge(&hy);
                Some(hx.encode())
            }
            _ => Some(x.clone()),
        },
        (x, y) => x.clone().or_else(|| y.clone()),
    };
    SeriesPoint {
        t_s: a.t_s,
        len_s: len,
        iops: ops / len,
        mib_s: mib / len,
        mean_ns: if ops > 0.0 {
            (a.mean_ns * ops_a + b.mean_ns * ops_b) / ops
        } else {
            0.0
        },
        // The interval's p99 is of total latency, which keeps no histogram
        // per interval: the larger of the two bounds the folded one.
        p99_ns: a.p99_ns.max(b.p99_ns),
        clat_hist,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t_s: f64, len_s: f64, iops: f64, mean_ns: f64) -> SeriesPoint {
        SeriesPoint {
            t_s,
            len_s,
            iops,
            mib_s: iops * 4096.0 / (1 << 20) as f64,
            mean_ns,
            p99_ns: Some(mean_ns as u64 * 2),
            clat_hist: None,
        }
    }

    /// Issue 44 item 6: 12 requests in the last 54 us read as 223k IOPS.
    #[test]
    fn a_short_last_interval_is_folded_into_the_one_before() {
        let mut s = vec![
            second(0.0, 1.0, 54_000.0, 18_000.0),
            second(1.0, 1.0, 54_000.0, 18_000.0),
            second(2.0, 54e-6, 12.0 / 54e-6, 30_000.0),
        ];
        assert!(s[2].iops > 200_000.0);
        let drawn = folded(&s).into_owned();
        fold_short_tail(&mut s);
        assert_eq!(s, drawn);
        assert_eq!(s.len(), 2);
        let last = &s[1];
        assert_eq!(last.t_s, 1.0);
        assert!((last.len_s - 1.000054).abs() < 1e-9);
        let ops = last.iops * last.len_s;
        assert!((ops - 54_012.0).abs() < 1e-6, "{ops}");
        assert!(last.iops < 54_010.0, "{}", last.iops);
        assert!(last.mean_ns > 18_000.0 && last.mean_ns < 18_010.0);
        assert_eq!(last.p99_ns, Some(60_000));
    }

    #[test]
    fn a_long_enough_last_interval_and_a_lone_one_stay() {
        let s = vec![second(0.0, 1.0, 10.0, 1.0), second(1.0, 0.6, 10.0, 1.0)];
        assert!(matches!(folded(&s), Cow::Borrowed(_)));
        let lone = vec![second(0.0, 0.01, 1000.0, 1.0)];
        assert!(matches!(folded(&lone), Cow::Borrowed(_)));
    }

    #[test]
    fn interval_histograms_are_added() {
        let hist = |ns: &[u64]| {
            let mut h = LatencyHistogram::new();
            for &v in ns {
                h.record_n(v, 1);
            }
            Some(h.encode())
        };
        let mut a = second(0.0, 1.0, 2.0, 1.0);
        a.clat_hist = hist(&[1000, 2000]);
        let mut b = second(1.0, 0.001, 1000.0, 1.0);
        b.clat_hist = hist(&[3000]);
        let mut s = vec![a, b];
        fold_short_tail(&mut s);
        let h = LatencyHistogram::decode(s[0].clat_hist.as_ref().unwrap()).unwrap();
        assert_eq!(h.len(), 3);
    }
}
