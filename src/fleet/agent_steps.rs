//! A plan of gated steps on a thread of the agent's own, for the workloads
//! whose state lives from one step to the next (kv's phases on their
//! databases, oltp's points on its loaded database): the thread stops at
//! each step's gate, says it is ready and waits for the control side's
//! instant (or an abort); each step's point and the operations so far come
//! back to the agent, which answers the control side's prepare and start
//! (`StepSlot`). The workloads' own agent files (`agent_kv`, `agent_oltp`)
//! say how their plan is built and started; everything else is here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::agent::{agent_error, protocol_error, send, wait_until, Out};
use super::proto::{JobResult, JobTarget, Message, ProgressReport};
use crate::interrupt;
use crate::measure::clock::mono_now_ns;
use crate::results::Point;

/// What the control side tells the plan's thread at a step's gate.
enum GateCmd {
    Start(u64),
    Abort,
}

/// What the plan's thread tells the agent.
enum StepEvent {
    Ready { index: usize, name: String },
    Done { point: Box<Point>, started_ns: u64 },
    Finished(Result<(), String>),
}

/// The plan thread's end of the gate: the workload's gate trait forwards
/// to it.
pub struct StepGate {
    events: Sender<StepEvent>,
    cmds: Mutex<Receiver<GateCmd>>,
    released: AtomicU64,
}

impl StepGate {
    /// Step `index` (`name`) is next: say so and return at the control
    /// side's instant; an error when the run was ended instead.
    pub fn ready(&self, index: usize, name: String) -> anyhow::Result<()> {
        self.events
            .send(StepEvent::Ready { index, name })
            .map_err(|_| anyhow::anyhow!("the agent stopped"))?;
        let cmd = self.cmds.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match cmd {
            Ok(GateCmd::Start(at)) => {
                wait_until(at);
                self.released.store(mono_now_ns(), Ordering::SeqCst);
                Ok(())
            }
            _ => anyhow::bail!("stopped before the step (the control side ended the run)"),
        }
    }

    /// The step's point, with the instant its workers were released.
    pub fn done(&self, point: Point) {
        let _ = self.events.send(StepEvent::Done {
            point: Box::new(point),
            started_ns: self.released.load(Ordering::SeqCst),
        });
    }
}

/// The step's operations so far (the workload's observer stores them),
/// for the progress messages.
#[derive(Default)]
pub struct LiveCount(pub AtomicU64);

/// A plan running on its thread.
pub struct StepThread {
    cmds: Sender<GateCmd>,
    events: Receiver<StepEvent>,
    thread: Option<JoinHandle<()>>,
    live: Arc<LiveCount>,
    /// What a step is called in errors ("phase", "point").
    what: &'static str,
}

impl StepThread {
    /// Start `run` (the plan, its gate and its live count) on a thread
    /// named `name`.
    pub fn spawn(
        name: &str,
        what: &'static str,
        run: impl FnOnce(&StepGate, &Arc<LiveCount>) -> anyhow::Result<()> + Send + 'static,
    ) -> anyhow::Result<StepThread> {
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (ev_tx, ev_rx) = mpsc::channel();
        let live = Arc::new(LiveCount::default());
        let shown = live.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let gate = StepGate {
                    events: ev_tx.clone(),
                    cmds: Mutex::new(cmd_rx),
                    released: AtomicU64::new(0),
                };
                let r = run(&gate, &shown);
                let _ = ev_tx.send(StepEvent::Finished(r.map_err(|e| format!("{e:#}"))));
            })?;
        Ok(StepThread {
            cmds: cmd_tx,
            events: ev_rx,
            thread: Some(thread),
            live,
            what,
        })
    }

    /// Wait for the plan's thread to reach step `step`: its name.
    fn ready(&mut self, step: u32) -> anyhow::Result<String> {
        let what = self.what;
        match self.events.recv() {
            Ok(StepEvent::Ready { index, name }) if index == step as usize => Ok(name),
            Ok(StepEvent::Ready { index, name }) => anyhow::bail!(
                "the plan is at {what} {index} ({name}), the control side asked for {step}"
            ),
            Ok(StepEvent::Finished(Err(e))) => anyhow::bail!("{e}"),
            Ok(_) | Err(_) => anyhow::bail!("the plan ended before {what} {step}"),
        }
    }

    /// Whether the plan's thread has ended (tests).
    #[cfg(test)]
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
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

/// A workload's work for one step: which step, whether it goes on with
/// the plan already running, and how a fresh plan starts.
pub trait StepWork: Clone {
    /// What a step is called ("phase", "point").
    const WHAT: &'static str;
    fn step(&self) -> u32;
    /// The same plan as `running` (same settings and directory): its next
    /// step, not a new plan.
    fn same_plan(&self, running: &Self) -> bool;
    /// Start the plan this work describes in `target` (checked first).
    fn start(&self, target: &JobTarget) -> anyhow::Result<StepThread>;
}

/// The plan running on this host, with the work and target it started on.
struct Running<W> {
    work: W,
    dir: String,
    thread: StepThread,
}

/// The agent's plan of one workload, if one runs; `armed` after a ready
/// step. Its state (databases) goes when it ends, and before the process
/// does however `serve` returns.
pub struct StepSlot<W> {
    running: Option<Running<W>>,
    armed: bool,
}

impl<W> Default for StepSlot<W> {
    fn default() -> Self {
        StepSlot {
            running: None,
            armed: false,
        }
    }
}

impl<W> Drop for StepSlot<W> {
    fn drop(&mut self) {
        self.end();
    }
}

impl<W> StepSlot<W> {
    /// Stop the plan (if one runs) and wait for its state to be removed.
    pub fn end(&mut self) {
        self.armed = false;
        if let Some(r) = self.running.take() {
            r.thread.end();
        }
    }
}

impl<W: StepWork> StepSlot<W> {
    /// Set up (or go on with) the plan and wait until its step is ready:
    /// `Ready` naming the step and the directory, or an error.
    pub fn prepare(&mut self, w: W, target: &JobTarget) -> Message {
        self.armed = false;
        let dir = target.dir.clone().unwrap_or_default();
        let same = self
            .running
            .as_ref()
            .is_some_and(|r| w.step() > 0 && w.same_plan(&r.work) && r.dir == dir);
        if !same {
            self.end();
            if w.step() > 0 {
                let what = W::WHAT;
                let why = format!("{what} {} before {what} 0 of its plan", w.step());
                return Message::Error(protocol_error(&why));
            }
            match w.start(target) {
                Ok(thread) => {
                    self.running = Some(Running {
                        work: w.clone(),
                        dir,
                        thread,
                    })
                }
                Err(e) => return Message::Error(agent_error(&e)),
            }
        }
        let r = self.running.as_mut().expect("started above");
        match r.thread.ready(w.step()) {
            Ok(name) => {
                self.armed = true;
                Message::Ready {
                    target: format!("{name} in {}", r.dir),
                }
            }
            Err(e) => {
                self.end();
                Message::Error(agent_error(&e))
            }
        }
    }

    pub fn armed(&self) -> bool {
        self.armed && self.running.is_some()
    }

    /// Release the step at `at` and wait for its point, with a progress
    /// message every second (the control side counts silence as a loss).
    pub fn run(&mut self, at: u64, out: &Out) -> Message {
        self.armed = false;
        let Some(r) = self.running.as_mut() else {
            return Message::Error(protocol_error("start-at before prepare"));
        };
        let t = &mut r.thread;
        t.live.0.store(0, Ordering::SeqCst);
        let _ = t.cmds.send(GateCmd::Start(at));
        let t0 = Instant::now();
        let mut last = (0.0, 0u64);
        loop {
            match t.events.recv_timeout(Duration::from_secs(1)) {
                Ok(StepEvent::Done { point, started_ns }) => {
                    return Message::Result(Box::new(JobResult {
                        point: *point,
                        started_ns,
                    }))
                }
                Err(RecvTimeoutError::Timeout) => {
                    // Before the start instant nothing has run: zeros.
                    let now = (t0.elapsed().as_secs_f64(), t.live.0.load(Ordering::SeqCst));
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
                Ok(StepEvent::Finished(Err(e))) => {
                    self.end();
                    return Message::Error(agent_error(&anyhow::anyhow!(e)));
                }
                Ok(_) | Err(RecvTimeoutError::Disconnected) => {
                    let why = format!("the plan ended during a {}", t.what);
                    self.end();
                    return Message::Error(protocol_error(&why));
                }
            }
        }
    }

    /// The running plan's thread (tests).
    #[cfg(test)]
    pub fn thread(&self) -> Option<&StepThread> {
        self.running.as_ref().map(|r| &r.thread)
    }
}
