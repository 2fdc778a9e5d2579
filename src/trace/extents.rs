//! File offset -> device sector map (FIEMAP), so a user request's offset can be
//! matched to the block events of its bio.

use std::os::fd::RawFd;

use anyhow::{bail, Result};

const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_FLAG_SYNC: u32 = 1;
const BATCH: usize = 256;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

#[repr(C)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; BATCH],
}

/// Extents of a file: (logical start, physical start, length) in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtentMap {
    pub extents: Vec<(u64, u64, u64)>,
    /// Sector offset to add (partition start), in 512-byte sectors.
    pub base_sector: u64,
}

impl ExtentMap {
    /// The identity map (a whole block device).
    pub fn identity(base_sector: u64) -> Self {
        ExtentMap {
            extents: vec![(0, 0, u64::MAX)],
            base_sector,
        }
    }

    /// Read the extent map of an open file.
    pub fn of_fd(fd: RawFd, len: u64, base_sector: u64) -> Result<ExtentMap> {
        let mut out = Vec::new();
        let mut start = 0u64;
        loop {
            let mut fm = Box::new(Fiemap {
                fm_start: start,
                fm_length: len.saturating_sub(start),
                fm_flags: FIEMAP_FLAG_SYNC,
                fm_mapped_extents: 0,
                fm_extent_count: BATCH as u32,
                fm_reserved: 0,
                fm_extents: [FiemapExtent::default(); BATCH],
            });
            // SAFETY: FS_IOC_FIEMAP reads and writes a struct fiemap with room for BATCH extents.
            let r = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP as _, &mut *fm as *mut Fiemap) };
            if r < 0 {
                bail!("FIEMAP failed: {}", std::io::Error::last_os_error());
            }
            let n = fm.fm_mapped_extents as usize;
            if n == 0 {
                break;
            }
            let mut last = false;
            for e in &fm.fm_extents[..n] {
                out.push((e.fe_logical, e.fe_physical, e.fe_length));
                last |= e.fe_flags & 1 != 0; // FIEMAP_EXTENT_LAST
                start = e.fe_logical + e.fe_length;
            }
            if last || start >= len {
                break;
            }
        }
        Ok(ExtentMap {
            extents: out,
            base_sector,
        })
    }

    /// Device sector of a file offset.
    pub fn sector(&self, offset: u64) -> Option<u64> {
        let k = self.extents.partition_point(|&(l, _, _)| l <= offset);
        let (l, p, n) = *self.extents.get(k.checked_sub(1)?)?;
        (offset < l.saturating_add(n)).then(|| self.base_sector + (p + (offset - l)) / 512)
    }
}
