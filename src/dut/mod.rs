//! Targets: what a job runs on (a scratch file iolab creates, an existing
//! file, a block device, or a remote endpoint), the safety rules that keep
//! iolab from destroying data it was not given, and opening with O_DIRECT or
//! fallback.
//!
//! Each kind has its own size discovery and safety rule (see `prepare`):
//! a scratch file is sized by `--size` and removed at exit; an existing file
//! is its length and needs `--overwrite` to be written; a block device is
//! `BLKGETSIZE64` and needs `--destroy-data` naming it, unused; a remote
//! endpoint (`crate::plan::endpoint::parse`) is sized and opened by the engine that speaks
//! its transport, and is refused while no engine does.

pub mod scratch;
pub mod verify;

use std::fs::{self, OpenOptions};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::error::usage;
use crate::measure::sysfs::{self, DevNum, DiskInfo, FsInfo};
use crate::plan::endpoint::RemoteEndpoint;
use crate::results::target::{RemoteExport, TargetInfo, TargetKind};
pub use scratch::ScratchGuard;

/// Default size of a scratch file.
pub const DEFAULT_SCRATCH_SIZE: u64 = 1 << 30;

/// What the user said about the target.
#[derive(Debug, Clone, Default)]
pub struct TargetOptions {
    /// Directory (scratch file inside), file, or block device. `None` for engines needing no file.
    pub path: Option<PathBuf>,
    pub size: Option<u64>,
    /// Allow writing to an existing file iolab did not create.
    pub overwrite: bool,
    /// Allow writing to this block device (must name the target device).
    pub destroy_data: Option<PathBuf>,
    /// Keep a file iolab created instead of removing it at exit.
    pub keep: bool,
}

/// A target ready to be opened by workers.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
    pub size: u64,
    /// Writes are allowed (scratch, --overwrite, or --destroy-data).
    pub writable: bool,
    pub devnum: Option<DevNum>,
    pub disk: Option<DiskInfo>,
    pub fs: Option<FsInfo>,
    pub warnings: Vec<String>,
    /// The endpoint of a `Remote` target (`path` holds its URL).
    pub remote: Option<RemoteEndpoint>,
    /// What its server said about the export.
    pub export: Option<RemoteExport>,
    _guard: Option<ScratchGuard>,
}

/// How `Target::open_as` opens the target.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenHow {
    pub write: bool,
    pub direct: bool,
    /// O_DSYNC: each write returns once it is on stable storage (ACT's writes).
    pub dsync: bool,
    /// A descriptor of this process opened for writing already holds the
    /// device's exclusive claim (O_EXCL): a second O_EXCL open would be
    /// refused as busy by that very claim, and the claim keeps the device
    /// unmounted and unheld for as long as it is open.
    pub beside_claim: bool,
}

impl Target {
    /// A target for engines that touch no file.
    pub fn none(size: u64) -> Target {
        Target {
            path: PathBuf::new(),
            kind: TargetKind::NoFile,
            size,
            writable: true,
            devnum: None,
            disk: None,
            fs: None,
            warnings: Vec::new(),
            remote: None,
            export: None,
            _guard: None,
        }
    }

    pub fn info(&self) -> TargetInfo {
        TargetInfo {
            path: self.path.display().to_string(),
            kind: self.kind,
            size_bytes: self.size,
            filesystem: self.fs.clone(),
            export: self.export.clone(),
            disk: self.disk.clone(),
        }
    }

    /// Open for a worker. Falls back to buffered I/O (with a warning the
    /// caller records) when the filesystem refuses O_DIRECT.
    /// Returns the descriptor and whether O_DIRECT is in effect.
    pub fn open(&self, write: bool, direct: bool) -> anyhow::Result<(OwnedFd, bool)> {
        self.open_as(OpenHow {
            write,
            direct,
            ..OpenHow::default()
        })
    }

    /// `open` with the flags of `how` (O_DSYNC; no O_EXCL beside iolab's own claim).
    pub fn open_as(&self, how: OpenHow) -> anyhow::Result<(OwnedFd, bool)> {
        let OpenHow { write, direct, .. } = how;
        if let Some(ep) = &self.remote {
            return Err(crate::plan::endpoint::no_initiator(ep).into());
        }
        if write && !self.writable {
            // Defence in depth: prepare() already refused this.
            anyhow::bail!("refusing to open {} for writing", self.path.display());
        }
        let attempt = |direct: bool| {
            let mut o = OpenOptions::new();
            o.read(true).write(write);
            let mut flags = libc::O_CLOEXEC;
            if direct {
                flags |= libc::O_DIRECT;
            }
            if how.dsync {
                flags |= libc::O_DSYNC;
            }
            if self.kind == TargetKind::BlockDevice && write && !how.beside_claim {
                // The kernel refuses O_EXCL on a block device that is mounted or held.
                flags |= libc::O_EXCL;
            }
            o.custom_flags(flags).open(&self.path)
        };
        match attempt(direct) {
            Ok(f) => Ok((f.into(), direct)),
            Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) => {
                let f = attempt(false)
                    .with_context(|| format!("cannot open {}", self.path.display()))?;
                Ok((f.into(), false))
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Err(usage(
                "--destroy-data",
                format!(
                    "{} is busy (mounted, or held by another driver); refusing to write",
                    self.path.display()
                ),
            )),
            Err(e) => Err(e).with_context(|| format!("cannot open {}", self.path.display())),
        }
    }
}

/// Size of an open block device in bytes.
fn block_device_size(path: &Path) -> anyhow::Result<u64> {
    let f = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut size: u64 = 0;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: the ioctl writes one u64 into `size`.
    if unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size) } != 0 {
        return Err(std::io::Error::last_os_error()).context("BLKGETSIZE64");
    }
    Ok(size)
}

fn same_device(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => {
            x.file_type().is_block_device()
                && y.file_type().is_block_device()
                && x.rdev() == y.rdev()
        }
        _ => false,
    }
}

/// Resolve, check and (for a directory) create the target.
/// `writes` says whether any job will write; `verify_bs` lays out a new
/// scratch file with verification headers.
pub fn prepare(
    opts: &TargetOptions,
    writes: bool,
    verify_bs: Option<u64>,
    seed: u64,
) -> anyhow::Result<Target> {
    let (path, kind, size, writable, guard) = match plan(opts, writes)? {
        Planned::NoFile(size) => return Ok(Target::none(size)),
        Planned::Remote(ep) => return prepare_remote(ep, opts, writes),
        Planned::Scratch { file, size } => {
            let guard = scratch::create(&file, size, verify_bs, seed, opts.keep)?;
            (file, TargetKind::ScratchFile, size, true, Some(guard))
        }
        Planned::Block {
            path,
            size,
            writable,
        } => (path, TargetKind::BlockDevice, size, writable, None),
        Planned::Existing {
            path,
            size,
            writable,
        } => (path, TargetKind::ExistingFile, size, writable, None),
    };
    let devnum = sysfs::devnum_of_path(&path);
    let disk = devnum.and_then(sysfs::disk_info);
    let fs = if kind == TargetKind::BlockDevice {
        None
    } else {
        sysfs::fs_of_path(&path)
    };
    Ok(Target {
        path,
        kind,
        size,
        writable,
        devnum,
        disk,
        fs,
        warnings: Vec::new(),
        remote: None,
        export: None,
        _guard: guard,
    })
}

/// What `prepare` will set up, decided by the checks alone (nothing is
/// created or opened for writing).
enum Planned {
    /// No file (engines that need none).
    NoFile(u64),
    Remote(RemoteEndpoint),
    /// A scratch file to create (in a directory, or at a new path).
    Scratch {
        file: PathBuf,
        size: u64,
    },
    Block {
        path: PathBuf,
        size: u64,
        writable: bool,
    },
    Existing {
        path: PathBuf,
        size: u64,
        writable: bool,
    },
}

/// Every check `prepare` makes, without creating anything: for `--dry-run`.
pub fn check(opts: &TargetOptions, writes: bool) -> anyhow::Result<()> {
    match plan(opts, writes)? {
        Planned::Remote(ep) => prepare_remote(ep, opts, writes).map(drop),
        _ => Ok(()),
    }
}

/// `check`, and what the run would use, in words (a dry run's plan).
pub fn check_and_describe(opts: &TargetOptions, writes: bool) -> anyhow::Result<String> {
    let size = |b: u64| crate::plan::parse::format_size(b);
    let written = |w: bool| if w { ", written" } else { ", read only" };
    Ok(match plan(opts, writes)? {
        Planned::NoFile(_) => "no file (the engine needs none)".into(),
        Planned::Remote(ep) => {
            prepare_remote(ep.clone(), opts, writes)?;
            format!("{ep}, a remote export{}", written(writes))
        }
        Planned::Scratch { file, size: s } => format!(
            "a {} scratch file {} (created; {})",
            size(s),
            match file
                .parent()
                .filter(|_| opts.path.as_ref().is_some_and(|p| p.is_dir()))
            {
                Some(dir) => format!("in {}", dir.display()),
                None => format!("at {}", file.display()),
            },
            if opts.keep {
                "kept: --keep"
            } else {
                "removed at exit"
            }
        ),
        Planned::Block {
            path,
            size: s,
            writable,
        } => format!(
            "block device {}, {}{}",
            path.display(),
            size(s),
            written(writable)
        ),
        Planned::Existing {
            path,
            size: s,
            writable,
        } => format!(
            "existing file {}, {}{}",
            path.display(),
            size(s),
            written(writable)
        ),
    })
}

fn plan(opts: &TargetOptions, writes: bool) -> anyhow::Result<Planned> {
    let Some(path) = opts.path.clone() else {
        return Ok(Planned::NoFile(opts.size.unwrap_or(DEFAULT_SCRATCH_SIZE)));
    };
    if let Some(ep) = crate::plan::endpoint::endpoint_of(&path)? {
        return Ok(Planned::Remote(ep));
    }
    match fs::metadata(&path) {
        Ok(md) if md.is_dir() => {
            let size = opts.size.unwrap_or(DEFAULT_SCRATCH_SIZE);
            let file = scratch::scratch_path(&path);
            scratch::check_space(&file, size)?;
            Ok(Planned::Scratch { file, size })
        }
        Ok(md) if md.file_type().is_block_device() => {
            let dev_size = block_device_size(&path)?;
            let size = checked_size(opts.size, dev_size, &path)?;
            if writes {
                check_destroy_allowed(&path, opts.destroy_data.as_deref())?;
            }
            Ok(Planned::Block {
                path,
                size,
                writable: writes,
            })
        }
        Ok(md) if md.is_file() => {
            let size = checked_size(opts.size, md.len(), &path)?;
            if writes && !opts.overwrite {
                return Err(usage(
                    "--overwrite",
                    format!(
                        "{} exists and iolab did not create it; writing would destroy its contents. \
Add --overwrite to allow it, or give a directory to run on a scratch file",
                        path.display()
                    ),
                ));
            }
            Ok(Planned::Existing {
                path,
                size,
                writable: writes,
            })
        }
        Ok(_) => Err(usage(
            "--target",
            format!(
                "{} is not a directory, regular file or block device",
                path.display()
            ),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = crate::input::parent_dir(&path);
            if !parent.is_dir() {
                return Err(usage(
                    "--target",
                    format!("{} does not exist", path.display()),
                ));
            }
            let size = opts.size.unwrap_or(DEFAULT_SCRATCH_SIZE);
            scratch::check_space(&path, size)?;
            Ok(Planned::Scratch { file: path, size })
        }
        Err(e) => Err(e).with_context(|| format!("cannot inspect {}", path.display())),
    }
}

/// A remote target: the engine speaking its transport asks the server
/// about the export (size, read-only, multi-connection) before anything
/// runs. Writes destroy the export's data, so they need `--overwrite`,
/// as an existing file does.
fn prepare_remote(
    ep: RemoteEndpoint,
    opts: &TargetOptions,
    writes: bool,
) -> anyhow::Result<Target> {
    if crate::plan::engines::engine_for_transport(ep.transport).is_none() {
        return Err(crate::plan::endpoint::no_initiator(&ep).into());
    }
    let export = crate::engine::probe_remote(&ep).map_err(|e| {
        if crate::interrupt::stop_requested() {
            // A signal ended the handshake: exit as interrupted (130).
            anyhow::Error::new(crate::error::Interrupted).context(e.to_string())
        } else {
            usage("--target", format!("{e}"))
        }
    })?;
    if writes && export.read_only {
        return Err(usage(
            "--target",
            format!("{ep}: the export is read-only; run reads only"),
        ));
    }
    if writes && !opts.overwrite {
        return Err(usage(
            "--overwrite",
            format!(
                "{ep} is a remote export, not a scratch file: writing destroys its data. \
Add --overwrite to allow it"
            ),
        ));
    }
    let size = checked_size(opts.size, export.size_bytes, &PathBuf::from(ep.to_string()))?;
    Ok(Target {
        path: PathBuf::from(ep.to_string()),
        kind: TargetKind::Remote,
        size,
        writable: writes,
        devnum: None,
        disk: None,
        fs: None,
        warnings: Vec::new(),
        remote: Some(ep),
        export: Some(export),
        _guard: None,
    })
}

fn checked_size(requested: Option<u64>, actual: u64, path: &Path) -> anyhow::Result<u64> {
    match requested {
        Some(s) if s > actual => Err(usage(
            "--size",
            format!(
                "{} is {} bytes; --size {} is larger",
                path.display(),
                actual,
                s
            ),
        )),
        Some(s) => Ok(s),
        None if actual == 0 => Err(usage("--target", format!("{} is empty", path.display()))),
        None => Ok(actual),
    }
}

/// Writing to a block device needs `--destroy-data` naming that same device,
/// and the device (or a partition, or a holder) must not be in use.
fn check_destroy_allowed(device: &Path, named: Option<&Path>) -> anyhow::Result<()> {
    let Some(named) = named else {
        return Err(usage(
            "--destroy-data",
            format!(
                "{d} is a block device and this job writes to it, destroying its data. \
To allow it, add --destroy-data {d}",
                d = device.display()
            ),
        ));
    };
    if !same_device(device, named) {
        return Err(usage(
            "--destroy-data",
            format!(
                "names {}, but the target is {}; they must be the same device",
                named.display(),
                device.display()
            ),
        ));
    }
    if let Some(dev) = sysfs::devnum_of_path(device) {
        if let Some(why) = sysfs::device_in_use(dev) {
            return Err(usage(
                "--destroy-data",
                format!("refusing to write to {}: {why}", device.display()),
            ));
        }
    }
    Ok(())
}
