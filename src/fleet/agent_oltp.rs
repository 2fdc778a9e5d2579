//! The oltp side of `iolab agent`: an oltp plan's points, one prepare and
//! one start each. The plan runs on a thread of its own (`oltp::run`, its
//! database in a scratch directory of the host's directory, registered in
//! the testbed) which loads before the first point and stops before each
//! point until the control side's common instant; the database stays from
//! one point to the next and is removed when the plan ends, the control
//! side says bye or goes away.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::agent_steps::{LiveCount, StepGate, StepSlot, StepThread, StepWork};
use super::proto::{JobTarget, OltpWork};
use crate::error::usage;
use crate::oltp::gate::PointGate;
use crate::oltp::plan::OltpPlan;
use crate::results::Point;

/// The oltp side of the plan thread's gate.
struct OltpGate<'a>(&'a StepGate);

impl PointGate for OltpGate<'_> {
    fn ready(&self, index: usize, users: usize) -> anyhow::Result<()> {
        self.0.ready(index, format!("oltp.users{users}"))
    }

    fn done(&self, _index: usize, point: &Point) {
        self.0.done(point.clone());
    }
}

/// The point's transactions so far, for the progress messages.
struct LiveTxns(Arc<LiveCount>);

impl crate::session::Observer for LiveTxns {}

impl crate::oltp::run::OltpObserver for LiveTxns {
    fn point_progress(&self, txns: u64, _new_orders: u64) {
        self.0 .0.store(txns, Ordering::SeqCst);
    }
}

/// The agent's oltp plan, if one runs.
pub type OltpSlot = StepSlot<OltpWork>;

impl StepWork for OltpWork {
    const WHAT: &'static str = "point";

    fn step(&self) -> u32 {
        self.point
    }

    fn same_plan(&self, running: &Self) -> bool {
        self.settings == running.settings
    }

    fn start(&self, target: &JobTarget) -> anyhow::Result<StepThread> {
        let plan = plan_of(self, target)?;
        StepThread::spawn("agent-oltp", Self::WHAT, move |gate, live| {
            let obs = LiveTxns(live.clone());
            crate::oltp::run::run_gated(&plan, &obs, &OltpGate(gate)).map(|_| ())
        })
    }
}

/// The plan the settings describe, as this host runs it: in the target
/// directory, with no private database server (on a shared one, in a
/// namespace of this host's own).
fn plan_of(w: &OltpWork, target: &JobTarget) -> anyhow::Result<OltpPlan> {
    let s = &w.settings;
    if s.engine.server_kind().is_some() && s.server_url.is_none() {
        return Err(usage(
            "--engine",
            "not on a host of --hosts: a private server (name one every host shares with --server-url)",
        ));
    }
    let dir = target
        .dir
        .as_deref()
        .ok_or_else(|| usage("--target", "an oltp plan needs a directory on the host"))?;
    let path = std::path::PathBuf::from(dir);
    if !path.is_absolute() || !path.is_dir() {
        return Err(usage(
            "--target",
            format!("{dir} is not a directory on this host"),
        ));
    }
    let mut plan = s.plan(path)?;
    // The hosts share the server: each loads into a namespace of its own.
    if plan.server_url.is_some() {
        plan.namespace = Some(crate::kv::engines::server_ns::process_namespace());
    }
    if w.point as usize >= plan.users.len() {
        return Err(usage(
            "point",
            format!("point {} of a plan of {}", w.point, plan.users.len()),
        ));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::agent::Out;
    use crate::fleet::proto::Message;
    use crate::measure::clock::mono_now_ns;
    use crate::oltp::settings::OltpSettings;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    fn work(dir: &std::path::Path) -> (OltpWork, JobTarget) {
        let mut plan = OltpPlan::new(dir.to_path_buf());
        plan.users = vec![1, 2];
        let w = OltpWork {
            settings: OltpSettings::of(&plan, "1s".parse().unwrap(), "0s".parse().unwrap(), None),
            point: 0,
        };
        let target = JobTarget {
            dir: Some(dir.display().to_string()),
            size: None,
            overwrite: false,
            ..JobTarget::default()
        };
        (w, target)
    }

    /// The frames the agent wrote (dropped).
    struct Sink;

    impl std::io::Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn oltp_points_start_at_the_instant_on_one_loaded_database() {
        let d = tempfile::tempdir().unwrap();
        let (mut w, t) = work(d.path());
        let out: Out = Arc::new(Mutex::new(Box::new(Sink)));
        let mut slot = OltpSlot::default();
        for point in [0, 1] {
            w.point = point;
            let ready = slot.prepare(w.clone(), &t);
            assert!(matches!(ready, Message::Ready { .. }), "{ready:?}");
            // The scratch directory holds the loaded database.
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
            let at = mono_now_ns() + 20_000_000;
            let Message::Result(r) = slot.run(at, &out) else {
                panic!("no result")
            };
            assert!(r.started_ns >= at, "released before the instant");
            assert!(r.point.total.ops > 0);
            let oltp = r.point.extra.oltp.as_ref().unwrap();
            assert_eq!(oltp.users, point as usize + 1);
            assert!(oltp.consistency.iter().all(|c| c.passed), "{oltp:?}");
        }
        // After the last point the plan ends by itself and removes it.
        let h = slot.thread().unwrap();
        let end = Instant::now() + Duration::from_secs(60);
        while !h.is_finished() {
            assert!(Instant::now() < end, "the plan did not end");
            std::thread::sleep(Duration::from_millis(10));
        }
        slot.end();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_oltp_prepare_is_checked_before_anything_is_made() {
        let d = tempfile::tempdir().unwrap();
        let (w, t) = work(d.path());
        let field = |w: &OltpWork, t: &JobTarget| {
            let e = plan_of(w, t).unwrap_err();
            e.downcast_ref::<crate::error::UsageError>()
                .map(|u| u.field.clone())
                .unwrap_or_else(|| format!("{e:#}"))
        };
        assert!(plan_of(&w, &t).is_ok());
        let mut bad = w.clone();
        bad.settings.engine = crate::oltp::sql::connect::SqlEngine::Postgres;
        assert_eq!(field(&bad, &t), "--engine");
        let mut bad = w.clone();
        bad.point = 2;
        assert_eq!(field(&bad, &t), "point");
        let rel = JobTarget {
            dir: Some("relative".into()),
            ..t.clone()
        };
        assert_eq!(field(&w, &rel), "--target");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
