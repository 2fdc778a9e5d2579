//! iolab's own targets as `iolab remote` starts them: `iolab serve` (NBD,
//! or NVMe/TCP or NVMe/RDMA with the subsystem `NVME_NQN`) on the scratch
//! file.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use anyhow::Context;

use super::{OwnTargetOptions, NVME_NQN};

/// `iolab serve` over `protocol` (NBD when `None`; NVMe/TCP or NVMe/RDMA
/// with the subsystem `NVME_NQN`) on `backing` at `addr`:`port` with
/// `threads` reactors, busy-polling with `poll`.
pub(super) fn command_line(
    protocol: Option<&str>,
    (threads, poll): (usize, bool),
    addr: IpAddr,
    port: u16,
    backing: &Path,
    own: &OwnTargetOptions,
) -> anyhow::Result<(String, Vec<String>)> {
    let exe = std::env::current_exe().context("cannot find iolab's own executable")?;
    let mut v: Vec<String> = vec!["serve".into()];
    if let Some(p) = protocol {
        v.extend(["--protocol", p, "--nqn", NVME_NQN].map(String::from));
    }
    v.extend([
        "-t".into(),
        backing.display().to_string(),
        "--overwrite".into(),
    ]);
    v.extend(["--listen".into(), SocketAddr::new(addr, port).to_string()]);
    if !addr.to_canonical().is_loopback() {
        // The target namespace's own veth address: reachable only from
        // the initiator namespace iolab made next to it.
        v.push("--allow-remote".into());
    }
    v.extend(["--threads".into(), threads.to_string()]);
    if poll {
        v.push("--poll".into());
    }
    if let Some(d) = &own.delay {
        v.extend(["--fabric-delay".into(), d.clone()]);
    }
    if let Some(st) = &own.stamps {
        v.extend(["--stamps".into(), st.display().to_string()]);
    }
    Ok((exe.display().to_string(), v))
}

/// (CPUs, SO_BUSY_POLL's outcome) from a polling `iolab serve`'s log: its
/// `target::serve::polling_line`.
pub(super) fn polling_said(log: &str) -> Option<(String, String)> {
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix(crate::target::serve::POLLING_PREFIX))?;
    let (cpus, busy) = line.split_once("; SO_BUSY_POLL ")?;
    Some((cpus.to_string(), busy.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::serve::polling_line;
    use crate::target::serving::PollPlan;

    #[test]
    fn the_polling_line_reads_back() {
        let plan = PollPlan { cpus: vec![3, 5] };
        let log = format!(
            "iolab serve: nbd://x/ serving\n{}\n",
            polling_line(&plan, 2, "50 us")
        );
        assert_eq!(
            polling_said(&log),
            Some(("3,5".to_string(), "50 us".to_string()))
        );
        assert_eq!(polling_said("iolab serve: nbd://x/ serving\n"), None);
    }
}
