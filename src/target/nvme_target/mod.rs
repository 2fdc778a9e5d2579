//! iolab's own NVMe target (`iolab serve --protocol nvme-tcp`): one
//! subsystem with one namespace, backed by a file or block device opened
//! with O_DIRECT (buffered where the filesystem refuses it), and the
//! discovery subsystem that lists it. Split as SPDK's lib/nvmf is over
//! its transports: the core, written once for every fabric, is
//! `queue.rs` (the `Fabric` trait a transport implements and `QueuePair`,
//! one queue pair's state) and `nvmf.rs` (the command state machine:
//! controller checks, data fetched for writes, the file operation, data
//! returned for reads, the completion; stamps (`target::stamps`), the
//! fabric delay and the negotiation deadline); NVMe/TCP, the first
//! fabric, is `tcp.rs` (ICReq/ICResp, PDU framing, R2T/H2CData/C2HData,
//! digests) and `reactor.rs` (the core over TCP as a `Protocol` of the
//! serving substrate, `target::serving`: N reactor threads, each with its
//! own io_uring for sockets and file; the acceptor hands each connection
//! to the next reactor in turn, and the ICReq/ICResp exchange and
//! everything after it happen on the reactor). Controllers
//! (`target::nvme_controller`, which knows no fabric) are made by an admin
//! queue's Connect and found by I/O queues' Connects in a registry shared
//! by the reactors (control path only).

mod nvmf;
mod queue;
mod rdma;
mod rdma_driver;
mod reactor;
mod tcp;

pub use rdma_driver::{listen_rdma, start_rdma, start_rdma_on, NvmeRdmaTarget, RdmaListener};

use std::collections::HashMap;
use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;

use super::nvme_controller::{Controller, MDTS};
use super::serving::{self, backing_size, open_backing};
use crate::proto::nvme::discovery::{self, DISCOVERY_NQN};

/// The subsystem NQN `iolab serve --protocol nvme-tcp` uses by default.
pub const DEFAULT_NQN: &str = "nqn.2025-11.io.iolab:target";

/// How to serve.
#[derive(Debug, Clone)]
pub struct NvmeTargetConfig {
    pub backing: PathBuf,
    pub listen: SocketAddr,
    pub threads: usize,
    pub subnqn: String,
    /// Hold every completion until its command's arrival plus this.
    pub delay: Option<Duration>,
    /// Append every connection's per-command stamps to this file.
    pub stamps: Option<PathBuf>,
    /// How long a connection may take to send its ICReq and Connect.
    pub negotiation_deadline: Duration,
    /// How long a connection's PDUs may wait with not one byte taken by
    /// its socket before it is closed (a host that does not read).
    pub stall_timeout: Duration,
    /// Busy-polling reactors on these CPUs (`--poll`); `None`: sleeping.
    pub poll: Option<serving::PollPlan>,
}

impl NvmeTargetConfig {
    pub fn new(backing: &Path, listen: SocketAddr) -> NvmeTargetConfig {
        NvmeTargetConfig {
            backing: backing.to_path_buf(),
            listen,
            threads: 1,
            subnqn: DEFAULT_NQN.into(),
            delay: None,
            stamps: None,
            negotiation_deadline: super::nbd_target::NEGOTIATION_DEADLINE,
            stall_timeout: super::nbd_target::STALL_TIMEOUT,
            poll: None,
        }
    }
}

/// What every reactor reads, and the controllers they share.
pub struct NvmeShared {
    file: File,
    subnqn: String,
    /// The address listened on (the discovery log names it).
    listen: SocketAddr,
    /// Namespace size in bytes (whole blocks) and logical block size.
    size: u64,
    block_size: u32,
    delay_ns: Option<u64>,
    stamps: Option<PathBuf>,
    controllers: Mutex<Registry>,
    negotiation_deadline_ns: u64,
    /// The transport the discovery log names (TCP or RDMA).
    trtype: u8,
}

/// The live controllers by controller ID, and their connected I/O queues
/// (a queue ID once per controller: with QIDs at most 64, a controller
/// holds at most 64 I/O queue connections).
#[derive(Default)]
struct Registry {
    next: u16,
    by_id: HashMap<u16, Controller>,
    io_queues: std::collections::HashSet<(u16, u16)>,
}

impl NvmeShared {
    /// The backing store opened and sized, the NQN checked: what every
    /// reactor of a target listening on `listen` over `trtype` reads;
    /// whether the store is opened with O_DIRECT.
    fn open(
        cfg: &NvmeTargetConfig,
        listen: SocketAddr,
        trtype: u8,
    ) -> anyhow::Result<(Arc<NvmeShared>, bool)> {
        let (file, direct) = open_backing(&cfg.backing, false)?;
        let raw = backing_size(&file)
            .with_context(|| format!("cannot size {}", cfg.backing.display()))?;
        let block_size: u32 = if direct { 4096 } else { 512 };
        let size = raw / block_size as u64 * block_size as u64;
        if size == 0 {
            anyhow::bail!("{} is empty: nothing to serve", cfg.backing.display());
        }
        crate::proto::nvme::codec::connect_data([0; 16], 0, &cfg.subnqn, "nqn.x")
            .map_err(|e| anyhow::anyhow!("--nqn: {e}"))?;
        let shared = NvmeShared {
            file,
            subnqn: cfg.subnqn.clone(),
            listen,
            size,
            block_size,
            delay_ns: cfg.delay.map(|d| d.as_nanos() as u64),
            stamps: cfg.stamps.clone(),
            controllers: Mutex::new(Registry::default()),
            negotiation_deadline_ns: cfg.negotiation_deadline.as_nanos() as u64,
            trtype,
        };
        Ok((Arc::new(shared), direct))
    }

    /// A new controller for an admin queue's Connect naming `subnqn`
    /// over a connection to `local`: a discovery controller for the
    /// discovery NQN, else the subsystem's (the Connect is checked after).
    fn new_controller(&self, subnqn: &str, local: SocketAddr, mdts: u8) -> Controller {
        let mut r = self.controllers.lock().expect("registry");
        r.next = if r.next >= 0xFFEF { 1 } else { r.next + 1 };
        if subnqn == DISCOVERY_NQN {
            return Controller::discovery(r.next, Arc::new(self.discovery_log(local)));
        }
        Controller::new(&self.subnqn, r.next, self.size, self.block_size).with_mdts(mdts)
    }

    /// The discovery log: the one subsystem at the listening address (the
    /// connection's own address where the target listens on all of them,
    /// as Linux's nvmet does).
    fn discovery_log(&self, local: SocketAddr) -> Vec<u8> {
        let mut at = self.listen;
        if at.ip().is_unspecified() {
            at.set_ip(local.ip());
        }
        let mut entry = discovery::Entry::tcp(&self.subnqn, at);
        entry.trtype = self.trtype;
        discovery::encode_log(1, &[entry])
            .expect("an NQN checked at start and an IP address fit their fields")
    }

    fn with_controller<T>(&self, cntlid: u16, f: impl FnOnce(&mut Controller) -> T) -> Option<T> {
        let mut r = self.controllers.lock().expect("registry");
        r.by_id.get_mut(&cntlid).map(f)
    }

    fn insert(&self, c: Controller) {
        let mut r = self.controllers.lock().expect("registry");
        r.by_id.insert(c.cntlid, c);
    }

    fn remove(&self, cntlid: u16) {
        let mut r = self.controllers.lock().expect("registry");
        r.by_id.remove(&cntlid);
    }

    /// Take I/O queue `qid` of controller `cntlid`; false if it is connected.
    fn claim_queue(&self, cntlid: u16, qid: u16) -> bool {
        let mut r = self.controllers.lock().expect("registry");
        r.io_queues.insert((cntlid, qid))
    }

    fn release_queue(&self, cntlid: u16, qid: u16) {
        let mut r = self.controllers.lock().expect("registry");
        r.io_queues.remove(&(cntlid, qid));
    }
}

/// A running target; dropping it stops it.
pub struct NvmeTcpTarget {
    pub addr: SocketAddr,
    /// The namespace's size in bytes and its logical block size.
    pub size: u64,
    pub block_size: u32,
    pub direct: bool,
    /// Polling: SO_BUSY_POLL's outcome on the listening socket, as
    /// `NbdTarget::busy_poll`.
    pub busy_poll: Option<String>,
    subnqn: String,
    running: serving::Running,
}

/// Largest transfer one command may ask for (MDTS pages of 4 KiB).
pub const MAX_TRANSFER: usize = 4096 << MDTS;

/// Bind `cfg.listen`, open the backing store and start serving.
pub fn start(cfg: &NvmeTargetConfig) -> anyhow::Result<NvmeTcpTarget> {
    let listener = TcpListener::bind(cfg.listen)
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    start_on(cfg, listener)
}

/// Open the backing store and start serving on `listener` (bound by the
/// caller, so a port in use is found before anything is prepared;
/// connections wait in its backlog until now).
pub fn start_on(cfg: &NvmeTargetConfig, listener: TcpListener) -> anyhow::Result<NvmeTcpTarget> {
    let addr = listener.local_addr()?;
    let (shared, direct) = NvmeShared::open(cfg, addr, discovery::TRTYPE_TCP)?;
    let (size, block_size) = (shared.size, shared.block_size);
    listener.set_nonblocking(true)?;
    let busy_poll = serving::busy_poll_on_listener(&listener, cfg.poll.is_some());
    let control = serving::Control::polling(cfg.stall_timeout, cfg.poll.clone());
    let reactors = (0..cfg.threads.max(1))
        .map(|_| reactor::NvmeTcp::new(shared.clone()))
        .collect();
    let stopping = control.clone();
    let running = serving::start("nvme", &control, reactors, move |mut handoff| {
        serving::accept_loop(
            listener,
            &serving::ConnLimits::standard(),
            move || stopping.stopping(),
            |sock, peer, permit| {
                handoff.hand(reactor::NvmeNewConnection { sock, peer, permit });
                Ok(())
            },
        )
    })?;
    Ok(NvmeTcpTarget {
        addr,
        size,
        block_size,
        direct,
        busy_poll,
        subnqn: cfg.subnqn.clone(),
        running,
    })
}

impl NvmeTcpTarget {
    /// Stop taking connections, finish what is in flight, close every
    /// connection (writing its stamps) and join the threads.
    pub fn stop(self) -> anyhow::Result<()> {
        self.running.stop()
    }

    /// The URL hosts connect to.
    pub fn url(&self) -> String {
        format!("nvme-tcp://{}/{}?nsid=1", self.addr, self.subnqn)
    }
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
