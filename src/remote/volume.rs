//! A filesystem on a volume, for the database half of `iolab remote`: a
//! loop device with direct I/O over a file (the local scratch file for DAS;
//! for an NBD transport the export as a file through nbdfuse where the
//! kernel has no NBD client, as on this machine) and ext4 on it, or ext4
//! straight on a block device (the kernel's NBD client's /dev/nbdN where
//! the kernel has one; the kernel NVMe/TCP initiator's namespace), mounted
//! under a scratch directory. Every set-up step runs with a time bound (nbdfuse's
//! manual warns that a loop device over its file can deadlock) and is
//! registered with the testbed; the fields drop in reverse order of set-up:
//! unmount ext4, detach the loop device, unmount FUSE, stop nbdfuse.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::testbed;
use crate::testbed::loopdev::LoopDevice;
use crate::testbed::mount::Mountpoint;
use crate::testbed::nbd_kernel::{self, KernelNbd};
use crate::testbed::nvme_kernel::{KernelController, NvmeTrtype};
use crate::testbed::process::ServerProcess;
use crate::testbed::scratch_dir::ScratchDir;

/// Bound of each set-up command (losetup, mount) and of nbdfuse's start.
const STEP_LIMIT: Duration = Duration::from_secs(30);
/// Bound of mkfs (it writes the inode tables of the whole volume).
const MKFS_LIMIT: Duration = Duration::from_secs(300);
/// Mount options of the filesystem (recorded with the results).
pub const MOUNT_OPTIONS: &str = "noatime";
/// mkfs.ext4's extended options: no discard (NBD trims would be timed
/// into set-up) and inode tables and journal written now, so no lazy
/// initialisation thread writes during the measurement.
pub const MKFS_OPTIONS: &str = "nodiscard,lazy_itable_init=0,lazy_journal_init=0";

/// What a volume is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeKind {
    /// A loop device over the local file.
    Local,
    /// A loop device over an NBD export through nbdfuse.
    Nbd,
    /// A block device (a kernel initiator's).
    Block,
}

/// Why a filesystem of `kind` cannot be built on this machine, if it cannot.
pub fn unavailable(kind: VolumeKind) -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("loop devices and mounts need root".into());
    }
    // A loop device for the local file, and for an export through nbdfuse.
    let loop_needed = match kind {
        VolumeKind::Local => true,
        VolumeKind::Nbd => !nbd_kernel::available(),
        VolumeKind::Block => false,
    };
    if loop_needed && !Path::new("/dev/loop-control").exists() {
        return Some("no loop device driver (/dev/loop-control is absent)".into());
    }
    let tools: &[&str] = if loop_needed {
        &["losetup", "mkfs.ext4", "mount", "timeout"]
    } else {
        &["mkfs.ext4", "mount", "timeout"]
    };
    for tool in tools {
        if super::topology::which(tool).is_none() {
            return Some(format!("{tool} is not installed"));
        }
    }
    if kind == VolumeKind::Nbd && !nbd_kernel::available() {
        if !Path::new("/dev/fuse").exists() {
            return Some("no FUSE (/dev/fuse is absent)".into());
        }
        if super::topology::which("nbdfuse").is_none() {
            return Some("nbdfuse is not installed (Debian libnbd-bin)".into());
        }
    }
    None
}

/// Which NBD client the volumes of NBD transports go through, for the results.
pub fn kernel_nbd() -> String {
    if nbd_kernel::available() {
        "the kernel has an NBD client (nbd module): the volume is /dev/nbdN, attached by iolab"
            .into()
    } else {
        "the kernel has no NBD client (no nbd module): the volume is the export as a file through nbdfuse".into()
    }
}

/// An ext4 filesystem on a loop device, and what it sits on.
pub struct Volume {
    // Dropped first: the filesystem, then what it sits on.
    fs: Mountpoint,
    layers: Layers,
    /// The layers from the filesystem down, for the results.
    pub chain: String,
    /// Whether the loop device does direct I/O on its backing file.
    pub direct_io: Option<bool>,
}

impl Volume {
    /// ext4 on a loop device over the local file `file`.
    pub fn local(file: &Path, scratch: &Path) -> anyhow::Result<Volume> {
        let base = ScratchDir::create(scratch, "volume")?;
        let layers = Layers {
            loopdev: Some(LoopDevice::attach(file, STEP_LIMIT)?),
            _fuse: None,
            nbdfuse: None,
            _kernel_nbd: None,
            _kernel_nvme: None,
            base,
        };
        Volume::finish(layers, format!("{}", file.display()))
    }

    /// ext4 straight on the block device `device` (a kernel initiator's
    /// namespace, which iolab connected for this run: no loop device).
    pub fn block(device: &Path, scratch: &Path) -> anyhow::Result<Volume> {
        let base = ScratchDir::create(scratch, "volume")?;
        let layers = Layers {
            loopdev: None,
            _fuse: None,
            nbdfuse: None,
            _kernel_nbd: None,
            _kernel_nvme: None,
            base,
        };
        Volume::make_fs(layers, device, format!("{}", device.display()))
    }

    /// ext4 on the NBD export `url` (connected from the calling thread, so
    /// in its network namespace): on /dev/nbdN where the kernel has an NBD
    /// client, else on a loop device over the export as a file through nbdfuse.
    pub fn nbd(url: &str, scratch: &Path) -> anyhow::Result<Volume> {
        if nbd_kernel::available() {
            return Volume::kernel_nbd(url, scratch);
        }
        let base = ScratchDir::create(scratch, "volume")?;
        let fuse_dir = base.path.join("iolab-nbdfuse");
        std::fs::create_dir(&fuse_dir)?;
        let file = fuse_dir.join("iolab-nbd");
        let mut cmd = Command::new("nbdfuse");
        cmd.arg(&file)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut proc = ServerProcess::spawn(cmd, "nbdfuse")?;
        let fuse = Mountpoint::adopt(&fuse_dir, || wait_for_file(&mut proc, &file))?;
        let layers = Layers {
            loopdev: Some(LoopDevice::attach(&file, STEP_LIMIT)?),
            _fuse: Some(fuse),
            nbdfuse: Some(proc),
            _kernel_nbd: None,
            _kernel_nvme: None,
            base,
        };
        Volume::finish(layers, format!("nbdfuse {url}"))
    }

    /// ext4 on the NVMe/TCP namespace `url`, connected through the kernel's
    /// initiator (from the calling thread's network namespace).
    pub fn nvme(url: &str, scratch: &Path) -> anyhow::Result<Volume> {
        let ep = crate::plan::endpoint::parse(url)?;
        let crate::plan::endpoint::RemoteResource::NvmeNamespace { nqn, .. } = &ep.resource else {
            anyhow::bail!("{url} is not an NVMe/TCP namespace");
        };
        let addr: std::net::IpAddr = ep
            .host
            .parse()
            .map_err(|_| anyhow::anyhow!("{url}: the kernel's initiator needs an IP address"))?;
        let base = ScratchDir::create(scratch, "volume")?;
        let (_, hostnqn) = crate::engine::nvmetcp::engine::host_identity();
        let c =
            KernelController::connect(NvmeTrtype::Tcp, addr, ep.port, nqn, &hostnqn, STEP_LIMIT)?;
        let device = c.device.clone();
        let layers = Layers {
            loopdev: None,
            _fuse: None,
            nbdfuse: None,
            _kernel_nbd: None,
            _kernel_nvme: Some(c),
            base,
        };
        Volume::make_fs(
            layers,
            &device,
            format!(
                "{} (the kernel's NVMe/TCP initiator) -> {url}",
                device.display()
            ),
        )
    }

    /// ext4 on /dev/nbdN, the export attached through the kernel's client.
    fn kernel_nbd(url: &str, scratch: &Path) -> anyhow::Result<Volume> {
        let ep = crate::plan::endpoint::parse(url)?;
        let base = ScratchDir::create(scratch, "volume")?;
        let nbd = KernelNbd::attach(|| crate::engine::nbd::handshake::connect_asking(&ep, false))?;
        let device = nbd.device.clone();
        let layers = Layers {
            loopdev: None,
            _fuse: None,
            nbdfuse: None,
            _kernel_nbd: Some(nbd),
            _kernel_nvme: None,
            base,
        };
        Volume::make_fs(
            layers,
            &device,
            format!("{} (the kernel's NBD client) -> {url}", device.display()),
        )
    }

    /// mkfs and mount on the loop device of `layers`.
    fn finish(layers: Layers, under: String) -> anyhow::Result<Volume> {
        let loopdev = layers.loopdev.as_ref().expect("a loop device");
        let direct_io = loopdev.direct_io();
        let under = format!(
            "{} (4 KiB sectors, direct I/O {}) -> {under}",
            loopdev.device.display(),
            match direct_io {
                Some(true) => "on",
                Some(false) => "refused, buffered",
                None => "unknown",
            }
        );
        let device = loopdev.device.clone();
        let mut v = Volume::make_fs(layers, &device, under)?;
        v.direct_io = direct_io;
        Ok(v)
    }

    /// mkfs on `device` and mount it in the base directory of `layers`.
    fn make_fs(layers: Layers, device: &Path, under: String) -> anyhow::Result<Volume> {
        testbed::command::bounded(
            "mkfs.ext4",
            &[
                "-q".as_ref(),
                "-F".as_ref(),
                "-E".as_ref(),
                MKFS_OPTIONS.as_ref(),
                device.as_os_str(),
            ],
            MKFS_LIMIT,
        )?;
        let fs_dir = layers.base.path.join("iolab-ext4");
        std::fs::create_dir(&fs_dir)?;
        let fs = Mountpoint::mount(device, &fs_dir, "ext4", MOUNT_OPTIONS, STEP_LIMIT)?;
        Ok(Volume {
            fs,
            layers,
            chain: format!("ext4 ({MOUNT_OPTIONS}) -> {under}"),
            direct_io: None,
        })
    }

    /// The mounted filesystem's root (databases go in a scratch directory here).
    pub fn dir(&self) -> &Path {
        self.fs.path()
    }

    /// The processes serving the volume on the initiator side (nbdfuse), to sample.
    pub fn helper(&self) -> Option<(String, u32)> {
        self.layers
            .nbdfuse
            .as_ref()
            .map(|p| ("nbdfuse".to_string(), p.pid))
    }
}

/// What the filesystem sits on. Field order is drop order, the reverse
/// of set-up (also when set-up fails half-way); the guards are held only to
/// be dropped in that order.
struct Layers {
    loopdev: Option<LoopDevice>,
    _fuse: Option<Mountpoint>,
    nbdfuse: Option<ServerProcess>,
    _kernel_nbd: Option<KernelNbd>,
    _kernel_nvme: Option<KernelController>,
    base: ScratchDir,
}

/// Wait until nbdfuse has mounted and exposes `file` with a size.
fn wait_for_file(proc: &mut ServerProcess, file: &Path) -> anyhow::Result<()> {
    let until = Instant::now() + STEP_LIMIT;
    loop {
        if std::fs::metadata(file).is_ok_and(|m| m.len() > 0) {
            return Ok(());
        }
        if let Some(status) = proc.exited() {
            let mut err = String::new();
            if let Some(mut e) = proc.child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            anyhow::bail!("nbdfuse exited ({status}): {}", err.trim());
        }
        if Instant::now() > until {
            anyhow::bail!(
                "nbdfuse did not expose {} within {STEP_LIMIT:?}",
                file.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
