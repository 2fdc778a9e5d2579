//! The control side of a fleet: connect to every host (ssh, hello, build
//! check) before anything is set up anywhere, then run passes: prepare on
//! every host, measure clock offsets, release every host's workers at one
//! instant, collect the points and merge them exactly.

use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::build::{self, BuildId};
use super::clock::{self, ClockOffset};
use super::collect;
use super::conn::{host_error, unexpected, Conn};
use super::deploy::{self, Deployed, Payload};
use super::hosts::HostSpec;
use super::merge::{self, FleetPass, HostPoint, LostHost};
use super::proto::{
    AgentWork, Hello, JobTarget, Message, Prepare, ProgressReport, PROTOCOL_VERSION,
};
use super::ssh::{self, SshOptions, StderrTail};
use crate::error::usage;
use crate::measure::clock::mono_now_ns;
use crate::plan::job::JobSpec;

/// Hosts connected to (ssh started, hello awaited) at the same time, by
/// default (`--connect-concurrency`).
pub const MAX_CONNECTING: usize = 64;
/// The most `--connect-concurrency` allows.
pub const MOST_CONNECTING: usize = 1024;

/// What each host runs in a pass, by its name: its work and target, and
/// the host group its row belongs to (`None`: no group, as for every host
/// of a plain list).
pub struct HostWork<'a> {
    pub prepare: &'a dyn Fn(&str) -> (AgentWork, JobTarget),
    pub group: &'a dyn Fn(&str) -> Option<String>,
}

#[derive(Debug, Clone)]
pub struct FleetOptions {
    pub ssh: SshOptions,
    /// How long a host may take from ssh's start to its agent's hello.
    pub hello_timeout: Duration,
    /// How long preparing a target may take (a large scratch file).
    pub prepare_timeout: Duration,
    /// The least time between sending the start and the start itself.
    pub start_margin: Duration,
    /// Silence from a running agent (no progress) that counts as a lost host.
    pub idle_timeout: Duration,
    pub clock_probes: u32,
    /// Hosts connected to (and probed, and closed) at the same time.
    pub connect_concurrency: usize,
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            ssh: SshOptions::default(),
            hello_timeout: Duration::from_secs(30),
            prepare_timeout: Duration::from_secs(600),
            start_margin: Duration::from_millis(300),
            idle_timeout: Duration::from_secs(30),
            clock_probes: clock::PROBES,
            connect_concurrency: MAX_CONNECTING,
        }
    }
}

/// One connected host.
pub struct Agent {
    pub spec: HostSpec,
    pub name: String,
    pub hello: Hello,
    conn: Option<Conn>,
    child: Child,
    /// Kept so a failure can quote ssh's reason.
    pub stderr: StderrTail,
    /// From the start of the first ssh session to this host to its first
    /// answer (the agent's hello, or with --deploy the cache check): ssh's
    /// handshake, most of it its key exchange.
    pub handshake: Duration,
    /// With --deploy: where this build is on the host, and whether it was
    /// sent this time.
    pub deployed: Option<Deployed>,
}

impl Agent {
    pub(crate) fn conn(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("an open connection until the agent is closed")
    }

    pub(crate) fn close(&mut self) {
        if let Some(mut c) = self.conn.take() {
            let _ = c.send(&Message::Bye);
            c.close();
        }
        ssh::reap(&mut self.child, Duration::from_secs(10));
    }
}

/// Agents on several hosts, connected and checked.
pub struct Fleet {
    agents: Vec<Agent>,
    opts: FleetOptions,
    /// The hosts' shared ssh connections: ended after the agents are closed.
    _control: ssh::ControlDir,
}

/// Raise the soft limit of open files to the hard one: each host holds three
/// pipes here, more than the usual 1024 at a few hundred hosts.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// What the hosts must run: with --deploy the payload (this build,
/// stripped) and its identity, else this build's.
pub(crate) fn wanted_build(opts: &FleetOptions) -> anyhow::Result<(Option<Payload>, BuildId)> {
    if !opts.ssh.deploy {
        return Ok((None, build::of_executable(&opts.ssh.local_iolab)?));
    }
    let p = Payload::prepare(&opts.ssh.local_iolab)?;
    let b = p.build.clone();
    Ok((Some(p), b))
}

/// Start ssh and the agent on one host (after deploying `payload` there,
/// if given); wait for its hello and check it.
pub(crate) fn connect_one(
    spec: &HostSpec,
    opts: &FleetOptions,
    want: &BuildId,
    payload: Option<&Payload>,
) -> anyhow::Result<Agent> {
    let name = spec.to_string();
    let deployed = match payload {
        Some(p) => Some(
            deploy::deploy(spec, &opts.ssh, p).map_err(|e| host_error(&name, format!("{e:#}")))?,
        ),
        None => None,
    };
    let remote = ssh::agent_command(&opts.ssh, deployed.as_ref().map(|d| d.dir.as_str()));
    let t0 = Instant::now();
    let started = ssh::command(spec, &opts.ssh, &remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match started {
        Ok(c) => c,
        Err(e) => {
            return Err(host_error(
                &name,
                format!("cannot start {}: {e}", opts.ssh.ssh.display()),
            ));
        }
    };
    let stderr = StderrTail::default();
    stderr.follow(child.stderr.take().expect("piped"));
    let conn = Conn::new(
        name.clone(),
        child.stdout.take().expect("piped"),
        child.stdin.take().expect("piped"),
    );
    let mut agent = Agent {
        spec: spec.clone(),
        name: name.clone(),
        hello: Hello {
            protocol: 0,
            build: want.clone(),
            hostname: String::new(),
            pid: 0,
            identity: None,
        },
        conn: Some(conn),
        child,
        stderr,
        handshake: Duration::ZERO,
        deployed: None,
    };
    let hello = agent
        .conn()
        .recv_until_stopped(Instant::now() + opts.hello_timeout);
    let checked = hello.and_then(|m| check_hello(&name, m, want, opts.ssh.deploy));
    match checked {
        Ok(h) => {
            agent.hello = h;
            agent.handshake = match &deployed {
                Some(d) => d.handshake,
                None => t0.elapsed(),
            };
            agent.deployed = deployed;
            Ok(agent)
        }
        Err(e) => {
            agent.close();
            let why = describe_failure(&mut agent, e);
            match deployed.filter(|d| d.sent.is_none()) {
                Some(d) => Err(why.context(format!(
                    "the copy cached in {}/iolab there is not this build: remove it and run again",
                    d.dir
                ))),
                None => Err(why),
            }
        }
    }
}

fn check_hello(host: &str, m: Message, want: &BuildId, deploy: bool) -> anyhow::Result<Hello> {
    let Message::Hello(h) = m else {
        return Err(unexpected(host, m, "hello"));
    };
    if h.protocol != PROTOCOL_VERSION || h.build != *want {
        let fix = if deploy {
            ""
        } else {
            " (install this build there or use --deploy)"
        };
        return Err(host_error(
            host,
            format!("runs {}, not this {want}{fix}", h.build),
        ));
    }
    Ok(h)
}

/// The error of a host whose agent did not come up, with ssh's own words.
fn describe_failure(agent: &mut Agent, e: anyhow::Error) -> anyhow::Error {
    let status = agent.child.try_wait().ok().flatten();
    let said = agent.stderr.text();
    let mut msg = format!("{e:#}");
    if let Some(s) = status.and_then(|s| s.code()) {
        msg.push_str(&format!("; ssh exited with {s}"));
        if s == 127 {
            msg.push_str(" (no iolab there: install this build or use --deploy)");
        }
    }
    if !said.is_empty() {
        let last: Vec<&str> = said.lines().rev().take(3).collect();
        msg.push_str(&format!(
            ": {}",
            last.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ));
    }
    anyhow::anyhow!(msg)
}

/// Hosts named twice under different names (two addresses or users
/// reaching one machine and network namespace, by what their agents
/// report): one sentence per such pair.
fn same_hosts(agents: &[Agent]) -> Vec<String> {
    let mut seen: std::collections::HashMap<&super::proto::HostIdentity, &str> =
        std::collections::HashMap::new();
    let mut twice = Vec::new();
    for a in agents {
        let Some(id) = &a.hello.identity else {
            continue;
        };
        match seen.get(id) {
            Some(first) => twice.push(format!(
                "{first} and {} are the same host ({id}): name it once",
                a.name
            )),
            None => {
                seen.insert(id, &a.name);
            }
        }
    }
    twice
}

/// Run `f` on every agent, at most `limit` at a time; the errors.
fn par_each<T: Send>(
    items: &mut [T],
    limit: usize,
    f: impl Fn(&mut T) -> anyhow::Result<()> + Sync,
) -> Vec<anyhow::Error> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<&mut T>> = items.iter_mut().map(Mutex::new).collect();
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..slots.len().min(limit.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(slot) = slots.get(i) else { return };
                let mut item = slot.lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = f(&mut item) {
                    errors.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                }
            });
        }
    });
    errors.into_inner().unwrap_or_else(|e| e.into_inner())
}

impl Fleet {
    /// Connect to every host and check its build. Any host that cannot be
    /// reached, refuses the login or runs another build is an error (exit 2)
    /// naming every such host, and nothing is left running anywhere.
    pub fn connect(hosts: &[HostSpec], opts: &FleetOptions) -> anyhow::Result<Fleet> {
        if hosts.is_empty() {
            return Err(usage("--hosts", "no hosts"));
        }
        raise_fd_limit();
        let control = ssh::ControlDir::create(hosts, &opts.ssh)?;
        let (payload, want) = wanted_build(opts)?;
        let mut opts = opts.clone();
        opts.ssh.control_dir = Some(control.path().to_path_buf());
        let mut slots: Vec<(HostSpec, Option<anyhow::Result<Agent>>)> =
            hosts.iter().map(|h| (h.clone(), None)).collect();
        par_each(&mut slots, opts.connect_concurrency, |(spec, out)| {
            *out = Some(connect_one(spec, &opts, &want, payload.as_ref()));
            Ok(())
        });
        let mut agents = Vec::new();
        let mut failed = Vec::new();
        for (_, r) in slots {
            match r {
                Some(Ok(a)) => agents.push(a),
                Some(Err(e)) => failed.push(format!("{e:#}")),
                None => failed.push("not tried".into()),
            }
        }
        let fleet = Fleet {
            agents,
            opts,
            _control: control,
        };
        if !failed.is_empty() {
            drop(fleet);
            return Err(usage("--hosts", failed.join("; ")));
        }
        let twice = same_hosts(&fleet.agents);
        if !twice.is_empty() {
            drop(fleet);
            return Err(usage("--hosts", twice.join("; ")));
        }
        Ok(fleet)
    }

    /// The hosts, as the user named them.
    pub fn hosts(&self) -> Vec<String> {
        self.agents.iter().map(|a| a.name.clone()).collect()
    }

    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// Build every configuration of `reqs` on every host, at most the
    /// connect concurrency at a time (`agent_media`); they stay until the
    /// fleet closes. Any host that cannot is an error naming it (the
    /// configurations built elsewhere go when the fleet does).
    pub fn make(&mut self, reqs: &[super::proto::MakeRequest]) -> anyhow::Result<()> {
        let timeout = self.opts.prepare_timeout;
        let errors = par_each(&mut self.agents, self.opts.connect_concurrency, |a| {
            for r in reqs {
                let name = a.name.clone();
                let conn = a.conn();
                conn.send(&Message::Make(r.clone()))?;
                match conn.recv_until_stopped(Instant::now() + timeout)? {
                    Message::Made { label, .. } if label == r.label => {}
                    other => return Err(super::conn::unexpected(&name, other, "made")),
                }
            }
            Ok(())
        });
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// With --deploy: what was sent where, and which hosts had this build
    /// already.
    pub fn deploy_summary(&self) -> Option<String> {
        let d: Vec<&Deployed> = self
            .agents
            .iter()
            .filter_map(|a| a.deployed.as_ref())
            .collect();
        let len = self.agents.first()?.hello.build.exe_len;
        let sent: Vec<u64> = d.iter().filter_map(|d| d.sent).collect();
        (!d.is_empty()).then(|| {
            format!(
                "this build ({:.1} MB stripped) sent to {} host(s), {:.1} MB on the wire; already in the cache of {}",
                len as f64 / 1e6,
                sent.len(),
                sent.iter().sum::<u64>() as f64 / 1e6,
                d.len() - sent.len()
            )
        })
    }

    /// The median of the hosts' ssh handshakes (`Agent::handshake`).
    pub fn median_handshake(&self) -> Duration {
        let mut t: Vec<Duration> = self.agents.iter().map(|a| a.handshake).collect();
        t.sort();
        t.get(t.len() / 2).copied().unwrap_or_default()
    }

    /// Run `job` on every host with one common start and merge the points.
    /// A failure before the start is an error naming the host; a host lost
    /// after it makes the pass partial (`FleetPass::lost`): the others are
    /// stopped, their points kept, and the lost host leaves the fleet.
    pub fn run_pass(&mut self, job: &JobSpec, target: &JobTarget) -> anyhow::Result<FleetPass> {
        self.run_pass_observed(job, target, &|_| {})
    }

    /// `run_pass`, telling `progress` the hosts' last seconds combined
    /// about once a second.
    pub fn run_pass_observed(
        &mut self,
        job: &JobSpec,
        target: &JobTarget,
        progress: &dyn Fn(ProgressReport),
    ) -> anyhow::Result<FleetPass> {
        let work = AgentWork::Device(Box::new(job.clone()));
        self.run_work_observed(&work, target, progress)
    }

    /// `run_pass_observed` of any work (a device job, a kv phase).
    pub fn run_work_observed(
        &mut self,
        work: &AgentWork,
        target: &JobTarget,
        progress: &dyn Fn(ProgressReport),
    ) -> anyhow::Result<FleetPass> {
        let each = |_: &str| (work.clone(), target.clone());
        let host_work = HostWork {
            prepare: &each,
            group: &|_| None,
        };
        self.run_each_observed(&host_work, progress)
    }

    /// `run_work_observed` with each host's own work and target (host
    /// groups): the hosts' rows say their group, and the pass has a row
    /// per group (`merge::group_rows`).
    pub fn run_each_observed(
        &mut self,
        each: &HostWork,
        progress: &dyn Fn(ProgressReport),
    ) -> anyhow::Result<FleetPass> {
        for a in &mut self.agents {
            let (work, target) = (each.prepare)(&a.name);
            let prepare = Message::Prepare(Box::new(Prepare { work, target }));
            a.conn().send(&prepare)?;
        }
        let prep_deadline = Instant::now() + self.opts.prepare_timeout;
        for a in &mut self.agents {
            let name = a.name.clone();
            match a.conn().recv_skipping_progress(prep_deadline)? {
                Message::Ready { .. } => {}
                other => return Err(unexpected(&name, other, "ready")),
            }
        }
        let probes = self.opts.clock_probes.max(1);
        let timeout = self.opts.hello_timeout;
        let offsets: Vec<Mutex<Option<ClockOffset>>> =
            self.agents.iter().map(|_| Mutex::new(None)).collect();
        let mut indexed: Vec<(usize, &mut Agent)> = self.agents.iter_mut().enumerate().collect();
        let errors = par_each(&mut indexed, self.opts.connect_concurrency, |(i, a)| {
            let o = clock::measure(a.conn(), probes, timeout)?;
            *offsets[*i].lock().unwrap_or_else(|e| e.into_inner()) = Some(o);
            Ok(())
        });
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
        let offsets: Vec<ClockOffset> = offsets
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("measured")
            })
            .collect();
        let start = self.start_all(&offsets)?;
        let mut conns: Vec<&mut Conn> = self.agents.iter_mut().map(|a| a.conn()).collect();
        let gathered = collect::results(&mut conns, self.opts.idle_timeout, progress);
        let mut points = Vec::with_capacity(self.agents.len());
        let mut lost = Vec::new();
        for ((a, clock), got) in self.agents.iter().zip(offsets).zip(gathered) {
            let got = got.and_then(|r| {
                let off = clock
                    .start_offset(r.started_ns, start)
                    .map_err(|why| super::conn::host_error(&a.name, why))?;
                Ok((r, off))
            });
            match got {
                Ok((r, start_offset_ns)) => points.push(HostPoint {
                    host: a.name.clone(),
                    start_offset_ns,
                    point: r.point,
                    clock,
                }),
                Err(e) => lost.push(LostHost {
                    host: a.name.clone(),
                    why: format!("{e:#}"),
                }),
            }
        }
        self.drop_lost(&lost);
        let Some(mut pass) = merge::merge(&points) else {
            let all: Vec<String> = lost.iter().map(|l| l.why.clone()).collect();
            anyhow::bail!("every host was lost during the point: {}", all.join("; "));
        };
        pass.aggregate.extra.instances = merge::instance_rows(&points);
        for r in &mut pass.per_host {
            r.group = (each.group)(&r.host);
        }
        pass.groups = merge::group_rows(&points, each.group);
        for l in &lost {
            pass.aggregate.warnings.push(format!(
                "host {} was lost during the point ({}): the point is partial, its figures are the other hosts'",
                l.host, l.why
            ));
        }
        pass.lost = lost;
        pass.start_ns = start;
        Ok(pass)
    }

    /// Close and forget the agents lost during a pass (the others go on).
    fn drop_lost(&mut self, lost: &[LostHost]) {
        let (mut gone, kept): (Vec<Agent>, Vec<Agent>) = std::mem::take(&mut self.agents)
            .into_iter()
            .partition(|a| lost.iter().any(|l| l.host == a.name));
        self.agents = kept;
        par_each(&mut gone, self.opts.connect_concurrency, |a| {
            a.close();
            Ok(())
        });
    }

    /// Send every agent the common start (each in its own clock); the
    /// instant on the control's clock.
    fn start_all(&mut self, offsets: &[ClockOffset]) -> anyhow::Result<u64> {
        let worst_rtt = offsets.iter().map(|o| o.rtt_ns).max().unwrap_or(0);
        // Room to reach the last host: a round trip per host in the worst
        // case (sends are sequential), and the margin.
        let lead = self.opts.start_margin.as_nanos() as u64
            + worst_rtt * 2
            + 200_000 * self.agents.len() as u64;
        let start = mono_now_ns() + lead;
        for (a, o) in self.agents.iter_mut().zip(offsets) {
            a.conn().send(&Message::StartAt {
                agent_ns: o.to_agent(start),
            })?;
        }
        Ok(start)
    }

    /// Let a prepare take up to `t` (an oltp load before the first point:
    /// a host that dies meanwhile is noticed by ssh's keep-alives).
    pub fn set_prepare_timeout(&mut self, t: Duration) {
        self.opts.prepare_timeout = t;
    }

    /// Say bye to every agent and wait for its ssh to end.
    pub fn close(mut self) {
        self.close_all();
    }

    fn close_all(&mut self) {
        par_each(&mut self.agents, self.opts.connect_concurrency, |a| {
            a.close();
            Ok(())
        });
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.close_all();
    }
}
