//! `trace --schedulers`: switch a disk's I/O scheduler for a run and put the
//! original back when the guard drops; registered with the testbed, so a
//! second Ctrl-C restores it and the next start restores one a SIGKILL left.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::Resource;

/// A disk's scheduler, switched until dropped.
pub struct SchedulerGuard {
    res: Resource,
}

impl SchedulerGuard {
    /// The schedulers `disk` offers and the current one.
    pub fn available(disk: &str) -> Result<(Vec<String>, String)> {
        let p = format!("/sys/block/{disk}/queue/scheduler");
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {p}"))?;
        let mut cur = String::new();
        let names = text
            .split_whitespace()
            .map(|w| {
                if w.starts_with('[') {
                    cur = w.trim_matches(|c| c == '[' || c == ']').to_string();
                    cur.clone()
                } else {
                    w.to_string()
                }
            })
            .collect();
        Ok((names, cur))
    }

    /// Switch `disk` to scheduler `to`.
    pub fn switch(disk: &str, to: &str) -> Result<SchedulerGuard> {
        let (_, original) = Self::available(disk)?;
        let path = PathBuf::from(format!("/sys/block/{disk}/queue/scheduler"));
        let res = Resource::Scheduler {
            path: path.clone(),
            original,
        };
        super::register(res.clone());
        if let Err(e) = std::fs::write(&path, to) {
            super::release(&res);
            return Err(e).with_context(|| format!("setting scheduler {to} on {disk}"));
        }
        Ok(SchedulerGuard { res })
    }
}

impl Drop for SchedulerGuard {
    fn drop(&mut self) {
        let _ = self.res.undo();
        super::release(&self.res);
    }
}
