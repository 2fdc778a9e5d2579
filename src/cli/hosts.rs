//! The flags of a run on several hosts at once (docs/fleet.md), shared by
//! the verbs whose jobs can run there: which hosts, how ssh reaches them,
//! which iolab runs there and what a host lost during a point means.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::fleet::{FleetOptions, SshOptions};

/// What happens after a host is lost during a point (its point is kept,
/// partial, naming the host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostLossArg {
    /// Run no further point (the results so far are kept; exit 1).
    Stop,
    /// Go on with the hosts that are left.
    Continue,
}

impl From<HostLossArg> for crate::fleet::OnHostLoss {
    fn from(o: HostLossArg) -> Self {
        match o {
            HostLossArg::Stop => crate::fleet::OnHostLoss::Stop,
            HostLossArg::Continue => crate::fleet::OnHostLoss::Continue,
        }
    }
}

#[derive(Debug, Args, Clone)]
pub struct HostsArgs {
    /// Run every job on these hosts at once, over ssh, merged into one
    /// point per job: [user@]host[:port], comma-separated, or @FILE with
    /// one per line. Each host runs `iolab agent` (the same build; see
    /// --deploy); --target is then a directory on every host
    #[arg(long, value_name = "LIST", help_heading = "Hosts")]
    pub hosts: Option<String>,
    /// With --hosts: ssh's configuration file (`ssh -F FILE`)
    #[arg(long, value_name = "FILE", help_heading = "Hosts")]
    pub ssh_config: Option<PathBuf>,
    /// With --hosts: copy this iolab to a directory of its own on each host
    /// for the run (removed afterwards) instead of running the one there
    #[arg(long, help_heading = "Hosts")]
    pub deploy: bool,
    /// With --hosts: the iolab to run on each host (searched in its PATH)
    #[arg(
        long,
        value_name = "PATH",
        default_value = "iolab",
        help_heading = "Hosts"
    )]
    pub host_iolab: String,
    /// With --hosts: after a host is lost during a point (its point kept,
    /// partial): stop the run, or continue on the hosts left
    #[arg(
        long,
        value_enum,
        default_value = "stop",
        value_name = "WHAT",
        help_heading = "Hosts"
    )]
    pub on_host_loss: HostLossArg,
}

impl HostsArgs {
    /// The hosts' flags without --hosts: refused, naming the flag.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.hosts.is_some() {
            return Ok(());
        }
        let given = [
            ("--ssh-config", self.ssh_config.is_some()),
            ("--deploy", self.deploy),
            ("--host-iolab", self.host_iolab != "iolab"),
            ("--on-host-loss", self.on_host_loss != HostLossArg::Stop),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some((flag, _)) => Err(crate::error::usage(*flag, "applies only with --hosts")),
            None => Ok(()),
        }
    }

    /// How the control side reaches the hosts.
    pub fn options(&self) -> anyhow::Result<FleetOptions> {
        if let Some(f) = self.ssh_config.as_ref().filter(|f| !f.is_file()) {
            return Err(crate::error::usage(
                "--ssh-config",
                format!("{} is not a readable file", f.display()),
            ));
        }
        let local = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find this iolab's executable: {e}"))?;
        Ok(FleetOptions {
            ssh: SshOptions {
                config: self.ssh_config.clone(),
                remote_iolab: self.host_iolab.clone(),
                deploy: self.deploy,
                local_iolab: local,
                ..SshOptions::default()
            },
            ..FleetOptions::default()
        })
    }
}
