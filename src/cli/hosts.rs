//! The flags of a run on several hosts at once (docs/fleet.md), shared by
//! the verbs whose jobs can run there: which hosts, how ssh reaches them,
//! which iolab runs there and what a host lost during a point means.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::fleet::HostsFlags;

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
    /// --deploy); --target is then a directory on every host.
    /// `device --hosts @FILE.toml` gives host groups, each with its own
    /// job (keys rw, bs, iodepth, numjobs, rate: the group's whole IOPS,
    /// size, target; what a group leaves out is the command line's), and
    /// a merged row per group beside the hosts', e.g.
    /// `[[group]] name = "readers" hosts = ["h0", "h1"] rw = "randread" iodepth = 32`
    /// then `[[group]] name = "writers" hosts = ["h2"] rw = "randwrite"`
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
    /// With --hosts: how many hosts are connected to (ssh started, the
    /// agent's hello awaited) at the same time, 1 to 1024
    #[arg(
        long,
        value_name = "N",
        default_value = "64",
        value_parser = clap::value_parser!(u32).range(1..=1024),
        help_heading = "Hosts"
    )]
    pub connect_concurrency: u32,
}

impl HostsArgs {
    /// The flags as given, for the layers below clap.
    pub fn flags(&self) -> HostsFlags {
        let HostsArgs {
            hosts,
            ssh_config,
            deploy,
            host_iolab,
            on_host_loss,
            connect_concurrency,
        } = self.clone();
        HostsFlags {
            hosts,
            ssh_config,
            deploy,
            host_iolab,
            on_host_loss: on_host_loss.into(),
            connect_concurrency,
        }
    }
}
