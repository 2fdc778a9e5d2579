//! A database on a raw block device (the Symas study's "raw" row): LMDB,
//! the one engine here that opens a device as its data file, writes its
//! database on a block device with no file system. `check` applies
//! `device`'s rule for block devices (`dut`: `--destroy-data` naming the
//! device, refused while it, a partition or a holder is mounted or in use)
//! before anything is created; `RawDb::attach` then holds the device open
//! with O_EXCL for the whole run (nothing can mount it meanwhile), writes
//! an empty LMDB environment on its first pages and links the device as
//! `data.mdb` into kv's scratch directory, where LMDB keeps its lock file:
//! a lock file cannot live in /dev, and LMDB's own locking stays on for
//! kv's threads (no MDB_NOLOCK).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{Context, Result};

use super::engine::EngineOptions;
use super::plan::{KvPlan, RawDevice};
use crate::dut::{Target, TargetOptions};
use crate::error::usage;

/// LMDB's data file in an environment directory.
const DATA_FILE: &str = "data.mdb";

/// The smallest device LMDB gets (its smallest map).
const MIN_DEVICE: u64 = 1 << 20;

/// Every check of the device, nothing written: `dut`'s rule for writing
/// to a block device, and room for the load.
pub fn check(plan: &KvPlan, raw: &RawDevice) -> Result<Target> {
    let opts = TargetOptions {
        path: Some(raw.device.clone()),
        destroy_data: raw.destroy_data.clone(),
        ..TargetOptions::default()
    };
    let target = crate::dut::prepare(&opts, true, None, plan.seed)?;
    if target.size < MIN_DEVICE {
        return Err(usage(
            "--target",
            format!(
                "{} has {} bytes; LMDB needs at least 1 MiB",
                raw.device.display(),
                target.size
            ),
        ));
    }
    let (bytes, field) = plan.load_bytes();
    if bytes > target.size {
        return Err(usage(
            field,
            format!(
                "the load writes about {} of keys and values, and {} has {}",
                super::report::human(bytes),
                raw.device.display(),
                super::report::human(target.size)
            ),
        ));
    }
    Ok(target)
}

/// The device of a run, held open with O_EXCL until the run ends.
pub struct RawDb {
    pub target: Target,
    _exclusive: File,
}

impl RawDb {
    /// Prepare the checked `target` for LMDB in `dir` (kv's new scratch
    /// directory): an empty environment on the device's first pages (LMDB
    /// starts a new environment only in an empty file, which a device never
    /// is: any other first page it refuses as not an LMDB file) and the
    /// device linked as the directory's data file.
    pub fn attach(target: Target, dir: &Path) -> Result<RawDb> {
        let (fd, _) = target.open(true, false)?;
        let file = File::from(fd);
        let fresh = super::engines::lmdb::fresh_environment(&dir.join("fresh"))?;
        if fresh.len() as u64 > target.size {
            anyhow::bail!("{} is smaller than an empty LMDB", target.path.display());
        }
        file.write_all_at(&fresh, 0)
            .and_then(|()| file.sync_data())
            .with_context(|| format!("writing LMDB's first pages on {}", target.path.display()))?;
        std::os::unix::fs::symlink(&target.path, dir.join(DATA_FILE))
            .with_context(|| format!("linking {} into {}", target.path.display(), dir.display()))?;
        Ok(RawDb {
            target,
            _exclusive: file,
        })
    }

    /// The engine options on this device: LMDB's map (its largest
    /// database) at most the device, in whole pages.
    pub fn options(&self, o: &EngineOptions) -> EngineOptions {
        EngineOptions {
            map_size: o.map_size.min(self.target.size & !4095),
            ..o.clone()
        }
    }
}
