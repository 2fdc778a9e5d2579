//! The steps of `iolab run` as they run: `StepRunner` measures each job
//! of the plan through the session driver (device jobs as points, the kv
//! and trace steps as external points, the remote step over iolab's own
//! NBD target), resolves open-loop rates against the closed-loop maximum
//! measured earlier, marks a step skipped when it cannot run here, and
//! keeps the plan record (`extra.run`) in the results. In a media run
//! (`run/media.rs`) it is pointed at one target and round at a time
//! (`StepRunner::switch`): names and parameters then carry the target's
//! label and the round, and the closed-loop maximum and the kv step are
//! per target and round.

use crate::results::sections::{RunRecord, RunStepRecord};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{breakdown, job_ns, kv, RunSettings};
use crate::campaign::Pass as PassTag;
use crate::dut::Target;
use crate::interrupt;
use crate::plan::engines::EngineKind;
use crate::plan::job::JobSpec;
use crate::plan::run_plan::{self as plan, RunStep, StepKind};
use crate::results::{Point, Results};
use crate::session::{Driver, Tags};

/// The closed-loop maximum for a load-latency job: the point of an earlier
/// step with the same parameters minus the rate (the `iops` step's randread
/// 4k QD32), marked `role: closed_loop_max` so the analysis finds it. In a
/// media run, the point of the same target and round (`pass`).
fn closed_loop_max(points: &mut [Point], j: &JobSpec, pass: Option<&PassTag>) -> Option<f64> {
    let want = plan::key(&JobSpec {
        open_loop: None,
        ..j.clone()
    });
    let same_pass = |p: &Point| {
        pass.is_none_or(|t| {
            p.pass
                .as_ref()
                .is_some_and(|id| id.setup == t.label && id.round == t.round)
        })
    };
    let p = points.iter_mut().find(|p| {
        p.job.as_ref().is_some_and(|pj| plan::key(pj) == want)
            && !p.is_interrupted()
            && same_pass(p)
    })?;
    p.extra
        .insert("role".into(), serde_json::json!("closed_loop_max"));
    (p.total.iops > 0.0).then_some(p.total.iops)
}

fn run_record(steps: &[RunStep], profile: &str, budget_ns: u64) -> RunRecord {
    RunRecord {
        profile: profile.to_string(),
        budget_s: budget_ns as f64 / 1e9,
        steps: steps
            .iter()
            .map(|s| RunStepRecord {
                id: s.id.to_string(),
                title: s.title.to_string(),
                jobs: s.jobs.iter().map(|j| j.name.clone()).collect(),
                skipped: s.skipped.clone(),
            })
            .collect(),
    }
}

/// One `iolab run` in progress: the plan, and the session driver that
/// measures its jobs and keeps `results.json` current.
pub(super) struct StepRunner<'a> {
    a: &'a RunSettings,
    /// Where the jobs run now (a media run switches it).
    target: &'a Target,
    /// Where the kv step makes its database (None: it cannot run there,
    /// a raw loop device).
    kv_dir: Option<PathBuf>,
    /// In a media run: the target and round the jobs run for now.
    pass: Option<PassTag>,
    steps: Vec<RunStep>,
    budget_ns: u64,
    pub(super) driver: Driver<'a>,
    /// The passes (target and round; "" without media) whose kv step ran:
    /// one `kv` invocation runs every workload of the step.
    kv_ran: Vec<String>,
    /// Where results, logs and stamps go.
    out_dir: PathBuf,
    /// The remote step's target, from its first job to the end of the run.
    own: Option<crate::campaign::transport::OwnTarget>,
}

impl<'a> StepRunner<'a> {
    pub(super) fn new(
        a: &'a RunSettings,
        target: &'a Target,
        steps: Vec<RunStep>,
        budget_ns: u64,
        driver: Driver<'a>,
        out_dir: PathBuf,
    ) -> StepRunner<'a> {
        StepRunner {
            a,
            target,
            kv_dir: Some(a.dir.clone()),
            pass: None,
            steps,
            budget_ns,
            driver,
            kv_ran: Vec::new(),
            out_dir,
            own: None,
        }
    }

    /// Run the next jobs on `target` (its kv step in `kv_dir`) for `pass`.
    pub(super) fn switch(&mut self, target: &'a Target, kv_dir: Option<PathBuf>, pass: PassTag) {
        self.target = target;
        self.kv_dir = kv_dir;
        self.pass = Some(pass);
    }

    fn pass_key(&self) -> String {
        self.pass.as_ref().map(|t| t.name("")).unwrap_or_default()
    }
    /// Keep the plan record (which steps ran or were skipped) in the results.
    pub(super) fn record_plan(&mut self) {
        let record = run_record(&self.steps, &self.a.profile, self.budget_ns);
        self.driver.results_mut().extra.run = Some(record);
    }

    /// Run every job in plan order until the end or Ctrl-C.
    pub(super) fn run_all(
        &mut self,
        jobs: &[(&'static str, StepKind, JobSpec)],
    ) -> anyhow::Result<()> {
        for (step_id, kind, job) in jobs {
            if interrupt::stop_requested() {
                break;
            }
            self.run_job_unless_skipped(step_id, *kind, job)?;
        }
        Ok(())
    }

    /// Run one job of the plan, unless its step was skipped while running
    /// (no closed-loop maximum, no tracing here) or is the kv step that
    /// ran already for this pass.
    pub(super) fn run_job_unless_skipped(
        &mut self,
        step_id: &'static str,
        kind: StepKind,
        job: &JobSpec,
    ) -> anyhow::Result<()> {
        let skipped = self
            .steps
            .iter()
            .any(|s| s.id == step_id && s.skipped.is_some());
        if skipped || (kind == StepKind::Kv && self.kv_ran.contains(&self.pass_key())) {
            return Ok(());
        }
        self.run_job(step_id, kind, job)
    }

    /// Run one job of a step; a step that cannot run here is marked skipped.
    fn run_job(
        &mut self,
        step_id: &'static str,
        kind: StepKind,
        job: &JobSpec,
    ) -> anyhow::Result<()> {
        let mut job = job.clone();
        let mut extra = Vec::new();
        if kind == StepKind::RatesOfMax {
            let pct = job.open_loop.map_or(100.0, |o| o.rate_iops);
            let points = &mut self.driver.results_mut().points;
            let Some(max) = closed_loop_max(points, &job, self.pass.as_ref()) else {
                self.skip_step(
                    step_id,
                    "no closed-loop maximum (the iops step's randread 4k point is missing)".into(),
                );
                return self.driver.save();
            };
            // On hosts the maximum is all of them together, and so is the
            // rate: the placement shares it out (`fleet::placement::host_share`).
            if let Some(ol) = job.open_loop.as_mut() {
                ol.rate_iops = (pct / 100.0 * max).max(1.0);
            }
            // A media run keeps the plan's name (the share of the maximum),
            // the same workload on every target whatever its maximum.
            if self.pass.is_none() {
                job.name = format!("{step_id}: {}", job.default_name());
            }
            extra.push(("rate_pct_of_max", json!(pct)));
        }
        let mut params = vec![("step", step_id.to_string())];
        let id = self.pass.as_ref().map(|pass| pass.id(&job.name));
        if let (Some(pass), Some(id)) = (&self.pass, &id) {
            params.extend(pass.params());
            job.name = id.name();
        }
        let tags = Tags {
            experiment: "",
            params: &params,
            extra: &extra,
            pass: id.as_ref(),
        };
        let expected_s = job_ns(&job) as f64 / 1e9;
        if kind == StepKind::Remote {
            return self.run_remote_job(step_id, &job);
        }
        let (target, seed, pass) = (self.target, self.a.seed, self.pass.clone());
        let external = match (kind, self.kv_dir.clone()) {
            (StepKind::Kv, Some(dir)) => {
                self.kv_ran.push(self.pass_key());
                let timing = self
                    .steps
                    .iter()
                    .find(|s| s.id == step_id)
                    .and_then(|s| s.kv)
                    .unwrap_or_else(|| kv::KvTiming::of_step(job_ns(&job)));
                self.driver
                    .run_external(&job.name, expected_s, &tags, |results| {
                        let mut points = run_kv(results, &dir, timing, seed)?;
                        for p in points.iter_mut() {
                            if let Some(t) = &pass {
                                t.apply(p);
                            }
                        }
                        Ok(points)
                    })
            }
            (StepKind::Kv, None) => {
                self.kv_ran.push(self.pass_key());
                Err(anyhow::anyhow!(
                    "the database step needs a file system, and this target is a raw device"
                ))
            }
            (StepKind::Trace, _) => self.driver.run_external(&job.name, expected_s, &tags, |_| {
                breakdown::run(target, &job).map(|p| vec![p])
            }),
            _ => {
                self.record_plan();
                return self.driver.run_point_on(target, &job, &tags).map(drop);
            }
        };
        if let Err(e) = external {
            self.skip_step(step_id, format!("{e:#}"));
        }
        self.record_plan();
        self.driver.save()
    }

    /// A job of the remote step: on the scratch file, or (nbd engine) over
    /// iolab's target serving it, started at the step's first job.
    fn run_remote_job(&mut self, step_id: &'static str, job: &JobSpec) -> anyhow::Result<()> {
        self.record_plan();
        if self.own.is_none() {
            match crate::campaign::transport::OwnTarget::start(
                self.target,
                &self.out_dir,
                self.a.seed,
            ) {
                Ok(o) => {
                    self.driver.results_mut().extra.remote = Some(Box::new(o.describe()));
                    self.own = Some(o);
                }
                Err(e) => {
                    self.skip_step(step_id, format!("{e:#}"));
                    return self.driver.save();
                }
            }
        }
        let own = self.own.as_ref().expect("started");
        let over_nbd = job.engine == EngineKind::served();
        let (target, transport) = if over_nbd {
            (&own.remote, "nbd-iolab")
        } else {
            (self.target, crate::analysis::remote::BASELINE)
        };
        self.driver
            .set_peers(over_nbd.then(|| own.sampling.clone()));
        let params = [
            ("step", step_id.to_string()),
            ("transport", transport.to_string()),
        ];
        let tags = Tags {
            experiment: "",
            params: &params,
            extra: &[],
            pass: None,
        };
        let r = self.driver.run_point_on(target, job, &tags).map(drop);
        self.driver.set_peers(None);
        r
    }

    /// After the last job: the remote step's breakdown, then its target and
    /// namespaces go.
    pub(super) fn finish_remote(&mut self) {
        let Some(own) = self.own.take() else {
            return;
        };
        if !interrupt::stop_requested() {
            if let Err(e) = own.breakdown(self.driver.results_mut(), 2000, 4096, self.a.seed) {
                self.driver.warn(format!("remote breakdown: {e:#}"));
            }
        }
        drop(own);
        let _ = self.driver.save();
    }

    /// A step that cannot run: marked skipped in the plan record; in a
    /// media run, only for this pass (a warning naming the target and
    /// round), since it may run on the other targets.
    fn skip_step(&mut self, step_id: &str, why: String) {
        if let Some(pass) = &self.pass {
            let title = self
                .steps
                .iter()
                .find(|s| s.id == step_id)
                .map_or(step_id, |s| s.title);
            let msg = format!(
                "{} r{}: step '{title}' skipped: {why}",
                pass.label, pass.round
            );
            self.driver.warn(msg);
            return;
        }
        if let Some(i) = self.steps.iter().position(|s| s.id == step_id) {
            let msg = format!("step '{}' skipped: {why}", self.steps[i].title);
            self.driver.warn(msg);
            self.steps[i].skipped = Some(why);
        }
    }
}

/// The kv step: every workload in one go; its points (at least one), with
/// the engine's version and the warnings merged into `results`.
fn run_kv(
    results: &mut Results,
    dir: &Path,
    timing: kv::KvTiming,
    seed: u64,
) -> anyhow::Result<Vec<Point>> {
    let kr = kv::run(dir, timing, seed)?;
    for (k, v) in kr.provenance.tools {
        results.provenance.tools.entry(k).or_insert(v);
    }
    results.warnings.extend(kr.warnings);
    let mut points = kr.points;
    if kr.interrupted {
        // The phase Ctrl-C stopped is the last: partial, no round of a
        // media comparison.
        if let Some(p) = points.last_mut() {
            p.extra.interrupted = Some(true);
        }
    }
    if points.is_empty() {
        anyhow::bail!("the kv step measured nothing");
    }
    Ok(points)
}
