//! What fio-format logs a job asks for (fio's `write_bw_log`,
//! `write_iops_log`, `write_lat_log`, `write_hist_log`, or `--log-dir` for
//! every point) and the file name prefix they take. Part of a job's plan:
//! `plan/fiojob.rs` reads it from fio job files; `report::fio_log` writes
//! the logs it names.

/// Which logs to write, and their file name prefix (fio's
/// `write_bw_log=PREFIX`; files are `PREFIX_bw.1.log` and so on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRequest {
    pub prefix: String,
    pub bw: bool,
    pub iops: bool,
    pub lat: bool,
    /// `write_hist_log`: completion-latency histograms (`PREFIX_clat_hist.1.log`).
    pub hist: bool,
}

impl LogRequest {
    /// No log yet, named after `prefix`.
    pub fn none(prefix: &str) -> LogRequest {
        LogRequest {
            prefix: prefix.to_string(),
            bw: false,
            iops: false,
            lat: false,
            hist: false,
        }
    }

    /// Every log, named after `prefix`.
    pub fn all(prefix: &str) -> LogRequest {
        LogRequest {
            prefix: prefix.to_string(),
            bw: true,
            iops: true,
            lat: true,
            hist: true,
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
