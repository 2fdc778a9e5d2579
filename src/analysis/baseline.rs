//! The one comparison with a baseline, for every verb that sets things
//! side by side: media runs (`media`), local vs remote (`remote`) and
//! `iolab compare` (report/compare.rs draws what this computes). A value
//! is compared as `value / baseline`, only when the baseline is positive;
//! repeated rounds are summarized by their median and range (`Spread`),
//! and a difference whose range straddles 1.0, or whose rounds overlap
//! the baseline's, is noise.

use std::collections::BTreeMap;

/// `value / base` when both are finite and the base is positive.
pub fn ratio(value: f64, base: f64) -> Option<f64> {
    (base > 0.0 && base.is_finite() && value.is_finite()).then(|| value / base)
}

/// `ratio` of two values that may be missing.
pub fn ratio_of(value: Option<f64>, base: Option<f64>) -> Option<f64> {
    ratio(value?, base?)
}

/// The median of the finite values, if any.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The ratios of paired rounds (the same key on both sides: a round
/// number), in key order, where both values are known and `ratio` holds.
pub fn paired_ratios<K: Ord, T>(
    this: &BTreeMap<K, T>,
    base: &BTreeMap<K, T>,
    value: impl Fn(&T) -> Option<f64>,
) -> Vec<f64> {
    this.iter()
        .filter_map(|(k, m)| ratio_of(value(m), value(base.get(k)?)))
        .collect()
}

/// Repeated measurements of one thing: their median, range and count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    /// Over the finite values; none when there is none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let finite: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        Some(Spread {
            median: median(&finite)?,
            min: finite.iter().copied().fold(f64::INFINITY, f64::min),
            max: finite.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n: finite.len(),
        })
    }

    /// A spread of ratios that lies on both sides of 1.0: the rounds do
    /// not agree on which side is faster.
    pub fn straddles_one(&self) -> bool {
        self.min < 1.0 && self.max > 1.0
    }

    /// The ranges of two spreads overlap: a difference not to claim.
    pub fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// This spread's median against `base`'s.
    pub fn ratio_to(&self, base: &Spread) -> Option<f64> {
        ratio(self.median, base.median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_need_a_positive_baseline() {
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(3.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 2.0), None);
        assert_eq!(ratio_of(Some(1.0), None), None);
    }

    #[test]
    fn median_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN]), None);
        let s = Spread::of(&[0.9, 1.2, 1.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (1.0, 0.9, 1.2, 3));
        assert!(s.straddles_one());
        let t = Spread::of(&[1.3, 1.5]).unwrap();
        assert!(!t.straddles_one() && !s.overlaps(&t));
        assert_eq!(t.ratio_to(&Spread::of(&[0.7]).unwrap()), Some(2.0));
    }

    #[test]
    fn only_paired_rounds_count() {
        let a = BTreeMap::from([(1, 2.0), (2, 3.0), (3, 9.0)]);
        let b = BTreeMap::from([(1, 1.0), (2, 1.0)]);
        assert_eq!(paired_ratios(&a, &b, |v| Some(*v)), vec![2.0, 3.0]);
    }
}
