//! `iolab trace`: per-request latency breakdown through the I/O stack.
//! Its plan and preparation are `trace::plan`; here: every configuration
//! (scheduler x engine x queue depth) run untraced and traced, the
//! btt-style tables printed and the results and blktrace exports written.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::analysis::AnalysisOptions;
use crate::cli::trace::{TraceArgs, TraceOpts};
use crate::commands::exports::{self, ExportFile};
use crate::dut::{self, TargetOptions};
use crate::interrupt;
use crate::report::formats::Format;
use crate::report::trace_terminal;
use crate::results::{Provenance, Results};
use crate::session::sink::ResultsSink;
use crate::session::{Observer, Progress, StatusEvery};
use crate::testbed::scheduler::SchedulerGuard;
use crate::trace::config::{run_config, ConfigResult, Setup};
use crate::trace::events::kdev;
use crate::trace::plan::{
    dry_run, export_capture, job_spec, parse_plan, place, probe_tracing, schedulers, DiskPlacement,
    TraceSettings,
};

/// `--export`'s values: the blktrace directory (`blktrace DIR`, or a
/// bare DIR as before results formats were added) and the results formats
/// (`exports::parse`).
fn split_exports(v: Option<Vec<String>>) -> Result<(Option<PathBuf>, Vec<String>)> {
    let mut blktrace = None;
    let mut formats = Vec::new();
    let mut it = v.unwrap_or_default().into_iter().peekable();
    while let Some(word) = it.next() {
        let known = |w: &str| w == "blktrace" || Format::parse(w).is_some();
        if word == "blktrace" {
            blktrace = it.next();
        } else if Format::parse(&word).is_some() {
            formats.push(word);
            formats.extend(it.next());
        } else if it.peek().is_none_or(|next| known(next)) {
            blktrace = Some(word);
        } else {
            return Err(crate::error::usage(
                "--export",
                format!(
                    "unknown export format '{word}' (blktrace, {})",
                    Format::names()
                ),
            ));
        }
    }
    Ok((blktrace.map(PathBuf::from), formats))
}

/// The command line as `trace::plan::TraceSettings` and its results
/// formats (`--export FORMAT FILE`).
fn settings(o: TraceOpts) -> Result<(TraceSettings, Vec<String>)> {
    let TraceOpts {
        dir,
        size,
        engine,
        qd,
        jobs,
        bs,
        rw,
        runtime,
        scheduler,
        overhead_pairs,
        no_overhead,
        no_syscalls,
        buffer_kb,
        export,
        export_dev,
        output,
        force,
        quiet,
        dry_run,
        status_interval,
        max_ops,
        seed,
    } = o;
    let (export, formats) = split_exports(export)?;
    let settings = TraceSettings {
        dir,
        size,
        engine,
        qd,
        jobs,
        bs,
        rw,
        runtime,
        scheduler,
        overhead_pairs,
        no_overhead,
        no_syscalls,
        buffer_kb,
        export,
        export_dev,
        output,
        force,
        quiet,
        dry_run,
        status_interval,
        max_ops,
        seed,
    };
    Ok((settings, formats))
}

pub fn run(args: TraceArgs) -> Result<()> {
    let (args, formats) = settings(*args.opts)?;
    interrupt::install();
    let plan = parse_plan(&args)?;
    let exports = checked_outputs(&args, &formats)?;
    if args.dry_run {
        print!("{}", dry_run(&plan, &args));
        return Ok(());
    }
    let (caps, _mount, said) = probe_tracing();
    for line in said {
        println!("{line}");
    }
    let opts = TargetOptions {
        path: Some(args.dir.clone()),
        size: Some(plan.size),
        ..Default::default()
    };
    let tgt = dut::prepare(&opts, plan.write, None, args.seed)?;
    let DiskPlacement {
        disk,
        whole,
        extents,
        irqs,
    } = place(&tgt, &args.dir, plan.size)?;
    println!(
        "target: {} ({} MiB) on {} {} scheduler {}, irq {:?}",
        tgt.path.display(),
        plan.size >> 20,
        disk.disk,
        whole.text(),
        disk.scheduler.clone().unwrap_or_default(),
        irqs
    );
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
    for e in &exports {
        sink.add_exporter(e.exporter());
    }
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
                    let said = export_capture(dir, &res, cap, plan.export_dev.unwrap_or(whole))?;
                    println!("{said}");
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
    save_last(sink, interrupted, &exports, args.quiet)?;
    drop(setup);
    drop(tgt);
    if interrupted {
        return Err(anyhow::Error::new(crate::error::Interrupted));
    }
    Ok(())
}

/// `-o` and the `--export` files, checked before anything runs.
fn checked_outputs(args: &TraceSettings, formats: &[String]) -> Result<Vec<ExportFile>> {
    if let Some(out) = &args.output {
        crate::results::output::check(out, "--output", args.force, &[&args.dir])?;
    }
    let exports = exports::parse(Some(formats), args.force, &[&args.dir])?;
    Ok(exports::with_source(exports, args.output.as_deref()))
}

/// The last save, the results and every export said.
fn save_last(
    sink: ResultsSink,
    interrupted: bool,
    exports: &[ExportFile],
    quiet: bool,
) -> Result<()> {
    let out = sink.path().map(Path::to_path_buf);
    sink.finish(interrupted)?;
    if quiet {
        return Ok(());
    }
    if let Some(out) = out {
        println!("results: {}", out.display());
    }
    for e in exports {
        println!("{}", e.said());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Option<Vec<String>> {
        Some(v.iter().map(|s| s.to_string()).collect())
    }

    /// `--export DIR` (blktrace, as before), `--export blktrace DIR` and
    /// results formats beside them.
    #[test]
    fn export_words_split_into_blktrace_and_results_formats() {
        let (b, f) = split_exports(words(&["bt"])).unwrap();
        assert_eq!((b, f), (Some(PathBuf::from("bt")), vec![]));
        let (b, f) = split_exports(words(&["csv", "r.csv", "blktrace", "bt"])).unwrap();
        assert_eq!(b, Some(PathBuf::from("bt")));
        assert_eq!(f, ["csv", "r.csv"]);
        let (b, _) = split_exports(words(&["bt", "csv", "r.csv"])).unwrap();
        assert_eq!(b, Some(PathBuf::from("bt")));
        let e = split_exports(words(&["pdf", "x.pdf"])).unwrap_err();
        assert!(
            format!("{e:#}").contains("unknown export format 'pdf'"),
            "{e:#}"
        );
    }
}
