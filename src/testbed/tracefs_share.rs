//! Runs that trace at once share one tracefs mount. Each holds a shared
//! flock on `/run/lock/iolab-tracefs.lock` from its probe to its end (a
//! lock file, kept out of the state directory, whose records must all be
//! gone after a run). At its end, a run that can take that lock
//! exclusively is the last user, and it unmounts tracefs if an iolab run
//! mounted it (the marker `iolab-tracefs.mounted` beside the lock),
//! whichever run that was.
//! Before, the run that mounted tracefs unmounted it under the others,
//! whose next tracing instance then failed (ENOENT).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use super::mount::{is_mount_point, unmount, TRACEFS};

const MARKER: &str = "iolab-tracefs.mounted";

/// Where lock files go (tracing needs root, which may write there).
fn lock_dir() -> Option<PathBuf> {
    ["/run/lock", "/run"]
        .iter()
        .map(PathBuf::from)
        .find(|d| d.is_dir())
}

/// The mount a SIGKILLed run left was swept: its marker goes too.
pub fn forget_mount() {
    if let Some(d) = lock_dir() {
        let _ = std::fs::remove_file(d.join(MARKER));
    }
}

/// One run's share of tracefs: a shared lock, held until `leave`.
#[derive(Debug)]
pub struct TracefsShare {
    lock: File,
    dir: PathBuf,
}

/// Join the runs using tracefs, exclusively until `shared` (so two runs
/// never both mount it, and none joins while the last one unmounts it).
/// `None` without a state directory: then each run keeps its own duty.
pub fn join() -> Option<TracefsShare> {
    let dir = lock_dir()?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("iolab-tracefs.lock"))
        .ok()?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return None;
    }
    Some(TracefsShare { lock, dir })
}

impl TracefsShare {
    /// Tracefs is mounted (or cannot be): let other runs join.
    pub fn shared(&self) {
        // SAFETY: flock on the descriptor this share owns.
        unsafe { libc::flock(self.lock.as_raw_fd(), libc::LOCK_SH) };
    }

    /// This run mounted tracefs: the last run out unmounts it.
    pub fn mounted_it(&self) {
        let _ = std::fs::write(self.marker(), std::process::id().to_string());
    }

    fn marker(&self) -> PathBuf {
        self.dir.join(MARKER)
    }

    /// Leave; the last run out unmounts tracefs if iolab mounted it.
    pub fn leave(self) {
        let marker = self.marker();
        // SAFETY: flock on the descriptor this share owns; converting the
        // shared lock fails at once while another run holds its own.
        let last =
            unsafe { libc::flock(self.lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if last && marker.exists() {
            let tracefs = std::path::Path::new(TRACEFS);
            if is_mount_point(tracefs) {
                unmount(tracefs);
            }
            if !is_mount_point(tracefs) {
                let _ = std::fs::remove_file(&marker);
            }
        }
        drop(self.lock);
    }
}
