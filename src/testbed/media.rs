//! Storage configurations iolab builds on the storage under test and takes
//! down again, for comparing media and file systems side by side (issue
//! 15): `tmpfs` (the RAM upper bound), `ext4`, `ext4-nojournal`, `xfs`,
//! `btrfs` (each on a loop device with direct I/O and 4 KiB sectors over a
//! backing file in a scratch directory), `raw` (the loop device itself, no
//! file system) and `stripe:N` (N loop devices striped by btrfs raid0: md
//! and device-mapper are not in this machine's kernel). Every piece is a
//! registered resource (scratch directory, backing files, loop devices,
//! mounts), so it goes at the end, on a second Ctrl-C and at the next start
//! after a SIGKILL; drop order is the reverse of set-up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};

use super::loopdev::LoopDevice;
use super::mount::Mountpoint;
use super::scratch_dir::ScratchDir;
use super::Resource;

/// Time bounds of the set-up steps.
const STEP_LIMIT: Duration = Duration::from_secs(30);
const MKFS_LIMIT: Duration = Duration::from_secs(120);
/// The smallest backing device of a file system (mkfs.xfs wants 300 MB).
const MIN_DEVICE: u64 = 320 << 20;
/// Mount options of every file system iolab mounts here.
pub const MOUNT_OPTIONS: &str = "noatime";

/// One configuration, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    Tmpfs,
    Ext4,
    Ext4NoJournal,
    Xfs,
    Btrfs,
    Raw,
    /// btrfs raid0 over this many loop devices.
    Stripe(u8),
}

pub const MEDIA_NAMES: &str = "tmpfs, ext4, ext4-nojournal, xfs, btrfs, raw, stripe:N (2..=8)";

impl MediaKind {
    pub fn parse(s: &str) -> Option<MediaKind> {
        Some(match s {
            "tmpfs" => MediaKind::Tmpfs,
            "ext4" => MediaKind::Ext4,
            "ext4-nojournal" => MediaKind::Ext4NoJournal,
            "xfs" => MediaKind::Xfs,
            "btrfs" => MediaKind::Btrfs,
            "raw" => MediaKind::Raw,
            s => {
                let n = s.strip_prefix("stripe:")?.parse::<u8>().ok()?;
                if !(2..=8).contains(&n) {
                    return None;
                }
                MediaKind::Stripe(n)
            }
        })
    }

    pub fn name(&self) -> String {
        match self {
            MediaKind::Tmpfs => "tmpfs".into(),
            MediaKind::Ext4 => "ext4".into(),
            MediaKind::Ext4NoJournal => "ext4-nojournal".into(),
            MediaKind::Xfs => "xfs".into(),
            MediaKind::Btrfs => "btrfs".into(),
            MediaKind::Raw => "raw".into(),
            MediaKind::Stripe(n) => format!("stripe:{n}"),
        }
    }

    /// The mkfs command line (program, options before the devices).
    fn mkfs(&self) -> Option<(&'static str, &'static [&'static str])> {
        Some(match self {
            MediaKind::Ext4 => (
                "mkfs.ext4",
                &[
                    "-q",
                    "-F",
                    "-E",
                    "nodiscard,lazy_itable_init=0,lazy_journal_init=0",
                ],
            ),
            MediaKind::Ext4NoJournal => (
                "mkfs.ext4",
                &[
                    "-q",
                    "-F",
                    "-O",
                    "^has_journal",
                    "-E",
                    "nodiscard,lazy_itable_init=0",
                ],
            ),
            MediaKind::Xfs => ("mkfs.xfs", &["-q", "-f", "-K"]),
            MediaKind::Btrfs => ("mkfs.btrfs", &["-q", "-f", "--nodiscard"]),
            MediaKind::Stripe(_) => (
                "mkfs.btrfs",
                &["-q", "-f", "--nodiscard", "-d", "raid0", "-m", "raid0"],
            ),
            MediaKind::Tmpfs | MediaKind::Raw => return None,
        })
    }

    fn fstype(&self) -> &'static str {
        match self {
            MediaKind::Tmpfs => "tmpfs",
            MediaKind::Ext4 | MediaKind::Ext4NoJournal => "ext4",
            MediaKind::Xfs => "xfs",
            MediaKind::Btrfs | MediaKind::Stripe(_) => "btrfs",
            MediaKind::Raw => "",
        }
    }

    /// Why it cannot be built here, if it cannot (root, tools, the kernel).
    pub fn unavailable(&self) -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Some("loop devices and mounts need root".into());
        }
        if *self != MediaKind::Tmpfs && !Path::new("/dev/loop-control").exists() {
            return Some("no loop device driver (/dev/loop-control is absent)".into());
        }
        let mut tools = vec!["mount", "timeout", "losetup"];
        if let Some((mkfs, _)) = self.mkfs() {
            tools.push(mkfs);
        }
        for t in tools {
            if super::command::which(t).is_none() {
                return Some(format!(
                    "{t} is not installed (scripts/install-deps.sh installs it)"
                ));
            }
        }
        let fs = self.fstype();
        let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if !fs.is_empty() && !filesystems.split_whitespace().any(|f| f == fs) {
            return Some(format!(
                "this kernel has no {fs} file system (/proc/filesystems)"
            ));
        }
        None
    }
}

/// A backing file in the scratch directory, removed on drop.
struct BackingFile(PathBuf);

impl BackingFile {
    fn create(path: PathBuf, size: u64) -> anyhow::Result<BackingFile> {
        super::create(Resource::Path(path.clone()), || {
            let f = std::fs::File::create_new(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            f.set_len(size)?;
            Ok(())
        })?;
        Ok(BackingFile(path))
    }
}

impl BackingFile {
    /// Write every byte (a non-zero pattern), so reads reach the device.
    fn fill(&self) -> anyhow::Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(&self.0)?;
        let len = f.metadata()?.len();
        let chunk: Vec<u8> = (0..1u32 << 20)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        let mut left = len;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        f.sync_all()?;
        Ok(())
    }
}

impl Drop for BackingFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        super::release(&Resource::Path(self.0.clone()));
    }
}

/// A configuration, built. Field order is drop order: the mount, the loop
/// devices, their backing files, the scratch directory.
pub struct Medium {
    pub kind: MediaKind,
    /// What jobs run on: the mounted directory, or the loop device (`raw`).
    pub target: PathBuf,
    /// How it was made, for provenance.
    pub describe: String,
    fs: Option<Mountpoint>,
    loops: Vec<LoopDevice>,
    _files: Vec<BackingFile>,
    _dir: ScratchDir,
}

impl Medium {
    /// Build `kind` under `under` (a directory on the storage under test)
    /// with room for `size` bytes of data.
    pub fn build(kind: MediaKind, under: &Path, size: u64) -> anyhow::Result<Medium> {
        if let Some(why) = kind.unavailable() {
            bail!("{}: {why}", kind.name());
        }
        let dir = ScratchDir::create(under, &format!("media-{}", kind.name().replace(':', "")))?;
        let mut m = Medium {
            kind,
            target: PathBuf::new(),
            describe: String::new(),
            fs: None,
            loops: Vec::new(),
            _files: Vec::new(),
            _dir: dir,
        };
        if kind == MediaKind::Tmpfs {
            let mnt = m._dir.path.join("mnt");
            std::fs::create_dir(&mnt)?;
            let opts = format!("size={},{MOUNT_OPTIONS}", size + (64 << 20));
            m.fs = Some(Mountpoint::mount(
                Path::new("tmpfs"),
                &mnt,
                "tmpfs",
                &opts,
                STEP_LIMIT,
            )?);
            m.target = mnt;
            m.describe = format!("tmpfs (-o {opts})");
            return Ok(m);
        }
        let devices = match kind {
            MediaKind::Stripe(n) => n as u64,
            _ => 1,
        };
        // File systems need room beyond the data (metadata, journal, raid0
        // chunks), and mkfs.xfs refuses anything under 300 MB.
        let each = if kind == MediaKind::Raw {
            size
        } else {
            ((size + size / 4 + (256 << 20)) / devices).max(MIN_DEVICE)
        };
        for i in 0..devices {
            let file =
                BackingFile::create(m._dir.path.join(format!("iolab-backing-{i}.img")), each)?;
            if kind == MediaKind::Raw {
                // Reads of a sparse file's holes never reach the device.
                file.fill()?;
            }
            let lo = LoopDevice::attach(&file.0, STEP_LIMIT)?;
            m._files.push(file);
            m.loops.push(lo);
        }
        let chain: Vec<String> = m
            .loops
            .iter()
            .map(|l| {
                format!(
                    "{} (4 KiB sectors, direct I/O {})",
                    l.device.display(),
                    if l.direct_io() == Some(true) {
                        "on"
                    } else {
                        "off"
                    }
                )
            })
            .collect();
        if kind == MediaKind::Raw {
            m.target = m.loops[0].device.clone();
            m.describe = format!("raw loop device {}", chain.join(", "));
            return Ok(m);
        }
        m.make_fs(&chain)?;
        Ok(m)
    }

    fn make_fs(&mut self, chain: &[String]) -> anyhow::Result<()> {
        let (mkfs, opts) = self.kind.mkfs().expect("a file system");
        let mut args: Vec<&std::ffi::OsStr> = opts.iter().map(|o| o.as_ref()).collect();
        args.extend(self.loops.iter().map(|l| l.device.as_os_str()));
        super::command::bounded(mkfs, &args, MKFS_LIMIT)?;
        let mnt = self._dir.path.join("mnt");
        std::fs::create_dir(&mnt)?;
        let fs = Mountpoint::mount(
            &self.loops[0].device,
            &mnt,
            self.kind.fstype(),
            MOUNT_OPTIONS,
            STEP_LIMIT,
        )?;
        self.fs = Some(fs);
        self.target = mnt;
        self.describe = format!(
            "{} ({mkfs} {}; -o {MOUNT_OPTIONS}) on {}",
            self.kind.name(),
            opts.join(" "),
            chain.join(" + ")
        );
        Ok(())
    }

    /// The loop devices under it (for `raw`, the target itself).
    pub fn devices(&self) -> Vec<PathBuf> {
        self.loops.iter().map(|l| l.device.clone()).collect()
    }

    /// Whether its file system is mounted (false for raw).
    pub fn mounted(&self) -> bool {
        self.fs.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_are_refused() {
        for n in [
            "tmpfs",
            "ext4",
            "ext4-nojournal",
            "xfs",
            "btrfs",
            "raw",
            "stripe:2",
            "stripe:8",
        ] {
            assert_eq!(MediaKind::parse(n).map(|k| k.name()).as_deref(), Some(n));
        }
        for bad in [
            "", "ext3", "stripe", "stripe:1", "stripe:9", "stripe:x", "RAW",
        ] {
            assert_eq!(MediaKind::parse(bad), None, "{bad}");
        }
    }
}
