//! A scratch directory iolab makes for what it mounts or builds inside
//! (`iolab-PREFIX-PID-N` under a directory on the storage under test),
//! registered with the testbed and removed with rmdir, never recursively:
//! by the time it goes, what was inside (mount points, backing files) is
//! gone through its own guards.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::Resource;

pub struct ScratchDir {
    pub path: PathBuf,
}

impl ScratchDir {
    pub fn create(under: &Path, prefix: &str) -> anyhow::Result<ScratchDir> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let path = under.join(format!(
            "iolab-{prefix}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        super::create(Resource::Path(path.clone()), || {
            std::fs::create_dir(&path).map_err(Into::into)
        })?;
        Ok(ScratchDir { path })
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Only empty: the mount points inside are gone by now (rmdir'ed).
        let _ = std::fs::remove_dir(&self.path);
        super::release(&Resource::Path(self.path.clone()));
    }
}
