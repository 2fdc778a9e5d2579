//! fio's bandwidth, IOPS, latency and histogram logs from a point's
//! per-second series, so fio-plot `-g`, fio2gnuplot, fiologparser_hist and
//! other fio log readers work on iolab runs (`LogPlan`, the sink's exporter
//! of them, writes them after every point). fio writes one line per
//! logging interval: `time (ms), value, data direction, block size,
//! offset`; iolab's interval is 1 s, what fio writes with
//! `log_avg_msec=1000`. Values: bandwidth in KiB/s, IOPS as a count per
//! second, latency in ns (the mean of the interval, as fio's averaged
//! logs). The histogram log (`write_hist_log`) has `time (ms), data
//! direction, block size` and then the interval's completion latencies in
//! fio's 1856 bins (64 per power of two of nanoseconds: `fio_bin`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::measure::histogram::LatencyHistogram;
pub use crate::plan::log_request::{file_prefix, LogRequest};
use crate::results::{write_atomic, Point};
use crate::session::export::Exporter;

/// fio-format logs to write after every point (`--log-dir`, or a fio job
/// file's `write_*_log`).
#[derive(Debug, Clone, Default)]
pub struct LogPlan {
    pub dir: PathBuf,
    /// Every point, all three logs named after the point (`--log-dir`).
    pub every_point: bool,
    /// Points by name (fio jobs) with the logs their job asked for.
    pub by_name: Vec<(String, LogRequest)>,
}

impl Exporter for LogPlan {
    /// The logs of a point just measured, if asked for.
    fn point_measured(&mut self, p: &Point) -> anyhow::Result<()> {
        let req = if self.every_point {
            Some(LogRequest::all(&file_prefix(&p.name)))
        } else {
            self.by_name
                .iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, r)| r.clone())
        };
        if let Some(req) = req {
            write_logs(&self.dir, &req, p)?;
        }
        Ok(())
    }
}

/// A log line's time: the end of its interval, in ms since the start.
fn end_ms(s: &crate::results::SeriesPoint) -> u64 {
    ((s.t_s + s.len_s) * 1000.0).round() as u64
}

/// The value one log takes from a second of the series.
type SeriesValue = fn(&crate::results::SeriesPoint) -> f64;

/// Write the requested logs of `p` into `dir`; the files written.
pub fn write_logs(dir: &Path, req: &LogRequest, p: &Point) -> anyhow::Result<Vec<PathBuf>> {
    let ddir = match p.ops.keys().next().map(String::as_str) {
        Some("write") => 1,
        Some("trim") => 2,
        _ => 0,
    };
    let bs = p.total.bytes.checked_div(p.total.ops).unwrap_or(0);
    let mut out = Vec::new();
    let kinds: [(bool, &str, SeriesValue); 3] = [
        (req.bw, "bw", |s| s.mib_s * 1024.0),
        (req.iops, "iops", |s| s.iops),
        (req.lat, "lat", |s| s.mean_ns),
    ];
    for (wanted, kind, value) in kinds {
        if !wanted {
            continue;
        }
        let mut text = String::new();
        for s in crate::results::series::folded(&p.series).iter() {
            let t_ms = end_ms(s);
            let _ = writeln!(text, "{t_ms}, {}, {ddir}, {bs}, 0", value(s).round() as u64);
        }
        let path = dir.join(format!("{}_{kind}.1.log", req.prefix));
        write_atomic(&path, text.as_bytes())?;
        out.push(path);
    }
    if req.hist {
        if let Some(text) = hist_log(p, ddir, bs)? {
            let path = dir.join(format!("{}_clat_hist.1.log", req.prefix));
            write_atomic(&path, text.as_bytes())?;
            out.push(path);
        }
    }
    Ok(out)
}

/// fio's latency bins: values below 128 ns have a bin each, then each
/// power of two is split into 64 bins; 29 groups in all (fio's
/// FIO_IO_U_PLAT_BITS = 6, FIO_IO_U_PLAT_GROUP_NR = 29).
pub const FIO_BINS: usize = 29 * 64;

/// The fio bin of a latency in nanoseconds.
pub fn fio_bin(ns: u64) -> usize {
    const BITS: u32 = 6;
    if ns < 128 {
        return ns as usize;
    }
    let msb = 63 - ns.leading_zeros();
    let error_bits = msb - BITS;
    let base = ((error_bits + 1) << BITS) as usize;
    let offset = ((ns >> error_bits) & 63) as usize;
    (base + offset).min(FIO_BINS - 1)
}

/// The histogram log of `p`; `None` when the point kept no per-second
/// completion histograms (it was measured without `hist_log`).
fn hist_log(p: &Point, ddir: u8, bs: u64) -> anyhow::Result<Option<String>> {
    if p.series.iter().all(|s| s.clat_hist.is_none()) {
        return Ok(None);
    }
    let mut text = String::new();
    for s in crate::results::series::folded(&p.series).iter() {
        let mut bins = vec![0u64; FIO_BINS];
        if let Some(enc) = &s.clat_hist {
            for (ns, n) in LatencyHistogram::decode(enc)?.buckets() {
                bins[fio_bin(ns)] += n;
            }
        }
        let t_ms = end_ms(s);
        let _ = write!(text, "{t_ms}, {ddir}, {bs}");
        for b in bins {
            let _ = write!(text, ", {b}");
        }
        text.push('\n');
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::job::JobSpec;
    use crate::results::SeriesPoint;

    #[test]
    fn logs_have_fios_columns_and_units() {
        let mut p = point(&JobSpec::default(), 1000.0, 50_000.0, 90_000);
        p.series = vec![
            SeriesPoint {
                t_s: 0.0,
                len_s: 1.0,
                iops: 1000.0,
                mib_s: 1000.0 * 4096.0 / 1048576.0,
                mean_ns: 50_000.0,
                p99_ns: Some(90_000),
                clat_hist: None,
            },
            SeriesPoint {
                t_s: 1.0,
                len_s: 0.5,
                iops: 800.0,
                mib_s: 800.0 * 4096.0 / 1048576.0,
                mean_ns: 60_000.0,
                p99_ns: Some(90_000),
                clat_hist: None,
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        let files = write_logs(dir.path(), &LogRequest::all("job 1"), &p).unwrap();
        assert_eq!(files.len(), 3);
        let bw = std::fs::read_to_string(dir.path().join("job 1_bw.1.log")).unwrap();
        assert_eq!(bw, "1000, 4000, 0, 4096, 0\n1500, 3200, 0, 4096, 0\n");
        let lat = std::fs::read_to_string(dir.path().join("job 1_lat.1.log")).unwrap();
        assert_eq!(lat.lines().next(), Some("1000, 50000, 0, 4096, 0"));
        assert_eq!(
            file_prefix("iops: randread 4k/qd32"),
            "iops__randread_4k_qd32"
        );
    }

    /// The lower edge of fio bin `idx` (fio's plat_idx_to_val with edge 0).
    fn bin_floor(idx: usize) -> u64 {
        if idx < 128 {
            return idx as u64;
        }
        let error_bits = (idx >> 6) as u32 - 1;
        let base = 1u64 << (error_bits + 6);
        base + (idx as u64 % 64) * (1 << error_bits)
    }

    #[test]
    fn fio_bins_hold_their_values() {
        for ns in [
            0,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            4095,
            100_000,
            10_000_000_000,
        ] {
            let idx = fio_bin(ns);
            assert!(bin_floor(idx) <= ns, "{ns} in bin {idx}");
            assert!(ns < bin_floor(idx + 1), "{ns} in bin {idx}");
        }
        // Beyond 2^34 ns (17 s) fio clamps into its last bin.
        assert_eq!(fio_bin(1 << 40), FIO_BINS - 1);
        assert_eq!(fio_bin(u64::MAX), FIO_BINS - 1);
    }

    #[test]
    fn hist_log_has_fios_columns() {
        let mut p = point(&JobSpec::default(), 1000.0, 50_000.0, 90_000);
        let mut h = LatencyHistogram::with_sigfig(2);
        h.record_n(100_000, 7);
        p.series = vec![SeriesPoint {
            t_s: 0.0,
            len_s: 1.0,
            iops: 7.0,
            mib_s: 0.0,
            mean_ns: 100_000.0,
            p99_ns: Some(100_000),
            clat_hist: Some(h.encode()),
        }];
        let dir = tempfile::tempdir().unwrap();
        write_logs(dir.path(), &LogRequest::all("j"), &p).unwrap();
        let text = std::fs::read_to_string(dir.path().join("j_clat_hist.1.log")).unwrap();
        let cols: Vec<u64> = text
            .trim()
            .split(", ")
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(cols.len(), 3 + FIO_BINS);
        assert_eq!(&cols[..3], &[1000, 0, 4096]);
        assert_eq!(cols[3 + fio_bin(100_000)], 7);
        assert_eq!(cols[3..].iter().sum::<u64>(), 7);
    }
}
