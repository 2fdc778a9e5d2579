//! Loop devices iolab attaches (a filesystem for the database half of
//! `iolab remote` sits on one): attached with direct I/O by `losetup`,
//! registered with the testbed under the device and its backing file, and
//! detached (LOOP_CLR_FD) on drop, on a second Ctrl-C and by the next start
//! after a SIGKILL, but only while the device still has that backing file,
//! compared by device and inode number, which survive the file's mount
//! going away (a device someone else attached since is left alone).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Resource;

/// The loop driver's "detach" and "status" ioctls (linux/loop.h).
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;
/// struct loop_info64 is 232 bytes; it starts with lo_device and lo_inode.
const LOOP_INFO64_WORDS: usize = 29;

/// The backing file's identity: (device, inode) as the loop driver keeps it.
pub type FileId = (u64, u64);

/// The identity of the file at `path` in the loop driver's encoding.
pub fn file_id(path: &Path) -> std::io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

/// The identity of the file `device` is attached to, if it is attached.
fn attached_id(f: &std::fs::File) -> Option<FileId> {
    use std::os::fd::AsRawFd;
    let mut info = [0u64; LOOP_INFO64_WORDS];
    // SAFETY: LOOP_GET_STATUS64 writes one struct loop_info64 (232 bytes)
    // into the buffer, which is that large.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_GET_STATUS64, info.as_mut_ptr()) };
    (r == 0).then_some((info[0], info[1]))
}

/// Whether `device` is a loop device node name iolab could have attached.
pub fn plausible_device(device: &Path) -> bool {
    device
        .to_str()
        .and_then(|s| s.strip_prefix("/dev/loop"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Detach `device` if it is still attached to the file `id`. A device
/// still in use (a lazily unmounted filesystem with files open) is only
/// set to detach itself when its last user goes (`Deferred`); why not, if
/// it stays attached without that.
pub fn detach(device: &Path, id: FileId) -> Result<super::Undone, String> {
    if !plausible_device(device) {
        return Ok(super::Undone::AlreadyGone);
    }
    let Ok(f) = std::fs::File::open(device) else {
        return Ok(super::Undone::AlreadyGone);
    };
    if attached_id(&f) != Some(id) {
        return Ok(super::Undone::AlreadyGone);
    }
    use std::os::fd::AsRawFd;
    // SAFETY: LOOP_CLR_FD takes no argument and only detaches the device.
    unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD, 0) };
    drop(f);
    let still = std::fs::File::open(device)
        .ok()
        .is_some_and(|f| attached_id(&f) == Some(id));
    if !still {
        return Ok(super::Undone::Removed);
    }
    let name = device.file_name().unwrap_or_default().to_string_lossy();
    let autoclear = std::fs::read_to_string(format!("/sys/block/{name}/loop/autoclear"));
    if autoclear.is_ok_and(|a| a.trim() == "1") {
        // Often the other user is only passing (udev probing the device
        // after the unmount): wait a moment so the report says what became
        // of it, unless a second Ctrl-C is aborting at once.
        if unbound_within(&name, Duration::from_secs(2)) {
            return Ok(super::Undone::Removed);
        }
        return Ok(super::Undone::Deferred);
    }
    Err("still attached (LOOP_CLR_FD did not take)".into())
}

/// Whether loop device `name` has no backing file within `patience`,
/// watched in sysfs (opening the device would make one more user).
fn unbound_within(name: &str, patience: Duration) -> bool {
    let bound = Path::new("/sys/block").join(name).join("loop/backing_file");
    let until = std::time::Instant::now() + patience;
    while bound.exists() {
        if std::time::Instant::now() >= until || super::closed() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The loop device attached to the file at `path`, if one is (read from
/// /sys/block/loopN/loop/backing_file).
pub fn device_over(path: &Path) -> Option<PathBuf> {
    let path = path.canonicalize().ok()?;
    device_where(|back| back == path)
}

/// A loop device attached to a file anywhere under the directory `dir`.
pub fn device_under(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    device_where(|back| back.starts_with(&dir))
}

fn device_where(backed_by: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    std::fs::read_dir("/sys/block")
        .ok()?
        .flatten()
        .find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let back = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            let back = back.trim_end_matches('\n');
            // A deleted backing file is named with this suffix.
            let back = back.strip_suffix(" (deleted)").unwrap_or(back);
            (name.starts_with("loop") && backed_by(Path::new(back)))
                .then(|| PathBuf::from("/dev").join(name))
        })
}

/// A loop device over a file, detached on drop.
pub struct LoopDevice {
    pub device: PathBuf,
    resource: Resource,
}

impl LoopDevice {
    /// Attach a free loop device to `backing` with direct I/O (`losetup
    /// --direct-io=on`; the kernel falls back to buffered I/O where the
    /// file refuses O_DIRECT, which `direct_io()` tells) and 4 KiB logical
    /// sectors (so every request on the file is 4 KiB-aligned, as O_DIRECT
    /// servers behind it require), within `timeout`.
    pub fn attach(backing: &Path, timeout: Duration) -> anyhow::Result<LoopDevice> {
        let backing = backing.canonicalize()?;
        let id = file_id(&backing)?;
        let (device, resource) = super::create_with(|| {
            let out = super::command::bounded(
                "losetup",
                &[
                    "-f".as_ref(),
                    "--show".as_ref(),
                    "--direct-io=on".as_ref(),
                    "--sector-size=4096".as_ref(),
                    backing.as_os_str(),
                ],
                timeout,
            )?;
            let device = PathBuf::from(out.trim());
            anyhow::ensure!(
                plausible_device(&device),
                "losetup printed '{}', not a loop device",
                out.trim()
            );
            let res = Resource::Loop {
                device: device.clone(),
                backing: backing.clone(),
                id,
            };
            Ok(((device, res.clone()), res))
        })?;
        Ok(LoopDevice { device, resource })
    }

    /// Whether the device does direct I/O on its backing file.
    pub fn direct_io(&self) -> Option<bool> {
        let name = self.device.file_name()?.to_str()?;
        let t = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio")).ok()?;
        Some(t.trim() == "1")
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // Still in use (a filesystem on it lazily unmounted), LOOP_CLR_FD
        // has set it to detach itself when its last user goes: released.
        let _ = self.resource.undo();
        super::release(&self.resource);
    }
}
