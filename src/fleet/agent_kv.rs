//! The kv side of `iolab agent`: a kv plan's phases, one prepare and one
//! start each. The plan runs on a thread of its own (`kv::instances`, one
//! or more databases in a scratch directory of the target directory,
//! registered in the testbed for the sweep) which stops before each phase
//! until the control side's common instant; the databases stay from one
//! phase to the next and are removed when the plan ends, the control side
//! says bye or goes away.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::agent::{agent_error, protocol_error, send, wait_until, Out};
use super::proto::{JobResult, JobTarget, KvWork, Message, ProgressReport};
use crate::error::usage;
use crate::interrupt;
use crate::kv::instances::{self, PhaseGate};
use crate::kv::plan::KvPlan;
use crate::measure::clock::mono_now_ns;
use crate::results::Point;

/// What the control side tells the plan's thread at a phase's gate.
enum GateCmd {
    Start(u64),
    Abort,
}

/// What the plan's thread tells the agent.
enum KvEvent {
    Ready { index: usize, name: String },
    Done { point: Box<Point>, started_ns: u64 },
    Finished(Result<(), String>),
}

/// The gate of the plan's thread: it says it is ready and waits for the
/// instant (or an abort).
struct AgentGate {
    events: Sender<KvEvent>,
    cmds: Mutex<Receiver<GateCmd>>,
    released: AtomicU64,
    single: bool,
}

impl PhaseGate for AgentGate {
    fn ready(&self, index: usize, name: &str) -> anyhow::Result<()> {
        let name = name.to_string();
        self.events
            .send(KvEvent::Ready { index, name })
            .map_err(|_| anyhow::anyhow!("the agent stopped"))?;
        let cmd = self.cmds.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match cmd {
            Ok(GateCmd::Start(at)) => {
                wait_until(at);
                self.released.store(mono_now_ns(), Ordering::SeqCst);
                Ok(())
            }
            _ => anyhow::bail!("stopped before the phase (the control side ended the run)"),
        }
    }

    fn owns_stop(&self) -> bool {
        true
    }

    fn done(&self, _index: usize, point: &Point) {
        let mut point = point.clone();
        if self.single {
            point.extra.instances = None;
        }
        let _ = self.events.send(KvEvent::Done {
            point: Box::new(point),
            started_ns: self.released.load(Ordering::SeqCst),
        });
    }
}

/// The phase's operations so far, from the plan's thread, for the
/// progress messages.
#[derive(Default)]
struct LiveOps(AtomicU64);

impl crate::session::Observer for LiveOps {}

impl crate::kv::run::KvObserver for LiveOps {
    fn phase_progress(&self, done: u64) {
        self.0.store(done, Ordering::SeqCst);
    }
}

/// A kv plan running on this host.
struct KvHost {
    work: KvWork,
    cmds: Sender<GateCmd>,
    events: Receiver<KvEvent>,
    thread: Option<JoinHandle<()>>,
    db: String,
    live: Arc<LiveOps>,
}

/// The agent's kv plan, if one runs; `armed` after a ready phase.
#[derive(Default)]
pub struct KvSlot {
    host: Option<KvHost>,
    armed: bool,
}

/// The plan the settings describe, as this host runs it: in the target
/// directory, with nothing of the control machine's (its files, a
/// results file, a database of its own) and no database server.
fn plan_of(w: &KvWork, target: &JobTarget) -> anyhow::Result<KvPlan> {
    let mut s = w.settings.clone();
    let dir = target
        .dir
        .as_deref()
        .ok_or_else(|| usage("--dir", "a kv plan needs a directory on the host"))?;
    let refused = [
        ("-P", !s.property_files.is_empty()),
        ("--target", !s.place.target.is_empty()),
        ("--db", s.place.db.is_some()),
        ("--destroy-data", s.place.destroy_data.is_some()),
        ("--keep", s.place.keep),
        (
            "--engine",
            s.engine.server().is_some() && s.server.server_url.is_none(),
        ),
        ("--output", s.output.is_some()),
    ];
    if let Some((flag, _)) = refused.iter().find(|(_, r)| *r) {
        return Err(usage(*flag, "not on a host of --hosts"));
    }
    let path = std::path::PathBuf::from(dir);
    if !path.is_absolute() || !path.is_dir() {
        return Err(usage(
            "--dir",
            format!("{dir} is not a directory on this host"),
        ));
    }
    s.place.dir = path;
    s.status_interval = None;
    let plan = crate::kv::settings::plan(&s)?;
    instances::check(&plan, w.instances as usize)?;
    if w.phase as usize >= plan.phases() {
        return Err(usage(
            "phase",
            format!("phase {} of a plan of {}", w.phase, plan.phases()),
        ));
    }
    Ok(plan)
}

impl KvHost {
    fn start(w: KvWork, target: &JobTarget) -> anyhow::Result<KvHost> {
        let plan = plan_of(&w, target)?;
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (ev_tx, ev_rx) = mpsc::channel();
        let n = w.instances as usize;
        let live = Arc::new(LiveOps::default());
        let shown = live.clone();
        let thread = std::thread::Builder::new()
            .name("agent-kv".into())
            .spawn(move || {
                let gate = AgentGate {
                    events: ev_tx.clone(),
                    cmds: Mutex::new(cmd_rx),
                    released: AtomicU64::new(0),
                    single: n == 1,
                };
                let r = instances::run(&plan, n, shown.as_ref(), &gate);
                let _ = ev_tx.send(KvEvent::Finished(
                    r.map(|_| ()).map_err(|e| format!("{e:#}")),
                ));
            })?;
        Ok(KvHost {
            db: target.dir.clone().unwrap_or_default(),
            work: w,
            cmds: cmd_tx,
            events: ev_rx,
            thread: Some(thread),
            live,
        })
    }

    /// Wait for the plan's thread to reach phase `phase`.
    fn ready(&mut self, phase: u32) -> anyhow::Result<String> {
        match self.events.recv() {
            Ok(KvEvent::Ready { index, name }) if index == phase as usize => Ok(name),
            Ok(KvEvent::Ready { index, name }) => anyhow::bail!(
                "the plan is at phase {index} ({name}), the control side asked for {phase}"
            ),
            Ok(KvEvent::Finished(Err(e))) => anyhow::bail!("{e}"),
            Ok(_) | Err(_) => anyhow::bail!("the kv plan ended before phase {phase}"),
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

/// However `serve` returns, the plan's databases go before the process does.
impl Drop for KvSlot {
    fn drop(&mut self) {
        self.end();
    }
}

impl KvSlot {
    /// Set up (or go on with) the plan and wait until its phase is ready:
    /// ready, or an error.
    pub fn prepare(&mut self, w: KvWork, target: &JobTarget) -> Message {
        self.armed = false;
        let same = self.host.as_ref().is_some_and(|h| {
            w.phase > 0
                && serde_json::to_value(&h.work.settings).ok()
                    == serde_json::to_value(&w.settings).ok()
                && h.work.instances == w.instances
                && h.db == target.dir.clone().unwrap_or_default()
        });
        if !same {
            self.end();
            if w.phase > 0 {
                let why = format!("kv phase {} before phase 0 of its plan", w.phase);
                return Message::Error(protocol_error(&why));
            }
            match KvHost::start(w.clone(), target) {
                Ok(h) => self.host = Some(h),
                Err(e) => return Message::Error(agent_error(&e)),
            }
        }
        let host = self.host.as_mut().expect("started above");
        match host.ready(w.phase) {
            Ok(name) => {
                self.armed = true;
                Message::Ready {
                    target: format!("{name} in {}", host.db),
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

    /// Release the phase at `at` and wait for its point, with a progress
    /// message every second (the control side counts silence as a loss).
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
                Ok(KvEvent::Done { point, started_ns }) => {
                    return Message::Result(Box::new(JobResult {
                        point: *point,
                        started_ns,
                    }))
                }
                Err(RecvTimeoutError::Timeout) => {
                    // Before the start instant nothing has run: zeros.
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
                Ok(KvEvent::Finished(Err(e))) => {
                    self.end();
                    return Message::Error(agent_error(&anyhow::anyhow!(e)));
                }
                Ok(_) | Err(RecvTimeoutError::Disconnected) => {
                    self.end();
                    return Message::Error(protocol_error("the kv plan ended during a phase"));
                }
            }
        }
    }

    /// Stop the plan (if one runs) and wait for its databases to be removed.
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
    use crate::kv::engine::KvEngineKind;
    use crate::kv::settings::{BenchSettings, EngineSettings, KvSettings, PhaseSel, PlaceSettings};

    fn work(dir: &std::path::Path) -> (KvWork, JobTarget) {
        let target = JobTarget {
            dir: Some(dir.display().to_string()),
            size: None,
            overwrite: false,
            ..JobTarget::default()
        };
        let w = KvWork {
            settings: settings(),
            instances: 1,
            phase: 0,
        };
        (w, target)
    }

    fn settings() -> KvSettings {
        KvSettings {
            workload: Some("a".into()),
            property_files: vec![],
            property_texts: vec![],
            props: vec!["recordcount=10".into(), "operationcount=10".into()],
            engine: KvEngineKind::parse("sqlite").unwrap(),
            phase: PhaseSel::Both,
            runtime: None,
            threads: 1,
            target_ops: None,
            bench: BenchSettings {
                num: 10,
                key_size: 16,
                key_format: crate::kv::keys::KeyFormat::Decimal,
                value_size: 100,
                reads: None,
                readers: "1".into(),
                writer_rate: None,
                readwritepercent: 90,
                check_values: crate::kv::value::CheckValues::ALL[0],
            },
            eng: EngineSettings {
                sync: false,
                disable_wal: false,
                cache_size: "8m".parse().unwrap(),
                compression: crate::kv::engine::Compression::ALL[0],
                direct_io: false,
                mmap: false,
                page_size: None,
                no_readahead: false,
                map_size: "64m".parse().unwrap(),
                write_buffer_size: "4m".parse().unwrap(),
                bytes_per_sync: "0".parse().unwrap(),
                pipelined_write: false,
                background_jobs: 2,
                wt_table: crate::kv::engine::WtTable::Btree,
                checkpoint_interval: "60s".parse().unwrap(),
                wt_eviction_threads: "4".into(),
                cassandra_compaction: None,
            },
            place: PlaceSettings {
                target: vec![],
                size: None,
                dir: ".".into(),
                db: None,
                destroy_data: None,
                keep: false,
                memory_limit: None,
                drop_caches: false,
                flush_between: false,
            },
            server: crate::servers::flags::ServerFlags {
                server_url: None,
                shared_buffers: None,
                max_wal_size: None,
                buffer_pool: None,
                flush_method: "O_DIRECT".into(),
                persistence: "none".into(),
                appendfsync: "everysec".into(),
                heap: None,
                commitlog_dir: None,
                server_set: vec![],
            },
            under: "1ms".parse().unwrap(),
            seed: 1,
            status_interval: None,
            output: None,
        }
    }

    /// The frames the agent wrote.
    struct Frames(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Frames {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn phases_start_at_the_instant_on_the_same_databases_with_progress() {
        let d = tempfile::tempdir().unwrap();
        let (mut w, t) = work(d.path());
        // A paced load of 2 s: its progress counts operations.
        w.settings.props = vec!["recordcount=600".into(), "operationcount=10".into()];
        w.settings.target_ops = Some(300.0);
        let buf = Arc::new(Mutex::new(Vec::new()));
        let out: Out = Arc::new(Mutex::new(Box::new(Frames(buf.clone()))));
        let mut slot = KvSlot::default();
        let ready = slot.prepare(w.clone(), &t);
        assert!(matches!(ready, Message::Ready { .. }), "{ready:?}");
        let at = mono_now_ns() + 20_000_000;
        let Message::Result(r) = slot.run(at, &out) else {
            panic!("no result")
        };
        assert_eq!(r.point.total.ops, 600);
        assert!(r.started_ns >= at, "released before the instant");
        let bytes = buf.lock().unwrap().clone();
        let mut frames = bytes.as_slice();
        let mut rates = Vec::new();
        while let Ok(Message::Progress(p)) = crate::fleet::proto::read_message(&mut frames) {
            rates.push(p.iops);
        }
        assert!(rates.iter().any(|r| *r > 0.0), "{rates:?}");
        // The run phase reads what the load wrote, in the same databases.
        w.phase = 1;
        let ready = slot.prepare(w, &t);
        assert!(matches!(ready, Message::Ready { .. }), "{ready:?}");
        let Message::Result(r) = slot.run(mono_now_ns(), &out) else {
            panic!("no result")
        };
        assert_eq!(r.point.total.ops, 10);
        assert_eq!(
            r.point.errors.get("not_found"),
            None,
            "{:?}",
            r.point.errors
        );
        // After the last phase the plan ends by itself and removes them.
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
    fn a_kv_prepare_is_checked_before_anything_is_made() {
        let d = tempfile::tempdir().unwrap();
        let (w, t) = work(d.path());
        assert_eq!(plan_of(&w, &t).unwrap().phases(), 2);
        let field = |w: &KvWork, t: &JobTarget| {
            let e = plan_of(w, t).unwrap_err();
            e.downcast_ref::<crate::error::UsageError>()
                .map(|u| u.field.clone())
                .unwrap_or_else(|| format!("{e:#}"))
        };
        let mut bad = w.clone();
        bad.settings.place.db = Some("/x".into());
        assert_eq!(field(&bad, &t), "--db");
        let mut bad = w.clone();
        bad.settings.engine = KvEngineKind::parse("postgres").unwrap();
        assert_eq!(field(&bad, &t), "--engine");
        // One server every host shares: each host its own namespace on it.
        let mut shared = bad.clone();
        shared.settings.server.server_url = Some("postgres://10.0.0.9/db".into());
        assert!(plan_of(&shared, &t).is_ok());
        let mut bad = w.clone();
        bad.phase = 2;
        assert_eq!(field(&bad, &t), "phase");
        let mut bad = w.clone();
        bad.instances = 0;
        assert_eq!(field(&bad, &t), "--instances");
        let rel = JobTarget {
            dir: Some("relative".into()),
            ..t.clone()
        };
        assert_eq!(field(&w, &rel), "--dir");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
