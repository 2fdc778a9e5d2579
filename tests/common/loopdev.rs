//! A loop device over a backing file for tests that need a real block
//! device (root and the loop driver), optionally with an ext4 filesystem
//! mounted on it; detached (and unmounted) on drop.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct LoopDev {
    pub dev: PathBuf,
    pub mountpoint: Option<PathBuf>,
}

impl LoopDev {
    /// Attach `backing`; `extra`: more losetup flags (e.g. --direct-io=on).
    /// Errors say why loop devices cannot be used here.
    pub fn attach(backing: &Path, extra: &[&str]) -> Result<LoopDev, String> {
        // SAFETY: plain getter.
        if unsafe { libc::geteuid() } != 0 {
            return Err("loop devices need root".into());
        }
        if !Path::new("/dev/loop-control").exists() {
            return Err("no /dev/loop-control (loop driver not available)".into());
        }
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .args(extra)
            .arg(backing)
            .output()
            .map_err(|e| format!("cannot run losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(LoopDev {
            dev: PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()),
            mountpoint: None,
        })
    }

    /// The kernel name (loopN).
    pub fn name(&self) -> String {
        self.dev.file_name().unwrap().to_string_lossy().into_owned()
    }

    /// Make an ext4 filesystem on it and mount it at `at`.
    pub fn mount(&mut self, at: &Path) -> Result<(), String> {
        let mkfs = Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&self.dev)
            .output()
            .map_err(|e| format!("mkfs.ext4: {e}"))?;
        if !mkfs.status.success() {
            return Err(format!(
                "mkfs.ext4 failed: {}",
                String::from_utf8_lossy(&mkfs.stderr)
            ));
        }
        std::fs::create_dir_all(at).unwrap();
        let m = Command::new("mount")
            .arg(&self.dev)
            .arg(at)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !m.status.success() {
            return Err(format!(
                "mount failed: {}",
                String::from_utf8_lossy(&m.stderr)
            ));
        }
        self.mountpoint = Some(at.to_path_buf());
        Ok(())
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        if let Some(m) = &self.mountpoint {
            let _ = Command::new("umount").arg(m).status();
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}
