//! The results files this process wrote, so that a signal which came too
//! late for the run to see it (during the final teardown, or a second
//! Ctrl-C that ends the process) still leaves them saying `interrupted`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Results;

static WRITTEN: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// `path` (a regular file, not a stream) now holds results of this run.
pub fn remember(path: &Path) {
    let Ok(path) = path.canonicalize() else {
        return;
    };
    if let Ok(mut v) = WRITTEN.lock() {
        if !v.contains(&path) {
            v.push(path);
        }
    }
}

/// Rewrite every results file this process wrote with `interrupted: true`
/// (the points stay as measured). Called once nothing else writes them:
/// after the run returned, or by the second signal once the teardown has
/// closed the writes; the lock is taken briefly, never waited on.
pub fn mark_interrupted() {
    let Some(paths) = crate::lock::lock_briefly(&WRITTEN).map(|v| v.clone()) else {
        return;
    };
    for path in paths {
        let Ok(mut results) = Results::read(&path) else {
            continue;
        };
        if results.interrupted {
            continue;
        }
        results.interrupted = true;
        if let Ok(json) = serde_json::to_vec_pretty(&results) {
            let _ = replace(&path, &json);
        }
    }
}

/// Replace `path` through a temporary file beside it, removed on error
/// (not through `output::write_atomic`: after a second Ctrl-C it refuses
/// new temporary files). The name differs from `write_atomic`'s: a write
/// of the main thread whose temporary file the teardown unlinked must not
/// rename this one into place half written.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}.interrupted.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create_new(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
