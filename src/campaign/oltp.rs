//! The oltp workload of a campaign (`iolab oltp` over several targets or
//! `--make`): the whole oltp plan (`campaign::oltp_plan::plan`) through
//! `oltp::run::run` with the setup's directory under it (a fresh SQLite
//! database or private server each pass, removed when the pass ends).
//! Each point is named `LABEL rN: oltp.usersU`, tagged with its pass and
//! saved into the one results file as soon as it is measured (`Tagged`);
//! each pass's load goes into `extra.oltp_loads`. With `--hosts` every
//! pass runs on every host at once (`OltpHosts`, `fleet::oltp_run`): the
//! setups are directories on all of them, each host loads its own
//! database per pass, and each point is the hosts' exact merge with a row
//! per host.

use crate::results::sections::PassLoad;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::driver::{run_rounds, Order, PassOutcome, Schedule, Workload};
use super::pass::Pass;
use super::setups::{MediaSet, Subject};
use super::sink::{drive, PassSink, Passes};
use super::tagged::{pass_on_dir, Tagged};
use crate::fleet::oltp_run::OltpOnHosts;
use crate::fleet::{Fleet, JobTarget, OnHostLoss};
use crate::oltp::load::LoadInfo;
use crate::oltp::plan::OltpPlan;
use crate::oltp::point::OltpInfo;
use crate::oltp::run::{consistency_error, OltpObserver, OltpRun, OltpStarted};
use crate::oltp::settings::OltpSettings;
use crate::oltp::sql::connect::SqlEngine;
use crate::results::{Point, Provenance, Results};
use crate::session::Presenter;

/// The checked settings of an oltp media run.
pub struct OltpMediaPlan {
    pub set: MediaSet,
    /// The run of one pass (its target replaced by each target's).
    pub plan: OltpPlan,
    /// Room for the database (and a server's log) in each configuration.
    pub room: u64,
    pub output: Option<PathBuf>,
    pub quiet: bool,
}

/// An oltp campaign's passes on hosts (`--hosts`): the connected fleet
/// and what every host builds its plan from.
pub struct OltpHosts {
    pub fleet: Fleet,
    pub settings: OltpSettings,
    pub on_loss: OnHostLoss,
    /// Why the passes left are not run (a host lost under `stop`).
    pub halted: Option<String>,
}

/// The campaign, on this machine or (`hosts`) on every host at once; the
/// hosts' databases are gone when it returns.
pub fn run(
    m: &OltpMediaPlan,
    presenter: &Presenter<dyn OltpObserver>,
    mut hosts: Option<OltpHosts>,
) -> anyhow::Result<()> {
    if let Some(h) = hosts.as_mut() {
        h.fleet.make(&m.set.make_requests(m.room))?;
    }
    let passes = Passes {
        hosts: hosts
            .as_ref()
            .map(|h| crate::fleet::placement::hosts_record(&h.fleet, None)),
        set: &m.set,
        room: m.room,
        quiet: m.quiet,
        output: m.output.clone(),
    };
    let ran = drive(
        passes,
        presenter,
        || start_results(m),
        |dirs, sink| {
            let schedule = Schedule::of(&m.set, Order::SetupMajor);
            let mut w = OltpPasses {
                m,
                dirs,
                sink,
                term: (presenter.progress)(m.quiet),
                hosts: hosts.as_mut(),
            };
            run_rounds(&schedule, &mut w)
        },
    );
    // Bye to every host: each removes its database before its agent ends.
    if let Some(h) = hosts {
        h.fleet.close();
    }
    let (results, tally) = ran?;
    tally.exit(&results, "oltp", consistency_error)
}

/// The results before the first pass: provenance and the plan.
fn start_results(m: &OltpMediaPlan) -> Results {
    let p = &m.plan;
    let mut provenance = Provenance::collect(p.seed);
    provenance.plan = json!({
        "verb": "oltp",
        "workload": "TPC-C-derived",
        "engine": p.engine.name(),
        "private_server": p.engine != SqlEngine::Sqlite,
        "warehouses": p.warehouses,
        "users": p.users,
        "ramp_s": p.ramp_s,
        "time_s": p.time_s,
        "wait": p.wait,
        "loader_threads": p.loader_threads,
        "check": p.check,
        "seed": p.seed,
    });
    Results::new("oltp", provenance)
}

/// The oltp plan as a campaign workload: one pass is the plan on one setup.
struct OltpPasses<'a> {
    m: &'a OltpMediaPlan,
    dirs: &'a [PathBuf],
    sink: &'a PassSink,
    term: Box<dyn OltpObserver>,
    hosts: Option<&'a mut OltpHosts>,
}

impl Workload for OltpPasses<'_> {
    fn run_pass(&mut self, pass: &Pass, setup: usize, _part: usize) -> anyhow::Result<PassOutcome> {
        if self.hosts.is_some() {
            return self.pass_on_hosts(pass, setup);
        }
        let dir = &self.dirs[setup];
        let mut plan = self.m.plan.clone();
        plan.target = dir.clone();
        pass_on_dir(
            self.sink,
            &*self.term,
            pass,
            (dir, self.m.quiet),
            |obs| crate::oltp::run::run(&plan, obs),
            |run| ran(self.sink, pass, run),
        )
    }

    fn failed(&mut self, what: &str) {
        self.sink.failed(&*self.term, what);
    }
}

impl OltpPasses<'_> {
    /// The plan on every host at once, in setup `setup`'s directory on
    /// each; a host lost under `--on-host-loss stop` leaves the passes
    /// after this one not run.
    fn pass_on_hosts(&mut self, pass: &Pass, setup: usize) -> anyhow::Result<PassOutcome> {
        let h = self.hosts.as_mut().expect("on hosts");
        if let Some(why) = &h.halted {
            return Ok(PassOutcome::Failed(anyhow::anyhow!("{why}")));
        }
        let dir = &self.dirs[setup];
        let mut plan = self.m.plan.clone();
        plan.target = dir.clone();
        let before = h.fleet.agents().len();
        let on = OltpOnHosts {
            plan: &plan,
            settings: h.settings.clone(),
            target: match &self.m.set.subjects[setup] {
                Subject::Made(k) => JobTarget {
                    made: Some(k.name()),
                    ..JobTarget::default()
                },
                Subject::Given(_) => JobTarget {
                    dir: Some(dir.display().to_string()),
                    ..JobTarget::default()
                },
            },
            on_loss: h.on_loss,
        };
        let fleet = &mut h.fleet;
        let outcome = pass_on_dir(
            self.sink,
            &*self.term,
            pass,
            (dir, self.m.quiet),
            |obs| crate::fleet::oltp_run::run(fleet, &on, obs),
            |run| ran(self.sink, pass, run),
        );
        let left = h.fleet.agents().len();
        if left == 0 || (left < before && h.on_loss == OnHostLoss::Stop) {
            h.halted = Some("not run: a host was lost (--on-host-loss stop)".into());
        }
        outcome
    }
}

/// How a pass that ran went, its results merged into the run's.
fn ran(sink: &PassSink, pass: &Pass, run: OltpRun) -> PassOutcome {
    let outcome = PassOutcome::Ran {
        mismatches: run.consistency_failures,
        interrupted: run.results.interrupted,
    };
    merge(sink, pass, run.results);
    outcome
}

/// What a pass's own results add to the run's (`Pass::merge_into`), its
/// load (`extra.oltp_loads`, labelled) and the first pass's server
/// description (`extra.server`: version and settings, the same on every
/// target but the data directory).
fn merge(sink: &PassSink, pass: &Pass, own: Results) {
    let mut s = sink.lock();
    let r = &mut s.results;
    pass.merge_into(r, &own);
    if r.extra.server.is_none() {
        r.extra.server = own.extra.server.clone();
    }
    if let Some(load) = &own.extra.oltp_load {
        r.extra
            .oltp_loads
            .get_or_insert_with(Vec::new)
            .push(PassLoad {
                load: (**load).clone(),
                medium: pass.label.clone(),
                round: pass.round,
            });
    }
}

/// oltp's events of a pass: each point saved, tagged, as it ends.
impl<O: OltpObserver + ?Sized> OltpObserver for Tagged<'_, O> {
    fn server_starting(&self, engine: SqlEngine, under: &Path) {
        self.inner.server_starting(engine, under);
    }

    fn started(&self, s: &OltpStarted<'_>) {
        self.inner.started(s);
    }

    fn loaded(&self, l: &LoadInfo) {
        self.inner.loaded(l);
    }

    fn point_started(&self, users: usize) {
        self.inner.point_started(users);
    }

    fn oltp_point_done(&self, point: &Point, info: &OltpInfo) {
        self.inner.oltp_point_done(point, info);
        self.save(point, point.name.clone());
    }
}
