//! `iolab device`: parse -> plan (`device_flags`, `plan::device_args`) -> prepare the target
//! safely -> drive every point through the session driver (plain sweeps,
//! open-loop rates, latency-target searches, steady-state rounds) with the
//! terminal as observer -> exit code. fio job files and fio JSON export are
//! in `device_fio`, the per-point stack breakdown in `trace::point_tracer`.
//! With `--hosts` the same driver runs every job on every host at once
//! (its placement, `fleet::FleetPlacement`, groups from `--hosts
//! @FILE.toml`); what the hosts cannot run is refused here first.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use super::device_flags::{dry_run, experiments_from_args};
use crate::analysis::AnalysisOptions;
use crate::cli::device::DeviceArgs;
use crate::commands::device_fio;
use crate::commands::exports::{self, ExportFile};
use crate::dut::{self, TargetOptions};
use crate::error::{usage, Interrupted, VerifyFailed};
use crate::fleet::{self, FleetPlacement, HostGroups, HostsFlags, JobTarget};
use crate::interrupt;
use crate::plan::experiment::{Experiment, Mode};
use crate::plan::fiojob::FioPlan;
use crate::plan::job::JobSpec;
use crate::plan::units::Size;

use crate::report::fio_log::{LogPlan, LogRequest};
use crate::report::observer::Terminal;
use crate::results::{output, Provenance, Results};
use crate::session::{DriveOutcome, Driver, Exporter, Observer, ResultsSink};
use crate::trace::point_tracer::Tracer;

pub fn run(a: DeviceArgs) -> anyhow::Result<()> {
    let a = super::device_flags::with_plan_media(a)?;
    // `--make`, or several `--target`: a media run.
    if crate::campaign::setups::is_media_run(&super::media_flags(&a.media), a.target.len()) {
        let hosts = match &a.hosts.hosts {
            Some(_) => refuse_what_hosts_cannot_run(&a, &experiments_from_args(&a)?)?,
            None => None,
        };
        let connect = hosts.map(|h| -> crate::campaign::device_plan::HostsConnect<'_> {
            let flags = a.hosts.flags();
            let quiet = a.quiet;
            Box::new(move || connect_groups(&flags, &h, Default::default(), quiet))
        });
        let settings = super::device_flags::settings(&a);
        let targets: Vec<&Path> = a.target.iter().map(PathBuf::as_path).collect();
        let exports = exports::parse(a.export.as_deref(), a.force, &targets)?;
        let exports = exports::with_source(exports, a.json.as_deref());
        let presenter = exports::media_presenter(exports, |quiet| {
            Box::new(Terminal::progress_only(quiet)) as Box<dyn Observer>
        });
        let mut media = super::media_flags(&a.media);
        media.on_hosts = connect.is_some();
        return crate::campaign::device_plan::run(
            &settings,
            &media,
            || experiments_from_args(&a),
            &presenter,
            connect,
        );
    }
    refuse_without_media(&a)?;
    run_on_one_target(a)
}

/// The flags of media runs mean nothing in a single-target run.
fn refuse_without_media(a: &DeviceArgs) -> anyhow::Result<()> {
    crate::campaign::setups::refuse_without_media(&super::media_flags(&a.media))?;
    if a.destroy_data.len() > 1 {
        return Err(usage(
            "--destroy-data",
            "given several times, but there is one --target",
        ));
    }
    Ok(())
}

/// A run on one target (or none: engines that need no file).
fn run_on_one_target(a: DeviceArgs) -> anyhow::Result<()> {
    // The job file, read once for its target, warnings and logs (its jobs
    // are read with the experiments).
    let fio_plan = a
        .fio_job
        .as_deref()
        .map(device_fio::read_plan)
        .transpose()?;
    let a = device_fio::with_target_defaults(a, fio_plan.as_ref());
    let exps = experiments_from_args(&a)?;
    let hosts = refuse_what_hosts_cannot_run(&a, &exps)?;
    let targets: Vec<&Path> = a.target.iter().map(PathBuf::as_path).collect();
    if let Some(p) = a.json.as_deref().filter(|p| p.as_os_str() != "-") {
        output::check(p, "--json", a.force, &targets)?;
    }
    let exports = exports::parse(a.export.as_deref(), a.force, &targets)?;
    let exports = exports::with_source(exports, a.json.as_deref());
    let jobs: Vec<&JobSpec> = exps.iter().flat_map(|e| e.jobs.iter()).collect();
    let needs_target = jobs.iter().any(|j| j.engine.needs_target());
    let size = size_and_buffer(&a)?;
    let verify_bs = jobs.iter().find(|j| j.verify).map(|j| j.max_bs());
    let topts = TargetOptions {
        path: if needs_target {
            Some(
                a.target
                    .first()
                    .cloned()
                    .unwrap_or_else(|| PathBuf::from(".")),
            )
        } else {
            None
        },
        size,
        overwrite: a.overwrite,
        destroy_data: a.destroy_data.first().cloned(),
        keep: a.keep,
    };
    let writes =
        jobs.iter().any(|j| j.writes()) || exps.iter().any(|e| e.precondition.is_some() || e.purge);
    if a.dry_run {
        // Every check of the real run, nothing created.
        let target = match &hosts {
            None => dut::check_and_describe(&topts, writes)?,
            Some(g) => dry_run_target(&a, g),
        };
        dry_run(&exps, &target);
        return Ok(());
    }
    interrupt::install();
    let quiet = a.quiet || a.json.as_deref() == Some(std::path::Path::new("-"));
    let mut provenance = Provenance::collect(a.seed);
    let mut run_warnings = Vec::new();
    run_warnings.extend(provenance.busy_warning());
    let (placement, target) = match &hosts {
        Some(h) => {
            let jt = job_target(&a, needs_target, size);
            let p = connect_groups(&a.hosts.flags(), h, jt, quiet)?;
            (Some(p), dut::Target::none(size.unwrap_or(0)))
        }
        None => {
            if !quiet && needs_target && a.target.first().is_none_or(|p| p.is_dir()) {
                eprintln!(
                    "iolab: preparing a {} MiB scratch file...",
                    size.unwrap_or(dut::DEFAULT_SCRATCH_SIZE) >> 20
                );
            }
            (None, dut::prepare(&topts, writes, verify_bs, a.seed)?)
        }
    };
    provenance.target = placement.is_none().then(|| target.info());
    if let (Some(n), Some(d)) = (&mut provenance.numa, &target.disk) {
        n.device = crate::measure::numa::device(Path::new("/"), &d.disk);
    }
    let emulated = numa_warnings(&provenance, &jobs, &mut run_warnings);
    provenance.plan = if a.plan.is_some() || exps.len() > 1 || exps[0].mode != Mode::Plain {
        serde_json::to_value(&exps)?
    } else {
        serde_json::to_value(&exps[0].jobs)?
    };
    let tracer = breakdown_tracer(&a, &target, quiet, &mut run_warnings);
    let mut results = Results::new("device", provenance);
    results.warnings = run_warnings;
    results.extra.numa_emulated = emulated;
    if let Some(p) = &placement {
        results.extra.hosts = Some(p.describe());
    }
    record_fio_job(&mut results, &a, fio_plan.as_ref());
    let planned = exps
        .iter()
        .map(|e| e.estimate())
        .fold((0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    let knee_factor = exps.first().map_or(2.0, |e| e.knee_factor);
    let fio_logs = fio_plan.as_ref().map(|p| p.logs.clone());
    let exporters = exporters(&a, &exports, fio_logs.unwrap_or_default())?;
    let mut sink = ResultsSink::new(
        results,
        a.json.clone().filter(|p| p.as_os_str() != "-"),
        AnalysisOptions {
            knee_factor,
            ..Default::default()
        },
    );
    for e in exporters {
        sink.add_exporter(e);
    }
    let observer = Terminal::new(quiet);
    let show_progress = !quiet && std::io::stderr().is_terminal();
    let mut driver = Driver::new(&target, sink, &observer, tracer, show_progress, planned)
        .with_clock(a.clock)
        .with_status_interval(crate::session::checked_status_interval(a.status_interval)?);
    if let Some(p) = placement {
        driver = driver.with_hosts(Box::new(p));
    }
    driver.save()?;
    for w in &driver.results().warnings {
        observer.warning(w);
    }
    let DriveOutcome {
        results,
        failures,
        first_skip,
    } = driver.run_all(&exps)?;
    if !quiet {
        for line in crate::report::analysis_text::analysis_lines(&results.analysis) {
            println!("{line}");
        }
    }
    if results.points.is_empty() && !results.interrupted {
        if let Some(e) = first_skip {
            drop(target);
            return Err(e);
        }
    }
    if a.json.as_deref() == Some(std::path::Path::new("-")) {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else if let (Some(p), false) = (&a.json, quiet) {
        println!("results: {}", p.display());
    }
    if !quiet {
        for e in &exports {
            println!("{}", e.said());
        }
    }
    drop(target);
    exit_status(&results, failures)
}

/// Warnings of jobs placed on NUMA nodes (`--numa-node`, `--mem-node`,
/// `--sweep placement`): nodes that cannot show a real penalty (returned,
/// for `extra.numa_emulated`), a device that reports no node.
fn numa_warnings(
    provenance: &Provenance,
    jobs: &[&JobSpec],
    warnings: &mut Vec<String>,
) -> Option<String> {
    let placed = jobs
        .iter()
        .any(|j| j.numa_node.is_some() || j.mem_node.is_some());
    let numa = provenance.numa.as_ref().filter(|_| placed)?;
    if jobs.iter().any(|j| j.placement.is_some()) && numa.device.as_ref().is_none_or(|d| d.node < 0)
    {
        warnings.push(
            "--sweep placement: the device reports no NUMA node; the lowest node was taken as its node"
                .into(),
        );
    }
    let why = numa.emulated.clone()?;
    warnings.push(format!("NUMA placement: {why}"));
    Some(why)
}

/// `--breakdown`'s tracer on `target`, its status said; when tracing is
/// unavailable, a warning (also with --quiet: the user asked for it).
fn breakdown_tracer<'t>(
    a: &DeviceArgs,
    target: &'t dut::Target,
    quiet: bool,
    warnings: &mut Vec<String>,
) -> Option<Tracer<'t>> {
    let t = a
        .breakdown
        .then(|| Tracer::new(target, a.breakdown_buffer_kb))?;
    if t.why_not.is_none() && !quiet {
        eprintln!("{}", t.status);
    }
    if let Some(why) = &t.why_not {
        let w = format!("--breakdown: tracing unavailable ({why}); every point runs untraced");
        if quiet {
            eprintln!("warning: {w}");
        }
        warnings.push(w);
    }
    Some(t)
}

/// The job file a run came from, and its warnings, in the results.
fn record_fio_job(results: &mut Results, a: &DeviceArgs, plan: Option<&FioPlan>) {
    if let Some(f) = &a.fio_job {
        results.extra.fio_job = Some(device_fio::provenance(f));
        results
            .warnings
            .extend(plan.iter().flat_map(|p| p.warnings.clone()));
    }
}

/// `--size` (more than 0) and `--breakdown-buffer-kb` (at least 1), checked.
fn size_and_buffer(a: &DeviceArgs) -> anyhow::Result<Option<u64>> {
    let size = a.size.as_ref().map(Size::bytes);
    if size == Some(0) {
        return Err(usage("--size", "size must be greater than 0"));
    }
    if a.breakdown_buffer_kb == 0 {
        return Err(usage(
            "--breakdown-buffer-kb",
            "must be at least 1 (KiB per CPU)",
        ));
    }
    Ok(size)
}

/// The exporters `iolab device` gives its sink: the formats of `--export`
/// and fio-format logs (`--log-dir`, a fio job file's `write_*_log`).
fn exporters(
    a: &DeviceArgs,
    exports: &[ExportFile],
    fio_logs: Vec<(String, LogRequest)>,
) -> anyhow::Result<Vec<Box<dyn Exporter>>> {
    let mut out: Vec<Box<dyn Exporter>> = exports.iter().map(ExportFile::exporter).collect();
    if let Some(logs) = log_plan(a, fio_logs)? {
        out.push(Box::new(logs));
    }
    Ok(out)
}

/// fio-format logs: every point into `--log-dir`, and the logs a fio job
/// file asks for (`write_bw_log` ...) into `--log-dir` or the current
/// directory, as fio does. The directory is made if missing.
fn log_plan(a: &DeviceArgs, by_name: Vec<(String, LogRequest)>) -> anyhow::Result<Option<LogPlan>> {
    if a.log_dir.is_none() && by_name.is_empty() {
        return Ok(None);
    }
    let dir = a.log_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if dir.exists() && !dir.is_dir() {
        return Err(usage(
            "--log-dir",
            format!("{} is not a directory", dir.display()),
        ));
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage("--log-dir", format!("cannot create {}: {e}", dir.display())))?;
    Ok(Some(LogPlan {
        dir,
        every_point: a.log_dir.is_some(),
        by_name,
    }))
}

/// The run's exit status: interrupted (130), a verification mismatch (3),
/// failed points (1), else success.
fn exit_status(results: &Results, failures: usize) -> anyhow::Result<()> {
    if results.interrupted {
        return Err(Interrupted.into());
    }
    let mismatches: u64 = results
        .points
        .iter()
        .filter_map(|p| p.verify.as_ref())
        .map(|v| v.mismatches)
        .sum();
    if mismatches > 0 {
        return Err(VerifyFailed { mismatches }.into());
    }
    if failures > 0 {
        anyhow::bail!("{failures} point(s) failed (see the warnings in the results)");
    }
    Ok(())
}

// On hosts (`--hosts`): what a run on several hosts accepts (one directory
// on every host; no local-only steps), checked before anything is set up
// anywhere, and the hosts connected as the driver's placement.

/// The hosts' flags checked against the rest of the run; `None` without
/// --hosts. The hosts come in groups (`--hosts @FILE.toml`; a plain list
/// is one group), each group's job checked as the command line's is.
pub fn refuse_what_hosts_cannot_run(
    a: &DeviceArgs,
    exps: &[Experiment],
) -> anyhow::Result<Option<HostGroups>> {
    a.hosts.flags().check()?;
    let Some(list) = &a.hosts.hosts else {
        return Ok(None);
    };
    let groups = fleet::parse_host_groups(list, "--hosts")?;
    check_groups(a, exps, &groups)?;
    let local_only = [
        (
            "--breakdown",
            a.breakdown,
            "traces this machine's block layer",
        ),
        (
            "--destroy-data",
            !a.destroy_data.is_empty(),
            "names a device of this machine; on hosts iolab makes a scratch file in --target",
        ),
        (
            "--fio-job",
            a.fio_job.is_some(),
            "reads its target from the job file",
        ),
        (
            "--precondition",
            exps.iter().any(|e| e.precondition.is_some()),
            "each host's scratch file is its own",
        ),
        (
            "--purge",
            exps.iter().any(|e| e.purge),
            "each host's scratch file is its own",
        ),
    ];
    if let Some((flag, _, why)) = local_only.iter().find(|(_, given, _)| *given) {
        return Err(usage(*flag, format!("not with --hosts: it {why}")));
    }
    if let Some(t) = a.target.first() {
        crate::plan::endpoint::endpoint_of(t)?;
    }
    let base = a.target.first().map(|t| t.display().to_string());
    let verifies = exps.iter().flat_map(|e| &e.jobs).any(|j| j.verify);
    if verifies && groups.share_an_export(base.as_deref()) {
        return Err(usage(
            "--verify",
            "not with several --hosts on one shared export: each host stamps and checks the blocks it writes, \
             and the others overwrite them (thousands of false mismatches); verify from one host, \
             or give each host an export of its own",
        ));
    }
    // Each target (a media run's `[LABEL=]PATH` too) is a directory on
    // every host, or an export they share.
    let path_of = |t: &PathBuf| -> PathBuf {
        let text = t.to_string_lossy();
        match text.split_once('=') {
            Some((label, path)) if !label.contains('/') => PathBuf::from(path),
            _ => t.clone(),
        }
    };
    let is_remote = |t: &PathBuf| {
        crate::plan::endpoint::endpoint_of(&path_of(t))
            .ok()
            .flatten()
            .is_some()
    };
    if let Some(t) = a
        .target
        .iter()
        .find(|t| !path_of(t).is_absolute() && !is_remote(t))
    {
        return Err(usage(
            "--target",
            format!(
                "with --hosts the target is a directory on every host, given as an absolute path, or a remote export they share (not {})",
                t.display()
            ),
        ));
    }
    Ok(Some(groups))
}

/// Each group's job, for every job of the run, is valid (errors name the
/// group); a media run's targets are its setups, not a group's.
fn check_groups(a: &DeviceArgs, exps: &[Experiment], groups: &HostGroups) -> anyhow::Result<()> {
    let media =
        crate::campaign::setups::is_media_run(&super::media_flags(&a.media), a.target.len());
    if let Some(g) = groups
        .groups
        .iter()
        .find(|g| media && g.job.target.is_some())
    {
        return Err(usage(
            format!(
                "{}: group {}.target",
                groups.file.as_deref().unwrap_or("--hosts"),
                g.name.as_deref().unwrap_or("-")
            ),
            "not in a media run: its targets (--target, --make) are every host's setups",
        ));
    }
    groups.check_jobs(exps.iter().flat_map(|e| &e.jobs))
}

/// A dry run's target on the hosts: the directory on every host, and each
/// host group's job.
pub fn dry_run_target(a: &DeviceArgs, groups: &HostGroups) -> String {
    let mut t = format!(
        "{} on every host",
        a.target
            .first()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| ".".into())
    );
    if !groups.is_plain() {
        t.push_str(&format!("; {}", groups.summary().join("; ")));
    }
    t
}

/// Where each job runs on the hosts: a scratch file of `size` in the
/// directory `--target`, or the remote export `--target` every host
/// reaches (none for engines that open no file).
pub fn job_target(a: &DeviceArgs, needs_target: bool, size: Option<u64>) -> JobTarget {
    JobTarget {
        overwrite: a.overwrite,
        dir: needs_target.then(|| {
            a.target
                .first()
                .cloned()
                .unwrap_or_else(|| PathBuf::from("/var/tmp"))
                .display()
                .to_string()
        }),
        size,
        ..JobTarget::default()
    }
}

/// Connect to every host (exit 2 naming each host that cannot be reached
/// or runs another build; nothing is left running anywhere then); also
/// `run --hosts`'.
pub fn connect(
    flags: &HostsFlags,
    hosts: &[fleet::HostSpec],
    target: JobTarget,
    quiet: bool,
) -> anyhow::Result<FleetPlacement> {
    let f = flags.connect(hosts, quiet)?;
    Ok(FleetPlacement::new(f, target, flags.on_host_loss))
}

/// `connect` to the groups' hosts, each to run its group's job.
pub fn connect_groups(
    flags: &HostsFlags,
    groups: &HostGroups,
    target: JobTarget,
    quiet: bool,
) -> anyhow::Result<FleetPlacement> {
    Ok(connect(flags, &groups.hosts(), target, quiet)?.with_groups(groups.clone()))
}
