//! iolab's own NBD target (`iolab serve`): one backing file or block
//! device opened with O_DIRECT (buffered, with a note, where the
//! filesystem refuses it), served to any NBD client over TCP by N reactor
//! threads (`reactor.rs`), each with its own io_uring for sockets and file.
//! An acceptor thread runs the handshake (`nbd_negotiate`) and hands each
//! connection to the next reactor in turn. Every request can be stamped
//! (`remote::stamps`) and every reply held back by a fabric delay.

mod reactor;

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use super::nbd_negotiate::{self, Export, Outcome};
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
}

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
        }
    }
}

/// What every reactor reads.
pub struct Shared {
    file: File,
    export: Export,
    delay_ns: Option<u64>,
    stamps: Option<PathBuf>,
    stop: AtomicBool,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A running target; dropping it stops it.
pub struct Target {
    pub addr: SocketAddr,
    pub export: Export,
    pub direct: bool,
    shared: Arc<Shared>,
    threads: serving::Threads,
}

/// Open the backing store, bind and start serving.
pub fn start(cfg: &TargetConfig) -> anyhow::Result<Target> {
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
    let listener = TcpListener::bind(cfg.listen)
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let shared = Arc::new(Shared {
        file,
        export: export.clone(),
        delay_ns: cfg.delay.map(|d| d.as_nanos() as u64),
        stamps: cfg.stamps.clone(),
        stop: AtomicBool::new(false),
    });
    let mut senders = Vec::new();
    let mut threads = serving::Threads::default();
    for i in 0..cfg.threads.max(1) {
        let waker = serving::waker()?;
        let (tx, rx) = mpsc::channel();
        let r = reactor::Reactor::new(shared.clone(), rx, waker.as_raw_fd(), cfg.slots)
            .context("cannot set up an io_uring for the target")?;
        threads.handles.push(
            std::thread::Builder::new()
                .name(format!("nbd-reactor-{i}"))
                .spawn(move || r.run())?,
        );
        threads.wakers.push(waker);
        senders.push(tx);
    }
    let acceptor_shared = shared.clone();
    let wake_fds = threads.wake_fds();
    threads.handles.push(
        std::thread::Builder::new()
            .name("nbd-accept".into())
            .spawn(move || accept_loop(listener, acceptor_shared, senders, wake_fds))?,
    );
    Ok(Target {
        addr,
        export,
        direct,
        shared,
        threads,
    })
}

impl Target {
    /// Stop taking connections, finish what is in flight, close every
    /// connection (writing its stamps) and join the threads.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.stop_threads()
    }

    fn stop_threads(&mut self) -> anyhow::Result<()> {
        self.threads.stop(&self.shared.stop)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.stop_threads();
    }
}

/// The NBD handshake on each accepted connection, then the connection to
/// the next reactor in turn.
fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    reactors: Vec<mpsc::Sender<reactor::NewConnection>>,
    wake_fds: Vec<i32>,
) -> io::Result<()> {
    let mut next = 0;
    let stopping = shared.clone();
    serving::accept_loop(
        listener,
        move || stopping.stopping(),
        |mut sock, peer| {
            // A client that stalls in the handshake must not hold the others.
            sock.set_read_timeout(Some(Duration::from_secs(10)))?;
            match nbd_negotiate::negotiate(&mut sock, &shared.export) {
                Ok(Outcome::Transmission { structured }) => {
                    sock.set_read_timeout(None)?;
                    let conn = reactor::NewConnection {
                        sock,
                        peer,
                        structured,
                    };
                    if reactors[next].send(conn).is_ok() {
                        serving::wake(wake_fds[next]);
                    }
                    next = (next + 1) % reactors.len();
                }
                Ok(Outcome::Aborted) => {}
                Err(e) => eprintln!("iolab serve: handshake with {peer} failed: {e}"),
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests;
