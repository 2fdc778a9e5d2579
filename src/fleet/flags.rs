//! The hosts' flags as given (`cli::hosts::HostsArgs` documents each),
//! without clap: which hosts, how ssh reaches them, which iolab runs there
//! and what a host lost during a point means; checked here, for every verb
//! that runs on hosts.

use std::path::PathBuf;

use super::{Fleet, FleetOptions, HostSpec, OnHostLoss, SshOptions};
use crate::error::usage;

#[derive(Debug, Clone, PartialEq)]
pub struct HostsFlags {
    pub hosts: Option<String>,
    pub ssh_config: Option<PathBuf>,
    pub deploy: bool,
    pub host_iolab: String,
    pub on_host_loss: OnHostLoss,
    /// Hosts connected to at the same time (`--connect-concurrency`).
    pub connect_concurrency: u32,
}

impl Default for HostsFlags {
    fn default() -> HostsFlags {
        HostsFlags {
            hosts: None,
            ssh_config: None,
            deploy: false,
            host_iolab: "iolab".into(),
            on_host_loss: OnHostLoss::Stop,
            connect_concurrency: super::control::MAX_CONNECTING as u32,
        }
    }
}

impl HostsFlags {
    /// The hosts' flags without --hosts: refused, naming the flag.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.hosts.is_some() {
            return Ok(());
        }
        let given = [
            ("--ssh-config", self.ssh_config.is_some()),
            ("--deploy", self.deploy),
            ("--host-iolab", self.host_iolab != "iolab"),
            ("--on-host-loss", self.on_host_loss != OnHostLoss::Stop),
            (
                "--connect-concurrency",
                self.connect_concurrency as usize != super::control::MAX_CONNECTING,
            ),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some((flag, _)) => Err(usage(*flag, "applies only with --hosts")),
            None => Ok(()),
        }
    }

    /// Connect to `hosts` (saying so unless `quiet`); a connection that
    /// failed because of Ctrl-C is the interruption, not a refusal.
    pub fn connect(&self, hosts: &[HostSpec], quiet: bool) -> anyhow::Result<Fleet> {
        let opts = self.options()?;
        if !quiet {
            eprintln!("iolab: connecting to {} host(s) over ssh ...", hosts.len());
        }
        let fleet = Fleet::connect(hosts, &opts).map_err(crate::error::interrupted_or)?;
        if !quiet {
            let hint = super::ssh::kex_hint(fleet.median_handshake(), self.ssh_config.as_deref());
            if let Some(h) = hint {
                eprintln!("{h}");
            }
            if let Some(d) = fleet.deploy_summary() {
                eprintln!("iolab: --deploy: {d}");
            }
        }
        Ok(fleet)
    }

    /// How the control side reaches the hosts.
    pub fn options(&self) -> anyhow::Result<FleetOptions> {
        if let Some(f) = self.ssh_config.as_ref().filter(|f| !f.is_file()) {
            return Err(usage(
                "--ssh-config",
                format!("{} is not a readable file", f.display()),
            ));
        }
        let most = super::control::MOST_CONNECTING;
        let n = self.connect_concurrency as usize;
        if !(1..=most).contains(&n) {
            return Err(usage(
                "--connect-concurrency",
                format!("{n}: from 1 to {most} hosts at a time"),
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
            connect_concurrency: n,
            ..FleetOptions::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_flags_without_hosts_are_refused_naming_the_flag() {
        assert!(HostsFlags::default().check().is_ok());
        let deploy = HostsFlags {
            deploy: true,
            ..HostsFlags::default()
        };
        let e = deploy.check().unwrap_err();
        assert!(format!("{e:#}").contains("--deploy"), "{e:#}");
        let with_hosts = HostsFlags {
            hosts: Some("a,b".into()),
            ..deploy
        };
        assert!(with_hosts.check().is_ok());
    }
}
