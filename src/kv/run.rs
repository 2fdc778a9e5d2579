//! `iolab kv` as a library: `run(plan, observer)` executes a `KvPlan` and
//! returns its results. It owns the database directory (scratch or `--db`),
//! the memory cgroup, the engine and the phase loop, and saves the results
//! file after every phase; it never prints (the observer shows progress:
//! `report::kv_terminal` on a terminal, `session::Silent` inside `iolab run`).

use super::chain::ChainStep;
use super::dbbench::{Bench, DbBench};
use super::engine::{self, EngineOptions, KvEngine, KvEngineKind, KvMemory};
use super::lsm::{ChainStepRun, LsmState};
use super::phase::{self, PhaseOutcome, PhaseSpec, Work};
use super::plan::{KvPlan, Step};
use super::raw::RawDb;
use super::ycsb::{YcsbLoad, YcsbRun};
use super::{loadstats, point};
use crate::analysis::AnalysisOptions;
use crate::dut::Target;
use crate::error::usage;
use crate::interrupt;
use crate::measure::probe::PhaseProbe;
use crate::measure::sysfs;
use crate::results::provenance::Provenance;
use crate::results::sections::CgroupRecord;
use crate::results::target::{TargetInfo, TargetKind};
use crate::results::{Point, Results};
use crate::servers::Server;
use crate::session::sink::ResultsSink;
use crate::session::{Observer, Progress};
use crate::testbed::cgroup::MemoryCgroup;
use crate::testbed::{self, Resource};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a kv run shows as it goes, beyond the session's observer (progress
/// once a second, warnings); every method defaults to nothing.
pub trait KvObserver: Observer {
    /// The engine is open in its database directory.
    fn started(&self, _s: &Started<'_>) {}
    /// A phase is about to run.
    fn phase_started(&self, _name: &str, _threads: usize) {}
    /// A phase finished; its point is saved.
    fn phase_done(&self, _name: &str, _outcome: &PhaseOutcome, _point: &Point) {}
    /// The phase's workers are about to start: return when they may (the
    /// common start of several instances or hosts, `kv::instances`); an
    /// error ends the run before the phase.
    fn before_phase(&self, _name: &str) -> Result<()> {
        Ok(())
    }
    /// The phase's operations so far (about once a second).
    fn phase_progress(&self, _done: u64) {}
    /// Whether the run ends before its next step (Ctrl-C). A fleet's agent
    /// leaves that to the control side, which stops a phase on every host
    /// when one is lost and may go on with the others.
    fn stop_requested(&self) -> bool {
        interrupt::stop_requested()
    }
    /// The exact merge of a phase run on several instances or hosts at once
    /// (`kv::instances`, `fleet::kv_run`).
    fn merged_phase_done(&self, _point: &Point) {}
    /// A db_bench chain step (`waitforcompaction`, `flush`, `compact`)
    /// finished, leaving the LSM in `after` (engines that have one).
    fn chain_step_done(&self, _step: &ChainStepRun, _after: Option<&LsmState>) {}
}

impl KvObserver for crate::session::Silent {}

/// What runs where, for the observer's header.
pub struct Started<'a> {
    pub engine: &'a dyn KvEngine,
    pub db: &'a Path,
    /// The database directory stays after the run.
    pub kept: bool,
    /// `db` is a raw block device (no file system).
    pub raw: bool,
    pub cgroup: Option<&'a MemoryCgroup>,
    /// A server iolab did not start (`--server-url`, password masked): the
    /// data is the server's, wherever it keeps it, not under `db`.
    pub server_url: Option<String>,
}

/// The results of a kv run and the verification failures it counted.
pub struct KvRun {
    pub results: Results,
    pub mismatches: u64,
}

impl KvRun {
    /// An error (exit 3) if any read returned data other than written.
    pub fn verified(&self) -> Result<()> {
        if self.mismatches > 0 {
            return Err(crate::error::VerifyFailed {
                mismatches: self.mismatches,
            }
            .into());
        }
        Ok(())
    }
}

/// The database directory; removed on drop unless kept. On a raw block
/// device it holds LMDB's lock file and the link to the device (`raw`).
struct DbDir {
    path: PathBuf,
    keep: bool,
    raw: Option<RawDb>,
}

impl DbDir {
    /// Where the data is: the device of a raw run, else the directory.
    fn data(&self) -> &Path {
        match &self.raw {
            Some(r) => &r.target.path,
            None => &self.path,
        }
    }
}

impl Drop for DbDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
        crate::testbed::release_path(&self.path);
    }
}

/// The database directory: `--db`, or a scratch directory in the target,
/// or for a raw block device (`raw`, checked) one in the temporary
/// directory with the device linked into it.
fn db_dir(plan: &KvPlan, raw: Option<Target>) -> Result<DbDir> {
    let place = &plan.place;
    if let Some(p) = &place.db {
        std::fs::create_dir_all(p).with_context(|| format!("creating --db {}", p.display()))?;
        return Ok(DbDir {
            path: p.clone(),
            keep: true,
            raw: None,
        });
    }
    let parent = match raw {
        Some(_) => std::env::temp_dir(),
        None => place.dir.clone(),
    };
    let path = scratch_dir(plan, &parent, "")?;
    let mut dir = DbDir {
        path,
        keep: place.keep,
        raw: None,
    };
    if let Some(target) = raw {
        dir.raw = Some(RawDb::attach(target, &dir.path)?);
    }
    Ok(dir)
}

/// Refuse a load whose data alone does not fit where the database goes.
/// A scratch directory `iolab-kv-ENGINE-PID{suffix}` made in `parent`
/// (`--dir`, checked to be a directory) and registered in the testbed, so
/// a SIGKILLed run's is removed by the next start.
pub(crate) fn scratch_dir(plan: &KvPlan, parent: &Path, suffix: &str) -> Result<PathBuf> {
    let meta = std::fs::metadata(parent)
        .map_err(|e| usage("--dir", format!("{}: {e}", parent.display())))?;
    if !meta.is_dir() {
        return Err(usage(
            "--dir",
            format!("{} is not a directory", parent.display()),
        ));
    }
    let path = parent.join(format!(
        "iolab-kv-{}-{}{suffix}",
        plan.engine.name(),
        std::process::id()
    ));
    testbed::create(Resource::Path(path.clone()), || {
        std::fs::create_dir(&path)
            .with_context(|| format!("creating scratch database directory {}", path.display()))
    })?;
    Ok(path)
}

pub fn check_space(plan: &KvPlan) -> Result<()> {
    check_load_fits(plan, 1)
}

/// Refuse a load whose keys and values, `copies` times (one per
/// instance), do not fit in the database's directory.
pub(crate) fn check_load_fits(plan: &KvPlan, copies: usize) -> Result<()> {
    let (bytes, field) = plan.load_bytes();
    let dir = plan.place.db.as_deref().unwrap_or(&plan.place.dir);
    let Ok(free) = crate::dut::scratch::free_bytes(dir) else {
        return Ok(()); // an unusable directory is reported where it is used
    };
    let mapped = plan.engine.facts().mapped_file;
    if let (Some(file), true, None) = (mapped, plan.options.mmap, &plan.place.raw) {
        let existing = plan
            .place
            .db
            .as_ref()
            .and_then(|d| std::fs::metadata(d.join(file)).ok())
            .map_or(0, |m| std::os::unix::fs::MetadataExt::blocks(&m) * 512);
        let map = plan.options.map_size.saturating_sub(existing);
        super::space::check_map_fits(dir, map, copies)?;
    }
    let all = bytes.saturating_mul(copies as u64);
    if all > free {
        let what = match copies {
            1 => "the load writes".to_string(),
            n => format!("{n} instances load"),
        };
        return Err(usage(
            field,
            format!(
                "{what} about {} of keys and values, and {} has {} free",
                super::report::human(all),
                dir.display(),
                super::report::human(free)
            ),
        ));
    }
    Ok(())
}

fn target_info(dir: &Path, kind: TargetKind) -> TargetInfo {
    let dev = sysfs::devnum_of_path(dir);
    TargetInfo {
        path: dir.display().to_string(),
        kind,
        size_bytes: 0,
        filesystem: sysfs::fs_of_path(dir),
        disk: dev.and_then(sysfs::disk_info),
        export: None,
    }
}

/// Refuse a plan that reads before anything was loaded, or whose load
/// cannot fit, before anything is created; a raw block device checked by
/// `device`'s rule (`kv::raw::check`).
fn check_before_creating(plan: &KvPlan) -> Result<Option<Target>> {
    if let Some(raw) = &plan.place.raw {
        plan.check_order(false)?;
        return super::raw::check(plan, raw).map(Some);
    }
    let had_data = plan
        .place
        .db
        .as_ref()
        .and_then(|p| std::fs::read_dir(p).ok())
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    plan.check_order(had_data || !plan.engine.facts().stores_data)?;
    if plan.engine.facts().stores_data && plan.server.url.is_none() {
        check_space(plan)?;
    }
    Ok(None)
}

/// The engine of `plan`, opened in `dir` (on a raw device, with the
/// options it takes there); for a server engine, its server first (a
/// private one keeps its data in `dir`).
fn open_engine(
    plan: &KvPlan,
    db: &DbDir,
    obs: &dyn KvObserver,
) -> Result<(Option<Server>, Box<dyn KvEngine>)> {
    let dir = db.path.as_path();
    let starting = plan.engine.server().and_then(|k| k.starting_note());
    if let (Some(note), None) = (starting, &plan.server.url) {
        obs.note(note);
    }
    let server = match plan.engine.server() {
        Some(kind) => Some(Server::start_or_connect(
            kind,
            plan.server.url.as_deref(),
            dir,
            &plan.server.settings,
        )?),
        None => None,
    };
    let eng = match &server {
        Some(s) => engine::open_server(s, plan.field_count()?, plan.server.cql)?,
        None => match &db.raw {
            Some(r) => engine::open(plan.engine, dir, &r.options(&plan.options))?,
            None => engine::open(plan.engine, dir, &plan.options)?,
        },
    };
    Ok((server, eng))
}

/// Say the plan's notices and enter its memory limit's cgroup, if any.
fn memory_cgroup(plan: &KvPlan, obs: &dyn KvObserver) -> Result<Option<MemoryCgroup>> {
    let mem_limit = plan.place.memory_limit;
    if let Some(l) = mem_limit {
        if let Some(w) = memory_limit_warning(l, plan.engine, &plan.options) {
            obs.warning(&w);
        }
    }
    for n in &plan.notices {
        obs.warning(n);
    }
    mem_limit.map(MemoryCgroup::enter).transpose()
}

/// Run `plan`, reporting to `obs`. Results are saved to `plan.output` after
/// every phase; Ctrl-C ends the run after the current phase's operations
/// stop (`results.interrupted`).
pub fn run(plan: &KvPlan, obs: &dyn KvObserver) -> Result<KvRun> {
    let raw = check_before_creating(plan)?;
    interrupt::install();
    let dir = db_dir(plan, raw)?;
    let cgroup = memory_cgroup(plan, obs)?;
    let (server, eng) = open_engine(plan, &dir, obs).map_err(|e| on_full_disk(plan, &dir, e))?;
    obs.started(&Started {
        engine: eng.as_ref(),
        db: dir.data(),
        kept: dir.keep,
        raw: dir.raw.is_some(),
        cgroup: cgroup.as_ref(),
        server_url: server
            .as_ref()
            .filter(|s| !s.is_private())
            .map(|s| s.endpoint().display_url()),
    });
    let prov = provenance(plan, eng.as_ref(), &dir);
    let mut sink = ResultsSink::new(
        Results::new("kv", prov),
        plan.output.clone(),
        AnalysisOptions::default(),
    );
    sink.results.warnings.extend(plan.notices.iter().cloned());
    record_setup(&mut sink.results, server.as_ref(), cgroup.as_ref())?;
    let mut mismatches = 0u64;
    let mut cut_load = CutLoad::default();
    let mut chain_steps: Vec<ChainStepRun> = Vec::new();
    let outcome = (|| -> Result<()> {
        for (index, step) in plan.steps.iter().enumerate() {
            let Ok(step) = cut_load
                .before(step)
                .map_err(|w| sink.results.warnings.push(w))
            else {
                continue;
            };
            let step = &step;
            if obs.stop_requested() {
                sink.results.interrupted = true;
                break;
            }
            if let Step::Chain(c) = step {
                let done = run_chain_step(eng.as_ref(), *c)?;
                obs.chain_step_done(&done, eng.lsm_state().as_ref());
                chain_steps.push(done);
                continue;
            }
            if plan.place.drop_caches {
                loadstats::drop_caches()?;
            }
            if matches!(step, Step::YcsbLoad(..)) {
                // A server's load inserts: empty what an earlier load left.
                eng.reset()?;
            }
            let (name, work, mut spec, mut params) =
                step_job(step, index, plan, eng.field_count().is_some());
            spec.flush_after = plan.place.flush_between;
            name_phase_settings(&mut params, plan, eng.name(), spec.threads);
            let started = crate::results::time::now_rfc3339();
            obs.phase_started(&name, spec.threads);
            let total: Option<u64> = spec.ops.iter().copied().sum();
            let status = StatusClock::new(plan.status_interval_s);
            let mut probe = match &server {
                Some(s) => PhaseProbe::new(Some(s), None),
                None => PhaseProbe::timeline_only(crate::measure::diskstats::device_of(dir.data())),
            };
            spec.live_ops = Some(probe.counter());
            spec.space = space_watch(plan, &dir);
            let progress = |elapsed_s: f64, done: u64, lat_sum: u64| {
                obs.phase_progress(done);
                let label = match total {
                    Some(t) => format!("{name}: {done} of {t} ops"),
                    None => format!("{name}: {done} ops"),
                };
                obs.progress(&Progress {
                    label: &label,
                    elapsed_s,
                    expected_s: None,
                    eta_s: None,
                    live: None,
                });
                if let Some(line) = status.line(&name, elapsed_s, done, lat_sum) {
                    obs.status(&line);
                }
            };
            obs.before_phase(&name)?;
            probe.begin();
            let cpu_at_start = crate::measure::procstat::CpuTicks::now();
            // A server at --server-url keeps its data elsewhere (perhaps
            // on another machine): nothing of this machine's disk is its.
            let data_here = plan.server.url.is_none().then_some(dir.data());
            let o = phase::run_reporting(eng.as_ref(), work.as_ref(), &spec, data_here, &progress);
            obs.progress_done();
            let o = o?;
            probe.end_with(o.rec.ops.iter().sum());
            let mut p = point::build(&name, params, &o, eng.as_ref(), started, plan.under_ns);
            if let Some(lsm) = p.extra.kv.as_mut().and_then(|kv| kv.lsm.as_mut()) {
                lsm.after_steps = std::mem::take(&mut chain_steps);
            }
            chain_steps.clear();
            p.extra.server = probe.result.server.take().map(Box::new);
            p.extra.timeline = probe.result.timeline.take().map(Box::new);
            p.extra.cpu = machine_cpu_since(cpu_at_start);
            let intel = crate::analysis::intel::row(&p, plan.under_ns);
            if let Some(kv) = p.extra.kv.as_mut() {
                kv.intel = Some(intel);
            }
            let done: u64 = o.rec.ops.iter().sum();
            let cut = match (spec.deadline_ns, total) {
                (Some(d), Some(t)) if done < t && !o.interrupted => Some(d),
                _ => None,
            };
            p.warnings.extend(cut_load.after(step, cut, done, total));
            mismatches += o.rec.mismatches;
            if o.interrupted {
                sink.results.interrupted = true;
            }
            sink.push(p)?;
            let p = sink.results.points.last().expect("just pushed");
            obs.phase_done(&name, &o, p);
        }
        sink.results
            .warnings
            .extend(trailing_chain_steps(&chain_steps));
        Ok(())
    })();
    let outcome = outcome.map_err(|e| on_full_disk(plan, &dir, e));
    sink.results.complete = outcome.is_ok() && !sink.results.interrupted;
    if let Some(cg) = &cgroup {
        if let Some(peak) = cg.peak_bytes() {
            sink.results.extra.memory_cgroup_peak_bytes = Some(peak);
        }
    }
    sink.results.warnings.extend(cleanup(plan, eng.as_ref()));
    sink.save_last()?;
    drop(eng);
    drop(server);
    drop(cgroup);
    drop(dir);
    outcome?;
    Ok(KvRun {
        results: sink.results,
        mismatches,
    })
}

/// An engine's error on a full disk, saying which file system and how
/// full (a raw device and a server elsewhere have none of iolab's).
fn on_full_disk(plan: &KvPlan, dir: &DbDir, e: anyhow::Error) -> anyhow::Error {
    match (&dir.raw, plan.server.url.is_none()) {
        (None, true) => super::space::explain(e, &dir.path),
        _ => e,
    }
}

/// The free-space watch of a phase of an embedded engine in a database
/// directory (a server's writes are its own; a raw device has no file
/// system).
fn space_watch(plan: &KvPlan, dir: &DbDir) -> Option<std::sync::Arc<super::space::SpaceWatch>> {
    if plan.engine.server().is_some() || dir.raw.is_some() {
        return None;
    }
    super::space::SpaceWatch::new(&dir.path).map(std::sync::Arc::new)
}

/// Drop what the run made on a server; the warning if that failed.
fn cleanup(plan: &KvPlan, eng: &dyn KvEngine) -> Option<String> {
    let e = eng.cleanup().err()?;
    Some(format!(
        "could not drop iolab's {} on the server: {e:#}",
        plan.engine.facts().server_object
    ))
}

/// The settings a phase's point names in its params, beside the workload's.
fn name_phase_settings(
    params: &mut BTreeMap<String, String>,
    plan: &KvPlan,
    engine: &str,
    threads: usize,
) {
    params.insert("engine".into(), engine.into());
    params.insert("threads".into(), threads.to_string());
    if let Some(t) = plan.target_ops {
        params.insert("target".into(), t.to_string());
    }
    if let Some(l) = plan.place.memory_limit {
        params.insert("memory_limit".into(), l.to_string());
    }
    // A private server's `--server-set` settings: what a part changed.
    if plan.server.url.is_none() {
        for (k, v) in &plan.server.settings.set {
            params.insert(format!("server.{k}"), v.clone());
        }
    }
}

/// The warning for chain steps that ran after the last phase (no point
/// records them).
fn trailing_chain_steps(steps: &[ChainStepRun]) -> Option<String> {
    if steps.is_empty() {
        return None;
    }
    let ran: Vec<String> = steps
        .iter()
        .map(|c| format!("{} ({:.3} s)", c.step, c.duration_ns as f64 / 1e9))
        .collect();
    Some(format!(
        "chain steps after the last phase ran but precede no point: {}",
        ran.join(", ")
    ))
}

/// Run one db_bench chain step and time it.
fn run_chain_step(eng: &dyn KvEngine, step: ChainStep) -> Result<ChainStepRun> {
    let t0 = crate::measure::clock::mono_now_ns();
    eng.chain_step(step)
        .with_context(|| format!("{} (db_bench chain step)", step.name()))?;
    Ok(ChainStepRun {
        step: step.name().to_string(),
        duration_ns: crate::measure::clock::mono_now_ns().saturating_sub(t0),
    })
}

/// When to print a status line (`--status-interval`, the session's
/// `StatusEvery`), and the counts at the last one (for the current rate and
/// mean latency). Called from the supervising thread only.
struct StatusClock {
    due: crate::session::StatusEvery,
    last: std::cell::Cell<(f64, u64, u64)>,
}

impl StatusClock {
    fn new(every_s: Option<f64>) -> StatusClock {
        StatusClock {
            due: crate::session::StatusEvery::new(every_s),
            last: std::cell::Cell::new((0.0, 0, 0)),
        }
    }

    /// The status line due at `elapsed_s`, if one is.
    fn line(&self, phase: &str, elapsed_s: f64, ops: u64, lat_sum: u64) -> Option<String> {
        if !self.due.due(elapsed_s) {
            return None;
        }
        let (t0, ops0, lat0) = self.last.replace((elapsed_s, ops, lat_sum));
        let d_ops = ops.saturating_sub(ops0);
        let rate = d_ops as f64 / (elapsed_s - t0).max(1e-9);
        let mean_us = if d_ops > 0 {
            lat_sum.saturating_sub(lat0) as f64 / d_ops as f64 / 1e3
        } else {
            0.0
        };
        Some(format!(
            "{} {phase}: {elapsed_s:.0} sec: {ops} operations; {rate:.1} current ops/sec; mean {mean_us:.1} us",
            crate::results::time::now_rfc3339()
        ))
    }
}

/// The private server (`extra.server`) and the memory cgroup
/// (`extra.memory_cgroup`) the run set up.
fn record_setup(r: &mut Results, server: Option<&Server>, cg: Option<&MemoryCgroup>) -> Result<()> {
    if let Some(s) = server {
        r.extra.server = Some(s.info());
    }
    if let Some(cg) = cg {
        r.extra.memory_cgroup = Some(CgroupRecord {
            path: cg.path.display().to_string(),
            version: cg.version,
            limit: cg.limit,
            // A private server started after iolab entered the cgroup inherits it.
            server_inside: server.and_then(|s| s.pgid()).map(|pgid| cg.contains(pgid)),
        });
    }
    Ok(())
}

/// The YCSB load that maxexecutiontime cut short, if the last one was:
/// its workload and the records it inserted. The run phase of that
/// workload runs on those records (keys `insertstart..insertstart +
/// loaded`, handed out in order), not on the `recordcount` asked: YCSB
/// would read the keys never loaded as NOT_FOUND, which iolab's checks
/// would count as lost records.
#[derive(Default)]
struct CutLoad(Option<(String, i64)>);

impl CutLoad {
    /// The step to run in place of `step`, or why it is skipped (a run
    /// whose load inserted nothing).
    fn before(&mut self, step: &Step) -> std::result::Result<Step, String> {
        match (step, &self.0) {
            (Step::YcsbLoad(..), _) => {
                self.0 = None;
                Ok(step.clone())
            }
            (Step::YcsbRun(n, _), Some((of, 0))) if n == of => Err(format!(
                "{n}.run skipped: its load was cut by maxexecutiontime before any record was inserted"
            )),
            (Step::YcsbRun(n, cfg), Some((of, loaded))) if n == of => {
                let mut cfg = cfg.clone();
                cfg.recordcount = cfg.insertstart + loaded;
                Ok(Step::YcsbRun(n.clone(), cfg))
            }
            _ => Ok(step.clone()),
        }
    }

    /// The warnings of a phase that ended with `done` of `total`
    /// operations, `cut` (its deadline in ns) when maxexecutiontime
    /// stopped it; a cut load is remembered for its run.
    fn after(
        &mut self,
        step: &Step,
        cut: Option<u64>,
        done: u64,
        total: Option<u64>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        let time_based =
            matches!(step, Step::YcsbRun(..)) && total == Some(super::ycsb::TIME_BASED_OPS);
        if let (Some(d), Some(t), false) = (cut, total, time_based) {
            out.push(format!(
                "stopped by maxexecutiontime after {} s: {done} of {t} operations",
                d / 1_000_000_000
            ));
            if let Step::YcsbLoad(n, _) = step {
                self.0 = Some((n.clone(), done as i64));
            }
        }
        if let (Step::YcsbRun(n, _), Some((of, loaded))) = (step, &self.0) {
            if n == of {
                out.push(format!(
                    "its load was cut by maxexecutiontime: the run used the {loaded} records loaded as its recordcount"
                ));
            }
        }
        out
    }
}

/// The name of a step's point (`None`: a chain step, which has none).
pub fn phase_name(step: &Step) -> Option<String> {
    match step {
        Step::YcsbLoad(n, _) => Some(format!("{n}.load")),
        Step::YcsbRun(n, _) => Some(format!("{n}.run")),
        Step::Chain(_) => None,
        Step::Bench(b, Some(r)) => Some(format!("{}.readers{r}", b.name())),
        Step::Bench(b, None) => Some(b.name().to_string()),
    }
}

/// The workload of `step`, the `index`-th step of the plan: its point
/// name, work, thread split and parameters.
fn step_job(
    step: &Step,
    index: usize,
    plan: &KvPlan,
    fields_apart: bool,
) -> (String, Box<dyn Work>, PhaseSpec, BTreeMap<String, String>) {
    let (threads, target, seed) = (plan.threads, plan.target_ops, plan.seed);
    match step {
        Step::YcsbLoad(n, cfg) => (
            phase_name(step).unwrap_or_default(),
            Box::new(YcsbLoad::new(cfg, seed, fields_apart)),
            PhaseSpec::split(cfg.insertcount as u64, threads, target, seed)
                .with_deadline_s(cfg.max_execution_s),
            BTreeMap::from([
                ("workload".into(), n.clone()),
                ("phase".into(), "load".into()),
                ("records".into(), cfg.recordcount.to_string()),
                ("fieldlength".into(), cfg.fieldlength.to_string()),
                (
                    "record_bytes".into(),
                    (cfg.fieldcount * cfg.fieldlength).to_string(),
                ),
            ]),
        ),
        Step::YcsbRun(n, cfg) => (
            phase_name(step).unwrap_or_default(),
            Box::new(YcsbRun::new(cfg, seed, fields_apart)),
            PhaseSpec::split(cfg.operationcount.max(0) as u64, threads, target, seed ^ 1)
                .with_deadline_s(cfg.max_execution_s),
            BTreeMap::from([
                ("workload".into(), n.clone()),
                ("phase".into(), "run".into()),
                ("records".into(), cfg.recordcount.to_string()),
                ("fieldlength".into(), cfg.fieldlength.to_string()),
                (
                    "record_bytes".into(),
                    (cfg.fieldcount * cfg.fieldlength).to_string(),
                ),
                ("operations".into(), cfg.operationcount.to_string()),
            ]),
        ),
        // Chain steps are run by `run_chain_step`, never as a phase.
        Step::Chain(c) => unreachable!("chain step {} run as a phase", c.name()),
        Step::Bench(b, readers) => {
            // Each benchmark of a chain draws its own keys, as db_bench
            // seeds each benchmark's threads afresh: an overwrite after a
            // fillrandom writes other keys than the fill did, and a
            // seekrandom after a readrandom looks up others.
            let seed = seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let dbc = plan.bench;
            let reads = plan.reads.reads.unwrap_or(dbc.num);
            let spec = match (b, readers) {
                (Bench::ReadWhileWriting, Some(r)) => PhaseSpec {
                    threads: r + 1,
                    ops: std::iter::once(None)
                        .chain((0..*r).map(|_| Some(reads)))
                        .collect(),
                    rate: std::iter::once(plan.reads.writer_rate)
                        .chain((0..*r).map(|_| None))
                        .collect(),
                    seed: seed ^ 7,
                    flush_after: false,
                    deadline_ns: None,
                    live_ops: None,
                    space: None,
                },
                (Bench::FillSeq | Bench::FillRandom | Bench::Overwrite, _) => {
                    PhaseSpec::split(dbc.num, threads, target, seed ^ 3)
                }
                _ => PhaseSpec::split(reads * threads as u64, threads, target, seed ^ 5),
            };
            let name = phase_name(step).unwrap_or_default();
            let mut params = BTreeMap::from([
                ("workload".into(), b.name().to_string()),
                ("num".into(), dbc.num.to_string()),
                ("key_size".into(), dbc.key_size.to_string()),
                ("key_format".into(), dbc.key_format.name().to_string()),
                ("value_size".into(), dbc.value_size.to_string()),
            ]);
            if let Some(r) = readers {
                params.insert("readers".into(), r.to_string());
            }
            if *b == Bench::ReadRandomWriteRandom {
                params.insert("readwritepercent".into(), dbc.read_percent.to_string());
            }
            (name, Box::new(DbBench::new(*b, dbc, seed)), spec, params)
        }
    }
}

/// The machine's CPU since `start` (`extra.cpu`, as device points have it).
fn machine_cpu_since(
    start: Option<crate::measure::procstat::CpuTicks>,
) -> Option<crate::measure::procstat::SystemCpu> {
    let end = crate::measure::procstat::CpuTicks::now()?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some(end.since(&start?, cpus))
}

/// A warning when `--memory-limit` is below what the engine keeps in memory.
fn memory_limit_warning(l: u64, kind: KvEngineKind, opts: &EngineOptions) -> Option<String> {
    let needs = match kind.facts().memory {
        KvMemory::Embedded(needs) => needs(opts),
        // A private server runs in the cgroup with iolab: its own memory
        // (a JVM heap, shared buffers, Redis's whole dataset) counts against
        // the limit, and what is left is the page cache of its data.
        KvMemory::Server(what) => {
            return Some(format!(
                "--memory-limit {}: the private {} server runs in iolab's memory cgroup, so its own memory{what} counts against the limit and only the rest caches its data; above it the kernel kills the server (OOM)",
                super::report::human(l),
                kind.name(),
            ));
        }
    };
    (needs + (16 << 20) > l).then(|| {
        format!(
            "--memory-limit {} is below what {} keeps in memory ({} of cache and memtables + ~16 MiB); \
             the kernel may kill iolab (OOM). Lower --cache-size / --write-buffer-size.",
            super::report::human(l),
            kind.name(),
            super::report::human(needs)
        )
    })
}

/// Provenance of a kv run: the machine, the engine and the plan.
fn provenance(plan: &KvPlan, eng: &dyn KvEngine, dir: &DbDir) -> Provenance {
    let mut prov = Provenance::collect(plan.seed);
    prov.tools.insert(eng.name().to_string(), eng.version());
    // A server iolab did not start keeps its data where iolab cannot see;
    // a raw run's data is the block device.
    prov.target = match &dir.raw {
        Some(r) => Some(r.target.info()),
        None => plan.server.url.is_none().then(|| {
            target_info(
                &dir.path,
                if plan.place.db.is_some() {
                    TargetKind::Directory
                } else {
                    TargetKind::ScratchFile
                },
            )
        }),
    };
    prov.plan = serde_json::json!({
        "verb": "kv",
        "engine": eng.name(),
        "engine_settings": eng.settings().into_iter().collect::<BTreeMap<_, _>>(),
        "steps": plan.steps.iter().map(super::describe::step).collect::<Vec<_>>(),
        "threads": plan.threads,
        "target": plan.target_ops,
        "memory_limit": plan.place.memory_limit,
        "seed": plan.seed,
    });
    prov
}
