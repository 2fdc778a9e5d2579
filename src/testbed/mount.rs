//! A filesystem iolab mounted for a run (tracefs when it was not mounted):
//! unmounted when the guard drops; registered with the testbed, so a second
//! Ctrl-C or the next start after a SIGKILL unmounts it too. The unmount is
//! never forced: a mount something else uses (busy) stays.

use std::path::{Path, PathBuf};

use super::tracefs_share::TracefsShare;
use super::Resource;

/// Where tracefs lives: the one filesystem iolab may mount outside its own
/// directories (`trace::tracefs` mounts it; a crash record may name it).
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Unmounts its path on drop if iolab mounted it. Hold one for the whole
/// session: tracefs instances come and go per job, the mount outlives them.
/// With a share of tracefs (`tracefs_share`), the last run out unmounts it
/// instead, whichever run mounted it.
pub struct MountGuard(Option<PathBuf>, Option<TracefsShare>);

impl MountGuard {
    /// Take charge of `path`, which iolab just mounted (`None`: nothing to undo).
    pub fn adopt(path: Option<PathBuf>) -> MountGuard {
        Self::adopt_shared(path, None)
    }

    /// As `adopt`, for a run holding a share of the mount.
    pub fn adopt_shared(path: Option<PathBuf>, share: Option<TracefsShare>) -> MountGuard {
        if let Some(p) = &path {
            super::register(Resource::Mount(p.clone()));
            if let Some(s) = &share {
                s.mounted_it();
            }
        }
        MountGuard(path, share)
    }

    pub fn mounted_by_us(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        let ours = self.0.take();
        match self.1.take() {
            Some(share) => share.leave(),
            None => {
                if let Some(p) = &ours {
                    unmount(p);
                }
            }
        }
        if let Some(p) = ours {
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

/// A directory iolab created with a filesystem mounted on it (ext4 on a
/// loop device, nbdfuse's FUSE file): on drop, a second Ctrl-C or the next
/// start after a SIGKILL, unmounted and then removed with a plain rmdir.
/// Every filesystem mounted here is iolab's own scratch, so a busy one (a
/// second Ctrl-C while a database still writes) is detached lazily: the
/// kernel finishes the unmount when the last file closes, at exit at the
/// latest, and a loop device under it detaches itself then.
pub struct Mountpoint(PathBuf);

impl Mountpoint {
    /// Mount `device` (type `fstype`, `options`) on the empty directory
    /// `dir` with `mount(8)` bounded by `timeout`, registered in one step.
    pub fn mount(
        device: &Path,
        dir: &Path,
        fstype: &str,
        options: &str,
        timeout: std::time::Duration,
    ) -> anyhow::Result<Mountpoint> {
        super::create(Resource::Mountpoint(dir.to_path_buf()), || {
            super::command::bounded(
                "mount",
                &[
                    "-t".as_ref(),
                    fstype.as_ref(),
                    "-o".as_ref(),
                    options.as_ref(),
                    device.as_os_str(),
                    dir.as_os_str(),
                ],
                timeout,
            )
            .map(drop)
        })?;
        Ok(Mountpoint(dir.to_path_buf()))
    }

    /// Take charge of `dir`, on which a process iolab started mounts a
    /// filesystem (`ready` waits for the mount and fails if it never comes).
    pub fn adopt(
        dir: &Path,
        ready: impl FnOnce() -> anyhow::Result<()>,
    ) -> anyhow::Result<Mountpoint> {
        super::create(Resource::Mountpoint(dir.to_path_buf()), ready)?;
        Ok(Mountpoint(dir.to_path_buf()))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Mountpoint {
    fn drop(&mut self) {
        let _ = unmount_and_remove(&self.0);
        super::release(&Resource::Mountpoint(self.0.clone()));
    }
}

/// Unmount `dir` (lazily if it is busy) and remove it if it is then an
/// empty directory; why not, if it is still mounted or still there.
pub fn unmount_and_remove(dir: &Path) -> Result<(), String> {
    if let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) {
        // SAFETY: a NUL-terminated path; umount2 only reads it.
        let busy = unsafe { libc::umount2(c.as_ptr(), 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBUSY);
        if busy {
            // SAFETY: as above.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
    if is_mount_point(dir) {
        return Err("it is still mounted (umount failed)".into());
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove the directory: {e}")),
    }
}

/// The mount points of this mount namespace (/proc/self/mountinfo, field
/// 5, with the kernel's octal escapes of space, tab, newline and `\`).
pub fn mount_points() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|m| PathBuf::from(unescape_octal(m)))
        .collect()
}

fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c));
        if octal {
            let digit = |k: usize| u32::from(b[i + k] - b'0');
            out.push((digit(1) * 64 + digit(2) * 8 + digit(3)) as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a filesystem is mounted on `path` (mountinfo names resolved
/// paths: `path` is resolved first).
pub fn is_mount_point(path: &Path) -> bool {
    let Ok(path) = path.canonicalize() else {
        return false;
    };
    mount_points().contains(&path)
}

/// A filesystem mounted on `dir` or anywhere below it, if any.
pub fn mount_under(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    mount_points().into_iter().find(|m| m.starts_with(&dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_decoded() {
        assert_eq!(unescape_octal("/a\\040b\\011c"), "/a b\tc");
        assert_eq!(unescape_octal("/plain"), "/plain");
        assert_eq!(unescape_octal("/x\\04"), "/x\\04");
        // Out of a byte's range: truncated, never an overflow panic.
        let _ = unescape_octal("/\\777");
        assert!(mount_points().iter().any(|m| m == Path::new("/")));
    }
}
