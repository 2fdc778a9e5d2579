//! Crash records: one small JSON file per live resource in the state
//! directory (`IOLAB_STATE_DIR`, else /run/iolab, else /tmp/iolab-UID),
//! naming the owner by pid and process start time (so a reused pid is not
//! mistaken for the owner). A normal teardown deletes the record; a record
//! whose owner is gone marks a leftover for `sweep`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::Resource;

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    pid: u32,
    /// Field 22 of /proc/PID/stat (clock ticks since boot).
    start_time: u64,
    resource: Resource,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The state directory, created if needed; `None` if none is writable.
pub fn state_dir() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("IOLAB_STATE_DIR") {
        Some(d) => vec![PathBuf::from(d)],
        None => vec![
            PathBuf::from("/run/iolab"),
            std::env::temp_dir().join(format!("iolab-{}", unsafe { libc::getuid() })),
        ],
    };
    candidates
        .into_iter()
        .find(|d| std::fs::create_dir_all(d).is_ok() && writable(d))
}

/// Records are trusted only in a directory this user owns and only for
/// paths iolab names itself (`iolab-...`), so a planted record cannot make
/// iolab remove anything else.
fn trusted(dir: &std::path::Path, res: &Resource) -> bool {
    use std::os::unix::fs::MetadataExt;
    let owner_ok = std::fs::metadata(dir).is_ok_and(|m| m.uid() == unsafe { libc::getuid() });
    let Resource::Path(p) = res;
    owner_ok
        && p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("iolab-"))
}

fn writable(d: &std::path::Path) -> bool {
    let c = std::ffi::CString::new(d.as_os_str().as_encoded_bytes());
    // SAFETY: a NUL-terminated path.
    c.is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
}

/// Start time of `pid`, or `None` if it does not run.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: count after its ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Write the record of `res`; its path, or `None` if records cannot be kept.
pub fn write(res: &Resource) -> Option<PathBuf> {
    let dir = state_dir()?;
    let pid = std::process::id();
    let rec = Record {
        pid,
        start_time: start_time(pid)?,
        resource: res.clone(),
    };
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{pid}-{seq}.json"));
    let text = serde_json::to_vec(&rec).ok()?;
    crate::results::write_atomic(&path, &text).ok()?;
    Some(path)
}

/// Claim every record whose owner no longer runs (renamed first, so two
/// sweeping processes never both take one) and return what it held.
pub fn sweep() -> Vec<(u32, Resource)> {
    let Some(dir) = state_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Some(rec) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
        else {
            continue;
        };
        if start_time(rec.pid) == Some(rec.start_time) {
            continue; // the owner still runs
        }
        if !trusted(&dir, &rec.resource) {
            continue;
        }
        let claimed = path.with_extension(format!("sweeping-{me}"));
        if std::fs::rename(&path, &claimed).is_ok() {
            let _ = std::fs::remove_file(&claimed);
            out.push((rec.pid, rec.resource));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_start_time_is_read_and_a_dead_pid_has_none() {
        assert!(start_time(std::process::id()).is_some());
        assert!(start_time(u32::MAX - 1).is_none());
    }
}
