//! `iolab device --breakdown` (and `iolab run`'s breakdown step): run each point through the stack-breakdown
//! tracer of `iolab trace` (`trace::config::run_config`, traced run only).
//! Probes root/tracefs and the target's disk once; when tracing is not
//! possible, says why and the points run untraced.

use std::os::fd::AsRawFd;

use crate::dut::Target;
use crate::measure::sysfs::DevNum;
use crate::plan::job::JobSpec;
use crate::results::target::TargetKind;
use crate::results::Point;
use crate::testbed::mount::MountGuard;
use crate::trace::config::{run_config, ConfigResult, Setup};
use crate::trace::events::kdev;
use crate::trace::extents::ExtentMap;
use crate::trace::session::disk_irqs;
use crate::trace::stages::render;
use crate::trace::tracefs;

/// Per-request log capacity over all workers of a traced point (records
/// are preallocated; the breakdown covers the first ones).
const RECORDS_PER_POINT: usize = 2_000_000;

/// The tracer of a session, or why there is none.
pub struct Tracer<'a> {
    setup: Option<Setup<'a>>,
    scheduler: String,
    /// Why nothing is traced (no root, no tracefs, no block device, ...).
    pub why_not: Option<String>,
    /// What was probed, for the terminal.
    pub status: String,
    /// Unmounts tracefs at the end of the session if iolab mounted it.
    _mount: MountGuard,
}

impl<'a> Tracer<'a> {
    /// Probe capabilities and the target's disk (extents, irqs).
    pub fn new(target: &'a Target, buffer_kb: u32) -> Tracer<'a> {
        let mut caps = tracefs::probe();
        let mount = caps.take_mount();
        let mut notes = Vec::new();
        if let Some(t) = caps.tracefs.as_deref().filter(|_| caps.root) {
            for name in tracefs::remove_stale(t) {
                notes.push(format!(
                    "removed stale instance {name} of a process that no longer exists"
                ));
            }
        }
        let none = |why: String, mount: MountGuard| Tracer {
            setup: None,
            _mount: mount,
            scheduler: String::new(),
            status: format!("tracing: unavailable ({why}); running the jobs untraced"),
            why_not: Some(why),
        };
        if let Some(why) = &caps.why_not {
            return none(why.clone(), mount);
        }
        let Some(disk) = target.disk.clone() else {
            return none(
                format!(
                    "{} is not on a block device iolab can trace",
                    target.path.display()
                ),
                mount,
            );
        };
        let Some(whole) = std::fs::read_to_string(format!("/sys/block/{}/dev", disk.disk))
            .ok()
            .and_then(|s| DevNum::parse(&s))
        else {
            return none(
                format!("cannot read the device number of {}", disk.disk),
                mount,
            );
        };
        let part_start = if disk.device != disk.disk {
            std::fs::read_to_string(format!("/sys/block/{}/{}/start", disk.disk, disk.device))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        } else {
            0
        };
        let fd = match target.open(false, true) {
            Ok((fd, true)) => fd,
            Ok((_, false)) => {
                return none(
                    format!(
                        "{} does not support O_DIRECT, so requests would not reach the device",
                        target.path.display()
                    ),
                    mount,
                )
            }
            Err(e) => return none(format!("cannot open the target: {e:#}"), mount),
        };
        let extents = if target.kind == TargetKind::BlockDevice {
            ExtentMap::identity(part_start)
        } else {
            ExtentMap::of_fd(fd.as_raw_fd(), target.size, part_start)
                .unwrap_or_else(|_| ExtentMap::identity(part_start))
        };
        drop(fd);
        let irqs = disk_irqs(&disk.disk);
        notes.insert(
            0,
            format!(
                "tracing: tracefs at {}{}, private instance iolab-{} per point; {} {} scheduler {}, irq {:?}",
                tracefs::TRACEFS,
                if mount.mounted_by_us() {
                    " (mounted by iolab)"
                } else {
                    ""
                },
                std::process::id(),
                disk.disk,
                whole.text(),
                disk.scheduler.clone().unwrap_or_default(),
                irqs
            ),
        );
        Tracer {
            setup: Some(Setup {
                caps,
                target,
                extents,
                kdev: kdev(whole.major, whole.minor),
                irqs,
                buffer_kb,
                syscalls: true,
                max_records: RECORDS_PER_POINT,
                overhead_pairs: 1,
                progress: None,
            }),
            _mount: mount,
            scheduler: disk.scheduler.unwrap_or_default(),
            why_not: None,
            status: notes.join("\ntracing: "),
        }
    }

    /// Why this job cannot be traced, if it cannot (it then runs untraced).
    pub fn why_not_for(&self, job: &JobSpec) -> Option<String> {
        if let Some(w) = &self.why_not {
            return Some(w.clone());
        }
        if !job.engine.caps().traced {
            return Some(format!(
                "the {} engine is not traced (psync, aio, io_uring are)",
                job.engine.name()
            ));
        }
        if !job.direct {
            return Some("buffered I/O is not traced (requests must reach the device)".into());
        }
        if job.open_loop.is_some() {
            return Some(
                "open-loop points are not traced (the open-loop runner keeps no per-request log)"
                    .into(),
            );
        }
        None
    }

    /// Run `job` traced: the core's point and the breakdown result.
    pub fn run(&mut self, job: &JobSpec) -> anyhow::Result<(Point, ConfigResult)> {
        let setup = self
            .setup
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("tracing is not available"))?;
        setup.max_records = (RECORDS_PER_POINT / job.jobs.max(1) as usize).max(10_000);
        let (res, point, _capture) = run_config(setup, job, &self.scheduler, false)?;
        Ok((point, res))
    }
}

/// The btt-style table and the event counts, printed after the point's table.
pub fn table(r: &ConfigResult) -> String {
    let mut out = String::new();
    match &r.breakdown {
        Some(b) => out.push_str(&render(b)),
        None => out.push_str("no breakdown (nothing traced)\n"),
    }
    out.push_str(&events_text(r, "--breakdown-buffer-kb"));
    out
}

/// The trace's event counts and, when the kernel dropped events, a warning
/// naming the flag that sizes the ring buffer; empty for an untraced run.
pub fn events_text(r: &ConfigResult, buffer_flag: &str) -> String {
    let Some(l) = &r.lost else {
        return String::new();
    };
    let mut out = format!(
        "events: {} in {} pages; {} requests without a matching block I/O\n",
        r.events, r.pages, r.unmatched_requests
    );
    let lost = l.total() + r.missed_in_pages;
    if lost > 0 {
        out.push_str(&format!(
            "WARNING: the kernel dropped {lost} trace events (overrun {}, dropped {}); the breakdown covers only the requests whose events survived; raise {buffer_flag}\n",
            l.overrun, l.dropped
        ));
    } else {
        out.push_str("no trace events lost\n");
    }
    out
}

/// Warnings for the point about the trace (lost events, unmatched requests).
pub fn warnings(r: &ConfigResult) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(l) = &r.lost {
        let lost = l.total() + r.missed_in_pages;
        if lost > 0 {
            w.push(format!(
                "--breakdown: the kernel dropped {lost} trace events; raise --breakdown-buffer-kb"
            ));
        }
    }
    if r.breakdown.as_ref().is_some_and(|b| b.requests == 0) {
        w.push("--breakdown: no request could be matched to its block I/O".into());
    }
    w
}
