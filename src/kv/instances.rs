//! `iolab kv --instances N`: N independent databases of one plan, each in
//! its own directory (`inst-1..N` under one database directory), run at
//! once, each with the plan's threads. Every phase starts on all of them
//! together (a barrier, then the `PhaseGate`: now, or a fleet's common
//! instant on a host) and their points are merged exactly
//! (`results::merge`: histograms added, operations summed), one row per
//! instance in `extra.instances` (the hosts' row shape).

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use anyhow::{Context, Result};

use super::phase::PhaseOutcome;
use super::plan::KvPlan;
use super::run::{KvObserver, KvRun, Started};
use crate::analysis::AnalysisOptions;
use crate::error::usage;
use crate::interrupt;
use crate::measure::clock::mono_now_ns;
use crate::results::ext::{ClockOffset, HostRow, HostsInfo};
use crate::results::merge::{merge_points, CpuOf};
use crate::results::{Point, Results};
use crate::session::sink::ResultsSink;
use crate::session::{Observer, Progress};

/// More instances than this is a typo, not a study (each has its threads,
/// its memtables and its cache).
pub const MAX_INSTANCES: usize = 64;

/// When a phase may start on the instances, and where its merged point goes.
pub trait PhaseGate: Sync {
    /// Every instance is ready for phase `index` (`name`, counted from 0):
    /// return at the instant its workers start; an error ends the run.
    fn ready(&self, _index: usize, _name: &str) -> Result<()> {
        Ok(())
    }
    /// The phase's merged point (also given to the observer).
    fn done(&self, _index: usize, _point: &Point) {}
    /// The gate, not Ctrl-C's flag, ends the run between phases (an
    /// agent: a stop ends the phase, the control side says what follows).
    fn owns_stop(&self) -> bool {
        false
    }
}

/// Start every phase as soon as every instance is ready.
pub struct AtOnce;
impl PhaseGate for AtOnce {}

/// Refuse an instance count or a plan that cannot run as several instances
/// (exit 2 naming `--instances`).
pub fn check(plan: &KvPlan, n: usize) -> Result<()> {
    if n == 0 || n > MAX_INSTANCES {
        return Err(usage(
            "--instances",
            format!("{n}: from 1 to {MAX_INSTANCES} databases"),
        ));
    }
    if n == 1 {
        return Ok(());
    }
    let why = if plan.engine.server().is_some() {
        Some(format!(
            "{} is a database server: one per run (--instances runs embedded engines)",
            plan.engine.name()
        ))
    } else if plan.place.raw.is_some() {
        Some("a raw block device holds one database".to_string())
    } else if plan.place.memory_limit.is_some() {
        Some(
            "--memory-limit puts this one process in a cgroup; it would be shared by the instances"
                .into(),
        )
    } else {
        None
    };
    match why {
        Some(w) => Err(usage("--instances", format!("{n} instances: {w}"))),
        None => Ok(()),
    }
}

/// Refuse a load whose data, once per instance, does not fit in the
/// directory (each instance's own run checks only its share).
fn check_space(plan: &KvPlan, n: usize) -> Result<()> {
    if n > 1 && plan.engine.facts().stores_data {
        return super::run::check_load_fits(plan, n);
    }
    Ok(())
}

/// The directory holding `inst-1..N`: in `--db` (kept), else a scratch
/// directory in `--dir`, registered for the sweep and removed on drop.
struct Parent {
    path: PathBuf,
    keep: bool,
}

impl Drop for Parent {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
        crate::testbed::release_path(&self.path);
    }
}

fn parent(plan: &KvPlan) -> Result<Parent> {
    if let Some(p) = &plan.place.db {
        std::fs::create_dir_all(p).with_context(|| format!("creating --db {}", p.display()))?;
        return Ok(Parent {
            path: p.clone(),
            keep: true,
        });
    }
    let path = super::run::scratch_dir(plan, &plan.place.dir, "-instances")?;
    Ok(Parent {
        path,
        keep: plan.place.keep,
    })
}

/// Run `n` instances of `plan` at once; one merged point per phase, saved
/// to `plan.output` as each phase ends.
pub fn run(plan: &KvPlan, n: usize, obs: &dyn KvObserver, gate: &dyn PhaseGate) -> Result<KvRun> {
    check(plan, n)?;
    check_space(plan, n)?;
    interrupt::install();
    let parent = parent(plan)?;
    let plans: Vec<KvPlan> = (1..=n)
        .map(|k| {
            let mut p = plan.clone();
            p.place.db = Some(parent.path.join(format!("inst-{k}")));
            p.output = None;
            p
        })
        .collect();
    let mut prov = crate::results::Provenance::collect(plan.seed);
    prov.plan = serde_json::json!({"verb": "kv", "instances": n});
    let shared = Shared {
        n,
        keep: parent.keep,
        gate,
        outer: obs,
        state: Mutex::new(State::new(n)),
        cv: Condvar::new(),
        sink: Mutex::new(ResultsSink::new(
            Results::new("kv", prov),
            plan.output.clone(),
            AnalysisOptions::default(),
        )),
    };
    let runs: Vec<Result<KvRun>> = std::thread::scope(|s| {
        let handles: Vec<_> = plans
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let shared = &shared;
                s.spawn(move || {
                    let r = super::run::run(p, &Instance { k, shared });
                    shared.leave(k, r.as_ref().err());
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("an instance panicked")))
            })
            .collect()
    });
    drop(parent);
    finish(shared, runs, n)
}

/// The run's results: the merged points, with the first instance's
/// provenance (engine, settings) and every instance's warnings.
fn finish(shared: Shared<'_>, runs: Vec<Result<KvRun>>, n: usize) -> Result<KvRun> {
    let mut sink = shared.sink.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut mismatches = 0;
    let mut first_err = None;
    for (k, r) in runs.into_iter().enumerate() {
        match r {
            Ok(run) => {
                mismatches += run.mismatches;
                if k == 0 {
                    let mut prov = run.results.provenance.clone();
                    prov.plan["instances"] = serde_json::json!(n);
                    sink.results.provenance = prov;
                }
                sink.results.interrupted |= run.results.interrupted;
                let mut w = run.results.warnings;
                w.retain(|w| !sink.results.warnings.contains(w));
                sink.results.warnings.extend(w);
            }
            Err(e) => {
                first_err.get_or_insert(e.context(format!("instance inst-{}", k + 1)));
            }
        }
    }
    sink.results.complete = first_err.is_none() && !sink.results.interrupted;
    sink.save_last()?;
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok(KvRun {
        results: sink.results,
        mismatches,
    })
}

/// The instances' meeting point for each phase.
struct State {
    /// Instances whose run has not returned.
    alive: usize,
    failed: Option<String>,
    /// Phases released so far.
    released: usize,
    /// The leader is in the gate.
    releasing: bool,
    arrived: Vec<(usize, String)>,
    /// Of the phase in flight: who started it, when, and their points.
    expected: Vec<usize>,
    start_ns: Vec<u64>,
    points: Vec<Option<Point>>,
    /// Each instance's operations so far in the phase in flight.
    done: Vec<u64>,
}

impl State {
    fn new(n: usize) -> State {
        State {
            alive: n,
            failed: None,
            released: 0,
            releasing: false,
            arrived: Vec::new(),
            expected: Vec::new(),
            start_ns: vec![0; n],
            points: vec![None; n],
            done: vec![0; n],
        }
    }
}

struct Shared<'a> {
    n: usize,
    keep: bool,
    gate: &'a dyn PhaseGate,
    outer: &'a dyn KvObserver,
    state: Mutex<State>,
    cv: Condvar,
    sink: Mutex<ResultsSink>,
}

impl Shared<'_> {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait until every live instance is at phase `name`; the last one in
    /// passes the gate for all.
    fn arrive(&self, k: usize, name: &str) -> Result<()> {
        let mut st = self.lock();
        let gen = st.released;
        st.arrived.push((k, name.to_string()));
        loop {
            if let Some(f) = &st.failed {
                anyhow::bail!("{f}");
            }
            if st.released != gen {
                break;
            }
            if !st.releasing && st.arrived.len() == st.alive {
                if let Some((other, n)) = st.arrived.iter().find(|(_, n)| n != name) {
                    let f = format!(
                        "inst-{} is at phase {n}, inst-{} at {name}",
                        other + 1,
                        k + 1
                    );
                    st.failed = Some(f);
                    self.cv.notify_all();
                    continue;
                }
                st.releasing = true;
                drop(st);
                let opened = self.gate.ready(gen, name);
                st = self.lock();
                st.releasing = false;
                if let Err(e) = opened {
                    st.failed = Some(format!("{e:#}"));
                } else {
                    st.expected = st.arrived.drain(..).map(|(i, _)| i).collect();
                    st.points = vec![None; self.n];
                    st.done = vec![0; self.n];
                    st.released += 1;
                }
                self.cv.notify_all();
                continue;
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.start_ns[k] = mono_now_ns();
        Ok(())
    }

    /// Instance `k`'s operations so far; the observer gets every instance's.
    fn progress(&self, k: usize, done: u64) {
        let all = {
            let mut st = self.lock();
            st.done[k] = done;
            st.done.iter().sum()
        };
        self.outer.phase_progress(all);
    }

    /// Instance `k`'s point of the phase in flight; the last one merges.
    fn deposit(&self, k: usize, point: &Point) {
        let mut st = self.lock();
        st.points[k] = Some(point.clone());
        self.complete(&mut st);
    }

    /// Instance `k`'s run returned (with `err` if it failed).
    fn leave(&self, k: usize, err: Option<&anyhow::Error>) {
        let mut st = self.lock();
        st.alive -= 1;
        if let Some(e) = err {
            st.failed
                .get_or_insert_with(|| format!("inst-{} failed: {e:#}", k + 1));
        }
        let gave = st.points[k].is_some();
        st.expected.retain(|i| *i != k || gave);
        self.complete(&mut st);
        self.cv.notify_all();
    }

    /// Merge the phase in flight once every instance that started it has
    /// given its point.
    fn complete(&self, st: &mut State) {
        if st.expected.is_empty() || st.expected.iter().any(|i| st.points[*i].is_none()) {
            return;
        }
        let mut expected = std::mem::take(&mut st.expected);
        expected.sort_unstable();
        let parts: Vec<(String, Point)> = expected
            .iter()
            .filter_map(|i| Some((format!("inst-{}", i + 1), st.points[*i].take()?)))
            .collect();
        let starts: Vec<u64> = expected.iter().map(|i| st.start_ns[*i]).collect();
        let Some(point) = merged(&parts, &starts) else {
            return;
        };
        self.outer.merged_phase_done(&point);
        self.gate.done(st.released - 1, &point);
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = sink.push(point) {
            self.outer.warning(&format!("saving the results: {e:#}"));
        }
    }
}

/// The instances' points of one phase as one, with a row per instance.
pub fn merged(parts: &[(String, Point)], starts_ns: &[u64]) -> Option<Point> {
    let refs: Vec<(&str, &Point)> = parts.iter().map(|(n, p)| (n.as_str(), p)).collect();
    let mut point = merge_points(&refs, "instance", CpuOf::OneProcess)?;
    let first = starts_ns.iter().copied().min().unwrap_or(0);
    let rows: Vec<_> = parts
        .iter()
        .zip(starts_ns)
        .map(|((name, p), s)| {
            let same_clock = ClockOffset {
                offset_ns: 0,
                uncertainty_ns: 0,
                rtt_ns: 0,
                probes: 0,
            };
            HostRow::of(name, p, same_clock, (*s - first) as i64)
        })
        .collect();
    let skew = starts_ns.iter().max().unwrap_or(&0) - first;
    point
        .params
        .insert("instances".into(), parts.len().to_string());
    point.extra.cpu = parts.first().and_then(|(_, p)| p.extra.cpu);
    if parts.iter().any(|(_, p)| p.extra.interrupted == Some(true)) {
        point.extra.interrupted = Some(true);
    }
    point.extra.instances = Some(Box::new(HostsInfo {
        per_host: rows,
        start_skew_ns: skew,
        clock_uncertainty_ns: 0,
        lost: Vec::new(),
        rate_per_host: None,
        target_host: None,
        groups: Vec::new(),
    }));
    Some(point)
}

/// One instance's observer: it meets the others before each phase and
/// hands its points over; the first instance's progress is shown.
struct Instance<'a> {
    k: usize,
    shared: &'a Shared<'a>,
}

impl Instance<'_> {
    fn shown(&self) -> Option<&dyn KvObserver> {
        (self.k == 0).then_some(self.shared.outer)
    }
}

impl Observer for Instance<'_> {
    fn progress(&self, p: &Progress<'_>) {
        if let Some(o) = self.shown() {
            o.progress(p);
        }
    }
    fn progress_done(&self) {
        if let Some(o) = self.shown() {
            o.progress_done();
        }
    }
    fn warning(&self, msg: &str) {
        if let Some(o) = self.shown() {
            o.warning(msg);
        }
    }
    fn note(&self, msg: &str) {
        if let Some(o) = self.shown() {
            o.note(msg);
        }
    }
}

impl KvObserver for Instance<'_> {
    fn started(&self, s: &Started<'_>) {
        if let Some(o) = self.shown() {
            let parent = s.db.parent().unwrap_or(Path::new("/"));
            o.started(&Started {
                engine: s.engine,
                db: parent,
                kept: self.shared.keep,
                raw: s.raw,
                cgroup: s.cgroup,
                server_url: s.server_url.clone(),
            });
        }
    }
    fn phase_started(&self, name: &str, threads: usize) {
        if let Some(o) = self.shown() {
            o.phase_started(name, threads * self.shared.n);
        }
    }
    fn before_phase(&self, name: &str) -> Result<()> {
        self.shared.arrive(self.k, name)
    }
    fn stop_requested(&self) -> bool {
        !self.shared.gate.owns_stop() && interrupt::stop_requested()
    }
    fn phase_progress(&self, done: u64) {
        self.shared.progress(self.k, done);
    }
    fn phase_done(&self, _name: &str, _o: &PhaseOutcome, point: &Point) {
        self.shared.deposit(self.k, point);
    }
}
