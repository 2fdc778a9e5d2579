//! Reading the files a user names (fio job files, plan files, YCSB property
//! files, results and fio JSON) with a bound: a device or pipe given by
//! mistake (`/dev/zero`) ends in an error naming the flag, not in memory
//! exhaustion. Also `parent_dir`, the directory a named path is in (the
//! scratch file's and every output's checks share it).

use std::io::Read;
use std::path::Path;

use crate::error::usage;

/// The directory `p` is in (`.` for a bare file name).
pub fn parent_dir(p: &Path) -> &Path {
    p.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Job, plan and property files: far below this.
pub const CONFIG_MAX: u64 = 4 << 20;
/// What a stream (not a regular file) may hold when results are read from it.
pub const STREAM_MAX: u64 = 256 << 20;

/// The text of `path`, given as `field`, at most `max` bytes (a regular
/// file's own size when `max` is `None`, else `STREAM_MAX` for streams).
pub fn read_text(path: &Path, field: &str, max: Option<u64>) -> anyhow::Result<String> {
    let fail = |why: String| usage(field, format!("cannot read {}: {why}", path.display()));
    let f = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let meta = f.metadata().map_err(|e| fail(e.to_string()))?;
    if meta.is_dir() {
        return Err(fail("it is a directory".into()));
    }
    let cap = match (max, meta.is_file()) {
        (Some(m), _) => m,
        (None, true) => meta.len(),
        (None, false) => STREAM_MAX,
    };
    let mut bytes = Vec::new();
    f.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > cap {
        return Err(fail(format!(
            "more than {} MiB: not a file of this kind",
            (cap >> 20).max(1)
        )));
    }
    String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text".into()))
}
