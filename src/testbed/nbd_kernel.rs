//! The kernel's NBD client, where the kernel has one: iolab makes the
//! connection and the handshake itself (simple replies: the kernel does
//! not read structured ones), then hands the socket to a free /dev/nbdN
//! with the export's size, block size and flags (NBD_SET_SOCK and
//! friends) and a thread of its own sits in NBD_DO_IT while the device
//! lives, as nbd-client does. Dropping it sends NBD_DISCONNECT and waits
//! for that thread. The device is a registered resource; after a SIGKILL
//! the kernel frees it itself when NBD_DO_IT's process dies, so the sweep
//! only disconnects a device still served by a live socket of a dead run.

use std::fs::{File, OpenOptions};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::Resource;
use crate::proto::nbd::ExportInfo;

// linux/nbd.h: _IO(0xab, n).
const NBD_SET_SOCK: libc::c_ulong = 0xab00;
const NBD_SET_BLKSIZE: libc::c_ulong = 0xab01;
const NBD_SET_SIZE: libc::c_ulong = 0xab02;
const NBD_DO_IT: libc::c_ulong = 0xab03;
const NBD_CLEAR_SOCK: libc::c_ulong = 0xab04;
const NBD_DISCONNECT: libc::c_ulong = 0xab08;
const NBD_SET_TIMEOUT: libc::c_ulong = 0xab09;
const NBD_SET_FLAGS: libc::c_ulong = 0xab0a;

/// How long the device may take to come up.
const START_LIMIT: Duration = Duration::from_secs(10);

/// Whether the kernel has an NBD client (loaded, or loadable with modprobe).
pub fn available() -> bool {
    super::kernel_modules::module_state("nbd") != super::kernel_modules::ModuleState::Absent
}

/// A plausible NBD device path (`/dev/nbdN`).
pub fn plausible_device(device: &Path) -> bool {
    device
        .to_str()
        .and_then(|d| d.strip_prefix("/dev/nbd"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn ioctl(dev: &File, req: libc::c_ulong, arg: libc::c_ulong) -> std::io::Result<()> {
    // SAFETY: NBD ioctls take an integer argument (or none) and touch no
    // memory of ours.
    if unsafe { libc::ioctl(dev.as_raw_fd(), req, arg) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The sysfs name of `/dev/nbdN`.
fn sys_name(device: &Path) -> String {
    device
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether `/dev/nbdN` is connected (its sysfs `pid` file exists then).
fn connected(device: &Path) -> bool {
    Path::new("/sys/block")
        .join(sys_name(device))
        .join("pid")
        .exists()
}

/// An export attached to a /dev/nbdN through the kernel's client.
pub struct KernelNbd {
    pub device: PathBuf,
    dev: File,
    worker: Option<JoinHandle<std::io::Result<()>>>,
    resource: Resource,
}

impl KernelNbd {
    /// Load the nbd module, connect with `connect` (the caller's
    /// negotiated connection, e.g. `engine::nbd::handshake::connect_asking`
    /// from the calling thread's network namespace) and attach it to the
    /// first free NBD device.
    pub fn attach(
        connect: impl FnOnce() -> std::io::Result<(TcpStream, ExportInfo)>,
    ) -> anyhow::Result<KernelNbd> {
        super::nvme_kernel::load_modules(&["nbd"])?;
        let (sock, info) = connect()?;
        let (device, dev) = free_device()?;
        let resource = Resource::NbdDevice {
            device: device.clone(),
        };
        let block = info.preferred_block.clamp(512, 4096).max(info.min_block);
        let worker = super::create(resource.clone(), || {
            ioctl(&dev, NBD_CLEAR_SOCK, 0)?;
            ioctl(&dev, NBD_SET_BLKSIZE, block as libc::c_ulong)?;
            ioctl(&dev, NBD_SET_SIZE, info.size as libc::c_ulong)?;
            ioctl(&dev, NBD_SET_FLAGS, info.flags as libc::c_ulong)?;
            ioctl(&dev, NBD_SET_TIMEOUT, 30)?;
            ioctl(&dev, NBD_SET_SOCK, sock.as_raw_fd() as libc::c_ulong)
                .with_context(|| format!("NBD_SET_SOCK on {}", device.display()))?;
            let serving = dev.try_clone()?;
            Ok(std::thread::Builder::new()
                .name("nbd-do-it".into())
                .spawn(move || {
                    let _sock = sock; // the kernel holds its own reference; keep ours until the end
                    ioctl(&serving, NBD_DO_IT, 0)
                })?)
        })?;
        let mut k = KernelNbd {
            device,
            dev,
            worker: Some(worker),
            resource,
        };
        let until = Instant::now() + START_LIMIT;
        while !connected(&k.device) {
            if k.worker.as_ref().is_some_and(|w| w.is_finished()) {
                let why = match k.worker.take().map(|w| w.join()) {
                    Some(Ok(Err(e))) => e.to_string(),
                    _ => "it ended".into(),
                };
                bail!("NBD_DO_IT on {}: {why}", k.device.display());
            }
            if Instant::now() > until {
                bail!(
                    "{} did not come up within {START_LIMIT:?}",
                    k.device.display()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(k)
    }
}

/// The first /dev/nbdN nobody serves, opened.
fn free_device() -> anyhow::Result<(PathBuf, File)> {
    for n in 0..128 {
        let device = PathBuf::from(format!("/dev/nbd{n}"));
        if !device.exists() {
            break;
        }
        if connected(&device) {
            continue;
        }
        let dev = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&device)
            .with_context(|| format!("cannot open {}", device.display()))?;
        return Ok((device, dev));
    }
    bail!("no free NBD device (/dev/nbdN: all in use, or the nbd module made none)")
}

/// Whether `device` is served by a thread of this process (its sysfs
/// `pid` is the thread in NBD_DO_IT).
fn served_here(device: &Path) -> bool {
    let pid = std::fs::read_to_string(Path::new("/sys/block").join(sys_name(device)).join("pid"))
        .unwrap_or_default();
    let tid = pid.trim();
    !tid.is_empty() && Path::new("/proc/self/task").join(tid).exists()
}

/// Disconnect `device` (NBD_DISCONNECT, then NBD_CLEAR_SOCK) if a thread
/// of this process serves it (a second Ctrl-C). A device of a killed run
/// needs nothing: the kernel frees it when NBD_DO_IT's process dies, and
/// one served by anybody else is never touched.
pub fn detach(device: &Path) {
    if !plausible_device(device) || !served_here(device) {
        return;
    }
    if let Ok(dev) = OpenOptions::new().read(true).write(true).open(device) {
        let _ = ioctl(&dev, NBD_DISCONNECT, 0);
        let _ = ioctl(&dev, NBD_CLEAR_SOCK, 0);
    }
}

impl Drop for KernelNbd {
    fn drop(&mut self) {
        let _ = ioctl(&self.dev, NBD_DISCONNECT, 0);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        let _ = ioctl(&self.dev, NBD_CLEAR_SOCK, 0);
        super::release(&self.resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_nbd_devices_are_plausible() {
        assert!(plausible_device(Path::new("/dev/nbd0")));
        assert!(plausible_device(Path::new("/dev/nbd15")));
        for no in ["/dev/nbd", "/dev/nbd0p1", "/dev/sda", "/tmp/nbd0"] {
            assert!(!plausible_device(Path::new(no)), "{no}");
        }
    }
}
