//! `iolab agent`: the host side of a fleet. It speaks the framed protocol on
//! its stdin/stdout (the ssh channel), prepares a job's target when told,
//! releases its workers at the instant the control side gives, and sends
//! the point back. It answers clock probes from its reader thread, so a
//! probe's round trip never waits on the job. When its input ends (the
//! control side or the ssh died) it stops the job, tears down what it made
//! and exits within a few seconds; what a SIGKILL leaves is registered in
//! the testbed, for that host's next iolab start to sweep.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::agent_kv::KvSlot;
use super::agent_media::HostMedia;
use super::agent_oltp::OltpSlot;
use super::build;
use super::proto::{
    self, AgentError, AgentWork, ClockReply, Hello, JobResult, JobTarget, Message, ProgressReport,
    ProtoError,
};
use super::serving::TargetSide;
use crate::dut::{self, Target, TargetOptions};
use crate::error::UsageError;
use crate::interrupt;
use crate::measure::clock::mono_now_ns;
use crate::plan::job::JobSpec;
use crate::runner::job::{run_job, RunOptions};

/// How long the agent lets a stopped job wind down after its input ended
/// before it tears everything down itself and exits.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(3);

pub(super) type Out = Arc<Mutex<Box<dyn Write + Send>>>;

pub(super) fn send(out: &Out, m: &Message) -> anyhow::Result<()> {
    let mut w = out.lock().unwrap_or_else(|e| e.into_inner());
    proto::write_message(&mut *w, m)
}

/// What the reader hands to the agent's main loop.
enum Event {
    Msg(Message),
    /// The input ended or went bad (the reason, for the agent's stderr).
    Ended(String),
}

/// Read frames; answer clock probes at once; a stop or the end of input
/// stops a running job through the process's stop flag.
fn reader(
    mut input: impl Read,
    out: Out,
    tx: mpsc::Sender<Event>,
    served: Arc<AtomicBool>,
    heard: Arc<AtomicU64>,
) {
    loop {
        let m = proto::read_message(&mut input);
        heard.store(mono_now_ns(), Ordering::SeqCst);
        match m {
            Ok(Message::KeepAlive) => {}
            Ok(Message::ClockProbe { seq }) => {
                let reply = Message::ClockReply(ClockReply {
                    seq,
                    agent_ns: mono_now_ns(),
                });
                if send(&out, &reply).is_err() {
                    interrupt::request_stop();
                }
            }
            Ok(Message::Stop) => interrupt::request_stop(),
            Ok(m) => {
                if tx.send(Event::Msg(m)).is_err() {
                    return;
                }
            }
            // After `serve` returned (a bye), the end of input ends nothing:
            // no stop for a process that may go on (a test, say).
            Err(_) if served.load(Ordering::SeqCst) => return,
            Err(e) => {
                interrupt::request_stop();
                let why = match e {
                    ProtoError::Closed => "the control side closed the channel".to_string(),
                    other => format!("{other}"),
                };
                let _ = tx.send(Event::Ended(why));
                orphan_watchdog(&served);
                return;
            }
        }
    }
}

/// The control side is silent (a partitioned host's input never ends): after
/// `silence` without a message (keep-alives come every 5 s), stop the job
/// and end the agent as if the input had closed.
fn silence_watchdog(
    silence: Duration,
    heard: Arc<AtomicU64>,
    tx: mpsc::Sender<Event>,
    served: Arc<AtomicBool>,
) {
    loop {
        std::thread::sleep(Duration::from_millis(250).min(silence));
        if served.load(Ordering::SeqCst) {
            return;
        }
        let quiet = mono_now_ns().saturating_sub(heard.load(Ordering::SeqCst));
        if quiet >= silence.as_nanos() as u64 {
            interrupt::request_stop();
            let why = format!(
                "the control side was silent for {} s (no keep-alive)",
                silence.as_secs()
            );
            let _ = tx.send(Event::Ended(why));
            orphan_watchdog(&served);
            return;
        }
    }
}

/// The input is gone: if `serve` has not returned after the grace period
/// (a job that does not stop), tear down and exit from here.
fn orphan_watchdog(served: &AtomicBool) {
    std::thread::sleep(ORPHAN_GRACE);
    if !served.load(Ordering::SeqCst) {
        crate::testbed::teardown_all();
        std::process::exit(1);
    }
}

/// Marks `serve` as returned, however it returns.
struct Served(Arc<AtomicBool>);

impl Drop for Served {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

pub(super) fn agent_error(e: &anyhow::Error) -> AgentError {
    AgentError {
        message: format!("{e:#}"),
        field: e.downcast_ref::<UsageError>().map(|u| u.field.clone()),
    }
}

/// A device job's prepare.
struct DeviceWork {
    job: JobSpec,
    target: JobTarget,
}

/// This host's name, as the kernel has it (empty when unreadable).
pub fn this_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Run the agent on these streams until the control side says bye, goes
/// away or is silent for `proto::CONTROL_SILENCE`.
pub fn serve(
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
) -> anyhow::Result<()> {
    serve_within(input, output, proto::CONTROL_SILENCE)
}

/// `serve`, ending after `silence` without a message from the control side.
pub fn serve_within(
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
    silence: Duration,
) -> anyhow::Result<()> {
    let out: Out = Arc::new(Mutex::new(Box::new(output)));
    let hello = Hello {
        protocol: proto::PROTOCOL_VERSION,
        build: build::current()?,
        hostname: this_hostname(),
        pid: std::process::id(),
        identity: proto::HostIdentity::current(),
    };
    send(&out, &Message::Hello(hello))?;
    let (tx, rx) = mpsc::channel();
    let rout = out.clone();
    let served = Served(Arc::new(AtomicBool::new(false)));
    let flag = served.0.clone();
    let heard = Arc::new(AtomicU64::new(mono_now_ns()));
    let (watch_heard, watch_tx, watch_flag) = (heard.clone(), tx.clone(), flag.clone());
    std::thread::Builder::new()
        .name("agent-rx".into())
        .spawn(move || reader(input, rout, tx, flag, heard))?;
    std::thread::Builder::new()
        .name("agent-silence".into())
        .spawn(move || silence_watchdog(silence, watch_heard, watch_tx, watch_flag))?;
    // Declared first, dropped last: the jobs' files and databases live in
    // the configurations' file systems.
    let mut media = HostMedia::default();
    let mut target: Option<(DeviceWork, Target)> = None;
    let mut kv = KvSlot::default();
    let mut oltp = OltpSlot::default();
    // Serving an export and sampling the CPU, as a target host.
    let mut side = TargetSide::default();
    // A prepare arms one start; the target may outlive it (`reusable`).
    let mut armed = false;
    loop {
        match next(&rx) {
            Event::Ended(why) => {
                kv.end();
                oltp.end();
                drop(target);
                drop(side);
                anyhow::bail!("{why}; the agent tore down and exits");
            }
            Event::Msg(Message::Bye) => {
                kv.end();
                oltp.end();
                return Ok(());
            }
            Event::Msg(m @ (Message::Serve(_) | Message::CpuWindow { .. })) => {
                let reply = side
                    .handle(m)
                    .unwrap_or_else(|e| Message::Error(agent_error(&e)));
                send(&out, &reply)?;
            }
            Event::Msg(Message::Make(req)) => {
                // A configuration outlives jobs: nothing runs on it yet.
                send(&out, &media.make(req))?;
            }
            Event::Msg(Message::Prepare(p)) => {
                interrupt::reset();
                let mut p = *p;
                p.target = match media.resolve(&p.target) {
                    Ok(t) => t,
                    Err(e) => {
                        send(&out, &Message::Error(agent_error(&e)))?;
                        continue;
                    }
                };
                let job = match p.work {
                    AgentWork::Kv(w) => {
                        (target, armed) = (None, false);
                        oltp.end();
                        send(&out, &kv.prepare(*w, &p.target))?;
                        continue;
                    }
                    AgentWork::Oltp(w) => {
                        (target, armed) = (None, false);
                        kv.end();
                        send(&out, &oltp.prepare(*w, &p.target))?;
                        continue;
                    }
                    AgentWork::Device(job) => *job,
                };
                kv.end();
                oltp.end();
                let p = Box::new(DeviceWork {
                    job,
                    target: p.target,
                });
                let made = match target.take().filter(|(old, _)| reusable(old, &p)) {
                    Some((_, kept)) => Ok(kept),
                    None => prepare(&p),
                };
                match made {
                    Ok(t) => {
                        let path = t.path.display().to_string();
                        target = Some((*p, t));
                        armed = true;
                        send(&out, &Message::Ready { target: path })?;
                    }
                    Err(e) => send(&out, &Message::Error(agent_error(&e)))?,
                }
            }
            Event::Msg(Message::StartAt { agent_ns }) if kv.armed() => {
                send(&out, &kv.run(agent_ns, &out))?;
            }
            Event::Msg(Message::StartAt { agent_ns }) if oltp.armed() => {
                send(&out, &oltp.run(agent_ns, &out))?;
            }
            Event::Msg(Message::StartAt { agent_ns }) => {
                let Some((p, t)) = target.as_ref().filter(|_| armed) else {
                    send(
                        &out,
                        &Message::Error(protocol_error("start-at before prepare")),
                    )?;
                    continue;
                };
                armed = false;
                let m = match run(p, t, agent_ns, &out) {
                    Ok(r) => Message::Result(Box::new(r)),
                    Err(e) => Message::Error(agent_error(&e)),
                };
                send(&out, &m)?;
            }
            Event::Msg(other) => {
                let why = format!("unexpected {} message", other.name());
                send(&out, &Message::Error(protocol_error(&why)))?;
            }
        }
    }
}

fn next(rx: &Receiver<Event>) -> Event {
    rx.recv()
        .unwrap_or_else(|_| Event::Ended("the reader stopped".into()))
}

pub(super) fn protocol_error(why: &str) -> AgentError {
    AgentError {
        message: format!("protocol: {why}"),
        field: None,
    }
}

/// The next job may run on the scratch file the last one ran on (as the
/// points of a local sweep share one): same directory and size, and no
/// verification, whose file holds the pattern of its own seed.
fn reusable(old: &DeviceWork, new: &DeviceWork) -> bool {
    old.target == new.target
        && !old.job.verify
        && !new.job.verify
        && old.job.engine.needs_target() == new.job.engine.needs_target()
}

/// The job's target, made through `dut::prepare` as `iolab device` makes it.
/// A directory (a scratch file is made in it) or a remote export (written
/// only with `overwrite`, as `device` asks): an agent never writes to a
/// file or device of its host it did not create.
fn prepare(p: &DeviceWork) -> anyhow::Result<Target> {
    p.job.validate()?;
    let path = match (&p.target.dir, p.job.engine.needs_target()) {
        (_, false) => None,
        (None, true) => {
            return Err(crate::error::usage(
                "target",
                format!(
                    "the {} engine needs a directory on the host",
                    p.job.engine.name()
                ),
            ))
        }
        (Some(d), true) if crate::plan::endpoint::endpoint_of(Path::new(d))?.is_some() => {
            Some(PathBuf::from(d))
        }
        (Some(d), true) => {
            let d = PathBuf::from(d);
            if !d.is_dir() {
                return Err(crate::error::usage(
                    "target",
                    format!("{} is not a directory on this host", d.display()),
                ));
            }
            Some(d)
        }
    };
    let opts = TargetOptions {
        path,
        size: p.target.size,
        overwrite: p.target.overwrite,
        ..TargetOptions::default()
    };
    let verify_bs = p.job.verify.then(|| p.job.max_bs());
    dut::prepare(&opts, p.job.writes(), verify_bs, p.job.seed)
}

/// The last stretch before the start is spun, not slept: a sleep's wake-up
/// comes late by the timer slack and the scheduler's latency.
const SPIN_NS: u64 = 300_000;

/// Wait until the agent's clock reads `at` (or a stop comes).
pub(super) fn wait_until(at: u64) {
    loop {
        let now = mono_now_ns();
        if now >= at || interrupt::stop_requested() {
            return;
        }
        let left = at - now;
        if left > SPIN_NS {
            std::thread::sleep(Duration::from_nanos((left - SPIN_NS).min(20_000_000)));
        } else {
            std::hint::spin_loop();
        }
    }
}

fn run(p: &DeviceWork, t: &Target, start_ns: u64, out: &Out) -> anyhow::Result<JobResult> {
    let released = std::sync::atomic::AtomicU64::new(0);
    let gate = || {
        wait_until(start_ns);
        released.store(mono_now_ns(), Ordering::SeqCst);
    };
    let progress = |elapsed_s: f64, _: Option<f64>, live: Option<crate::runner::recorder::Live>| {
        let l = live.unwrap_or(crate::runner::recorder::Live {
            iops: 0.0,
            mib_s: 0.0,
            mean_ns: 0.0,
            p99_ns: 0,
            second: 0,
        });
        let report = ProgressReport {
            second: l.second,
            elapsed_s,
            iops: l.iops,
            mib_s: l.mib_s,
            mean_ns: l.mean_ns,
            p99_ns: l.p99_ns,
        };
        let _ = send(out, &Message::Progress(report));
    };
    let opts = RunOptions {
        before_start: Some(&gate),
        on_progress: Some(&progress),
        ..RunOptions::default()
    };
    let outcome = run_job(&p.job, t, &opts)?;
    let mut point = outcome.point;
    if interrupt::stop_requested() {
        point
            .warnings
            .push("stopped before its end (the control side asked)".into());
    }
    Ok(JobResult {
        point,
        started_ns: released.load(Ordering::SeqCst),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::proto::{read_message, write_message, Prepare};
    use crate::plan::engines::EngineKind;
    use crate::plan::job::{JobSpec, StopCondition};
    use std::os::unix::net::UnixStream;

    #[test]
    fn an_agent_runs_a_job_released_at_the_given_instant() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let input = theirs.try_clone().unwrap();
        let agent = std::thread::spawn(move || serve(input, theirs));
        let mut r = ours.try_clone().unwrap();
        let mut w = ours;
        let Message::Hello(h) = read_message(&mut r).unwrap() else {
            panic!("no hello")
        };
        assert_eq!(h.build, build::current().unwrap());
        let job = JobSpec {
            engine: EngineKind::parse("null").unwrap(),
            stop: StopCondition {
                runtime_ns: None,
                io_count: Some(5000),
                io_bytes: None,
            },
            ..JobSpec::default()
        };
        let target = JobTarget {
            dir: None,
            size: None,
            overwrite: false,
            ..JobTarget::default()
        };
        write_message(
            &mut w,
            &Message::Prepare(Box::new(Prepare::device(job, target))),
        )
        .unwrap();
        assert!(matches!(
            read_message(&mut r).unwrap(),
            Message::Ready { .. }
        ));
        let at = mono_now_ns() + 50_000_000;
        write_message(&mut w, &Message::StartAt { agent_ns: at }).unwrap();
        let result = loop {
            match read_message(&mut r).unwrap() {
                Message::Progress(_) => continue,
                Message::Result(res) => break res,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(result.point.total.ops, 5000);
        assert!(result.started_ns >= at, "released before the instant");
        // A start without a prepare is a protocol error, not a crash.
        write_message(&mut w, &Message::StartAt { agent_ns: 0 }).unwrap();
        match read_message(&mut r).unwrap() {
            Message::Error(e) => assert!(e.message.contains("before prepare"), "{e:?}"),
            other => panic!("{other:?}"),
        }
        write_message(&mut w, &Message::Bye).unwrap();
        agent.join().unwrap().unwrap();
    }
}
