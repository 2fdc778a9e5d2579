//! `iolab trace`'s plan: its settings (`TraceSettings`, from the command
//! line by commands/trace.rs) checked into a `Plan`, the dry run's text,
//! tracing probed, the target placed on its disk, the schedulers to
//! compare, the job of one configuration and the blktrace export. The run
//! over the configurations (results sink, terminal) is commands/trace.rs.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::dut::Target;
use crate::error::usage;
use crate::measure::sysfs::{DevNum, DiskInfo};
use crate::plan::engines::{EngineKind, UringOptions};
use crate::plan::job::{JobSpec, Pattern, StopCondition};
use crate::plan::units::{Size, Span};
use crate::results::target::TargetKind;
use crate::testbed::mount::MountGuard;
use crate::testbed::scheduler::SchedulerGuard;
use crate::trace::blkexport;
use crate::trace::config::ConfigResult;
use crate::trace::events::kdev;
use crate::trace::extents::ExtentMap;
use crate::trace::session::{disk_irqs, Capture};
use crate::trace::tracefs;

/// The settings of `iolab trace`, as given (`cli::trace::TraceOpts`
/// documents each).
#[derive(Debug, Clone)]
pub struct TraceSettings {
    pub dir: PathBuf,
    pub size: Size,
    pub engine: String,
    pub qd: String,
    pub jobs: u32,
    pub bs: Size,
    pub rw: String,
    pub runtime: Span,
    pub scheduler: Option<String>,
    pub overhead_pairs: u32,
    pub no_overhead: bool,
    pub no_syscalls: bool,
    pub buffer_kb: u32,
    pub export: Option<PathBuf>,
    pub export_dev: Option<String>,
    pub output: Option<PathBuf>,
    pub force: bool,
    pub quiet: bool,
    pub dry_run: bool,
    pub status_interval: Option<f64>,
    pub max_ops: usize,
    pub seed: u64,
}

fn list(field: &str, s: &str) -> Result<Vec<String>> {
    let v: Vec<String> = s
        .split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect();
    if v.is_empty() {
        return Err(usage(field, "empty list"));
    }
    Ok(v)
}

/// The checked options of one `iolab trace`.
pub struct Plan {
    pub size: u64,
    pub bs: u64,
    pub runtime_ns: u64,
    pub write: bool,
    /// (engine, sqpoll)
    pub engines: Vec<(EngineKind, bool)>,
    pub qds: Vec<u32>,
    pub export_dev: Option<DevNum>,
}

fn parse_engines(spec: &str) -> Result<Vec<(EngineKind, bool)>> {
    let mut engines = Vec::new();
    for e in list("--engine", spec)? {
        let (name, sqpoll) = match e.strip_suffix("+sqpoll") {
            Some(n) => (n.to_string(), true),
            None => (e.clone(), false),
        };
        match EngineKind::parse(&name) {
            Some(k) if k.caps().traced => {
                if sqpoll && !k.caps().uring_options {
                    return Err(usage("--engine", "+sqpoll applies to io_uring only"));
                }
                engines.push((k, sqpoll));
            }
            _ => {
                return Err(usage(
                    "--engine",
                    format!("{e:?}: use psync, aio, io_uring or io_uring+sqpoll"),
                ))
            }
        }
    }
    Ok(engines)
}

fn parse_qds(spec: &str) -> Result<Vec<u32>> {
    let mut qds = Vec::new();
    for q in list("--qd", spec)? {
        match q.parse::<u32>() {
            Ok(n) if (1..=4096).contains(&n) => qds.push(n),
            _ => {
                return Err(usage(
                    "--qd",
                    format!("{q:?}: a queue depth from 1 to 4096"),
                ))
            }
        }
    }
    Ok(qds)
}

/// The configurations a run would trace, in order, and its expected length.
pub fn dry_run(plan: &Plan, args: &TraceSettings) -> String {
    let mut out = format!(
        "trace plan on {} ({} MiB scratch file, {} {}):\n",
        args.dir.display(),
        plan.size >> 20,
        args.rw,
        args.bs
    );
    let mut configs = 0usize;
    for &(engine, sqpoll) in &plan.engines {
        let name = format!("{}{}", engine.name(), if sqpoll { "+sqpoll" } else { "" });
        if engine.is_sync() {
            configs += 1;
            out.push_str(&format!("  {name} qd1"));
            if plan.qds.iter().any(|&q| q > 1) {
                out.push_str(" (a synchronous engine has one request in flight: its deeper --qd are not run)");
            }
            out.push('\n');
        } else {
            for qd in &plan.qds {
                configs += 1;
                out.push_str(&format!("  {name} qd{qd}\n"));
            }
        }
    }
    let schedulers = args
        .scheduler
        .as_deref()
        .unwrap_or("the device's current one");
    let per = plan.runtime_ns as f64 / 1e9;
    let runs = if args.no_overhead {
        1
    } else {
        2 * args.overhead_pairs.max(1)
    };
    out.push_str(&format!(
        "schedulers: {schedulers}\n{configs} configuration(s) per scheduler, each {per:.0} s traced{}: ~{:.0} s per scheduler (plus the scratch file layout)\n",
        if args.no_overhead { "" } else { " and untraced (the overhead)" },
        configs as f64 * per * runs as f64
    ));
    out
}

pub fn parse_plan(args: &TraceSettings) -> Result<Plan> {
    // A directory for the scratch file: a mistyped one must not become a file.
    if !args.dir.is_dir() {
        return Err(usage(
            "--dir",
            format!("{} is not an existing directory", args.dir.display()),
        ));
    }
    if args.buffer_kb == 0 {
        return Err(usage("--buffer-kb", "must be at least 1 (KiB per CPU)"));
    }
    if args.max_ops == 0 {
        return Err(usage("--max-ops", "must be at least 1"));
    }
    let size = args.size.bytes();
    if size == 0 {
        return Err(usage("--size", "must be greater than 0"));
    }
    let bs = args.bs.bytes();
    if bs == 0 || !bs.is_multiple_of(512) || bs > (64 << 20) {
        return Err(usage("--bs", "must be a multiple of 512 up to 64M"));
    }
    let runtime_ns = args.runtime.ns();
    let write = match args.rw.as_str() {
        "randread" => false,
        "randwrite" => true,
        other => {
            return Err(usage(
                "--rw",
                format!("{other:?}: use randread or randwrite"),
            ))
        }
    };
    let engines = parse_engines(&args.engine)?;
    let qds = parse_qds(&args.qd)?;
    let export_dev = match &args.export_dev {
        Some(s) => {
            Some(DevNum::parse(s).ok_or_else(|| usage("--export-dev", "use MAJ:MIN, e.g. 8:0"))?)
        }
        None => None,
    };
    if args.jobs == 0 || args.jobs > 1024 {
        return Err(usage(
            "--jobs",
            format!("{} jobs is out of range 1..1024", args.jobs),
        ));
    }
    Ok(Plan {
        size,
        bs,
        runtime_ns,
        write,
        engines,
        qds,
        export_dev,
    })
}

/// Probe root and tracefs (mounting it if needed), remove stale instances
/// and say what tracing will do (the lines to print). Without them the job
/// still runs, untraced.
pub fn probe_tracing() -> (tracefs::Capabilities, MountGuard, Vec<String>) {
    let mut caps = tracefs::probe();
    // Unmounts tracefs at the very end if iolab mounted it.
    let mount = caps.take_mount();
    let mut said = Vec::new();
    if let Some(t) = caps.tracefs.as_deref().filter(|_| caps.root) {
        for name in tracefs::remove_stale(t) {
            said.push(format!(
                "tracing: removed stale instance {name} of a process that no longer exists"
            ));
        }
    }
    said.push(match &caps.why_not {
        None => format!(
            "tracing: tracefs at {}{}, private instance iolab-{}",
            tracefs::TRACEFS,
            if mount.mounted_by_us() {
                " (mounted by iolab)"
            } else {
                ""
            },
            std::process::id()
        ),
        Some(why) => format!("tracing: unavailable ({why}); running the job untraced"),
    });
    (caps, mount, said)
}

/// Where the target lives on its disk: the disk, its device number, the
/// file's extents (block offsets) and the disk's interrupts.
pub struct DiskPlacement {
    pub disk: DiskInfo,
    pub whole: DevNum,
    pub extents: ExtentMap,
    pub irqs: Vec<u32>,
}

pub fn place(tgt: &Target, dir: &Path, size: u64) -> Result<DiskPlacement> {
    let (fd, direct) = tgt.open(false, true)?;
    if !direct {
        return Err(usage(
            "--dir",
            format!(
                "{} does not support O_DIRECT; tracing needs requests to reach the device",
                dir.display()
            ),
        ));
    }
    let disk = tgt
        .disk
        .clone()
        .ok_or_else(|| usage("--dir", "cannot find the block device under this directory"))?;
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
    let extents = if tgt.kind == TargetKind::BlockDevice {
        ExtentMap::identity(part_start)
    } else {
        ExtentMap::of_fd(fd.as_raw_fd(), size, part_start)
            .unwrap_or_else(|_| ExtentMap::identity(part_start))
    };
    drop(fd);
    let irqs = disk_irqs(&disk.disk);
    Ok(DiskPlacement {
        disk,
        whole,
        extents,
        irqs,
    })
}

/// `--scheduler`: the schedulers to compare (each must exist for the disk);
/// `None` is the current one.
pub fn schedulers(spec: Option<&str>, disk: &str) -> Result<Vec<Option<String>>> {
    let Some(s) = spec else {
        return Ok(vec![None]);
    };
    let (avail, _) = SchedulerGuard::available(disk)?;
    let want = list("--scheduler", s)?;
    for w in &want {
        if !avail.contains(w) {
            return Err(usage(
                "--scheduler",
                format!(
                    "{w:?} is not available for {disk} (have {})",
                    avail.join(", ")
                ),
            ));
        }
    }
    Ok(want.into_iter().map(Some).collect())
}

/// The job of one configuration.
pub fn job_spec(
    plan: &Plan,
    args: &TraceSettings,
    engine: EngineKind,
    sqpoll: bool,
    qd: u32,
) -> JobSpec {
    JobSpec {
        name: format!("trace-{}-qd{qd}", engine.name()),
        pattern: if plan.write {
            Pattern::RandWrite
        } else {
            Pattern::RandRead
        },
        bs: vec![(plan.bs, 100)],
        qd,
        jobs: args.jobs,
        engine,
        uring: UringOptions {
            sqpoll,
            ..Default::default()
        },
        direct: true,
        stop: StopCondition {
            runtime_ns: Some(plan.runtime_ns),
            io_count: Some(args.max_ops as u64),
            io_bytes: None,
        },
        seed: args.seed,
        ..Default::default()
    }
}

/// `--export DIR`: the capture in blktrace's binary format, all I/O on the
/// device and this job's requests only; what was written, to print.
pub fn export_capture(
    dir: &Path,
    res: &ConfigResult,
    cap: &Capture,
    dev: DevNum,
) -> Result<String> {
    let name = res.label.replace([' ', '+'], "_");
    let files = blkexport::export(&cap.events, dir, &name, kdev(dev.major, dev.minor))?;
    blkexport::export(
        &cap.job_events(),
        dir,
        &format!("{name}_job"),
        kdev(dev.major, dev.minor),
    )?;
    Ok(format!(
        "blktrace export: {} file(s) {}/{}.blktrace.* (all I/O on the device; {}_job.blktrace.*: this job's requests only)",
        files.len(),
        dir.display(),
        name,
        name
    ))
}
