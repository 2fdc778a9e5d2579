//! Latency histograms: HDR histograms in nanoseconds with 3 significant
//! digits (0.1% worst-case error, finer than fio's 64 buckets per power of two
//! at ~0.78%), and the summary statistics iolab reports from them.

use std::collections::BTreeMap;
use std::io::Read;

use anyhow::Context;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// fio's default percentile list plus 99.999.
pub const PERCENTILES: [f64; 18] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99, 99.999,
];

/// Largest latency a histogram tracks (1 hour); larger values are clamped.
pub const MAX_NS: u64 = 3_600_000_000_000;

/// A latency histogram in nanoseconds. Recording never allocates.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl LatencyHistogram {
    /// Full-precision histogram (3 significant digits).
    pub fn new() -> Self {
        Self::with_sigfig(3)
    }

    /// Lower precision for per-interval series (2 digits is 1%).
    pub fn with_sigfig(sigfig: u8) -> Self {
        LatencyHistogram {
            h: Histogram::new_with_bounds(1, MAX_NS, sigfig)
                .expect("valid static histogram bounds"),
        }
    }

    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        // Clamp instead of failing: a value out of range must not abort a run.
        let v = ns.clamp(1, MAX_NS);
        let _ = self.h.record(v);
    }

    /// Record `count` values of `ns` at once (fio's json+ bins).
    pub fn record_n(&mut self, ns: u64, count: u64) {
        let v = ns.clamp(1, MAX_NS);
        let _ = self.h.record_n(v, count);
    }

    pub fn merge(&mut self, other: &LatencyHistogram) {
        let _ = self.h.add(&other.h);
    }

    pub fn reset(&mut self) {
        self.h.reset();
    }

    pub fn len(&self) -> u64 {
        self.h.len()
    }

    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    pub fn value_at_percentile(&self, p: f64) -> u64 {
        self.h.value_at_quantile(p / 100.0)
    }

    pub fn mean(&self) -> f64 {
        self.h.mean()
    }

    /// The share (0..=1) of recorded values at or below `ns`, to the
    /// histogram's precision; 0 when nothing was recorded.
    pub fn share_at_or_below(&self, ns: u64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        self.h.count_between(0, ns) as f64 / self.h.len() as f64
    }

    /// Summary statistics, or `None` when nothing was recorded.
    pub fn stats(&self) -> Option<LatStats> {
        if self.h.is_empty() {
            return None;
        }
        let percentiles = PERCENTILES
            .iter()
            .map(|&p| (percentile_key(p), self.h.value_at_quantile(p / 100.0)))
            .collect();
        Some(LatStats {
            n: self.h.len(),
            min_ns: self.h.min(),
            max_ns: self.h.max(),
            mean_ns: self.h.mean(),
            stdev_ns: self.h.stdev(),
            percentiles_ns: percentiles,
        })
    }

    /// The histogram as base64 of HdrHistogram's V2 deflate encoding, so
    /// results can be merged and re-analysed later (and by other HDR tools).
    /// Counts the format cannot hold (over 2^63, only from a mangled input
    /// file) encode as an empty string, which does not decode.
    pub fn encode(&self) -> String {
        let mut buf = Vec::new();
        match V2DeflateSerializer::new().serialize(&self.h, &mut buf) {
            Ok(_) => base64::engine::general_purpose::STANDARD.encode(buf),
            Err(_) => String::new(),
        }
    }

    /// Decode what `encode` wrote. The header is inflated under a bound and
    /// checked (bounds, precision, payload length) first: hdrhistogram
    /// allocates whatever range the header claims, and a 10 KB results
    /// file claiming 4 GiB took 4 GB of memory in `report`.
    pub fn decode(s: &str) -> anyhow::Result<LatencyHistogram> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s)
            .context("histogram is not valid base64")?;
        check_header(&bytes).map_err(|why| anyhow::anyhow!("histogram refused: {why}"))?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| anyhow::anyhow!("histogram does not decode: {e:?}"))?;
        Ok(LatencyHistogram { h })
    }

    /// (value, count) per recorded bucket, the value being the middle of
    /// the bucket (for re-binning into another tool's layout).
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.h.iter_recorded().map(|v| {
            (
                self.h.median_equivalent(v.value_iterated_to()),
                v.count_at_value(),
            )
        })
    }

    /// (value, cumulative fraction) pairs for CDF plots, one per distinct bucket.
    pub fn cdf(&self) -> Vec<(u64, f64)> {
        let total = self.h.len().max(1) as f64;
        let mut acc = 0u64;
        self.h
            .iter_recorded()
            .map(|v| {
                acc += v.count_at_value();
                (
                    self.h.highest_equivalent(v.value_iterated_to()),
                    acc as f64 / total,
                )
            })
            .collect()
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Key for a percentile in JSON maps: "99.900000" like fio (six decimals).
pub fn percentile_key(p: f64) -> String {
    format!("{p:.6}")
}

/// Summary of one latency distribution, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatStats {
    pub n: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    pub stdev_ns: f64,
    /// Keyed by `percentile_key` ("50.000000", "99.900000", ...).
    pub percentiles_ns: BTreeMap<String, u64>,
}

impl LatStats {
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles_ns.get(&percentile_key(p)).copied()
    }

    /// Every recorded (percentile, ns), by percentile.
    pub fn percentile_points(&self) -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = self
            .percentiles_ns
            .iter()
            .filter_map(|(k, v)| k.parse::<f64>().ok().map(|q| (q, *v as f64)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts
    }
}

const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
const V2_HEADER: usize = 40;
/// iolab records 1 ns .. 1 h (`MAX_NS`); 2^44 ns (~4.9 h) leaves room and
/// bounds the counts array.
const MAX_HIGH: u64 = 1 << 44;
const MAX_SIGFIG: u32 = 3;
/// Zig-zag varints of at most ~40k buckets.
const MAX_INFLATED: u64 = 1 << 20;

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

fn check_header(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < 8 || be32(bytes) != V2_COMPRESSED_COOKIE {
        return Err("not an HDR V2 deflate histogram".into());
    }
    let compressed = be32(&bytes[4..]) as usize;
    if compressed > bytes.len() - 8 {
        return Err("compressed length beyond the data".into());
    }
    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(&bytes[8..8 + compressed])
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut inflated)
        .map_err(|e| format!("does not inflate: {e}"))?;
    if inflated.len() as u64 > MAX_INFLATED {
        return Err(format!("inflates beyond {MAX_INFLATED} bytes"));
    }
    if inflated.len() < V2_HEADER || be32(&inflated) != V2_COOKIE {
        return Err("no HDR V2 header inside".into());
    }
    let payload = be32(&inflated[4..]) as usize;
    let sigfig = be32(&inflated[12..]);
    let low = be64(&inflated[16..]);
    let high = be64(&inflated[24..]);
    if payload != inflated.len() - V2_HEADER {
        return Err(format!(
            "payload length {payload} but {} bytes follow",
            inflated.len() - V2_HEADER
        ));
    }
    if !(1..=MAX_SIGFIG).contains(&sigfig) || low < 1 || high > MAX_HIGH || high < 2 * low {
        return Err(format!(
            "bounds {low}..{high} ns at {sigfig} digits are not an iolab histogram's"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_known_values() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.stats().unwrap();
        assert_eq!(s.n, 1000);
        assert_eq!(s.min_ns, 1000);
        assert!((s.max_ns as f64 - 1_000_000.0).abs() / 1e6 < 0.001);
        assert!((s.mean_ns - 500_500.0).abs() / 500_500.0 < 0.001);
        let p50 = s.percentile(50.0).unwrap() as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.002, "p50 {p50}");
        let p99 = s.percentile(99.0).unwrap() as f64;
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.002, "p99 {p99}");
        assert!(s.percentile(99.999).is_some());
    }

    #[test]
    fn precision_is_three_digits() {
        // Any single value comes back within 0.1%.
        for v in [1_234u64, 98_765, 12_345_678, 3_000_000_000] {
            let mut h = LatencyHistogram::new();
            h.record(v);
            let got = h.value_at_percentile(50.0) as f64;
            assert!((got - v as f64).abs() / (v as f64) <= 0.001, "{v} -> {got}");
        }
    }

    #[test]
    fn empty_has_no_stats_and_clamps() {
        let mut h = LatencyHistogram::new();
        assert!(h.stats().is_none());
        h.record(0);
        h.record(u64::MAX);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn encode_roundtrip_and_merge() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        for v in 0..100 {
            a.record(10_000 + v);
            b.record(50_000 + v);
        }
        let a2 = LatencyHistogram::decode(&a.encode()).unwrap();
        assert_eq!(a2.stats(), a.stats());
        let mut m = a2;
        m.merge(&b);
        assert_eq!(m.len(), 200);
        assert!(LatencyHistogram::decode("not base64!").is_err());
        let cdf = m.cdf();
        assert!((cdf.last().unwrap().1 - 1.0).abs() < 1e-9);
    }
}
