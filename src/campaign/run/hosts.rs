//! `iolab run --hosts`: the plan's device steps (plain jobs and the rates
//! of the maximum) on every host at once through the fleet's placement on
//! the run's driver, one merged point per job with each host's row; the
//! steps that only run on this machine (trace, database, remote) dropped
//! with the reason the plan and the results say. The hosts are connected
//! by the caller's `OnHosts::connect` (commands/run_hosts.rs) once the plan
//! and the output directory are checked, so `--dry-run` contacts no host.

use std::time::Instant;

use super::{
    budgeted_plan, check_outputs, driver, finish, out_dir, parse_options, plan_jobs, print_plan,
    start_results, RunSettings, StepRunner,
};
use crate::dut::{self, Target};
use crate::error::usage;
use crate::fleet::{FleetPlacement, JobTarget};
use crate::interrupt;
use crate::plan::engines::EngineKind;
use crate::plan::job::JobSpec;
use crate::plan::parse::format_ns;
use crate::plan::run_plan::StepKind;
use crate::session::Presenter;

/// Where a run's device jobs go with `--hosts`.
pub struct OnHosts<'c> {
    /// The hosts as the user named them (for the plan).
    pub names: Vec<String>,
    /// Connect to every host, the jobs' target on each (exit 2 naming each
    /// host that cannot be reached; nothing left anywhere then).
    pub connect: Box<dyn FnOnce(JobTarget) -> anyhow::Result<FleetPlacement> + 'c>,
}

/// The steps that cannot run on hosts, and why.
pub(super) fn steps_not_on_hosts() -> Vec<(StepKind, String)> {
    let not = "not on --hosts:";
    vec![
        (
            StepKind::Trace,
            format!("{not} tracing reads this machine's block layer"),
        ),
        (
            StepKind::Kv,
            format!("{not} the database step runs in a directory of this machine"),
        ),
        (
            StepKind::Remote,
            format!("{not} the remote step serves this machine's scratch file"),
        ),
    ]
}

/// The run with every device job on the hosts (`a.dir`: the directory on
/// each host).
pub(super) fn run_on_hosts(
    a: RunSettings,
    hosts: OnHosts,
    presenter: &Presenter,
) -> anyhow::Result<()> {
    let (budget_ns, size, explicit) = parse_options(&a, None)?;
    // Not probed on the hosts (a job that fails there loses the host): the
    // default engine, or --engine.
    let base = JobSpec {
        engine: explicit.unwrap_or(EngineKind::default_local()),
        seed: a.seed,
        ..JobSpec::default()
    };
    let steps = budgeted_plan(
        &a.profile,
        &base,
        (budget_ns, 1),
        &steps_not_on_hosts(),
        false,
    )?;
    if a.dry_run {
        let header = format!(
            "iolab run on {} on {} host(s) ({}) with a budget of {}:",
            a.dir.display(),
            hosts.names.len(),
            hosts.names.join(", "),
            format_ns(budget_ns as f64)
        );
        print_plan(&steps, &header);
        return Ok(());
    }
    interrupt::install();
    let dir = out_dir(&a, true);
    check_outputs(&dir, a.force)?;
    let scratch_size = size.unwrap_or(dut::DEFAULT_SCRATCH_SIZE);
    let placement = (hosts.connect)(JobTarget {
        dir: Some(a.dir.display().to_string()),
        size: Some(scratch_size),
        overwrite: false,
    })?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    let target = Target::none(scratch_size);
    let jobs = plan_jobs(&steps);
    let mut results = start_results(&target, a.seed, &jobs, &steps, Vec::new())?;
    results.provenance.target = None;
    // start_results leaves out the database step's skip (the quick
    // profile's own); on hosts it is always said.
    for s in steps.iter().filter(|s| s.kind == StepKind::Kv) {
        if let Some(why) = &s.skipped {
            results
                .warnings
                .push(format!("step '{}' skipped: {why}", s.title));
        }
    }
    results.extra.hosts = Some(placement.describe());
    let json_path = dir.join("results.json");
    let observer = (presenter.progress)(a.quiet);
    let observer = &*observer;
    let driver = driver(&a, &target, results, &json_path, observer, &jobs, 1)?
        .with_hosts(Box::new(placement));
    let mut runner = StepRunner::new(&a, &target, steps, budget_ns, driver, dir.clone());
    runner.record_plan();
    runner.driver.save()?;
    let t0 = Instant::now();
    runner.run_all(&jobs)?;
    runner.record_plan();
    // The fleet goes with the driver: every agent says bye and removes its
    // scratch file.
    let outcome = runner.driver.finish()?;
    let failures = outcome.failures;
    finish(outcome.results, &json_path, &dir, a.quiet, t0, presenter)?;
    if failures > 0 {
        anyhow::bail!(
            "{failures} point(s) partial or failed (see the warnings in {})",
            json_path.display()
        );
    }
    Ok(())
}
