//! Runs that trace at once share one tracefs mount. Each holds a shared
//! flock on `tracefs.lock` in the state directory from its probe to its
//! end. At its end, a run that can take that lock exclusively is the last
//! user, and it unmounts tracefs if an iolab run mounted it (the marker
//! `tracefs.mounted-by-iolab` beside the lock), whichever run that was.
//! Before, the run that mounted tracefs unmounted it under the others,
//! whose next tracing instance then failed (ENOENT).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use super::mount::{is_mount_point, unmount, TRACEFS};

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
    let dir = super::records::state_dir()?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("tracefs.lock"))
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
        self.dir.join("tracefs.mounted-by-iolab")
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
