//! fio's bandwidth, IOPS and latency logs from a point's per-second series,
//! so fio-plot `-g`, fio2gnuplot and other fio log readers work on iolab
//! runs. fio writes one line per logging interval: `time (ms), value, data
//! direction, block size, offset`; iolab's interval is 1 s, what fio writes
//! with `log_avg_msec=1000`. Values: bandwidth in KiB/s, IOPS as a count
//! per second, latency in ns (the mean of the interval, as fio's averaged
//! logs).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::results::{write_atomic, Point};

/// Which logs to write, and their file name prefix (fio's
/// `write_bw_log=PREFIX`; files are `PREFIX_bw.1.log` and so on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRequest {
    pub prefix: String,
    pub bw: bool,
    pub iops: bool,
    pub lat: bool,
}

impl LogRequest {
    /// Every log, named after `prefix`.
    pub fn all(prefix: &str) -> LogRequest {
        LogRequest {
            prefix: prefix.to_string(),
            bw: true,
            iops: true,
            lat: true,
        }
    }
}

/// A file name from a point name: letters, digits, `-`, `_` and `.` kept.
pub fn file_prefix(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
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
        for s in &p.series {
            let t_ms = ((s.t_s + s.len_s) * 1000.0).round() as u64;
            let _ = writeln!(text, "{t_ms}, {}, {ddir}, {bs}, 0", value(s).round() as u64);
        }
        let path = dir.join(format!("{}_{kind}.1.log", req.prefix));
        write_atomic(&path, text.as_bytes())?;
        out.push(path);
    }
    Ok(out)
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
                p99_ns: 90_000,
            },
            SeriesPoint {
                t_s: 1.0,
                len_s: 0.5,
                iops: 800.0,
                mib_s: 800.0 * 4096.0 / 1048576.0,
                mean_ns: 60_000.0,
                p99_ns: 90_000,
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
}
