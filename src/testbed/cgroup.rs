//! `kv --memory-limit`: run the workload inside a memory cgroup that iolab
//! creates as a child of its own cgroup (v1 memory controller, or v2 where
//! the memory controller is there), moves itself into, and on drop moves
//! back out of and removes, also after an error or Ctrl-C (which stops the
//! run on the normal path). Registered with the testbed: a second Ctrl-C
//! removes it, and the next start removes one a SIGKILL left.

use anyhow::{anyhow, Context, Result};
use std::path::{Path, PathBuf};

/// A memory cgroup this process is in until dropped.
#[derive(Debug)]
pub struct MemoryCgroup {
    pub path: PathBuf,
    parent: PathBuf,
    pub version: u8,
    pub limit: u64,
}

/// Mount point of the v1 memory controller, if any.
fn v1_memory_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 3 && f[2] == "cgroup" && f[3].split(',').any(|o| o == "memory"))
            .then(|| PathBuf::from(f[1]))
    })
}

/// Mount point of cgroup2 with the memory controller available.
fn v2_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let p = PathBuf::from(f.get(1)?);
        let ok = f.get(2) == Some(&"cgroup2")
            && std::fs::read_to_string(p.join("cgroup.controllers"))
                .map(|c| c.split_whitespace().any(|x| x == "memory"))
                .unwrap_or(false);
        ok.then_some(p)
    })
}

/// This process's cgroup path for a v1 controller (`memory`) or v2 (`""`).
fn own_cgroup(controller: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let _id = it.next()?;
        let ctrls = it.next()?;
        let path = it.next()?;
        let hit = if controller.is_empty() {
            ctrls.is_empty()
        } else {
            ctrls.split(',').any(|c| c == controller)
        };
        hit.then(|| path.to_string())
    })
}

/// Whether a memory cgroup can be created here (root and a controller).
pub fn available() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root".into());
    }
    if v1_memory_mount().is_some() || v2_mount().is_some() {
        Ok(())
    } else {
        Err("no cgroup memory controller mounted".into())
    }
}

impl MemoryCgroup {
    /// Create the cgroup with `limit` bytes and move this process into it.
    pub fn enter(limit: u64) -> Result<MemoryCgroup> {
        available().map_err(|e| crate::error::usage("--memory-limit", e))?;
        let name = format!("iolab-kv-{}", std::process::id());
        let (parent, version, limit_file) = if let Some(m) = v1_memory_mount() {
            let own = own_cgroup("memory").unwrap_or_else(|| "/".into());
            (
                m.join(own.trim_start_matches('/')),
                1u8,
                "memory.limit_in_bytes",
            )
        } else {
            let m = v2_mount().ok_or_else(|| anyhow!("no cgroup memory controller"))?;
            let own = own_cgroup("").unwrap_or_else(|| "/".into());
            (m.join(own.trim_start_matches('/')), 2u8, "memory.max")
        };
        remove_stale(&parent);
        let path = parent.join(&name);
        std::fs::create_dir(&path)
            .with_context(|| format!("creating cgroup {}", path.display()))?;
        super::register(super::Resource::Cgroup {
            path: path.clone(),
            parent: parent.clone(),
        });
        let cg = MemoryCgroup {
            path,
            parent,
            version,
            limit,
        };
        std::fs::write(cg.path.join(limit_file), limit.to_string())
            .with_context(|| format!("setting {limit_file} in {}", cg.path.display()))?;
        if version == 1 {
            // Do not let the process swap instead of reading from the database.
            let _ = std::fs::write(cg.path.join("memory.swappiness"), "0");
        } else {
            let _ = std::fs::write(cg.path.join("memory.swap.max"), "0");
        }
        std::fs::write(cg.path.join("cgroup.procs"), std::process::id().to_string())
            .with_context(|| format!("moving iolab into {}", cg.path.display()))?;
        Ok(cg)
    }

    /// Peak memory usage charged to the cgroup (v1 max_usage, v2 memory.peak).
    pub fn peak_bytes(&self) -> Option<u64> {
        let f = if self.version == 1 {
            "memory.max_usage_in_bytes"
        } else {
            "memory.peak"
        };
        std::fs::read_to_string(self.path.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Whether `pid` is inside this cgroup.
    pub fn contains(&self, pid: u32) -> bool {
        procs(&self.path).contains(&pid)
    }
}

/// Remove empty `iolab-kv-<pid>` cgroups left by an iolab that was killed
/// (SIGKILL, e.g. by the OOM killer) and whose process is gone.
fn remove_stale(parent: &Path) {
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("iolab-kv-")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() && procs(&e.path()).is_empty() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

fn procs(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        remove(&self.path, &self.parent);
        if self.path.exists() {
            eprintln!(
                "iolab: warning: could not remove cgroup {}",
                self.path.display()
            );
        }
        super::release(&super::Resource::Cgroup {
            path: self.path.clone(),
            parent: self.parent.clone(),
        });
    }
}

/// Move this process out of cgroup `path` (back to `parent`) if it is in
/// it, and remove `path` once empty (threads that just exited may linger
/// for a moment: retried for up to a second).
pub fn remove(path: &Path, parent: &Path) {
    let me = std::process::id();
    if procs(path).contains(&me) {
        let _ = std::fs::write(parent.join("cgroup.procs"), me.to_string());
    }
    for _ in 0..50 {
        if std::fs::remove_dir(path).is_ok() || !path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
