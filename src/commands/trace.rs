//! `iolab trace`: per-request latency breakdown through the I/O stack.
//! Probes capabilities, prepares the scratch file, runs every configuration
//! (scheduler x engine x queue depth) untraced and traced, prints the
//! btt-style tables and writes the results and optional blktrace exports.

use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

use crate::analysis::AnalysisOptions;
use crate::cli::trace::{TraceArgs, TraceOpts};
use crate::dut::sysfs::{DevNum, DiskInfo};
use crate::dut::{self, Target, TargetKind, TargetOptions};
use crate::engine::{EngineKind, UringOptions};
use crate::error::usage;
use crate::interrupt;
use crate::plan::job::{JobSpec, Pattern, StopCondition};
use crate::plan::parse::{parse_duration_ns, parse_size};
use crate::report::trace_terminal;
use crate::results::{Provenance, Results};
use crate::session::sink::ResultsSink;
use crate::session::{Observer, Progress, StatusEvery};
use crate::testbed::mount::MountGuard;
use crate::testbed::scheduler::SchedulerGuard;
use crate::trace::blkexport;
use crate::trace::config::{run_config, ConfigResult, Setup};
use crate::trace::events::kdev;
use crate::trace::extents::ExtentMap;
use crate::trace::session::{disk_irqs, Capture};
use crate::trace::tracefs;

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
struct Plan {
    size: u64,
    bs: u64,
    runtime_ns: u64,
    write: bool,
    /// (engine, sqpoll)
    engines: Vec<(EngineKind, bool)>,
    qds: Vec<u32>,
    export_dev: Option<DevNum>,
}

fn parse_engines(spec: &str) -> Result<Vec<(EngineKind, bool)>> {
    let mut engines = Vec::new();
    for e in list("--engine", spec)? {
        let (name, sqpoll) = match e.strip_suffix("+sqpoll") {
            Some(n) => (n.to_string(), true),
            None => (e.clone(), false),
        };
        match EngineKind::parse(&name) {
            Some(k @ (EngineKind::Psync | EngineKind::Aio | EngineKind::IoUring)) => {
                if sqpoll && k != EngineKind::IoUring {
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
fn dry_run(plan: &Plan, args: &TraceOpts) -> String {
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

fn parse_plan(args: &TraceOpts) -> Result<Plan> {
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
    let size = parse_size("--size", &args.size)?;
    if size == 0 {
        return Err(usage("--size", "must be greater than 0"));
    }
    let bs = parse_size("--bs", &args.bs)?;
    if bs == 0 || bs % 512 != 0 || bs > (64 << 20) {
        return Err(usage("--bs", "must be a multiple of 512 up to 64M"));
    }
    let runtime_ns = parse_duration_ns("--runtime", &args.runtime)?;
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
/// and say what tracing will do. Without them the job still runs, untraced.
fn probe_tracing() -> (tracefs::Capabilities, MountGuard) {
    let mut caps = tracefs::probe();
    // Unmounts tracefs at the very end if iolab mounted it.
    let mount = caps.take_mount();
    if let Some(t) = caps.tracefs.as_deref().filter(|_| caps.root) {
        for name in tracefs::remove_stale(t) {
            println!("tracing: removed stale instance {name} of a process that no longer exists");
        }
    }
    match &caps.why_not {
        None => println!(
            "tracing: tracefs at {}{}, private instance iolab-{}",
            tracefs::TRACEFS,
            if mount.mounted_by_us() {
                " (mounted by iolab)"
            } else {
                ""
            },
            std::process::id()
        ),
        Some(why) => println!("tracing: unavailable ({why}); running the job untraced"),
    }
    (caps, mount)
}

/// Where the target lives on its disk: the disk, its device number, the
/// file's extents (block offsets) and the disk's interrupts.
struct Placement {
    disk: DiskInfo,
    whole: DevNum,
    extents: ExtentMap,
    irqs: Vec<u32>,
}

fn place(tgt: &Target, dir: &Path, size: u64) -> Result<Placement> {
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
    println!(
        "target: {} ({} MiB) on {} {} scheduler {}, irq {:?}",
        tgt.path.display(),
        size >> 20,
        disk.disk,
        whole.text(),
        disk.scheduler.clone().unwrap_or_default(),
        irqs
    );
    Ok(Placement {
        disk,
        whole,
        extents,
        irqs,
    })
}

/// `--scheduler`: the schedulers to compare (each must exist for the disk);
/// `None` is the current one.
fn schedulers(spec: Option<&str>, disk: &str) -> Result<Vec<Option<String>>> {
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
fn job_spec(plan: &Plan, args: &TraceOpts, engine: EngineKind, sqpoll: bool, qd: u32) -> JobSpec {
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
/// device and this job's requests only.
fn export_capture(dir: &Path, res: &ConfigResult, cap: &Capture, dev: DevNum) -> Result<()> {
    let name = res.label.replace([' ', '+'], "_");
    let files = blkexport::export(&cap.events, dir, &name, kdev(dev.major, dev.minor))?;
    blkexport::export(
        &cap.job_events(),
        dir,
        &format!("{name}_job"),
        kdev(dev.major, dev.minor),
    )?;
    println!(
        "blktrace export: {} file(s) {}/{}.blktrace.* (all I/O on the device; {}_job.blktrace.*: this job's requests only)",
        files.len(),
        dir.display(),
        name,
        name
    );
    Ok(())
}

pub fn run(args: TraceArgs) -> Result<()> {
    let args = *args.opts;
    interrupt::install();
    let plan = parse_plan(&args)?;
    if let Some(out) = &args.output {
        crate::results::output::check(out, "--output", args.force, &[&args.dir])?;
    }
    if args.dry_run {
        print!("{}", dry_run(&plan, &args));
        return Ok(());
    }
    let (caps, _mount) = probe_tracing();
    let opts = TargetOptions {
        path: Some(args.dir.clone()),
        size: Some(plan.size),
        ..Default::default()
    };
    let tgt = dut::prepare(&opts, plan.write, None, args.seed)?;
    let Placement {
        disk,
        whole,
        extents,
        irqs,
    } = place(&tgt, &args.dir, plan.size)?;
    let schedulers = schedulers(args.scheduler.as_deref(), &disk.disk)?;
    // The progress line: the configuration running, its seconds and last second.
    let term = crate::report::observer::Terminal::progress_only(args.quiet);
    let current = std::sync::Mutex::new(String::new());
    let show = !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let every = crate::session::checked_status_interval(args.status_interval)?;
    let status = StatusEvery::new(every);
    let progress = |elapsed: f64, total: Option<f64>, live: Option<_>| {
        let label = current.lock().map(|l| l.clone()).unwrap_or_default();
        let p = Progress {
            label: &label,
            elapsed_s: elapsed,
            expected_s: total,
            eta_s: None,
            live,
        };
        status.report(&term, show, &p);
    };
    let per_scheduler: usize = plan
        .engines
        .iter()
        .map(|(e, _)| if e.is_sync() { 1 } else { plan.qds.len() })
        .sum();
    let configs = schedulers.len() * per_scheduler;
    let mut done = 0;
    let setup = Setup {
        progress: if show || every.is_some() {
            Some(&progress)
        } else {
            None
        },
        caps,
        target: &tgt,
        extents,
        kdev: kdev(whole.major, whole.minor),
        irqs,
        buffer_kb: args.buffer_kb,
        syscalls: !args.no_syscalls,
        max_records: args.max_ops,
        overhead_pairs: args.overhead_pairs.max(1),
    };
    let mut sink = ResultsSink::new(
        Results::new("trace", Provenance::collect(args.seed)),
        args.output.clone(),
        AnalysisOptions::default(),
    );
    if plan.engines.iter().any(|(e, _)| e.is_sync()) && plan.qds.iter().any(|&q| q > 1) {
        let w = "psync runs at QD 1 only: a synchronous engine has one request in flight, so its deeper --qd are not run".to_string();
        eprintln!("note: {w}");
        sink.results.warnings.push(w);
    }
    let mut all: Vec<ConfigResult> = Vec::new();
    'outer: for sched in &schedulers {
        let _guard = match sched {
            Some(s) => Some(SchedulerGuard::switch(&disk.disk, s)?),
            None => None,
        };
        let sched_name = sched
            .clone()
            .unwrap_or_else(|| disk.scheduler.clone().unwrap_or_default());
        for &(engine, sqpoll) in &plan.engines {
            let depths = if engine.is_sync() {
                vec![1]
            } else {
                plan.qds.clone()
            };
            for qd in depths {
                let spec = job_spec(&plan, &args, engine, sqpoll, qd);
                spec.validate()?;
                done += 1;
                status.reset();
                if let Ok(mut l) = current.lock() {
                    *l = format!("[{done}/{configs}] {} qd{qd} {sched_name}", engine.name());
                }
                let ran = run_config(&setup, &spec, &sched_name, !args.no_overhead);
                if show {
                    term.progress_done();
                }
                let (res, mut pt, cap) = ran?;
                if !args.quiet {
                    print!("{}", trace_terminal::config_text(&res));
                }
                if let (Some(dir), Some(cap)) = (&args.export, &cap) {
                    export_capture(dir, &res, cap, plan.export_dev.unwrap_or(whole))?;
                }
                pt.name = res.label.clone();
                pt.params.insert("scheduler".into(), res.scheduler.clone());
                pt.extra.trace = Some(Box::new(res.clone()));
                sink.push(pt)?;
                let stop = res.interrupted;
                all.push(res);
                if stop {
                    break 'outer;
                }
            }
        }
    }
    if all.len() > 1 && !args.quiet {
        println!("\n{}", trace_terminal::summary(&all));
    }
    let interrupted = all.iter().any(|r| r.interrupted);
    let out = sink.path().map(Path::to_path_buf);
    sink.finish(interrupted)?;
    if let (Some(out), false) = (out, args.quiet) {
        println!("results: {}", out.display());
    }
    drop(setup);
    drop(tgt);
    if interrupted {
        return Err(anyhow::Error::new(crate::error::Interrupted));
    }
    Ok(())
}
