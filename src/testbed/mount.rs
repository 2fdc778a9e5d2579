//! A filesystem iolab mounted for a run (tracefs when it was not mounted):
//! unmounted when the guard drops; registered with the testbed, so a second
//! Ctrl-C or the next start after a SIGKILL unmounts it too. The unmount is
//! never forced: a mount something else uses (busy) stays.

use std::path::{Path, PathBuf};

use super::Resource;

/// Unmounts its path on drop if iolab mounted it. Hold one for the whole
/// session: tracefs instances come and go per job, the mount outlives them.
pub struct MountGuard(Option<PathBuf>);

impl MountGuard {
    /// Take charge of `path`, which iolab just mounted (`None`: nothing to undo).
    pub fn adopt(path: Option<PathBuf>) -> MountGuard {
        if let Some(p) = &path {
            super::register(Resource::Mount(p.clone()));
        }
        MountGuard(path)
    }

    pub fn mounted_by_us(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            unmount(&p);
            super::release(&Resource::Mount(p));
        }
    }
}

/// Unmount `path` (not lazily: a busy mount stays mounted).
pub fn unmount(path: &Path) {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return;
    };
    // SAFETY: a NUL-terminated path; umount2 only reads it.
    unsafe { libc::umount2(c.as_ptr(), 0) };
}
