//! From a path to the block device under it, through sysfs and mountinfo:
//! file -> filesystem -> block device (maybe a partition) -> whole disk, and
//! the disk's queue settings that belong in provenance.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Major and minor number of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DevNum {
    pub major: u32,
    pub minor: u32,
}

impl DevNum {
    pub fn from_raw(dev: u64) -> DevNum {
        DevNum {
            major: libc::major(dev),
            minor: libc::minor(dev),
        }
    }

    pub fn parse(s: &str) -> Option<DevNum> {
        let (a, b) = s.trim().split_once(':')?;
        Some(DevNum {
            major: a.parse().ok()?,
            minor: b.parse().ok()?,
        })
    }

    pub fn text(self) -> String {
        format!("{}:{}", self.major, self.minor)
    }
}

/// The filesystem a path lives on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsInfo {
    pub mountpoint: String,
    pub fstype: String,
    pub source: String,
    pub options: String,
}

/// The whole disk (and partition, if any) that backs a target, with the
/// queue settings that change results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DiskInfo {
    /// The device the target is on, e.g. "vda1" (a partition) or "vda".
    pub device: String,
    /// The whole disk, e.g. "vda"; its counters are read from /proc/diskstats.
    pub disk: String,
    pub devnum: String,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub size_bytes: Option<u64>,
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
    pub scheduler: Option<String>,
    pub nr_requests: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    pub write_cache: Option<String>,
    pub io_poll: Option<bool>,
    pub max_sectors_kb: Option<u64>,
    /// Kernel driver behind the disk (virtio_blk, nvme, sd, loop, ...).
    pub driver: Option<String>,
    /// The disk's serial where sysfs has one (virtio's `serial`, a SCSI or
    /// NVMe device's `device/serial`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
}

impl DiskInfo {
    /// What sysfs says the disk is: its model (and serial), or, without
    /// a model, what it is instead ("virtio, no model": a virtio disk has
    /// none; it read "model ?").
    pub fn identity(&self) -> String {
        let serial = self
            .serial
            .as_deref()
            .map(|s| format!(" serial {s}"))
            .unwrap_or_default();
        if let Some(m) = &self.model {
            return format!("model {m}{serial}");
        }
        let virtio = self.driver.as_deref() == Some("virtio_blk")
            || self.vendor.as_deref() == Some("0x1af4");
        match (virtio, &self.vendor) {
            (true, _) => format!("virtio, no model{serial}"),
            (false, Some(v)) => format!("vendor {v}, no model in sysfs{serial}"),
            (false, None) => format!("no model in sysfs{serial}"),
        }
    }
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn read_u64(p: impl AsRef<Path>) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

/// The device number a path's data lives on: st_rdev for a block device,
/// st_dev for anything else, resolved through mountinfo when st_dev is an
/// anonymous device (btrfs, overlay).
pub fn devnum_of_path(path: &Path) -> Option<DevNum> {
    let md = fs::metadata(path).ok()?;
    if md.file_type().is_block_device() {
        return Some(DevNum::from_raw(md.rdev()));
    }
    let dev = DevNum::from_raw(md.dev());
    if Path::new(&format!("/sys/dev/block/{}", dev.text())).exists() {
        return Some(dev);
    }
    let fs = fs_of_path(path)?;
    let src = fs::metadata(&fs.source).ok()?;
    if src.file_type().is_block_device() {
        Some(DevNum::from_raw(src.rdev()))
    } else {
        None
    }
}

/// One parsed line of /proc/self/mountinfo.
#[derive(Debug, Clone)]
pub struct MountLine {
    pub devnum: Option<DevNum>,
    pub mountpoint: String,
    pub options: String,
    pub fstype: String,
    pub source: String,
}

pub fn parse_mountinfo(text: &str) -> Vec<MountLine> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            if l.len() < 6 || r.len() < 2 {
                return None;
            }
            Some(MountLine {
                devnum: DevNum::parse(l[2]),
                mountpoint: unescape_mount(l[4]),
                options: l[5].to_string(),
                fstype: r[0].to_string(),
                source: unescape_mount(r[1]),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape_mount(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

pub fn mounts() -> Vec<MountLine> {
    fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default()
}

/// The filesystem holding `path`: the mount with the longest mountpoint prefix.
pub fn fs_of_path(path: &Path) -> Option<FsInfo> {
    let canon = path.canonicalize().ok()?;
    let canon = canon.to_string_lossy().to_string();
    mounts()
        .into_iter()
        .filter(|m| {
            canon == m.mountpoint
                || m.mountpoint == "/"
                || canon.starts_with(&format!("{}/", m.mountpoint.trim_end_matches('/')))
        })
        .max_by_key(|m| m.mountpoint.len())
        .map(|m| FsInfo {
            mountpoint: m.mountpoint,
            fstype: m.fstype,
            source: m.source,
            options: m.options,
        })
}

/// sysfs directory of a block device, e.g. /sys/devices/.../block/vda/vda1.
fn sysfs_dir(dev: DevNum) -> Option<PathBuf> {
    fs::canonicalize(format!("/sys/dev/block/{}", dev.text())).ok()
}

/// Kernel name and whole-disk name of a block device number.
pub fn device_names(dev: DevNum) -> Option<(String, String)> {
    let dir = sysfs_dir(dev)?;
    let name = dir.file_name()?.to_string_lossy().to_string();
    let disk = if dir.join("partition").exists() {
        dir.parent()?.file_name()?.to_string_lossy().to_string()
    } else {
        name.clone()
    };
    Some((name, disk))
}

/// Full description of the disk behind a device number.
pub fn disk_info(dev: DevNum) -> Option<DiskInfo> {
    let (device, disk) = device_names(dev)?;
    let base = PathBuf::from(format!("/sys/block/{disk}"));
    let q = base.join("queue");
    let scheduler = read_trim(q.join("scheduler")).map(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
            .unwrap_or(s)
    });
    let driver = fs::read_link(base.join("device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string()))
        .or_else(|| {
            if disk.starts_with("loop") {
                Some("loop".into())
            } else {
                None
            }
        })
        .or_else(|| {
            if disk.starts_with("dm-") {
                Some("device-mapper".into())
            } else {
                None
            }
        });
    Some(DiskInfo {
        devnum: dev.text(),
        model: read_trim(base.join("device/model")).or_else(|| read_trim(base.join("dm/name"))),
        vendor: read_trim(base.join("device/vendor")),
        size_bytes: read_u64(base.join("size")).map(|s| s * 512),
        rotational: read_u64(q.join("rotational")).map(|v| v == 1),
        logical_block_size: read_u64(q.join("logical_block_size")),
        physical_block_size: read_u64(q.join("physical_block_size")),
        scheduler,
        nr_requests: read_u64(q.join("nr_requests")),
        read_ahead_kb: read_u64(q.join("read_ahead_kb")),
        write_cache: read_trim(q.join("write_cache")),
        io_poll: read_u64(q.join("io_poll")).map(|v| v == 1),
        max_sectors_kb: read_u64(q.join("max_sectors_kb")),
        driver,
        serial: read_trim(base.join("serial")).or_else(|| read_trim(base.join("device/serial"))),
        device,
        disk,
    })
}

/// Device numbers of a disk and all its partitions.
pub fn disk_and_partitions(disk: &str) -> Vec<DevNum> {
    let base = PathBuf::from(format!("/sys/block/{disk}"));
    let mut out: Vec<DevNum> = read_trim(base.join("dev"))
        .and_then(|s| DevNum::parse(&s))
        .into_iter()
        .collect();
    if let Ok(entries) = fs::read_dir(&base) {
        for e in entries.flatten() {
            if e.path().join("partition").exists() {
                if let Some(d) = read_trim(e.path().join("dev")).and_then(|s| DevNum::parse(&s)) {
                    out.push(d);
                }
            }
        }
    }
    out
}

/// Why a block device is busy (mounted, a partition mounted, held by dm/md),
/// or `None` when it looks free. `O_EXCL` at open time is the final check.
pub fn device_in_use(dev: DevNum) -> Option<String> {
    let (name, disk) = device_names(dev)?;
    // A whole disk is busy if any partition is; a partition only if itself is.
    let family: Vec<DevNum> = if name == disk {
        disk_and_partitions(&disk)
    } else {
        vec![dev]
    };
    for m in mounts() {
        let by_num = m.devnum.is_some_and(|d| family.contains(&d));
        let by_src = fs::metadata(&m.source)
            .ok()
            .filter(|md| md.file_type().is_block_device())
            .is_some_and(|md| family.contains(&DevNum::from_raw(md.rdev())));
        if by_num || by_src {
            return Some(format!("{} is mounted on {}", m.source, m.mountpoint));
        }
    }
    for d in &family {
        if let Some((n, _)) = device_names(*d) {
            let holders =
                fs::canonicalize(format!("/sys/dev/block/{}", d.text())).map(|p| p.join("holders"));
            if let Ok(h) = holders {
                if let Some(first) = fs::read_dir(h)
                    .ok()
                    .and_then(|mut it| it.next())
                    .and_then(|e| e.ok())
                {
                    return Some(format!(
                        "{n} is held by {}",
                        first.file_name().to_string_lossy()
                    ));
                }
            }
        }
    }
    if let Ok(swaps) = fs::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            if let Some(src) = line.split_whitespace().next() {
                if let Ok(md) = fs::metadata(src) {
                    if md.file_type().is_block_device()
                        && family.contains(&DevNum::from_raw(md.rdev()))
                    {
                        return Some(format!("{src} is in use as swap"));
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines() {
        let t = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n\
                 30 22 0:26 / /mnt/my\\040dir rw - tmpfs tmpfs rw\n";
        let m = parse_mountinfo(t);
        assert_eq!(m.len(), 2);
        assert_eq!(
            m[0].devnum,
            Some(DevNum {
                major: 254,
                minor: 0
            })
        );
        assert_eq!(m[0].fstype, "ext4");
        assert_eq!(m[1].mountpoint, "/mnt/my dir");
    }

    #[test]
    fn root_filesystem_resolves() {
        let fs = fs_of_path(Path::new("/")).unwrap();
        assert_eq!(fs.mountpoint, "/");
        // Where / sits on a real block device, we find its disk.
        if let Some(dev) = devnum_of_path(Path::new("/")) {
            let info = disk_info(dev).expect("sysfs describes the root disk");
            assert!(!info.disk.is_empty());
            assert!(info.logical_block_size.unwrap_or(512) >= 512);
        }
    }

    #[test]
    fn tmpfs_has_no_disk() {
        if fs_of_path(Path::new("/dev/shm")).is_some_and(|f| f.fstype == "tmpfs") {
            assert!(devnum_of_path(Path::new("/dev/shm")).is_none());
        }
    }

    /// Provenance read "model ?" on a virtio disk: it now says what sysfs
    /// has, or what the disk is.
    #[test]
    fn a_disk_without_a_model_says_what_it_is() {
        let virtio = DiskInfo {
            driver: Some("virtio_blk".into()),
            vendor: Some("0x1af4".into()),
            serial: Some("overlayblk".into()),
            ..DiskInfo::default()
        };
        assert_eq!(virtio.identity(), "virtio, no model serial overlayblk");
        let nvme = DiskInfo {
            model: Some("Samsung SSD 990".into()),
            ..DiskInfo::default()
        };
        assert_eq!(nvme.identity(), "model Samsung SSD 990");
        assert_eq!(DiskInfo::default().identity(), "no model in sysfs");
    }
}
