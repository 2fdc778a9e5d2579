//! iolab's own targets as `iolab remote` starts them: `iolab serve` (NBD,
//! or NVMe/TCP with the subsystem `NVME_NQN`) on the scratch file.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use anyhow::Context;

use super::{OwnTargetOptions, NVME_NQN};

/// `iolab serve` on `backing` at `addr`:`port` with `threads` reactors.
pub(super) fn command_line(
    nvme: bool,
    threads: usize,
    addr: IpAddr,
    port: u16,
    backing: &Path,
    own: &OwnTargetOptions,
) -> anyhow::Result<(String, Vec<String>)> {
    let exe = std::env::current_exe().context("cannot find iolab's own executable")?;
    let mut v: Vec<String> = vec!["serve".into()];
    if nvme {
        v.extend(["--protocol", "nvme-tcp", "--nqn", NVME_NQN].map(String::from));
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
    if let Some(d) = &own.delay {
        v.extend(["--fabric-delay".into(), d.clone()]);
    }
    if let Some(st) = &own.stamps {
        v.extend(["--stamps".into(), st.display().to_string()]);
    }
    Ok((exe.display().to_string(), v))
}
