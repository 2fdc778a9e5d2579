//! The storage servers iolab starts for `iolab remote` (beside the
//! database servers of `servers`): for each transport it compares, the
//! server on the target host with its backing store the scratch file on
//! the storage under test: iolab's own NBD and NVMe/TCP targets (`iolab`:
//! `iolab serve`, O_DIRECT, io_uring), nbdkit's file plugin (buffered) and
//! memory plugin (RAM, the protocol's own cost; `nbdkit`), qemu-nbd
//! (O_DIRECT through --cache=none, io_uring; `qemu_nbd`), tgtd (iSCSI;
//! `tgtd`). `das` is the same file used locally: the baseline;
//! `nvme-tcp-kernel` and `nvme-rdma-kernel` (the kernel's nvmet and
//! nvme-tcp or nvme-rdma, over soft-RoCE) have no server process and are
//! set up by `campaign::kernel_path`. Where the server
//! runs (a network namespace) is the caller's: `start` takes the address
//! and a way to make the command there (`remote::servers::start` passes
//! its topology's). Each transport's facts are one `TransportFacts`.

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
use crate::plan::endpoint::WireProtocol;
use crate::plan::engines::{
    engine_for_transport, EngineConfig, EngineKind, NetOptions, UringOptions,
};
use crate::testbed::command::which;
use crate::testbed::nvme_kernel::NvmeTrtype;
use crate::testbed::process::ServerProcess;

/// One way to reach the storage under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Direct-attached: the file itself, locally.
    Das,
    /// iolab's own NBD target with this many reactor threads; `poll`:
    /// they and the initiator busy-poll (`serve --poll`, `device --poll`).
    Iolab {
        threads: usize,
        poll: bool,
    },
    /// iolab's own NVMe/TCP target with this many reactor threads; `poll`
    /// as for `Iolab`.
    IolabNvme {
        threads: usize,
        poll: bool,
    },
    NbdkitFile,
    NbdkitMemory,
    QemuNbd,
    /// iSCSI: tgtd with the aio backing store (O_DIRECT).
    Tgtd,
    /// The kernel's NVMe/TCP target (nvmet) and initiator (nvme-tcp).
    KernelNvme,
    /// The kernel's NVMe over RDMA target (nvmet-rdma) and initiator
    /// (nvme-rdma) over soft-RoCE.
    KernelNvmeRdma,
    /// iolab's own NVMe target over RDMA and its nvme-rdma engine, over
    /// soft-RoCE (or the RDMA device the machine has).
    IolabNvmeRdma,
}

pub const TRANSPORT_NAMES: &str = "das, iolab, nbdkit-file, nbdkit-memory, qemu-nbd, tgtd, \
     nvme-tcp, nvme-tcp-kernel, nvme-rdma-kernel, iolab-poll, nvme-tcp-poll, nvme-rdma";

/// The subsystem NQN of iolab's NVMe/TCP target in `iolab remote`.
pub const NVME_NQN: &str = "nqn.2025-11.io.iolab:remote";

/// The IQN of the target iolab configures in tgtd.
pub const TGT_IQN: &str = "iqn.2025-11.io.iolab:remote";

/// One transport's facts: everything iolab knows about it outside the
/// command line that starts its server (`command_line`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportFacts {
    /// The names `--transports` takes for it (the first is its own).
    pub names: &'static [&'static str],
    /// The label of its points with one reactor thread.
    pub label: &'static str,
    /// iolab's own target (stamps, fabric delay, reactor threads).
    pub own: bool,
    /// The protocol its initiator speaks; none for the local file and the
    /// kernel's initiator (both read a local device).
    pub wire: Option<WireProtocol>,
    /// The program its server needs, if any.
    pub program: Option<&'static str>,
    /// The name a target host's agent serves it by (`iolab agent`), if it
    /// serves it.
    pub served_as: Option<&'static str>,
    /// Its server can fail a share of requests (`--inject-errors`).
    pub injects_errors: bool,
    /// How each end caches: (the initiator's reads and writes, the
    /// target's backing file).
    pub caching: (&'static str, &'static str),
    /// What the backing store is, for the results.
    pub backing: &'static str,
    /// What the database runs build their filesystem on.
    pub db_volume: DbVolume,
    /// The kernel's NVMe-oF target and initiator over this transport type
    /// (`campaign::kernel_path`), none for the others.
    pub kernel: Option<NvmeTrtype>,
    /// Both ends busy-poll: the target's reactors, pinned (`serve
    /// --poll`), and the initiator (`--poll`).
    pub polls: bool,
    /// It runs over RDMA: a soft-RoCE link iolab makes (`testbed::soft_roce`)
    /// in the initial network namespace, not the topology's.
    pub rdma: bool,
}

/// What the database runs of `iolab remote` build their filesystem on
/// over a transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbVolume {
    /// The local file itself.
    Local,
    /// The NBD export (nbdfuse).
    Nbd,
    /// A kernel initiator's block device, needing this kernel module (and
    /// saying this where it is absent), if the transport's own setup does
    /// not load one.
    Block(Option<(&'static str, &'static str)>),
    /// None: why not.
    Unreachable(&'static str),
}

const USER_SPACE: &str = "none (user-space initiator)";

/// A served NBD transport's facts (the common case).
const fn nbd_server(
    name: &'static str,
    label: &'static str,
    program: &'static str,
    caching: (&'static str, &'static str),
    backing: &'static str,
) -> TransportFacts {
    TransportFacts {
        names: &[],
        label,
        own: false,
        wire: Some(WireProtocol::Nbd),
        program: Some(program),
        served_as: Some(name),
        injects_errors: false,
        caching,
        backing,
        db_volume: DbVolume::Nbd,
        kernel: None,
        polls: false,
        rdma: false,
    }
}

const DAS: TransportFacts = TransportFacts {
    names: &["das", "local"],
    label: "das",
    wire: None,
    program: None,
    served_as: None,
    caching: ("O_DIRECT", "-"),
    backing: "the scratch file, O_DIRECT",
    db_volume: DbVolume::Local,
    ..nbd_server("", "", "", ("", ""), "")
};
const IOLAB: TransportFacts = TransportFacts {
    names: &["iolab"],
    own: true,
    ..nbd_server(
        "iolab",
        "nbd-iolab",
        "iolab",
        (USER_SPACE, "O_DIRECT"),
        "the scratch file, O_DIRECT, io_uring",
    )
};
const IOLAB_NVME: TransportFacts = TransportFacts {
    names: &["nvme-tcp", "iolab-nvme"],
    label: "nvme-tcp-iolab",
    own: true,
    wire: Some(WireProtocol::NvmeTcp),
    served_as: Some("nvme-tcp"),
    backing: "the scratch file, O_DIRECT, io_uring (iolab's NVMe/TCP target)",
    db_volume: DbVolume::Block(Some((
        "nvme_tcp",
        "no block device for an NVMe/TCP namespace on this kernel (no nvme_tcp module) and no user-space path to one",
    ))),
    ..IOLAB
};
const IOLAB_POLL: TransportFacts = TransportFacts {
    names: &["iolab-poll", "nbd-poll"],
    label: "nbd-iolab-poll",
    served_as: None,
    backing: "the scratch file, O_DIRECT, io_uring; reactors and initiator busy-poll",
    polls: true,
    ..IOLAB
};
const IOLAB_NVME_POLL: TransportFacts = TransportFacts {
    names: &["nvme-tcp-poll", "iolab-nvme-poll"],
    label: "nvme-tcp-iolab-poll",
    served_as: None,
    backing: "the scratch file, O_DIRECT, io_uring (iolab's NVMe/TCP target); reactors and initiator busy-poll",
    polls: true,
    ..IOLAB_NVME
};
const NBDKIT_FILE: TransportFacts = TransportFacts {
    names: &["nbdkit-file"],
    injects_errors: true,
    ..nbd_server(
        "nbdkit-file",
        "nbd-nbdkit-file",
        "nbdkit",
        (USER_SPACE, "buffered (page cache)"),
        "the scratch file, buffered (nbdkit file plugin)",
    )
};
const NBDKIT_MEMORY: TransportFacts = TransportFacts {
    names: &["nbdkit-memory"],
    injects_errors: true,
    ..nbd_server(
        "nbdkit-memory",
        "nbd-nbdkit-memory",
        "nbdkit",
        (USER_SPACE, "RAM"),
        "RAM (nbdkit memory plugin): the protocol's cost alone",
    )
};
const QEMU_NBD: TransportFacts = TransportFacts {
    names: &["qemu-nbd"],
    ..nbd_server(
        "qemu-nbd",
        "nbd-qemu",
        "qemu-nbd",
        (USER_SPACE, "O_DIRECT"),
        "the scratch file, O_DIRECT (--cache=none), io_uring",
    )
};
const TGTD: TransportFacts = TransportFacts {
    names: &["tgtd", "iscsi"],
    label: "iscsi-tgtd",
    wire: Some(WireProtocol::Iscsi),
    program: Some("tgtd"),
    served_as: None,
    caching: (USER_SPACE, "O_DIRECT"),
    backing: "the scratch file, O_DIRECT (tgtd's aio backing store)",
    db_volume: DbVolume::Unreachable(
        "no block device for an iSCSI LUN on this kernel (no iscsi_tcp) and no user-space path to one",
    ),
    ..QEMU_NBD
};
const KERNEL_NVME: TransportFacts = TransportFacts {
    names: &["nvme-tcp-kernel"],
    label: "nvme-tcp-kernel",
    program: None,
    caching: ("O_DIRECT (/dev/nvmeXnY)", "O_DIRECT"),
    backing: "the scratch file (nvmet's file namespace, O_DIRECT), read through /dev/nvmeXnY",
    db_volume: DbVolume::Block(None),
    kernel: Some(NvmeTrtype::Tcp),
    ..DAS
};
const KERNEL_NVME_RDMA: TransportFacts = TransportFacts {
    names: &["nvme-rdma-kernel"],
    label: "nvme-rdma-kernel",
    backing: "the scratch file (nvmet's file namespace, O_DIRECT), read through /dev/nvmeXnY over soft-RoCE (rdma_rxe)",
    kernel: Some(NvmeTrtype::Rdma),
    rdma: true,
    ..KERNEL_NVME
};
const IOLAB_NVME_RDMA: TransportFacts = TransportFacts {
    names: &["nvme-rdma", "iolab-nvme-rdma"],
    label: "nvme-rdma-iolab",
    wire: Some(WireProtocol::NvmeRdma),
    served_as: None,
    backing: "the scratch file, O_DIRECT, io_uring (iolab's NVMe target over RDMA, soft-RoCE)",
    db_volume: DbVolume::Unreachable(
        "the database runs on a block device and iolab's NVMe/RDMA initiator has none (nvme-rdma-kernel runs it on the kernel initiator's)",
    ),
    rdma: true,
    ..IOLAB_NVME
};

impl Transport {
    /// Every transport (own targets with one reactor thread), in
    /// `TRANSPORT_NAMES` order.
    pub const ALL: [Transport; 12] = [
        Transport::Das,
        Transport::Iolab {
            threads: 1,
            poll: false,
        },
        Transport::NbdkitFile,
        Transport::NbdkitMemory,
        Transport::QemuNbd,
        Transport::Tgtd,
        Transport::IolabNvme {
            threads: 1,
            poll: false,
        },
        Transport::KernelNvme,
        Transport::KernelNvmeRdma,
        Transport::Iolab {
            threads: 1,
            poll: true,
        },
        Transport::IolabNvme {
            threads: 1,
            poll: true,
        },
        Transport::IolabNvmeRdma,
    ];

    /// Its facts.
    pub fn facts(&self) -> &'static TransportFacts {
        match self {
            Transport::Das => &DAS,
            Transport::Iolab { poll: false, .. } => &IOLAB,
            Transport::Iolab { poll: true, .. } => &IOLAB_POLL,
            Transport::IolabNvme { poll: false, .. } => &IOLAB_NVME,
            Transport::IolabNvme { poll: true, .. } => &IOLAB_NVME_POLL,
            Transport::NbdkitFile => &NBDKIT_FILE,
            Transport::NbdkitMemory => &NBDKIT_MEMORY,
            Transport::QemuNbd => &QEMU_NBD,
            Transport::Tgtd => &TGTD,
            Transport::KernelNvme => &KERNEL_NVME,
            Transport::KernelNvmeRdma => &KERNEL_NVME_RDMA,
            Transport::IolabNvmeRdma => &IOLAB_NVME_RDMA,
        }
    }

    pub fn parse(s: &str) -> Option<Transport> {
        Transport::ALL
            .into_iter()
            .find(|t| t.facts().names.contains(&s))
    }

    /// The direct-attached baseline: the scratch file itself, locally.
    pub fn local() -> Transport {
        Transport::Das
    }

    /// iolab's own NBD target with one reactor thread.
    pub fn own_nbd() -> Transport {
        Transport::Iolab {
            threads: 1,
            poll: false,
        }
    }

    /// The direct-attached baseline.
    pub fn is_local(&self) -> bool {
        self.facts().db_volume == DbVolume::Local
    }

    /// Set up in the kernel (no server process; `campaign::kernel_path`).
    pub fn is_kernel(&self) -> bool {
        self.facts().kernel.is_some()
    }

    /// The kernel's NVMe-oF transport type, for a kernel path.
    pub fn kernel_trtype(&self) -> Option<NvmeTrtype> {
        self.facts().kernel
    }

    /// The label of its points (`transport` parameter).
    pub fn label(&self) -> String {
        match self.threads() {
            Some(n) if n != 1 => format!("{}-t{n}", self.facts().label),
            _ => self.facts().label.into(),
        }
    }

    /// iolab's own target (stamps, fabric delay, reactor threads).
    pub fn own(&self) -> bool {
        self.facts().own
    }

    /// Its reactor threads (own targets only).
    pub fn threads(&self) -> Option<usize> {
        match self {
            Transport::Iolab { threads, .. } | Transport::IolabNvme { threads, .. } => {
                Some(*threads)
            }
            _ => None,
        }
    }

    /// The same transport with `threads` reactor threads (own targets only).
    pub fn with_threads(&self, threads: usize) -> Transport {
        match self {
            Transport::Iolab { poll, .. } => Transport::Iolab {
                threads,
                poll: *poll,
            },
            Transport::IolabNvme { poll, .. } => Transport::IolabNvme {
                threads,
                poll: *poll,
            },
            t => *t,
        }
    }

    /// The protocol its initiator speaks, if a user-space one.
    pub fn wire(&self) -> Option<WireProtocol> {
        self.facts().wire
    }

    /// The engine that speaks its protocol (a local one reads a local device).
    pub fn engine(&self) -> EngineKind {
        self.wire()
            .and_then(engine_for_transport)
            .unwrap_or(EngineKind::default_local())
    }

    /// Both ends busy-poll (the target's reactors and the initiator).
    pub fn polls(&self) -> bool {
        self.facts().polls
    }

    /// Its engine with the options this transport runs it with (`--poll`
    /// where both ends busy-poll).
    pub fn initiator(&self) -> EngineConfig {
        let net = NetOptions { poll: self.polls() };
        EngineConfig::with_options(self.engine(), UringOptions::default(), net, None)
    }

    /// The program it needs, if any.
    pub fn program(&self) -> Option<&'static str> {
        self.facts().program
    }

    /// It runs over RDMA (on a soft-RoCE link iolab makes).
    pub fn is_rdma(&self) -> bool {
        self.facts().rdma
    }

    /// Why it cannot run here (its server is not installed).
    pub fn unavailable(&self) -> Option<String> {
        if let Some(trtype) = self.kernel_trtype() {
            return crate::testbed::kernel_modules::nvme_kernel_unavailable(trtype);
        }
        if self.is_rdma() {
            // iolab's own RDMA ends need rdma-core's libraries too.
            return crate::testbed::soft_roce::unavailable()
                .or_else(|| crate::native::verbs::verbs().err());
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

    /// How each end caches: (the initiator's reads and writes, the
    /// target's backing file). A ratio against DAS (O_DIRECT) compares a
    /// device only where both are uncached.
    pub fn caching(&self) -> (&'static str, &'static str) {
        self.facts().caching
    }

    /// What the backing store is, for the results.
    pub fn backing(&self) -> &'static str {
        self.facts().backing
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
    /// The soft-RoCE link an RDMA transport's server listens on (dropped
    /// after the server).
    pub link: Option<crate::testbed::soft_roce::SoftRoce>,
}

impl StorageServer {
    /// (role, pid) for the peer sampling.
    pub fn sampled(&self) -> (String, u32) {
        (self.transport.label(), self.process.pid)
    }

    /// A polling target's reactors' CPUs and SO_BUSY_POLL's outcome, as
    /// its start said them in its log (a second at most for the line).
    pub fn polling(&self) -> Option<(String, String)> {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(p) = iolab::polling_said(&log) {
                return Some(p);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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
        Transport::IolabNvmeRdma => format!("nvme-rdma://{host}:{port}/{NVME_NQN}"),
        _ => format!("nbd://{host}:{port}/"),
    };
    let mut server = StorageServer {
        transport,
        url,
        process,
        log,
        tgt_control: None,
        link: None,
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
        Transport::KernelNvme | Transport::KernelNvmeRdma => {
            anyhow::bail!("{} has no server process", t.label())
        }
        Transport::Iolab { threads, poll } => {
            iolab::command_line(None, (threads, poll), addr, port, backing, own)?
        }
        Transport::IolabNvme { threads, poll } => {
            iolab::command_line(Some("nvme-tcp"), (threads, poll), addr, port, backing, own)?
        }
        Transport::IolabNvmeRdma => {
            iolab::command_line(Some("nvme-rdma"), (1, false), addr, port, backing, own)?
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
            args(
                Transport::IolabNvme {
                    threads: 2,
                    poll: false
                },
                &own
            )
            .join(" "),
            "serve --protocol nvme-tcp --nqn nqn.2025-11.io.iolab:remote -t /s/f --overwrite \
             --listen 10.0.0.2:10809 --allow-remote --threads 2 --fabric-delay 100us --stamps /s/st"
        );
        assert_eq!(
            args(Transport::own_nbd(), &none).join(" "),
            "serve -t /s/f --overwrite --listen 10.0.0.2:10809 --allow-remote --threads 1"
        );
        assert_eq!(
            args(Transport::parse("nvme-tcp-poll").unwrap(), &none).join(" "),
            "serve --protocol nvme-tcp --nqn nqn.2025-11.io.iolab:remote -t /s/f --overwrite \
             --listen 10.0.0.2:10809 --allow-remote --threads 1 --poll"
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

    /// Every name of `TRANSPORT_NAMES` parses to the transport whose label
    /// the points carry; threads show in own targets' labels only.
    #[test]
    fn names_parse_and_label() {
        let labels: Vec<String> = TRANSPORT_NAMES
            .split(", ")
            .map(|n| Transport::parse(n).expect(n).label())
            .collect();
        assert_eq!(
            labels.join(" "),
            "das nbd-iolab nbd-nbdkit-file nbd-nbdkit-memory nbd-qemu iscsi-tgtd \
             nvme-tcp-iolab nvme-tcp-kernel nvme-rdma-kernel nbd-iolab-poll nvme-tcp-iolab-poll \
             nvme-rdma-iolab"
        );
        let p = Transport::parse("nvme-tcp-poll").unwrap().with_threads(2);
        assert_eq!(p.label(), "nvme-tcp-iolab-poll-t2");
        assert!(p.polls() && p.own());
        assert_eq!(p.initiator().kind().name(), "nvme-tcp");
        assert!(p.initiator().net().poll);
        assert!(!Transport::parse("nvme-tcp").unwrap().initiator().net().poll);
        assert!(!Transport::parse("iolab").unwrap().polls());
        let t = Transport::parse("nvme-tcp").unwrap().with_threads(4);
        assert_eq!(t.label(), "nvme-tcp-iolab-t4");
        assert_eq!(
            Transport::parse("qemu-nbd")
                .unwrap()
                .with_threads(4)
                .label(),
            "nbd-qemu"
        );
        assert_eq!(Transport::parse("iscsi").unwrap().engine().name(), "iscsi");
        assert_eq!(
            Transport::parse("local").unwrap().engine().name(),
            "io_uring"
        );
        assert_eq!(Transport::ALL.len(), TRANSPORT_NAMES.split(", ").count());
    }
}
