//! tgtd (the iSCSI target of the tgt package) as `iolab remote` starts
//! it: its own control port, one target with LUN 1 on the scratch file
//! (aio backing store: O_DIRECT) configured through tgtadm, and taken down
//! again before the process is stopped.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::TGT_IQN;
use crate::testbed::process::ServerProcess;

/// tgtd's private control port (its socket is /var/run/tgtd/socket.N; tgtd
/// refuses large values, 55000 is out of range):
/// one per iolab process, so several runs and the machine's own tgtd
/// never meet.
pub(super) fn control_port() -> u32 {
    1000 + std::process::id() % 20_000
}

fn tgtadm(port: u32, args: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new("tgtadm")
        .arg("-C")
        .arg(port.to_string())
        .args(args)
        .output()
        .context("cannot run tgtadm")?;
    if !out.status.success() {
        anyhow::bail!(
            "tgtadm {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// One target with LUN 1 backed by `backing` (aio: O_DIRECT), open to any
/// initiator, through tgtd's control `port`; retried while tgtd (`process`,
/// logging to `log`) is still starting.
pub(super) fn configure(
    port: u32,
    process: &mut ServerProcess,
    log: &Path,
    backing: &Path,
) -> anyhow::Result<()> {
    let file = backing.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match tgtadm(
            port,
            &[
                "--lld", "iscsi", "--op", "new", "--mode", "target", "--tid", "1", "-T", TGT_IQN,
            ],
        ) {
            Ok(()) => break,
            Err(e) if Instant::now() > deadline || process.exited().is_some() => {
                let log = std::fs::read_to_string(log).unwrap_or_default();
                return Err(e.context(format!("tgtd did not start: {}", log.trim())));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    tgtadm(
        port,
        &[
            "--lld",
            "iscsi",
            "--op",
            "new",
            "--mode",
            "logicalunit",
            "--tid",
            "1",
            "--lun",
            "1",
            "-b",
            &file,
            "--bstype",
            "aio",
        ],
    )?;
    tgtadm(
        port,
        &[
            "--lld", "iscsi", "--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL",
        ],
    )
}

/// Take the target and tgtd's state down (tgtd ignores SIGTERM while it
/// has targets; the process guard then stops it, SIGKILL the fallback).
pub(super) fn take_down(port: u32) {
    let _ = tgtadm(
        port,
        &[
            "--op", "update", "--mode", "sys", "--name", "State", "-v", "offline",
        ],
    );
    let _ = tgtadm(
        port,
        &[
            "--lld", "iscsi", "--op", "delete", "--mode", "target", "--tid", "1", "--force",
        ],
    );
    let _ = tgtadm(port, &["--op", "delete", "--mode", "system"]);
    for suffix in ["", ".lock"] {
        let _ = std::fs::remove_file(format!("/var/run/tgtd/socket.{port}{suffix}"));
    }
}

pub(super) fn command_line(addr: IpAddr, port: u16) -> (String, Vec<String>) {
    let portal = format!("portal={}", SocketAddr::new(addr, port));
    let v = [
        "-f".into(),
        "-C".into(),
        control_port().to_string(),
        "--iscsi".into(),
        portal,
    ];
    ("tgtd".into(), v.to_vec())
}
