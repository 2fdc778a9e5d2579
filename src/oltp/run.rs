//! `iolab oltp` as a library: `run(plan, observer)` starts the private
//! server (or connects to `--server-url`) and holds it to the end, owns
//! SQLite's scratch directory (registered with `testbed`, removed at the
//! end unless kept), decides the endpoint, loads the database (or reuses a
//! kept one), drives one point per virtual-user count on the same
//! database, probes each phase (`probe`: the server, the device, the
//! timeline), checks consistency after each point, and saves the results
//! through a `ResultsSink` after every point. It never prints: the
//! observer shows progress.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::driver::{self, DriverSpec};
use super::gate::PointGate;
use super::load::{self, LoadInfo};
use super::plan::OltpPlan;
use super::point::{self, OltpInfo, PointSetup};
use super::probe::PhaseProbe;
use super::rand::NuConstants;
use super::sql::connect::{self, SqlEngine};
use super::sql::DbConnect;
use crate::analysis::AnalysisOptions;
use crate::error::usage;
use crate::interrupt;
use crate::measure::sysfs;
use crate::results::provenance::Provenance;
use crate::results::target::{TargetInfo, TargetKind};
use crate::results::{Point, Results};
use crate::servers::{Server, ServerInfo};
use crate::session::sink::ResultsSink;
use crate::session::{Observer, Progress, StatusEvery};
use crate::testbed::{self, Resource};

/// What an oltp run shows beyond the session's observer; every method
/// defaults to nothing.
pub trait OltpObserver: Observer {
    /// A private server is being started with its data under `under`.
    fn server_starting(&self, _engine: SqlEngine, _under: &Path) {}
    /// Connected; the load is next (or skipped).
    fn started(&self, _s: &OltpStarted<'_>) {}
    /// The database is loaded (or was found loaded).
    fn loaded(&self, _l: &LoadInfo) {}
    /// A point with `users` virtual users starts.
    fn point_started(&self, _users: usize) {}
    /// A point finished and is saved.
    fn oltp_point_done(&self, _p: &Point, _info: &OltpInfo) {}
    /// The running point's transactions and new orders so far (about
    /// once a second, ramp included).
    fn point_progress(&self, _txns: u64, _new_orders: u64) {}
}

impl OltpObserver for crate::session::Silent {}

/// What runs where, for the observer's header.
pub struct OltpStarted<'a> {
    pub engine: SqlEngine,
    pub version: &'a str,
    pub endpoint: &'a DbConnect,
    /// The server (private or `--server-url`); none for SQLite.
    pub server: Option<&'a ServerInfo>,
    /// The database stays after the run (`--keep`, `--db`, servers).
    pub kept: bool,
    /// An existing database is reused: no load.
    pub reused: bool,
}

/// The results of an oltp run.
pub struct OltpRun {
    pub results: Results,
    /// Consistency conditions that failed, over all points.
    pub consistency_failures: u64,
}

impl OltpRun {
    /// An error (exit 3) if a consistency condition failed.
    pub fn checked(&self) -> Result<()> {
        match self.consistency_failures {
            0 => Ok(()),
            n => Err(consistency_error(n)),
        }
    }
}

/// The error (exit 3) of `n` failed consistency condition checks.
pub fn consistency_error(n: u64) -> anyhow::Error {
    anyhow::Error::new(crate::error::VerifyFailed { mismatches: n }).context(format!(
        "{n} TPC-C consistency condition check(s) failed (see the warnings)"
    ))
}

/// Where the SQLite database lives; the scratch directory goes on drop
/// unless kept.
struct Place {
    dir: Option<PathBuf>,
    keep: bool,
    file: PathBuf,
    reuse: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(d) = &self.dir {
            if !self.keep {
                let _ = std::fs::remove_dir_all(d);
            }
            testbed::release_path(d);
        }
    }
}

const SQLITE_FILE: &str = "tpcc.sqlite";

fn place(plan: &OltpPlan) -> Result<Place> {
    if let Some(db) = &plan.db {
        if !db.is_file() {
            return Err(usage(
                "--db",
                format!(
                    "{} is not a loaded database file (keep one with --keep)",
                    db.display()
                ),
            ));
        }
        return Ok(Place {
            dir: None,
            keep: true,
            file: db.clone(),
            reuse: true,
        });
    }
    if plan.engine != SqlEngine::Sqlite {
        return Ok(Place {
            dir: None,
            keep: true,
            file: PathBuf::new(),
            reuse: false,
        });
    }
    let meta = std::fs::metadata(&plan.target)
        .map_err(|e| usage("--target", format!("{}: {e}", plan.target.display())))?;
    if !meta.is_dir() {
        return Err(usage(
            "--target",
            format!("{} is not a directory", plan.target.display()),
        ));
    }
    check_space(plan)?;
    let dir = plan
        .target
        .join(format!("iolab-oltp-{}", std::process::id()));
    testbed::create(Resource::Path(dir.clone()), || {
        std::fs::create_dir(&dir)
            .with_context(|| format!("creating scratch directory {}", dir.display()))
    })?;
    Ok(Place {
        file: dir.join(SQLITE_FILE),
        dir: Some(dir),
        keep: plan.keep,
        reuse: false,
    })
}

/// Refuse a load that cannot fit under the target.
fn check_space(plan: &OltpPlan) -> Result<()> {
    let need = plan.warehouses as u64 * load::SQLITE_BYTES_PER_WAREHOUSE;
    let Ok(free) = crate::dut::scratch::free_bytes(&plan.target) else {
        return Ok(());
    };
    if need > free {
        return Err(usage(
            "--warehouses",
            format!(
                "{} warehouse(s) need about {} MiB on SQLite and {} has {} MiB free",
                plan.warehouses,
                need >> 20,
                plan.target.display(),
                free >> 20
            ),
        ));
    }
    Ok(())
}

/// Bytes of the SQLite database and its WAL.
fn sqlite_size(file: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", file.display())).ok())
        .map(|m| m.len())
        .sum()
}

/// What every phase of a run shares.
struct Phases<'a> {
    plan: &'a OltpPlan,
    db: &'a DbConnect,
    version: &'a str,
    server: Option<&'a Server>,
    /// SQLite's directory (the scratch one or `--db`'s).
    sqlite_dir: Option<&'a Path>,
    obs: &'a dyn OltpObserver,
}

impl Phases<'_> {
    fn probe(&self) -> PhaseProbe<'_> {
        PhaseProbe::new(self.server.map(|s| s as _), self.sqlite_dir)
    }
}

/// Load the database, or check the reused one.
fn load_or_check(
    ph: &Phases<'_>,
    pl: &Place,
    conn: &mut dyn super::sql::SqlConn,
) -> Result<LoadInfo> {
    let (plan, obs) = (ph.plan, ph.obs);
    let mut info = if pl.reuse {
        let found = load::warehouses_in(conn)?;
        if found != plan.warehouses {
            return Err(usage(
                "--warehouses",
                format!(
                    "{} holds {found} warehouse(s), not {}",
                    pl.file.display(),
                    plan.warehouses
                ),
            ));
        }
        LoadInfo {
            warehouses: found,
            rows: load::check_rows(conn, found, true)?,
            loaded: false,
            ..Default::default()
        }
    } else {
        let status = StatusEvery::new(plan.status_interval_s);
        let t0 = crate::measure::clock::mono_now_ns();
        let progress = |done: u64, planned: u64| {
            let elapsed_s = (crate::measure::clock::mono_now_ns() - t0) as f64 / 1e9;
            let label = format!("loading: {done} of ~{planned} rows");
            // The load at its pace so far, then every point's ramp and time.
            let points_s = plan.users.len() as f64 * (plan.ramp_s + plan.time_s);
            let load_left_s =
                (done > 0).then(|| elapsed_s * planned.saturating_sub(done) as f64 / done as f64);
            obs.progress(&Progress {
                label: &label,
                elapsed_s,
                expected_s: None,
                eta_s: load_left_s.map(|l| l + points_s),
                live: None,
            });
            if status.due(elapsed_s) {
                obs.status(&format!(
                    "{} load: {elapsed_s:.0} sec: {done} rows",
                    crate::results::time::now_rfc3339()
                ));
            }
        };
        let mut probe = ph.probe();
        probe.begin();
        let l = load::load(
            ph.db,
            plan.warehouses,
            plan.loader_threads,
            plan.seed,
            probe.ops(),
            &progress,
        );
        probe.end_with(probe.ops().load(std::sync::atomic::Ordering::Relaxed));
        obs.progress_done();
        let mut l = l?;
        super::load::set_measured(&mut l, probe.result);
        l
    };
    info.db_size_bytes = match plan.engine {
        SqlEngine::Sqlite => sqlite_size(&pl.file),
        _ => load::server_db_size(conn).unwrap_or(0),
    };
    Ok(info)
}

/// The server of a server engine: a private one under the target, or the
/// one `--server-url` names (exit 2 naming it when unreachable).
fn server_for(plan: &OltpPlan, obs: &dyn OltpObserver) -> Result<Option<Server>> {
    let Some(kind) = plan.engine.server_kind() else {
        return Ok(None);
    };
    if plan.server_url.is_none() {
        obs.server_starting(plan.engine, &plan.target);
    }
    Server::start_or_connect(
        kind,
        plan.server_url.as_deref(),
        &plan.target,
        &plan.settings,
    )
    .map(Some)
}

/// Run `plan`, reporting to `obs`.
pub fn run(plan: &OltpPlan, obs: &dyn OltpObserver) -> Result<OltpRun> {
    run_gated(plan, obs, &super::gate::Now)
}

/// `run`, each point started when `gate` says (a fleet's common instant
/// on a host of `oltp --hosts`).
pub fn run_gated(plan: &OltpPlan, obs: &dyn OltpObserver, gate: &dyn PointGate) -> Result<OltpRun> {
    plan.validate()?;
    interrupt::install();
    // Dropped last: the server stops after every connection has closed.
    let server = server_for(plan, obs)?;
    let server_info = server.as_ref().map(Server::info);
    let pl = place(plan)?;
    let db = connect::for_plan(plan.engine, server.as_ref(), &pl.file)?;
    // Dropped after every connection: a shared server's namespace.
    let (db, namespace) = match &plan.namespace {
        Some(n) => super::namespace::make(db, n)?,
        None => (db, None),
    };
    let mut conn = db.open_checked(false)?;
    let version = conn.version();
    obs.started(&OltpStarted {
        engine: plan.engine,
        version: &version,
        endpoint: &db,
        server: server_info.as_ref(),
        kept: pl.keep,
        reused: pl.reuse,
    });
    let mut sink = ResultsSink::new(
        Results::new(
            "oltp",
            provenance(plan, &db, &version, &pl, server.as_ref()),
        ),
        plan.output.clone(),
        AnalysisOptions::default(),
    );
    if let Some(info) = &server_info {
        sink.results.extra.server = Some(info.clone());
    }
    let ph = Phases {
        plan,
        db: &db,
        version: &version,
        server: server.as_ref(),
        sqlite_dir: (plan.engine == SqlEngine::Sqlite)
            .then(|| pl.file.parent())
            .flatten(),
        obs,
    };
    let info = load_or_check(&ph, &pl, conn.as_mut())?;
    obs.loaded(&info);
    sink.results.extra.oltp_load = Some(Box::new(info.clone()));
    sink.save()?;
    let mut failures = 0;
    let constants = NuConstants::for_run(NuConstants::for_load(plan.seed), plan.seed);
    let outcome = (|| -> Result<()> {
        for (i, &users) in plan.users.iter().enumerate() {
            if interrupt::stop_requested() {
                sink.results.interrupted = true;
                break;
            }
            gate.ready(i, users)?;
            let p = run_point(&ph, conn.as_mut(), users, constants)?;
            let interrupted = p.is_interrupted();
            failures += p
                .extra
                .oltp
                .as_ref()
                .map_or(0, |o| o.consistency_failures());
            sink.push(p)?;
            let p = sink.results.points.last().expect("just pushed");
            gate.done(i, p);
            if let Some(o) = &p.extra.oltp {
                obs.oltp_point_done(p, o);
            }
            if interrupted {
                sink.results.interrupted = true;
                break;
            }
        }
        Ok(())
    })();
    if failures > 0 {
        sink.results.warnings.push(format!(
            "{failures} TPC-C consistency condition check(s) failed"
        ));
    }
    sink.results.complete = outcome.is_ok() && !sink.results.interrupted;
    sink.save_last()?;
    drop(conn);
    drop(namespace);
    drop(pl);
    drop(server);
    outcome?;
    Ok(OltpRun {
        results: sink.results,
        consistency_failures: failures,
    })
}

/// One point: `users` virtual users for the ramp and the measured time
/// (probed: the server, the device, the timeline), then the consistency
/// check.
fn run_point(
    ph: &Phases<'_>,
    conn: &mut dyn super::sql::SqlConn,
    users: usize,
    constants: NuConstants,
) -> Result<Point> {
    let (plan, obs) = (ph.plan, ph.obs);
    obs.point_started(users);
    let spec = DriverSpec {
        users,
        warehouses: plan.warehouses,
        ramp_ns: (plan.ramp_s * 1e9) as u64,
        time_ns: (plan.time_s * 1e9) as u64,
        wait: plan.wait,
        seed: plan.seed ^ (users as u64).wrapping_mul(0xA24B_AED4_963E_E407),
        constants,
    };
    let started_at = crate::results::time::now_rfc3339();
    let status = StatusEvery::new(plan.status_interval_s);
    let expected = plan.ramp_s + plan.time_s;
    // This point and the ones after it (users counts run in order).
    let left = plan.users.len() - plan.users.iter().position(|&u| u == users).unwrap_or(0);
    let tick = |elapsed_s: f64, ramp: bool, txns: u64, new_orders: u64| {
        obs.point_progress(txns, new_orders);
        let label = if ramp {
            format!("{users} user(s): ramp")
        } else {
            let measured = (elapsed_s - plan.ramp_s).max(1e-9);
            format!(
                "{users} user(s): {txns} txns, NOPM {:.0}",
                new_orders as f64 * 60.0 / measured
            )
        };
        obs.progress(&Progress {
            label: &label,
            elapsed_s,
            expected_s: Some(expected),
            eta_s: Some((expected * left as f64 - elapsed_s).max(0.0)),
            live: None,
        });
        if status.due(elapsed_s) {
            obs.status(&format!(
                "{} oltp users={users}: {elapsed_s:.0} sec: {txns} transactions; {new_orders} new orders{}",
                crate::results::time::now_rfc3339(),
                if ramp { " (ramp)" } else { "" }
            ));
        }
    };
    let mut probe = ph.probe();
    let o = driver::run(ph.db, &spec, &tick, &mut probe);
    obs.progress_done();
    let o = o?;
    let consistency = if plan.check && !o.interrupted {
        super::consistency::check(conn)?
    } else {
        Vec::new()
    };
    let mut p = point::build(
        &PointSetup {
            engine: plan.engine.name(),
            engine_version: ph.version,
            warehouses: plan.warehouses,
            users,
            wait: plan.wait,
            started_at,
            ramp_ns: spec.ramp_ns,
        },
        &o,
        consistency,
    );
    let measured = probe.result;
    p.device = measured.device;
    p.extra.server = measured.server.map(Box::new);
    p.extra.timeline = measured.timeline.map(Box::new);
    Ok(p)
}

/// Provenance: the machine, the engine, where the database is (SQLite's
/// file or a private server's data directory, with the disk under it),
/// the plan.
fn provenance(
    plan: &OltpPlan,
    db: &DbConnect,
    version: &str,
    pl: &Place,
    server: Option<&Server>,
) -> Provenance {
    let mut prov = Provenance::collect(plan.seed);
    prov.tools
        .insert(plan.engine.name().to_string(), version.to_string());
    let data = match (plan.engine, server) {
        (SqlEngine::Sqlite, _) => Some((
            pl.file.parent().unwrap_or(Path::new(".")).to_path_buf(),
            if pl.reuse {
                TargetKind::ExistingFile
            } else {
                TargetKind::ScratchFile
            },
        )),
        (_, Some(s)) => s
            .data_dir()
            .map(|d| (d.to_path_buf(), TargetKind::ScratchFile)),
        _ => None,
    };
    if let Some((dir, kind)) = data {
        let dev = sysfs::devnum_of_path(&dir);
        prov.target = Some(TargetInfo {
            path: dir.display().to_string(),
            kind,
            size_bytes: 0,
            filesystem: sysfs::fs_of_path(&dir),
            disk: dev.and_then(sysfs::disk_info),
            export: None,
        });
    }
    prov.plan = serde_json::json!({
        "verb": "oltp",
        "workload": "TPC-C-derived",
        "engine": plan.engine.name(),
        "endpoint": db.describe(),
        "private_server": server.is_some_and(Server::is_private),
        "namespace": plan.namespace,
        "warehouses": plan.warehouses,
        "users": plan.users,
        "ramp_s": plan.ramp_s,
        "time_s": plan.time_s,
        "wait": plan.wait,
        "loader_threads": plan.loader_threads,
        "check": plan.check,
        "seed": plan.seed,
    });
    prov
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The progress lines' ETAs, with their labels.
    #[derive(Default)]
    struct Etas(Mutex<Vec<(String, Option<f64>)>>);

    impl Observer for Etas {
        fn progress(&self, p: &Progress<'_>) {
            self.0.lock().unwrap().push((p.label.to_string(), p.eta_s));
        }
    }
    impl OltpObserver for Etas {}

    /// The load and every point say how long the run has left (they said
    /// nothing: `eta_s` was never set in oltp).
    #[test]
    fn the_load_and_the_points_show_an_eta() {
        let dir = tempfile::tempdir().unwrap();
        let plan = OltpPlan {
            users: vec![1, 2],
            ramp_s: 0.0,
            time_s: 1.5,
            ..OltpPlan::new(dir.path().to_path_buf())
        };
        let etas = Etas::default();
        run(&plan, &etas).unwrap();
        let seen = etas.0.lock().unwrap();
        let of = |what: &str| -> Vec<f64> {
            seen.iter()
                .filter(|(l, _)| l.starts_with(what))
                .filter_map(|(_, e)| *e)
                .collect()
        };
        let load = of("loading");
        assert!(!load.is_empty(), "no ETA while loading: {seen:?}");
        // During the first of two 1.5 s points the second's time is left
        // too (with only its own, no ETA of the first point could pass 1.5).
        let first = of("1 user(s)");
        assert!(first.iter().any(|e| *e > 1.6), "{seen:?}");
    }
}
