//! The transports `iolab remote` compares and the servers behind them,
//! started on the target host with their backing store the scratch file on
//! the storage under test: iolab's own NBD and NVMe/TCP targets (O_DIRECT,
//! io_uring), nbdkit's file plugin (buffered) and memory plugin (RAM, the
//! protocol's own cost), qemu-nbd (O_DIRECT through --cache=none,
//! io_uring), tgtd (iSCSI). `das` is the same file used locally: the
//! baseline; `nvme-tcp-kernel` (the kernel's nvmet and nvme-tcp) has no
//! server process and is set up by `campaign::kernel_path`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::topology::{which, Topology};
use crate::dut::remote::endpoint_of;
use crate::engine::EngineKind;
use crate::error::usage;
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
            return super::kernel::nvme_tcp_kernel_unavailable();
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

/// Options of iolab's own target.
#[derive(Debug, Clone, Default)]
pub struct OwnTargetOptions {
    pub delay: Option<String>,
    pub stamps: Option<PathBuf>,
}

/// A running server and the URL that reaches it.
pub struct Server {
    pub transport: Transport,
    pub url: String,
    pub process: ServerProcess,
    pub log: PathBuf,
    /// tgtd's control port, to take its target down before stopping it.
    tgt_control: Option<u32>,
}

impl Server {
    /// (role, pid) for the peer sampling.
    pub fn sampled(&self) -> (String, u32) {
        (self.transport.label(), self.process.pid)
    }
}

/// Start the server of `transport` on `topo`'s target host, serving
/// `backing` (`size` bytes) on `port`; wait until it answers a handshake.
pub fn start(
    transport: Transport,
    topo: &Topology,
    backing: &Path,
    size: u64,
    port: u16,
    own: &OwnTargetOptions,
    log_dir: &Path,
) -> anyhow::Result<Server> {
    let addr = topo.target_addr;
    let program = transport
        .program()
        .ok_or_else(|| anyhow::anyhow!("das has no server"))?;
    let (exe, args) = command_line(transport, addr, port, backing, size, own)?;
    let mut cmd = topo.target_command(&exe);
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
    let mut server = Server {
        transport,
        url,
        process,
        log,
        tgt_control: None,
    };
    if transport == Transport::Tgtd {
        server.tgt_control = Some(tgt_control_port());
        configure_tgtd(&mut server, backing)?;
    }
    wait_ready(&mut server)?;
    Ok(server)
}

/// tgtd's private control port (its socket is /var/run/tgtd/socket.N; tgtd
/// refuses large values, 55000 is out of range):
/// one per iolab process, so several runs and the machine's own tgtd
/// never meet.
fn tgt_control_port() -> u32 {
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
/// initiator; retried while tgtd is still starting.
fn configure_tgtd(s: &mut Server, backing: &Path) -> anyhow::Result<()> {
    let port = s.tgt_control.expect("tgtd");
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
            Err(e) if Instant::now() > deadline || s.process.exited().is_some() => {
                let log = std::fs::read_to_string(&s.log).unwrap_or_default();
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

impl Drop for Server {
    fn drop(&mut self) {
        // tgtd ignores SIGTERM while it has targets: take them down first
        // (the process guard then stops it, with SIGKILL as the fallback).
        if let Some(port) = self.tgt_control {
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
    }
}

fn command_line(
    t: Transport,
    addr: IpAddr,
    port: u16,
    backing: &Path,
    size: u64,
    own: &OwnTargetOptions,
) -> anyhow::Result<(String, Vec<String>)> {
    let file = backing.display().to_string();
    let (a, p) = (addr.to_string(), port.to_string());
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    Ok(match t {
        Transport::Das => unreachable!("no server"),
        Transport::KernelNvme => anyhow::bail!("nvme-tcp-kernel has no server process"),
        Transport::Iolab { threads } | Transport::IolabNvme { threads } => {
            let exe = std::env::current_exe().context("cannot find iolab's own executable")?;
            let mut v = s(&["serve", "-t", &file, "--overwrite", "--listen"]);
            if matches!(t, Transport::IolabNvme { .. }) {
                v.splice(1..1, s(&["--protocol", "nvme-tcp", "--nqn", NVME_NQN]));
            }
            v.push(format!("{}", std::net::SocketAddr::new(addr, port)));
            if !addr.to_canonical().is_loopback() {
                // The target namespace's own veth address: reachable only
                // from the initiator namespace iolab made next to it.
                v.push("--allow-remote".into());
            }
            v.extend(s(&["--threads", &threads.to_string()]));
            if let Some(d) = &own.delay {
                v.extend(s(&["--fabric-delay", d]));
            }
            if let Some(st) = &own.stamps {
                v.push("--stamps".into());
                v.push(st.display().to_string());
            }
            (exe.display().to_string(), v)
        }
        Transport::NbdkitFile | Transport::NbdkitMemory => {
            let plugin = match t {
                Transport::NbdkitFile => ["file".to_string(), file.clone()],
                _ => ["memory".to_string(), size.to_string()],
            };
            let mut v = s(&[
                "-f",
                "--exit-with-parent",
                "-i",
                &a,
                "-p",
                &p,
                "--threads",
                "16",
            ]);
            v.extend(plugin);
            ("nbdkit".into(), v)
        }
        Transport::Tgtd => (
            "tgtd".into(),
            vec![
                "-f".into(),
                "-C".into(),
                tgt_control_port().to_string(),
                "--iscsi".into(),
                format!("portal={}", std::net::SocketAddr::new(addr, port)),
            ],
        ),
        Transport::QemuNbd => (
            "qemu-nbd".into(),
            s(&[
                "-f",
                "raw",
                "-t",
                "-e",
                "8",
                "-b",
                &a,
                "-p",
                &p,
                "--cache=none",
                "--aio=io_uring",
                &file,
            ]),
        ),
    })
}

/// Poll until the server describes its export (10 s at most), failing at
/// once, with its log, if it exits.
fn wait_ready(s: &mut Server) -> anyhow::Result<()> {
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
