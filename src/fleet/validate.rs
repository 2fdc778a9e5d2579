//! Checks on what a peer sent before it is used: an encoded HDR histogram
//! is inflated under a bound and its header checked (bounds, precision,
//! payload length) before hdrhistogram decodes it, since the decoder
//! allocates whatever length and range the header claims.

use std::io::Read;

use base64::Engine as _;

use crate::measure::histogram::LatencyHistogram;
use crate::results::Point;

const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
const V2_HEADER: usize = 40;
/// iolab records 1 ns .. 1 h; 2^44 ns (~4.9 h) leaves room and bounds the counts array.
const MAX_HIGH: u64 = 1 << 44;
const MAX_SIGFIG: u32 = 3;
/// Zig-zag varints of at most ~40k buckets.
const MAX_INFLATED: u64 = 1 << 20;
/// Histograms one point may carry (op kinds x latency types, per-second series).
const MAX_HISTOGRAMS: usize = 100_000;

/// Decode a histogram a peer sent, refusing what iolab would never write.
pub fn histogram(encoded: &str) -> Result<LatencyHistogram, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("not base64: {e}"))?;
    check_header(&bytes)?;
    LatencyHistogram::decode(encoded).map_err(|e| format!("{e:#}"))
}

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
