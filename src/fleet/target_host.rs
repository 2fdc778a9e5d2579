//! The control side's end of the target host of `remote --hosts
//! --target-host T`: an agent on T reached over ssh as the hosts are,
//! asked to serve an export (`serve`, answered with the URL the hosts
//! open) and for T's whole CPU over a point's window, converted to T's
//! clock through a fresh clock offset (`cpu_over`).

use std::time::{Duration, Instant};

use super::clock;
use super::conn::unexpected;
use super::control::{connect_one, wanted_build, Agent, FleetOptions};
use super::hosts::HostSpec;
use super::proto::{CpuOver, Message, ServeRequest, Serving};
use super::ssh;
use crate::error::usage;

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
