//! The stack-breakdown step of `iolab run`: the capability check (root,
//! tracefs) and one traced job through `trace::config::run_config`, set up
//! like `iolab trace` does (extent map, device number, disk IRQs).

use std::os::fd::AsRawFd;

use anyhow::{Context, Result};

use crate::plan::job::JobSpec;
use crate::results::Point;
use crate::target::sysfs::DevNum;
use crate::target::{Target, TargetKind};
use crate::trace::config::{run_config, Setup};
use crate::trace::events::kdev;
use crate::trace::extents::ExtentMap;
use crate::trace::session::disk_irqs;
use crate::trace::tracefs;

/// Per-CPU ring buffer of the trace, KiB (`iolab trace`'s default).
const BUFFER_KB: u32 = 16_384;

/// Why tracing cannot run here (None: root and tracefs are available).
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("tracing needs root".into());
    }
    tracefs::probe().why_not
}

/// Run `spec` traced on `target`: the point carries `extra.trace` like the
/// points of `iolab trace`. Errors say why the step cannot run here.
pub fn run(target: &Target, spec: &JobSpec) -> Result<Point> {
    let caps = tracefs::probe();
    if let Some(why) = caps.why_not {
        anyhow::bail!("tracing is unavailable ({why})");
    }
    if let Some(t) = caps.tracefs.as_deref() {
        tracefs::remove_stale(t);
    }
    let (fd, direct) = target.open(false, true)?;
    if !direct {
        anyhow::bail!(
            "the target does not support O_DIRECT; tracing needs requests to reach the device"
        );
    }
    let disk = target
        .disk
        .clone()
        .context("cannot find the block device under the directory")?;
    let whole = std::fs::read_to_string(format!("/sys/block/{}/dev", disk.disk))
        .ok()
        .and_then(|s| DevNum::parse(&s))
        .context("reading the disk's device number")?;
    let part_start = if disk.device != disk.disk {
        std::fs::read_to_string(format!("/sys/block/{}/{}/start", disk.disk, disk.device))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    } else {
        0
    };
    let extents = if target.kind == TargetKind::BlockDevice {
        ExtentMap::identity(part_start)
    } else {
        ExtentMap::of_fd(fd.as_raw_fd(), target.size, part_start)
            .unwrap_or_else(|_| ExtentMap::identity(part_start))
    };
    drop(fd);
    let setup = Setup {
        caps,
        target,
        extents,
        kdev: kdev(whole.major, whole.minor),
        irqs: disk_irqs(&disk.disk),
        buffer_kb: BUFFER_KB,
        syscalls: true,
        max_records: spec.stop.io_count.unwrap_or(200_000) as usize,
        overhead_pairs: 1,
    };
    let scheduler = disk.scheduler.clone().unwrap_or_default();
    let (res, mut pt, _capture) = run_config(&setup, spec, &scheduler, false)?;
    pt.params.insert("scheduler".into(), res.scheduler.clone());
    pt.extra.insert("trace".into(), serde_json::to_value(&res)?);
    Ok(pt)
}
