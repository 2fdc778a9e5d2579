//! The control side's end of the target host of `remote --hosts
//! --target-host T`: an agent on T reached over ssh as the hosts are,
//! asked to serve an export (`serve`, answered with the URL the hosts
//! open) and for T's whole CPU over a point's window, converted to T's
//! clock through a fresh clock offset (`cpu_over`); and the fleet as a
//! driver's placement against T's export with T's CPU in every point
//! (`TargetHostPlacement`).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::clock;
use super::conn::unexpected;
use super::control::{connect_one, wanted_build, Agent, FleetOptions};
use super::hosts::HostSpec;
use super::proto::{CpuOver, JobTarget, Message, ServeRequest, Serving};
use super::ssh;
use super::FleetPlacement;
use crate::error::usage;
use crate::measure::peers::{PeerCpu, PeerStats};
use crate::results::ext::TargetHostCpu;
use crate::results::Point;
use crate::runner::recorder::Live;
use crate::session::HostPlacement;

/// The flag a target host is named by.
pub const FLAG: &str = "--target-host";

pub struct TargetHost {
    agent: Agent,
    opts: FleetOptions,
    /// T's shared ssh connection: ended after the agent is closed.
    _control: ssh::ControlDir,
}

impl TargetHost {
    /// Start the agent on T and check its build: an unreachable T, a
    /// refused login or another build is exit 2 naming --target-host.
    pub fn connect(spec: &HostSpec, opts: &FleetOptions) -> anyhow::Result<TargetHost> {
        let control = ssh::ControlDir::create(std::slice::from_ref(spec), &opts.ssh)?;
        let mut opts = opts.clone();
        opts.ssh.control_dir = Some(control.path().to_path_buf());
        let (payload, want) = wanted_build(&opts)?;
        let agent = connect_one(spec, &opts, &want, payload.as_ref())
            .map_err(|e| usage(FLAG, format!("{e:#}")))?;
        Ok(TargetHost {
            agent,
            opts,
            _control: control,
        })
    }

    /// T as the user named it.
    pub fn name(&self) -> &str {
        &self.agent.name
    }

    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Serve `req` on T (replacing what it served before): the URL the
    /// hosts open, and the scratch file behind it.
    pub fn serve(&mut self, req: ServeRequest) -> anyhow::Result<Serving> {
        let name = self.agent.name.clone();
        let conn = self.agent.conn();
        conn.send(&Message::Serve(req))?;
        match conn.recv_until_stopped(Instant::now() + self.opts.prepare_timeout)? {
            Message::Serving(s) => Ok(s),
            other => Err(unexpected(
                &format!("{name} (--target-host)"),
                other,
                "serving",
            )),
        }
    }

    /// T's whole CPU between two instants of this machine's clock.
    pub fn cpu_over(&mut self, from_ns: u64, to_ns: u64) -> anyhow::Result<CpuOver> {
        let name = self.agent.name.clone();
        let (probes, timeout) = (self.opts.clock_probes.max(1), self.opts.hello_timeout);
        let conn = self.agent.conn();
        let o = clock::measure(conn, probes, timeout)?;
        conn.send(&Message::CpuWindow {
            from_ns: o.to_agent(from_ns),
            to_ns: o.to_agent(to_ns),
        })?;
        match conn.recv_until(Instant::now() + Duration::from_secs(10))? {
            Message::CpuOver(c) => Ok(c),
            other => Err(unexpected(&name, other, "cpu-over")),
        }
    }

    /// Say bye: T's agent stops the target and removes its file.
    pub fn close(mut self) {
        self.agent.close();
    }
}

impl Drop for TargetHost {
    fn drop(&mut self) {
        self.agent.close();
    }
}

/// The fleet as a driver's placement against an export T serves, with
/// T's whole CPU over each point's window kept in the point.
pub struct TargetHostPlacement {
    pub fleet: FleetPlacement,
    pub t: Rc<RefCell<TargetHost>>,
    /// The export the next points run against (set per transport).
    pub export: Rc<RefCell<JobTarget>>,
}

impl HostPlacement for TargetHostPlacement {
    fn run(
        &mut self,
        job: &crate::plan::job::JobSpec,
        progress: &dyn Fn(f64, Live),
    ) -> anyhow::Result<Point> {
        self.fleet.set_target(self.export.borrow().clone());
        let mut p = self.fleet.run(job, progress)?;
        if let Some((from, to)) = self.fleet.last_window() {
            let mut t = self.t.borrow_mut();
            match t.cpu_over(from, to) {
                Ok(c) => record_target_cpu(&mut p, t.name(), c, to.saturating_sub(from)),
                Err(e) => p
                    .warnings
                    .push(format!("target host CPU not measured: {e:#}")),
            }
        }
        Ok(p)
    }

    fn halted(&self) -> Option<String> {
        self.fleet.halted()
    }

    /// The transports' exports are set per pass (`export`), not by setup.
    fn select_setup(&mut self, _setup: usize) {}
}

/// T's CPU into the point: typed beside the hosts' rows (with the disk
/// under its file), and as the target's CPU per I/O that the remote
/// figures read.
fn record_target_cpu(p: &mut Point, host: &str, over: CpuOver, window_ns: u64) {
    let cpu = over.cpu;
    let busy_s = (cpu.usr_pct + cpu.sys_pct) / 100.0 * window_ns as f64 / 1e9;
    let us_per_io = (p.total.ops > 0).then(|| busy_s * 1e6 / p.total.ops as f64);
    if let Some(h) = p.extra.hosts.as_mut() {
        h.target_host = Some(TargetHostCpu {
            host: host.to_string(),
            cpu,
            window_ns,
            disk: over.disk,
            no_disk: over.no_disk,
        });
    }
    p.extra.peers = Some(PeerStats {
        processes: vec![PeerCpu {
            role: format!("target host {host} (whole machine)"),
            pid: 0,
            usr_pct: cpu.usr_pct,
            sys_pct: cpu.sys_pct,
            us_per_io,
        }],
        net: None,
        series: Vec::new(),
    });
}
