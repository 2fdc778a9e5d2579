//! The storage servers iolab starts for `iolab remote` (beside the
//! database servers of `servers`): for each transport it compares, the
//! server on the target host with its backing store the scratch file on
//! the storage under test: iolab's own NBD and NVMe/TCP targets (`iolab`:
//! `iolab serve`, O_DIRECT, io_uring), nbdkit's file plugin (buffered) and
//! memory plugin (RAM, the protocol's own cost; `nbdkit`), qemu-nbd
//! (O_DIRECT through --cache=none, io_uring; `qemu_nbd`), tgtd (iSCSI;
//! `tgtd`). `das` is the same file used locally: the baseline;
//! `nvme-tcp-kernel` (the kernel's nvmet and nvme-tcp) has no server
//! process and is set up by `campaign::kernel_path`. Where the server
//! runs (a network namespace) is the caller's: `start` takes the address
//! and a way to make the command there (`remote::servers::start` passes
//! its topology's).

mod iolab;
mod nbdkit;
mod qemu_nbd;
mod tgtd;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::error::usage;
use crate::plan::endpoint::endpoint_of;
use crate::plan::engines::EngineKind;
use crate::testbed::command::which;
use crate::testbed::process::ServerProcess;

/// One way to reach the storage under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Direct-attached: the file itself, locally.
    Das,
    /// iolab's own NBD target with this many reactor threads.
    Iolab {
        threads: usize,
    },
    /// iolab's own NVMe/TCP target with this many reactor threads.
    IolabNvme {
        threads: usize,
    },
    NbdkitFile,
    NbdkitMemory,
    QemuNbd,
    /// iSCSI: tgtd with the aio backing store (O_DIRECT).
    Tgtd,
    /// The kernel's NVMe/TCP target (nvmet) and initiator (nvme-tcp).
    KernelNvme,
}

pub const TRANSPORT_NAMES: &str =
    "das, iolab, nbdkit-file, nbdkit-memory, qemu-nbd, tgtd, nvme-tcp, nvme-tcp-kernel";

/// The subsystem NQN of iolab's NVMe/TCP target in `iolab remote`.
pub const NVME_NQN: &str = "nqn.2025-11.io.iolab:remote";

/// The IQN of the target iolab configures in tgtd.
pub const TGT_IQN: &str = "iqn.2025-11.io.iolab:remote";

impl Transport {
    pub fn parse(s: &str) -> Option<Transport> {
        Some(match s {
            "das" | "local" => Transport::Das,
            "iolab" => Transport::Iolab { threads: 1 },
            "nvme-tcp" | "iolab-nvme" => Transport::IolabNvme { threads: 1 },
            "nbdkit-file" => Transport::NbdkitFile,
            "nbdkit-memory" => Transport::NbdkitMemory,
            "qemu-nbd" => Transport::QemuNbd,
            "tgtd" | "iscsi" => Transport::Tgtd,
            "nvme-tcp-kernel" => Transport::KernelNvme,
            _ => return None,
        })
    }

    /// The label of its points (`transport` parameter).
    pub fn label(&self) -> String {
        match self {
            Transport::Das => "das".into(),
            Transport::Iolab { threads: 1 } => "nbd-iolab".into(),
            Transport::Iolab { threads } => format!("nbd-iolab-t{threads}"),
            Transport::IolabNvme { threads: 1 } => "nvme-tcp-iolab".into(),
            Transport::IolabNvme { threads } => format!("nvme-tcp-iolab-t{threads}"),
            Transport::NbdkitFile => "nbd-nbdkit-file".into(),
            Transport::NbdkitMemory => "nbd-nbdkit-memory".into(),
            Transport::QemuNbd => "nbd-qemu".into(),
            Transport::Tgtd => "iscsi-tgtd".into(),
            Transport::KernelNvme => "nvme-tcp-kernel".into(),
        }
    }

    /// iolab's own target (stamps, fabric delay, reactor threads).
    pub fn own(&self) -> bool {
        matches!(self, Transport::Iolab { .. } | Transport::IolabNvme { .. })
    }

    /// The same transport with `threads` reactor threads (own targets only).
    pub fn with_threads(&self, threads: usize) -> Transport {
        match self {
            Transport::Iolab { .. } => Transport::Iolab { threads },
            Transport::IolabNvme { .. } => Transport::IolabNvme { threads },
            t => *t,
        }
    }

    /// The engine that speaks its protocol.
    pub fn engine(&self) -> EngineKind {
        match self {
            Transport::Das | Transport::KernelNvme => EngineKind::IoUring,
            Transport::Tgtd => EngineKind::Iscsi,
            Transport::IolabNvme { .. } => EngineKind::NvmeTcp,
            _ => EngineKind::Nbd,
        }
    }

    /// The program it needs, if any.
    pub fn program(&self) -> Option<&'static str> {
        match self {
            Transport::Das | Transport::KernelNvme => None,
            Transport::Iolab { .. } | Transport::IolabNvme { .. } => Some("iolab"),
            Transport::NbdkitFile | Transport::NbdkitMemory => Some("nbdkit"),
            Transport::QemuNbd => Some("qemu-nbd"),
            Transport::Tgtd => Some("tgtd"),
        }
    }

    /// Why it cannot run here (its server is not installed).
    pub fn unavailable(&self) -> Option<String> {
        if *self == Transport::KernelNvme {
            return crate::testbed::kernel_modules::nvme_tcp_kernel_unavailable();
        }
        if *self == Transport::Tgtd {
            if let Some(why) = crate::engine::iscsi::unavailable() {
                return Some(why);
            }
        }
        match self.program() {
            Some(p) if p != "iolab" && which(p).is_none() => Some(format!(
                "{p} is not installed (scripts/install-deps.sh installs it)"
            )),
            _ => None,
        }
    }

    /// What the backing store is, for the results.
    /// How each end caches: (the initiator's reads and writes, the
    /// target's backing file). A ratio against DAS (O_DIRECT) compares a
    /// device only where both are uncached.
    pub fn caching(&self) -> (&'static str, &'static str) {
        const USER_SPACE: &str = "none (user-space initiator)";
        match self {
            Transport::Das => ("O_DIRECT", "-"),
            Transport::Iolab { .. } | Transport::IolabNvme { .. } | Transport::QemuNbd => {
                (USER_SPACE, "O_DIRECT")
            }
            Transport::Tgtd => (USER_SPACE, "O_DIRECT"),
            Transport::NbdkitFile => (USER_SPACE, "buffered (page cache)"),
            Transport::NbdkitMemory => (USER_SPACE, "RAM"),
            Transport::KernelNvme => ("O_DIRECT (/dev/nvmeXnY)", "O_DIRECT"),
        }
    }

    pub fn backing(&self) -> &'static str {
        match self {
            Transport::Das => "the scratch file, O_DIRECT",
            Transport::Iolab { .. } => "the scratch file, O_DIRECT, io_uring",
            Transport::IolabNvme { .. } => {
                "the scratch file, O_DIRECT, io_uring (iolab's NVMe/TCP target)"
            }
            Transport::NbdkitFile => "the scratch file, buffered (nbdkit file plugin)",
            Transport::NbdkitMemory => "RAM (nbdkit memory plugin): the protocol's cost alone",
            Transport::QemuNbd => "the scratch file, O_DIRECT (--cache=none), io_uring",
            Transport::Tgtd => "the scratch file, O_DIRECT (tgtd's aio backing store)",
            Transport::KernelNvme => {
                "the scratch file (nvmet's file namespace, O_DIRECT), read through /dev/nvmeXnY"
            }
        }
    }
}

/// Options of iolab's own target (`delay`, `stamps`), and the share of
/// requests nbdkit fails with EIO (`error_rate`, its error filter).
#[derive(Debug, Clone, Default)]
pub struct OwnTargetOptions {
    pub delay: Option<String>,
    pub stamps: Option<PathBuf>,
    pub error_rate: Option<f64>,
}

/// A running storage server and the URL that reaches it.
pub struct StorageServer {
    pub transport: Transport,
    pub url: String,
    pub process: ServerProcess,
    pub log: PathBuf,
    /// tgtd's control port, to take its target down before stopping it.
    tgt_control: Option<u32>,
}

impl StorageServer {
    /// (role, pid) for the peer sampling.
    pub fn sampled(&self) -> (String, u32) {
        (self.transport.label(), self.process.pid)
    }
}

/// Start the server of `transport` listening on `addr`:`port` (its
/// command made by `command`, e.g. in a network namespace), serving
/// `backing` (`size` bytes); wait until it answers a handshake.
#[allow(clippy::too_many_arguments)]
pub fn start(
    transport: Transport,
    addr: IpAddr,
    command: impl FnOnce(&str) -> Command,
    backing: &Path,
    size: u64,
    port: u16,
    own: &OwnTargetOptions,
    log_dir: &Path,
) -> anyhow::Result<StorageServer> {
    let program = transport
        .program()
        .ok_or_else(|| anyhow::anyhow!("das has no server"))?;
    let (exe, args) = command_line(transport, addr, port, backing, size, own)?;
    let mut cmd = command(&exe);
    cmd.args(&args);
    let log = log_dir.join(format!("{}.log", transport.label()));
    let out =
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let process = ServerProcess::spawn(cmd, program)?;
    let host = match addr {
        IpAddr::V6(a) => format!("[{a}]"),
        IpAddr::V4(a) => a.to_string(),
    };
    let url = match transport {
        Transport::Tgtd => format!("iscsi://{host}:{port}/{TGT_IQN}/1"),
        Transport::IolabNvme { .. } => format!("nvme-tcp://{host}:{port}/{NVME_NQN}"),
        _ => format!("nbd://{host}:{port}/"),
    };
    let mut server = StorageServer {
        transport,
        url,
        process,
        log,
        tgt_control: None,
    };
    if transport == Transport::Tgtd {
        let port = tgtd::control_port();
        server.tgt_control = Some(port);
        tgtd::configure(port, &mut server.process, &server.log, backing)?;
    }
    wait_ready(&mut server)?;
    Ok(server)
}

impl Drop for StorageServer {
    fn drop(&mut self) {
        if let Some(port) = self.tgt_control {
            tgtd::take_down(port);
        }
    }
}

/// The program and arguments that serve `backing` over `t` on `addr`:`port`.
fn command_line(
    t: Transport,
    addr: IpAddr,
    port: u16,
    backing: &Path,
    size: u64,
    own: &OwnTargetOptions,
) -> anyhow::Result<(String, Vec<String>)> {
    Ok(match t {
        Transport::Das => unreachable!("no server"),
        Transport::KernelNvme => anyhow::bail!("nvme-tcp-kernel has no server process"),
        Transport::Iolab { threads } => {
            iolab::command_line(false, threads, addr, port, backing, own)?
        }
        Transport::IolabNvme { threads } => {
            iolab::command_line(true, threads, addr, port, backing, own)?
        }
        Transport::NbdkitFile => {
            nbdkit::command_line(addr, port, nbdkit::Plugin::File(backing), own.error_rate)
        }
        Transport::NbdkitMemory => {
            nbdkit::command_line(addr, port, nbdkit::Plugin::Memory(size), own.error_rate)
        }
        Transport::Tgtd => tgtd::command_line(addr, port),
        Transport::QemuNbd => qemu_nbd::command_line(addr, port, backing),
    })
}

/// Poll until the server describes its export (10 s at most), failing at
/// once, with its log, if it exits.
fn wait_ready(s: &mut StorageServer) -> anyhow::Result<()> {
    let ep = endpoint_of(Path::new(&s.url))?.expect("a remote URL");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = s.process.exited() {
            let log = std::fs::read_to_string(&s.log).unwrap_or_default();
            anyhow::bail!(
                "{} exited at start ({status}): {}",
                s.transport.label(),
                log.trim()
            );
        }
        match crate::engine::probe_remote(&ep) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(usage(
                    "--transports",
                    format!("{} did not answer within 10 s: {e}", s.transport.label()),
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(t: Transport, own: &OwnTargetOptions) -> Vec<String> {
        let addr: IpAddr = "10.0.0.2".parse().unwrap();
        command_line(t, addr, 10809, Path::new("/s/f"), 1 << 20, own)
            .unwrap()
            .1
    }

    /// Each server's command line, as `iolab remote` has run them.
    #[test]
    fn every_server_gets_its_command_line() {
        let none = OwnTargetOptions::default();
        let own = OwnTargetOptions {
            delay: Some("100us".into()),
            stamps: Some("/s/st".into()),
            error_rate: None,
        };
        assert_eq!(
            args(Transport::IolabNvme { threads: 2 }, &own).join(" "),
            "serve --protocol nvme-tcp --nqn nqn.2025-11.io.iolab:remote -t /s/f --overwrite \
             --listen 10.0.0.2:10809 --allow-remote --threads 2 --fabric-delay 100us --stamps /s/st"
        );
        assert_eq!(
            args(Transport::Iolab { threads: 1 }, &none).join(" "),
            "serve -t /s/f --overwrite --listen 10.0.0.2:10809 --allow-remote --threads 1"
        );
        assert_eq!(
            args(Transport::NbdkitFile, &none).join(" "),
            "-f --exit-with-parent -i 10.0.0.2 -p 10809 --threads 16 file /s/f"
        );
        assert_eq!(
            args(Transport::NbdkitMemory, &none).join(" "),
            "-f --exit-with-parent -i 10.0.0.2 -p 10809 --threads 16 memory 1048576"
        );
        let failing = OwnTargetOptions {
            error_rate: Some(0.05),
            ..Default::default()
        };
        assert_eq!(
            args(Transport::NbdkitFile, &failing).join(" "),
            "-f --exit-with-parent -i 10.0.0.2 -p 10809 --threads 16 --filter=error file /s/f \
             error=EIO error-rate=0.05"
        );
        assert_eq!(
            args(Transport::NbdkitMemory, &failing).join(" "),
            "-f --exit-with-parent -i 10.0.0.2 -p 10809 --threads 16 --filter=error memory 1048576 \
             error=EIO error-rate=0.05"
        );
        assert_eq!(
            args(Transport::QemuNbd, &none).join(" "),
            "-f raw -t -e 8 -b 10.0.0.2 -p 10809 --cache=none --aio=io_uring /s/f"
        );
        let tgtd = args(Transport::Tgtd, &none).join(" ");
        let want = format!(
            "-f -C {} --iscsi portal=10.0.0.2:10809",
            tgtd::control_port()
        );
        assert_eq!(tgtd, want);
        assert!(command_line(
            Transport::KernelNvme,
            "127.0.0.1".parse().unwrap(),
            1,
            Path::new("/f"),
            1,
            &none
        )
        .is_err());
    }
}
