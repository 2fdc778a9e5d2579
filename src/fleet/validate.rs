//! Checks on what a peer sent before it is used: every histogram decodes
//! under `LatencyHistogram::decode`'s bounds, rates are finite, and there
//! are not more histograms than a point can hold.

use crate::measure::histogram::LatencyHistogram;
use crate::results::Point;

/// Histograms one point may carry (op kinds x latency types, per-second series).
const MAX_HISTOGRAMS: usize = 100_000;

/// Decode a histogram a peer sent, refusing what iolab would never write
/// (`LatencyHistogram::decode` checks its header before it allocates).
pub fn histogram(encoded: &str) -> Result<LatencyHistogram, String> {
    LatencyHistogram::decode(encoded).map_err(|e| format!("{e:#}"))
}

/// A point a peer sent: every histogram decodes under the bounds above and
/// every rate is a finite, non-negative number.
pub fn point(p: &Point) -> Result<(), String> {
    let series = p.series.iter().filter(|s| s.clat_hist.is_some()).count();
    if p.histograms.len() + series > MAX_HISTOGRAMS {
        return Err(format!("{} histograms", p.histograms.len() + series));
    }
    for (key, h) in &p.histograms {
        histogram(h).map_err(|why| format!("histogram {key}: {why}"))?;
    }
    for (i, s) in p.series.iter().enumerate() {
        if let Some(h) = &s.clat_hist {
            histogram(h).map_err(|why| format!("second {i}'s histogram: {why}"))?;
        }
        if !(s.iops.is_finite() && s.iops >= 0.0 && s.mib_s.is_finite() && s.mib_s >= 0.0) {
            return Err(format!("second {i}'s rates are not finite"));
        }
    }
    let rates = [p.total.iops, p.total.mib_s];
    if rates.iter().any(|r| !r.is_finite() || *r < 0.0) {
        return Err("total rates are not finite".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    #[test]
    fn iolab_histograms_pass() {
        let mut h = LatencyHistogram::new();
        for v in [1u64, 500, 90_000, 3_000_000_000] {
            h.record(v);
        }
        assert_eq!(histogram(&h.encode()).unwrap().len(), 4);
        let series = LatencyHistogram::with_sigfig(2);
        assert!(histogram(&series.encode()).is_ok());
    }

    #[test]
    fn a_histogram_claiming_a_huge_range_is_refused() {
        let h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, u64::MAX / 2, 5).unwrap();
        let mut buf = Vec::new();
        use hdrhistogram::serialization::Serializer;
        hdrhistogram::serialization::V2DeflateSerializer::new()
            .serialize(&h, &mut buf)
            .unwrap();
        let enc = base64::engine::general_purpose::STANDARD.encode(buf);
        let err = histogram(&enc).unwrap_err();
        assert!(err.contains("not an iolab histogram"), "{err}");
    }

    #[test]
    fn garbage_is_refused() {
        for s in ["", "AAAA", "HISEFAAAAA==", "!!!"] {
            assert!(histogram(s).is_err(), "{s}");
        }
    }
}
