//! iolab's own NBD target (`iolab serve`): one backing file or block
//! device opened with O_DIRECT (buffered, with a note, where the
//! filesystem refuses it), served to any NBD client over TCP by N reactor
//! threads of the serving substrate (`target::serving`), each with its own
//! io_uring for sockets and file, running the NBD protocol (`reactor.rs`).
//! An acceptor thread starts each connection's handshake (`nbd_negotiate`)
//! on a thread of its own (`handshakes.rs`: bounded in number and time)
//! and hands the connection to the next reactor in turn. Every request can
//! be stamped (`target::stamps`) and every reply held back by a fabric
//! delay.

mod handshakes;
mod reactor;

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use super::nbd_negotiate::Export;
use super::serving::{self, backing_size, open_backing};

/// How to serve.
#[derive(Debug, Clone)]
pub struct TargetConfig {
    pub backing: PathBuf,
    pub listen: SocketAddr,
    pub threads: usize,
    pub read_only: bool,
    /// Largest request accepted (advertised as the maximum block size).
    pub max_block: u32,
    /// Requests in flight per reactor at most (slots of `max_block` bytes).
    pub slots: usize,
    /// Hold every reply until its arrival plus this.
    pub delay: Option<Duration>,
    /// Append every connection's per-request stamps to this file.
    pub stamps: Option<PathBuf>,
    /// Connections in their handshake at once at most (more are closed at once).
    pub max_negotiating: usize,
    /// How long a connection's whole handshake may take.
    pub negotiation_deadline: Duration,
    /// How long a connection's replies may wait with not one byte taken
    /// by its socket before it is closed (a client that does not read).
    pub stall_timeout: Duration,
    /// Busy-polling reactors on these CPUs (`--poll`); `None`: sleeping.
    pub poll: Option<serving::PollPlan>,
}

/// Handshakes under way at once at most, by default.
pub const MAX_NEGOTIATING: usize = 64;
/// How long a handshake may take, by default.
pub const NEGOTIATION_DEADLINE: Duration = Duration::from_secs(10);
/// How long replies may stall, by default (as Linux's nvme io_timeout).
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

impl TargetConfig {
    pub fn new(backing: &Path, listen: SocketAddr) -> TargetConfig {
        TargetConfig {
            backing: backing.to_path_buf(),
            listen,
            threads: 1,
            read_only: false,
            max_block: 1 << 20,
            slots: 256,
            delay: None,
            stamps: None,
            max_negotiating: MAX_NEGOTIATING,
            negotiation_deadline: NEGOTIATION_DEADLINE,
            stall_timeout: STALL_TIMEOUT,
            poll: None,
        }
    }
}

/// What every reactor and handshake reads.
pub struct NbdShared {
    file: File,
    export: Export,
    delay_ns: Option<u64>,
    stamps: Option<PathBuf>,
    control: Arc<serving::Control>,
    max_negotiating: usize,
    negotiation_deadline: Duration,
}

impl NbdShared {
    fn stopping(&self) -> bool {
        self.control.stopping()
    }
}

/// A running target; dropping it stops it.
pub struct NbdTarget {
    pub addr: SocketAddr,
    pub export: Export,
    pub direct: bool,
    /// Polling: SO_BUSY_POLL's outcome on the listening socket (which
    /// accepted ones inherit), "50 us" or why not; `None`: not polling.
    pub busy_poll: Option<String>,
    running: serving::Running,
}

/// Bind `cfg.listen`, open the backing store and start serving.
pub fn start(cfg: &TargetConfig) -> anyhow::Result<NbdTarget> {
    let listener = TcpListener::bind(cfg.listen)
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    start_on(cfg, listener)
}

/// Open the backing store and start serving on `listener` (bound by the
/// caller, so a port in use is found before anything is prepared;
/// connections wait in its backlog until now).
pub fn start_on(cfg: &TargetConfig, listener: TcpListener) -> anyhow::Result<NbdTarget> {
    let (file, direct) = open_backing(&cfg.backing, cfg.read_only)?;
    let size =
        backing_size(&file).with_context(|| format!("cannot size {}", cfg.backing.display()))?;
    let min_block = if direct { 4096 } else { 1 };
    let export = Export {
        name: String::new(),
        size: size / min_block as u64 * min_block as u64,
        read_only: cfg.read_only,
        min_block,
        max_block: cfg.max_block,
    };
    if export.size == 0 {
        anyhow::bail!("{} is empty: nothing to serve", cfg.backing.display());
    }
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let busy_poll = serving::busy_poll_on_listener(&listener, cfg.poll.is_some());
    let control = serving::Control::polling(cfg.stall_timeout, cfg.poll.clone());
    let shared = Arc::new(NbdShared {
        file,
        export: export.clone(),
        delay_ns: cfg.delay.map(|d| d.as_nanos() as u64),
        stamps: cfg.stamps.clone(),
        control: control.clone(),
        max_negotiating: cfg.max_negotiating.max(1),
        negotiation_deadline: cfg.negotiation_deadline,
    });
    let reactors = (0..cfg.threads.max(1))
        .map(|_| reactor::Nbd::new(shared.clone(), cfg.slots))
        .collect::<std::io::Result<Vec<_>>>()
        .context("cannot map the target's slot memory")?;
    let running = serving::start("nbd", &control, reactors, move |handoff| {
        handshakes::accept_loop(listener, shared, handoff)
    })?;
    Ok(NbdTarget {
        addr,
        export,
        direct,
        busy_poll,
        running,
    })
}

impl NbdTarget {
    /// Stop taking connections, finish what is in flight, close every
    /// connection (writing its stamps) and join the threads.
    pub fn stop(self) -> anyhow::Result<()> {
        self.running.stop()
    }
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
