//! Checks on what a peer sent before it is used: every histogram decodes
//! under `LatencyHistogram::decode`'s bounds, rates are finite, there are
//! not more histograms than a point can hold, and the counts agree with
//! the histograms and the duration (an agent reporting ops = u64::MAX
//! wrapped the merged total).

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
    let mut decoded = std::collections::BTreeMap::new();
    for (key, h) in &p.histograms {
        let d = histogram(h).map_err(|why| format!("histogram {key}: {why}"))?;
        decoded.insert(key.as_str(), d.len());
    }
    counts(p, &decoded)?;
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

/// Most operations a host can complete per nanosecond of its measured
/// phase (a batch counts each key: far above any real host).
const MAX_OPS_PER_NS: u64 = 16;

/// The counts against the histograms (`recorded`: samples per histogram
/// key) and the duration: each kind's latency histogram holds at most its
/// operations (exactly them for a device point, whose every request is
/// timed), the total is at most the kinds' sum, computed without
/// overflow, and no count exceeds `MAX_OPS_PER_NS` per ns measured.
fn counts(p: &Point, recorded: &std::collections::BTreeMap<&str, u64>) -> Result<(), String> {
    let mut sum = 0u64;
    for (op, st) in &p.ops {
        sum = sum
            .checked_add(st.ops)
            .ok_or_else(|| format!("the operations of its kinds add up beyond 2^64 ({op})"))?;
        let Some(&timed) = recorded.get(format!("{op}.lat").as_str()) else {
            continue;
        };
        let device = p.job.is_some();
        if timed > st.ops || (device && timed != st.ops) {
            return Err(format!(
                "{op}: {} operations but its latency histogram holds {timed}",
                st.ops
            ));
        }
    }
    if !p.ops.is_empty() && p.total.ops > sum {
        return Err(format!(
            "a total of {} operations but its kinds add up to {sum}",
            p.total.ops
        ));
    }
    let most = p.duration_ns.max(1).saturating_mul(MAX_OPS_PER_NS);
    if p.total.ops > most {
        return Err(format!(
            "{} operations in {} ns: more than {MAX_OPS_PER_NS} per ns",
            p.total.ops, p.duration_ns
        ));
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

    /// A device point whose ops disagree with its histogram, overflow when
    /// added, or exceed what its duration allows is refused.
    #[test]
    fn counts_must_agree_with_the_histograms_and_the_duration() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p: Point = serde_json::from_value(serde_json::json!({
            "name": "p", "params": {}, "started_at": "t", "duration_ns": 1_000_000_000u64,
            "ramp_ns": 0, "direct": true,
            "job": crate::plan::job::JobSpec::default(),
            "ops": {"read": {"ops": 1000, "bytes": 4096000, "iops": 1000.0, "mib_s": 1.0,
                             "slat": null, "clat": null, "lat": h.stats()}},
            "total": {"ops": 1000, "bytes": 4096000, "iops": 1000.0, "mib_s": 1.0},
            "cpu": crate::measure::rusage::CpuStats::default(),
            "series": [], "warnings": [],
            "histograms": {"read.lat": h.encode()},
        }))
        .unwrap();
        assert_eq!(point(&p), Ok(()));
        let mut wrapped = p.clone();
        wrapped.ops.get_mut("read").unwrap().ops = u64::MAX;
        wrapped.total.ops = u64::MAX;
        assert!(point(&wrapped)
            .unwrap_err()
            .contains("latency histogram holds 1000"));
        let mut overflow = p.clone();
        overflow.job = None;
        overflow.ops.get_mut("read").unwrap().ops = u64::MAX;
        let mut write = overflow.ops["read"].clone();
        write.ops = 2;
        overflow.ops.insert("write".into(), write);
        assert!(point(&overflow).unwrap_err().contains("beyond 2^64"));
        let mut total = p.clone();
        total.total.ops = 5000;
        assert!(point(&total).unwrap_err().contains("add up to 1000"));
        let mut fast = p.clone();
        fast.duration_ns = 10;
        assert!(point(&fast).unwrap_err().contains("per ns"));
    }

    #[test]
    fn garbage_is_refused() {
        for s in ["", "AAAA", "HISEFAAAAA==", "!!!"] {
            assert!(histogram(s).is_err(), "{s}");
        }
    }
}
