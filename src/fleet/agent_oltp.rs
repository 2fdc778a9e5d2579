//! The oltp side of `iolab agent`: an oltp plan's points, one prepare and
//! one start each. The plan runs on a thread of its own (`oltp::run`, its
//! database in a scratch directory of the host's directory, registered in
//! the testbed) which loads before the first point and stops before each
//! point until the control side's common instant; the database stays from
//! one point to the next and is removed when the plan ends, the control
//! side says bye or goes away.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::agent::{agent_error, protocol_error, send, wait_until, Out};
use super::proto::{JobResult, JobTarget, Message, OltpWork, ProgressReport};
use crate::error::usage;
use crate::interrupt;
use crate::measure::clock::mono_now_ns;
use crate::oltp::gate::PointGate;
use crate::oltp::plan::OltpPlan;
use crate::results::Point;

/// What the control side tells the plan's thread at a point's gate.
enum GateCmd {
    Start(u64),
    Abort,
}

/// What the plan's thread tells the agent.
enum OltpEvent {
    Ready { index: usize, users: usize },
    Done { point: Box<Point>, started_ns: u64 },
    Finished(Result<(), String>),
}

/// The gate of the plan's thread: it says it is ready and waits for the
/// instant (or an abort).
struct AgentGate {
    events: Sender<OltpEvent>,
    cmds: Mutex<Receiver<GateCmd>>,
    released: AtomicU64,
}

impl PointGate for AgentGate {
    fn ready(&self, index: usize, users: usize) -> anyhow::Result<()> {
        self.events
            .send(OltpEvent::Ready { index, users })
            .map_err(|_| anyhow::anyhow!("the agent stopped"))?;
        let cmd = self.cmds.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match cmd {
            Ok(GateCmd::Start(at)) => {
                wait_until(at);
                self.released.store(mono_now_ns(), Ordering::SeqCst);
                Ok(())
            }
            _ => anyhow::bail!("stopped before the point (the control side ended the run)"),
        }
    }

    fn done(&self, _index: usize, point: &Point) {
        let _ = self.events.send(OltpEvent::Done {
            point: Box::new(point.clone()),
            started_ns: self.released.load(Ordering::SeqCst),
        });
    }
}

/// The point's transactions so far, for the progress messages.
#[derive(Default)]
struct LiveTxns(AtomicU64);

impl crate::session::Observer for LiveTxns {}

impl crate::oltp::run::OltpObserver for LiveTxns {
    fn point_progress(&self, txns: u64, _new_orders: u64) {
        self.0.store(txns, Ordering::SeqCst);
    }
}

/// An oltp plan running on this host.
struct OltpHost {
    work: OltpWork,
    cmds: Sender<GateCmd>,
    events: Receiver<OltpEvent>,
    thread: Option<JoinHandle<()>>,
    dir: String,
    live: Arc<LiveTxns>,
}

/// The agent's oltp plan, if one runs; `armed` after a ready point.
#[derive(Default)]
pub struct OltpSlot {
    host: Option<OltpHost>,
    armed: bool,
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

impl OltpHost {
    fn start(w: OltpWork, target: &JobTarget) -> anyhow::Result<OltpHost> {
        let plan = plan_of(&w, target)?;
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (ev_tx, ev_rx) = mpsc::channel();
        let live = Arc::new(LiveTxns::default());
        let shown = live.clone();
        let thread = std::thread::Builder::new()
            .name("agent-oltp".into())
            .spawn(move || {
                let gate = AgentGate {
                    events: ev_tx.clone(),
                    cmds: Mutex::new(cmd_rx),
                    released: AtomicU64::new(0),
                };
                let r = crate::oltp::run::run_gated(&plan, shown.as_ref(), &gate);
                let _ = ev_tx.send(OltpEvent::Finished(
                    r.map(|_| ()).map_err(|e| format!("{e:#}")),
                ));
            })?;
        Ok(OltpHost {
            dir: target.dir.clone().unwrap_or_default(),
            work: w,
            cmds: cmd_tx,
            events: ev_rx,
            thread: Some(thread),
            live,
        })
    }

    /// Wait for the plan's thread to reach point `point` (the first after
    /// the load).
    fn ready(&mut self, point: u32) -> anyhow::Result<usize> {
        match self.events.recv() {
            Ok(OltpEvent::Ready { index, users }) if index == point as usize => Ok(users),
            Ok(OltpEvent::Ready { index, .. }) => {
                anyhow::bail!("the plan is at point {index}, the control side asked for {point}")
            }
            Ok(OltpEvent::Finished(Err(e))) => anyhow::bail!("{e}"),
            Ok(_) | Err(_) => anyhow::bail!("the oltp plan ended before point {point}"),
        }
    }

    fn end(mut self) {
        let _ = self.cmds.send(GateCmd::Abort);
        let Some(t) = self.thread.take() else { return };
        if t.is_finished() {
            let _ = t.join();
            return;
        }
        interrupt::request_stop();
        let _ = t.join();
        // The stop was the plan's; a prepare after it starts afresh.
        interrupt::reset();
    }
}

/// However `serve` returns, the plan's database goes before the process does.
impl Drop for OltpSlot {
    fn drop(&mut self) {
        self.end();
    }
}

impl OltpSlot {
    /// Set up (or go on with) the plan and wait until its point is ready
    /// (after the load, for the first): ready, or an error.
    pub fn prepare(&mut self, w: OltpWork, target: &JobTarget) -> Message {
        self.armed = false;
        let same = self.host.as_ref().is_some_and(|h| {
            w.point > 0
                && h.work.settings == w.settings
                && h.dir == target.dir.clone().unwrap_or_default()
        });
        if !same {
            self.end();
            if w.point > 0 {
                let why = format!("oltp point {} before point 0 of its plan", w.point);
                return Message::Error(protocol_error(&why));
            }
            match OltpHost::start(w.clone(), target) {
                Ok(h) => self.host = Some(h),
                Err(e) => return Message::Error(agent_error(&e)),
            }
        }
        let host = self.host.as_mut().expect("started above");
        match host.ready(w.point) {
            Ok(users) => {
                self.armed = true;
                Message::Ready {
                    target: format!("oltp.users{users} in {}", host.dir),
                }
            }
            Err(e) => {
                self.end();
                Message::Error(agent_error(&e))
            }
        }
    }

    pub fn armed(&self) -> bool {
        self.armed && self.host.is_some()
    }

    /// Release the point at `at` and wait for it, with a progress message
    /// every second (the control side counts silence as a loss).
    pub fn run(&mut self, at: u64, out: &Out) -> Message {
        self.armed = false;
        let Some(host) = self.host.as_mut() else {
            return Message::Error(protocol_error("start-at before prepare"));
        };
        host.live.0.store(0, Ordering::SeqCst);
        let _ = host.cmds.send(GateCmd::Start(at));
        let t0 = Instant::now();
        let mut last = (0.0, 0u64);
        loop {
            match host.events.recv_timeout(Duration::from_secs(1)) {
                Ok(OltpEvent::Done { point, started_ns }) => {
                    return Message::Result(Box::new(JobResult {
                        point: *point,
                        started_ns,
                    }))
                }
                Err(RecvTimeoutError::Timeout) => {
                    let now = (
                        t0.elapsed().as_secs_f64(),
                        host.live.0.load(Ordering::SeqCst),
                    );
                    let dt = (now.0 - last.0).max(1e-3);
                    let p = ProgressReport {
                        second: now.0.round() as u64,
                        elapsed_s: now.0,
                        iops: now.1.saturating_sub(last.1) as f64 / dt,
                        ..ProgressReport::default()
                    };
                    last = now;
                    let _ = send(out, &Message::Progress(p));
                }
                Ok(OltpEvent::Finished(Err(e))) => {
                    self.end();
                    return Message::Error(agent_error(&anyhow::anyhow!(e)));
                }
                Ok(_) | Err(RecvTimeoutError::Disconnected) => {
                    self.end();
                    return Message::Error(protocol_error("the oltp plan ended during a point"));
                }
            }
        }
    }

    /// Stop the plan (if one runs) and wait for its database to be removed.
    pub fn end(&mut self) {
        self.armed = false;
        if let Some(h) = self.host.take() {
            h.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oltp::settings::OltpSettings;

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
        let h = slot.host.as_ref().unwrap().thread.as_ref().unwrap();
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
