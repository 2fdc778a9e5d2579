//! Scratch files: created by iolab, checked for free space first, laid out
//! with incompressible data (so reads hit the device, not holes), and removed
//! on drop, which also runs after Ctrl-C because runs stop on the normal path.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::dut::verify;
use crate::dut::verify::fill_random;
use crate::interrupt;
use crate::testbed::{self, Resource};

/// Removes the scratch file when dropped (unless kept).
#[derive(Debug)]
pub struct ScratchGuard {
    pub path: PathBuf,
    pub keep: bool,
}

impl Drop for ScratchGuard {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
        crate::testbed::release_path(&self.path);
    }
}

/// Bytes available to an unprivileged writer on the filesystem of `dir`.
pub fn free_bytes(dir: &Path) -> anyhow::Result<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .context("path has a NUL byte")?;
    // SAFETY: zeroed statvfs is a valid out-parameter; c is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("statvfs {}", dir.display()));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// A fresh scratch file name in `dir`.
pub fn scratch_path(dir: &Path) -> PathBuf {
    let pid = std::process::id();
    let mut n = 0;
    loop {
        let p = dir.join(format!("iolab-scratch-{pid}-{n}.dat"));
        if !p.exists() {
            return p;
        }
        n += 1;
    }
}

/// Refuse a scratch file of `size` bytes at `path` when its filesystem
/// has not that much free, with headroom.
pub fn check_space(path: &Path, size: u64) -> anyhow::Result<()> {
    let dir = crate::input::parent_dir(path);
    let free = free_bytes(dir)?;
    let headroom = 64 << 20;
    if free < size + headroom {
        return Err(crate::error::usage(
            "--size",
            format!(
                "{} has {} MiB free; a {} MiB scratch file needs {} MiB with headroom (use a smaller --size)",
                dir.display(),
                free >> 20,
                size >> 20,
                (size + headroom) >> 20
            ),
        ));
    }
    Ok(())
}

/// Create `path` (which must not exist) with `size` bytes of random data.
/// With `verify_bs`, every block carries a verification header (sequence 0).
pub fn create(
    path: &Path,
    size: u64,
    verify_bs: Option<u64>,
    seed: u64,
    keep: bool,
) -> anyhow::Result<ScratchGuard> {
    check_space(path, size)?;
    let mut file = testbed::create(Resource::Path(path.to_path_buf()), || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("cannot create scratch file {}", path.display()))
    })?;
    let guard = ScratchGuard {
        path: path.to_path_buf(),
        keep,
    };
    lay_out(&mut file, size, verify_bs, seed)
        .with_context(|| format!("laying out {}", path.display()))?;
    Ok(guard)
}

fn lay_out(file: &mut File, size: u64, verify_bs: Option<u64>, seed: u64) -> anyhow::Result<()> {
    const CHUNK: u64 = 1 << 20;
    let chunk = match verify_bs {
        Some(bs) => CHUNK.div_ceil(bs) * bs,
        None => CHUNK,
    };
    let mut buf = vec![0u8; chunk as usize];
    let mut off = 0u64;
    let mut n = 0u64;
    while off < size {
        if interrupt::stop_requested() {
            anyhow::bail!(crate::error::Interrupted);
        }
        let len = chunk.min(size - off) as usize;
        fill_random(
            &mut buf[..len],
            seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        if let Some(bs) = verify_bs {
            for (i, block) in buf[..len].chunks_mut(bs as usize).enumerate() {
                if block.len() == bs as usize {
                    verify::stamp(block, off + i as u64 * bs, verify::Stamp { run: 0, seq: 0 });
                }
            }
        }
        file.write_all(&buf[..len])?;
        off += len as u64;
        n += 1;
    }
    file.sync_all()?;
    drop_cache(file.as_raw_fd(), size);
    Ok(())
}

/// Ask the kernel to drop the file's cached pages (after they are clean).
pub fn drop_cache(fd: i32, len: u64) {
    // SAFETY: advisory call on a descriptor we own.
    unsafe {
        libc::fdatasync(fd);
        libc::posix_fadvise(fd, 0, len as i64, libc::POSIX_FADV_DONTNEED);
    }
}
