//! The experiment driver: runs a list of experiments point by point (plain
//! sweeps, open-loop rate ramps relative to the closed-loop maximum,
//! latency-target searches, steady-state rounds, an optional purge and
//! preconditioning pass), stops cleanly on Ctrl-C, marks partial points, and
//! keeps the results file (and fio export) current after every point. It
//! reports only through an `Observer` and never prints.

use crate::measure::peers::PeerSampling;
use crate::measure::tsc::ClockChoice;
use crate::results::sections::SkippedPoint;
use std::time::Instant;

use serde_json::{json, Value};

use super::{HostPlacement, Observer, Progress, ResultsSink};
use crate::analysis::search::TargetSearch;
use crate::analysis::steady;
use crate::analysis::AnalysisOptions;
use crate::dut::Target;
use crate::interrupt;
use crate::plan::experiment::{Experiment, Mode};
use crate::plan::job::{with_rate, Arrival, JobSpec};
use crate::plan::sweep::RateAxis;
use crate::results::{PassId, Point, Results};
use crate::runner::job::{run_job, JobOutcome, OnJobProgress, RunOptions};
use crate::runner::recorder::Live;
use crate::runner::steady::{self as steady_run, SteadyOptions};
use crate::trace::point_tracer::{self, Tracer};

mod together;

/// Run state shared by every point: the results, progress and counters.
pub struct Driver<'a> {
    target: &'a Target,
    sink: ResultsSink,
    observer: &'a dyn Observer,
    /// `--breakdown`: the stack tracer.
    tracer: Option<Tracer<'a>>,
    /// Report progress once a second while a point runs.
    show_progress: bool,
    /// The clock that stamps requests (`--clock`).
    clock: ClockChoice,
    /// `--status-interval`: a status line this often (seconds).
    status_every: Option<f64>,
    planned_points: usize,
    planned_secs: f64,
    done_points: usize,
    started: Instant,
    failures: usize,
    /// The first "cannot run" error: returned when no point ran at all.
    first_skip: Option<anyhow::Error>,
    /// Sampled with every job: the target's processes and the link.
    peers: Option<PeerSampling>,
    /// `--hosts`: every job runs on these hosts instead of here.
    hosts: Option<Box<dyn HostPlacement>>,
}

/// What a driven run left: the results, how many points failed, and the
/// first reason a point could not run (the error to return when none ran).
pub struct DriveOutcome {
    pub results: Results,
    pub failures: usize,
    pub first_skip: Option<anyhow::Error>,
}

/// What a point run returned.
enum Ran {
    Done(Box<Point>),
    Skipped,
}

/// What a point carries in the results besides its job: the experiment it
/// belongs to (plan files), parameters (`iolab run`'s step) and point
/// extensions (role, phase, steady-state round).
#[derive(Default, Clone, Copy)]
pub struct Tags<'t> {
    pub experiment: &'t str,
    pub params: &'t [(&'t str, String)],
    pub extra: &'t [(&'t str, Value)],
    /// The campaign pass the point belongs to.
    pub pass: Option<&'t PassId>,
}

impl Tags<'_> {
    fn apply(&self, p: &mut Point) {
        if !self.experiment.is_empty() {
            p.params
                .insert("experiment".into(), self.experiment.to_string());
        }
        for (k, v) in self.params {
            p.params.insert((*k).to_string(), v.clone());
        }
        for (k, v) in self.extra {
            p.extra.insert((*k).to_string(), v.clone());
        }
        // A point that names its own pass (a kv phase of `run`) keeps it.
        if let (Some(id), None) = (self.pass, &p.pass) {
            p.pass = Some(id.clone());
        }
    }
}

impl<'a> Driver<'a> {
    /// `planned` is (points, seconds) for the progress line's ETA.
    pub fn new(
        target: &'a Target,
        sink: ResultsSink,
        observer: &'a dyn Observer,
        tracer: Option<Tracer<'a>>,
        show_progress: bool,
        planned: (usize, f64),
    ) -> Driver<'a> {
        Driver {
            target,
            sink,
            observer,
            tracer,
            show_progress,
            planned_points: planned.0,
            planned_secs: planned.1,
            done_points: 0,
            started: Instant::now(),
            failures: 0,
            first_skip: None,
            clock: ClockChoice::Auto,
            status_every: None,
            peers: None,
            hosts: None,
        }
    }

    /// Run every job on these hosts (merged into one point each) instead
    /// of on this machine.
    pub fn with_hosts(mut self, hosts: Box<dyn HostPlacement>) -> Driver<'a> {
        self.hosts = Some(hosts);
        self
    }

    /// The next points run on setup `setup` of a campaign: on hosts, the
    /// placement's target for it; on this machine the pass's own target.
    pub fn select_setup(&mut self, setup: usize) {
        if let Some(h) = self.hosts.as_mut() {
            h.select_setup(setup);
        }
    }

    /// Print a status line every `secs` seconds while a point runs.
    pub fn with_status_interval(mut self, secs: Option<f64>) -> Driver<'a> {
        self.status_every = secs;
        self
    }

    /// Stamp requests with `clock` instead of the default (auto).
    pub fn with_clock(mut self, clock: ClockChoice) -> Driver<'a> {
        self.clock = clock;
        self
    }

    /// Sample these peers with every job from now on (None: stop).
    pub fn set_peers(&mut self, peers: Option<PeerSampling>) {
        self.peers = peers;
    }

    pub fn results(&self) -> &Results {
        &self.sink.results
    }

    /// The results being built (saved at the next point or `save`).
    pub fn results_mut(&mut self) -> &mut Results {
        &mut self.sink.results
    }

    /// A warning: kept in the results and shown by the observer.
    pub fn warn(&mut self, msg: String) {
        self.observer.warning(&msg);
        self.sink.results.warnings.push(msg);
    }

    /// Measure one job as a point of its own (outside any experiment mode);
    /// `None` when it was skipped or failed (recorded in the results).
    pub fn run_point(&mut self, job: &JobSpec, tags: &Tags) -> anyhow::Result<Option<Point>> {
        self.run_point_on(self.target, job, tags)
    }

    /// `run_point` on another target than the run's (`iolab remote`: the
    /// same jobs on a local file and on each remote export).
    pub fn run_point_on(
        &mut self,
        target: &Target,
        job: &JobSpec,
        tags: &Tags,
    ) -> anyhow::Result<Option<Point>> {
        Ok(match self.measure(target, job, tags)? {
            Ran::Done(p) => Some(*p),
            Ran::Skipped => None,
        })
    }

    /// Points measured by something other than the device core (a traced
    /// job, a kv workload): counted and shown like the driver's own, tagged,
    /// and saved. `measure` gets the results for its provenance and
    /// warnings; its error is returned to the caller, which decides what a
    /// failure means.
    pub fn run_external(
        &mut self,
        name: &str,
        expected_s: f64,
        tags: &Tags,
        measure: impl FnOnce(&mut Results) -> anyhow::Result<Vec<Point>>,
    ) -> anyhow::Result<usize> {
        let label = self.next_label(name);
        if self.show_progress {
            self.observer.progress(&Progress {
                label: &label,
                elapsed_s: 0.0,
                expected_s: Some(expected_s),
                eta_s: Some(self.eta_s()),
                live: None,
            });
        }
        let measured = measure(&mut self.sink.results);
        if self.show_progress {
            self.observer.progress_done();
        }
        let points = measured?;
        let n = points.len();
        for mut p in points {
            tags.apply(&mut p);
            self.observer.point_done(&p);
            self.sink.results.points.push(p);
        }
        self.save()?;
        Ok(n)
    }

    fn next_label(&mut self, name: &str) -> String {
        self.done_points += 1;
        format!(
            "[{}/{}] {name}",
            self.done_points,
            self.planned_points.max(self.done_points)
        )
    }

    /// Seconds left of the planned run.
    fn eta_s(&self) -> f64 {
        eta_s(self.planned_secs, self.started)
    }

    /// Write the results as they are (before the first point, so a crash
    /// still leaves the provenance).
    pub fn save(&mut self) -> anyhow::Result<()> {
        self.sink.save()
    }

    /// Run every experiment in order until the list ends or Ctrl-C.
    pub fn run_all(mut self, exps: &[Experiment]) -> anyhow::Result<DriveOutcome> {
        for e in exps {
            if interrupt::stop_requested() {
                break;
            }
            self.sink.set_analysis(AnalysisOptions {
                knee_factor: e.knee_factor,
                ..AnalysisOptions::default()
            });
            self.run_experiment(e)?;
        }
        self.finish()
    }

    /// The end of a run: mark it complete or interrupted, save a last time.
    pub fn finish(self) -> anyhow::Result<DriveOutcome> {
        let results = self.sink.finish(interrupt::stop_requested())?;
        Ok(DriveOutcome {
            results,
            failures: self.failures,
            first_skip: self.first_skip,
        })
    }

    fn skip(
        &mut self,
        job: &JobSpec,
        exp: &str,
        reason: String,
        failed: bool,
    ) -> anyhow::Result<()> {
        let what = if failed { "failed" } else { "skipped" };
        self.observer.point_skipped(&job.name, &reason, failed);
        self.sink
            .results
            .warnings
            .push(format!("point {} {what}: {reason}", job.name));
        self.sink
            .results
            .extra
            .skipped_points
            .get_or_insert_with(Vec::new)
            .push(SkippedPoint {
                name: job.name.clone(),
                experiment: exp.to_string(),
                reason: reason.to_string(),
                failed,
                job: job.clone(),
            });
        if failed {
            self.failures += 1;
        }
        self.save()
    }

    /// What reports a running point's progress (`label` on the line).
    fn reporter(&self, label: String) -> impl Fn(f64, Option<f64>, Option<Live>) + Sync + 'a {
        let started = self.started;
        let planned = self.planned_secs;
        let observer = self.observer;
        let show = self.show_progress;
        let status = super::StatusEvery::new(self.status_every);
        move |elapsed: f64, total: Option<f64>, live: Option<Live>| {
            let p = Progress {
                label: &label,
                elapsed_s: elapsed,
                expected_s: total,
                eta_s: Some(eta_s(planned, started)),
                live,
            };
            status.report(observer, show, &p);
        }
    }

    /// Whether a running point reports progress.
    fn reports_progress(&self) -> bool {
        self.show_progress || self.status_every.is_some()
    }

    /// Run one point; errors that mean "this point cannot run" skip it.
    fn measure(&mut self, target: &Target, job: &JobSpec, tags: &Tags) -> anyhow::Result<Ran> {
        if interrupt::stop_requested() {
            return Ok(Ran::Skipped);
        }
        let exp = tags.experiment;
        if let Some(why) = self.hosts.as_ref().and_then(|h| h.halted()) {
            self.skip(job, exp, why, false)?;
            return Ok(Ran::Skipped);
        }
        let label = self.next_label(&job.name);
        let progress = self.reporter(label);
        let opts = run_options(
            self.clock,
            self.peers.as_ref(),
            self.reports_progress().then_some(&progress),
        );
        let mut traced = None;
        let mut untraced_why = None;
        let outcome = match (&mut self.hosts, &mut self.tracer) {
            (Some(h), _) => on_hosts(h.as_mut(), job, &progress),
            (None, t) => match t {
                Some(t) => match t.why_not_for(job) {
                    None => t.run(job).map(|(point, res)| {
                        traced = Some(res);
                        JobOutcome {
                            point,
                            request_logs: Vec::new(),
                            features: Vec::new(),
                        }
                    }),
                    Some(why) => {
                        untraced_why = Some(why);
                        run_job(job, target, &opts)
                    }
                },
                None => run_job(job, target, &opts),
            },
        };
        if self.show_progress {
            self.observer.progress_done();
        }
        let mut outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                let cannot_run = crate::error::point_cannot_run(&e);
                self.skip(job, exp, format!("{e:#}"), !cannot_run)?;
                if self.first_skip.is_none() {
                    self.first_skip = Some(e);
                }
                return Ok(Ran::Skipped);
            }
        };
        let p = &mut outcome.point;
        super::mark_if_interrupted(p);
        if p.extra.hosts.as_ref().is_some_and(|h| h.is_partial()) {
            self.failures += 1;
        }
        tags.apply(p);
        if let Some(res) = &traced {
            p.warnings.extend(point_tracer::warnings(res));
            p.extra.trace = Some(Box::new(res.clone()));
        }
        // A machine-wide reason is said once, in the results' warnings.
        if let Some(why) =
            untraced_why.filter(|_| self.tracer.as_ref().is_some_and(|t| t.why_not.is_none()))
        {
            self.observer
                .note(&format!("--breakdown: {} runs untraced: {why}", job.name));
            p.warnings.push(format!("--breakdown: not traced: {why}"));
        }
        self.sink
            .results
            .provenance
            .merge_features(outcome.features);
        self.observer.point_done(&outcome.point);
        if let Some(res) = &traced {
            self.observer.point_traced(res);
        }
        self.sink.export_point(&outcome.point)?;
        self.sink.results.points.push(outcome.point.clone());
        self.save()?;
        Ok(Ran::Done(Box::new(outcome.point)))
    }

    /// A point of experiment `exp` with point extensions `extra`.
    fn run_in(&mut self, job: &JobSpec, exp: &str, extra: &[(&str, Value)]) -> anyhow::Result<Ran> {
        self.measure(
            self.target,
            job,
            &Tags {
                experiment: exp,
                params: &[],
                extra,
                pass: None,
            },
        )
    }

    fn run_experiment(&mut self, e: &Experiment) -> anyhow::Result<()> {
        let exp = e.name.as_str();
        if e.purge {
            let msg = steady_run::purge(self.target, self.target.size)?;
            self.observer.note(&format!("purge: {msg}"));
            self.sink
                .results
                .warnings
                .retain(|w| !w.starts_with("purge:"));
            self.sink.results.extra.purge = Some(msg.clone());
        }
        if let (Some(n), Some(first)) = (e.precondition, e.jobs.first()) {
            let pj = steady_run::precondition_job(first, self.target.size, n);
            self.run_in(&pj, exp, &[("phase", json!("precondition"))])?;
        }
        match &e.mode {
            Mode::Plain => {
                for j in &e.jobs {
                    self.run_in(j, exp, &[])?;
                }
            }
            Mode::Rates { rates, arrival } => {
                for j in &e.jobs {
                    self.run_rates(j, exp, rates, *arrival)?;
                }
            }
            Mode::LatencyTarget {
                target_ns,
                percentile,
                open_loop,
            } => {
                for j in &e.jobs {
                    self.latency_search(j, exp, *target_ns, *percentile, *open_loop)?;
                }
            }
            Mode::Steady(s) => self.steady_rounds(&e.jobs, exp, s)?,
            Mode::Concurrent { reports } => self.run_together(&e.jobs, exp, reports)?,
        }
        Ok(())
    }

    fn closed_loop_max(&mut self, j: &JobSpec, exp: &str) -> anyhow::Result<Option<f64>> {
        let mut cj = j.clone();
        cj.name = format!("{}-closed-loop-max", j.name);
        cj.open_loop = None;
        Ok(
            match self.run_in(&cj, exp, &[("role", json!("closed_loop_max"))])? {
                Ran::Done(p) if p.total.iops > 0.0 => Some(p.total.iops),
                _ => None,
            },
        )
    }

    fn run_rates(
        &mut self,
        j: &JobSpec,
        exp: &str,
        rates: &RateAxis,
        arrival: Arrival,
    ) -> anyhow::Result<()> {
        let list: Vec<f64> = match rates {
            RateAxis::Iops(v) => v.clone(),
            RateAxis::PercentOfMax(pcts) => {
                let Some(max) = self.closed_loop_max(j, exp)? else {
                    return Ok(());
                };
                pcts.iter().map(|p| (p / 100.0 * max).max(1.0)).collect()
            }
        };
        for r in list {
            let rj = with_rate(j, r, arrival);
            self.run_in(&rj, exp, &[])?;
        }
        Ok(())
    }

    fn latency_search(
        &mut self,
        j: &JobSpec,
        exp: &str,
        target_ns: u64,
        pct: f64,
        open_loop: Option<Arrival>,
    ) -> anyhow::Result<()> {
        let (mut search, mut v, variable) = match open_loop {
            Some(_) => {
                let Some(max) = self.closed_loop_max(j, exp)? else {
                    return Ok(());
                };
                (TargetSearch::new(max, false), (max / 64.0).max(1.0), "rate")
            }
            None => (TargetSearch::new(4096.0, true), 1.0, "qd"),
        };
        let mut step = 0;
        loop {
            step += 1;
            let mut sj = match open_loop {
                Some(arr) => with_rate(j, v, arr),
                None => JobSpec {
                    qd: v as u32,
                    ..j.clone()
                },
            };
            if open_loop.is_none() {
                sj.name = if j.name == j.default_name() {
                    sj.default_name()
                } else {
                    format!("{}-qd{}", j.name, v as u32)
                };
            }
            sj.name = format!("{}-target-step{step}", sj.name);
            let point = match self.run_in(&sj, exp, &[])? {
                Ran::Done(p) => p,
                Ran::Skipped => return Ok(()),
            };
            let measured = measured_percentile(&point, pct);
            let meets = measured.is_some_and(|m| m <= target_ns as f64);
            let info = json!({
                "variable": variable, "value": v, "target_ns": target_ns, "percentile": pct,
                "measured_ns": measured, "meets": meets, "step": step,
            });
            if let Some(last) = self.sink.results.points.last_mut() {
                last.extra.insert("latency_target".into(), info);
            }
            self.save()?;
            match search.observe(v, meets) {
                Some(n) if !interrupt::stop_requested() => v = n,
                _ => break,
            }
        }
        Ok(())
    }

    fn steady_rounds(
        &mut self,
        jobs: &[JobSpec],
        exp: &str,
        s: &SteadyOptions,
    ) -> anyhow::Result<()> {
        let tracked = steady_run::tracked_index(jobs);
        let mut series = Vec::new();
        for round in 0..s.max_rounds {
            for (i, j) in jobs.iter().enumerate() {
                let mut rj = j.clone();
                rj.name = format!("{}-round{}", j.name, round + 1);
                let info = json!({
                    "round": round + 1, "tracked": i == tracked, "metric": s.metric,
                    "criterion": s.criterion, "window": s.window, "max_rounds": s.max_rounds,
                });
                let ran = self.run_in(&rj, exp, &[("steady", info)])?;
                if i == tracked {
                    // Rounds of one job share a key: drop the round from the name-free params.
                    if let Ran::Done(p) = ran {
                        series.push(s.metric.of(&p).unwrap_or(0.0));
                    } else {
                        return Ok(());
                    }
                }
                if interrupt::stop_requested() {
                    return Ok(());
                }
            }
            if let Some(c) = steady::check(&series, s.window, s.criterion) {
                {
                    self.observer.note(&format!(
                        "round {}: window mean {:.1}, range {:.1}%, excursion {:.1}%: {}",
                        round + 1,
                        c.mean,
                        100.0 * c.range / c.mean.abs().max(1e-12),
                        100.0 * c.excursion / c.mean.abs().max(1e-12),
                        if c.steady { "steady" } else { "not steady yet" }
                    ));
                }
                if c.steady {
                    return Ok(());
                }
            }
        }
        self.sink.results.warnings.push(format!(
            "steady state not reached in {} rounds{}",
            s.max_rounds,
            if exp.is_empty() {
                String::new()
            } else {
                format!(" ({exp})")
            }
        ));
        self.save()
    }
}

/// Seconds left of a run planned to take `planned_s` from `started`.
/// How the driver's jobs run: its clock, peers and progress.
fn run_options<'o>(
    clock: ClockChoice,
    peers: Option<&'o PeerSampling>,
    progress: Option<&'o OnJobProgress<'o>>,
) -> RunOptions<'o> {
    RunOptions {
        clock,
        record_requests: None,
        on_progress: progress,
        peers,
        before_start: None,
    }
}

/// A job on the hosts, its progress the hosts' last seconds combined.
fn on_hosts(
    h: &mut dyn HostPlacement,
    job: &JobSpec,
    progress: &dyn Fn(f64, Option<f64>, Option<Live>),
) -> anyhow::Result<JobOutcome> {
    let total = job.stop.runtime_ns.map(|r| (r + job.ramp_ns) as f64 / 1e9);
    let point = h.run(job, &|elapsed, live| progress(elapsed, total, Some(live)))?;
    Ok(JobOutcome {
        point,
        request_logs: Vec::new(),
        features: Vec::new(),
    })
}

fn eta_s(planned_s: f64, started: Instant) -> f64 {
    (planned_s - started.elapsed().as_secs_f64()).max(0.0)
}

/// The percentile of the point's main latency: from the intended issue time
/// for open-loop points (what a client sees), else the normal total latency.
fn measured_percentile(p: &Point, pct: f64) -> Option<f64> {
    let key = crate::measure::histogram::percentile_key(pct);
    if let Some(ol) = &p.extra.open_loop {
        let s = ol.intended_main()?;
        if let Some(v) = s.percentiles_ns.get(&key) {
            return Some(*v as f64);
        }
        let h = ["read.lat_intended", "write.lat_intended"]
            .iter()
            .find_map(|k| p.histograms.get(*k))?;
        return crate::measure::histogram::LatencyHistogram::decode(h)
            .ok()
            .map(|h| h.value_at_percentile(pct) as f64);
    }
    let lat = p.main_lat()?;
    if let Some(v) = lat.percentiles_ns.get(&key) {
        return Some(*v as f64);
    }
    let h = ["read.lat", "write.lat"]
        .iter()
        .find_map(|k| p.histograms.get(*k))?;
    crate::measure::histogram::LatencyHistogram::decode(h)
        .ok()
        .map(|h| h.value_at_percentile(pct) as f64)
}
