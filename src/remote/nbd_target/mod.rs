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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;

use super::nbd_negotiate::{self, Export, Outcome};

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
    wakers: Vec<OwnedFd>,
    threads: Vec<JoinHandle<io::Result<()>>>,
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
    let mut wakers = Vec::new();
    let mut senders = Vec::new();
    let mut threads = Vec::new();
    for i in 0..cfg.threads.max(1) {
        // SAFETY: plain eventfd creation; the descriptor is owned below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error()).context("eventfd");
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let waker = unsafe { OwnedFd::from_raw_fd(fd) };
        let (tx, rx) = mpsc::channel();
        let r = reactor::Reactor::new(shared.clone(), rx, waker.as_raw_fd(), cfg.slots)
            .context("cannot set up an io_uring for the target")?;
        threads.push(
            std::thread::Builder::new()
                .name(format!("nbd-reactor-{i}"))
                .spawn(move || r.run())?,
        );
        wakers.push(waker);
        senders.push(tx);
    }
    let acceptor_shared = shared.clone();
    let wake_fds: Vec<i32> = wakers.iter().map(|w| w.as_raw_fd()).collect();
    threads.push(
        std::thread::Builder::new()
            .name("nbd-accept".into())
            .spawn(move || accept_loop(listener, acceptor_shared, senders, wake_fds))?,
    );
    Ok(Target {
        addr,
        export,
        direct,
        shared,
        wakers,
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
        self.shared.stop.store(true, Ordering::SeqCst);
        for w in &self.wakers {
            wake(w.as_raw_fd());
        }
        let mut first_error = None;
        for t in self.threads.drain(..) {
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_error.get_or_insert(anyhow::Error::new(e).context("target reactor"));
                }
                Err(_) => {
                    first_error.get_or_insert(anyhow::anyhow!("a target thread panicked"));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.stop_threads();
    }
}

fn wake(fd: i32) {
    let one: u64 = 1;
    // SAFETY: writing 8 bytes from a live u64 to an eventfd.
    unsafe { libc::write(fd, std::ptr::addr_of!(one).cast(), 8) };
}

fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    reactors: Vec<mpsc::Sender<reactor::NewConnection>>,
    wake_fds: Vec<i32>,
) -> io::Result<()> {
    let mut next = 0;
    while !shared.stopping() {
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 100) };
        let (mut sock, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        sock.set_nonblocking(false)?;
        sock.set_nodelay(true)?;
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
                    wake(wake_fds[next]);
                }
                next = (next + 1) % reactors.len();
            }
            Ok(Outcome::Aborted) => {}
            Err(e) => eprintln!("iolab serve: handshake with {peer} failed: {e}"),
        }
    }
    Ok(())
}

/// O_DIRECT when the filesystem takes it, buffered otherwise.
fn open_backing(path: &Path, read_only: bool) -> anyhow::Result<(File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let open = |flags: i32| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(!read_only)
            .custom_flags(flags)
            .open(path)
    };
    match open(libc::O_DIRECT) {
        Ok(f) => Ok((f, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok((
            open(0).with_context(|| format!("cannot open {}", path.display()))?,
            false,
        )),
        Err(e) => Err(e).with_context(|| format!("cannot open {}", path.display())),
    }
}

fn backing_size(f: &File) -> io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    // Block devices report 0 in metadata; seeking to the end works for both.
    let mut f = f;
    let n = f.seek(SeekFrom::End(0))?;
    f.seek(SeekFrom::Start(0))?;
    Ok(n)
}

/// Page-aligned slot buffers from one anonymous mapping: memory is
/// committed only where requests touch it, so a pool of 1 MiB slots costs
/// a page per slot when clients send 4 KiB blocks.
pub struct SlotMemory {
    base: *mut u8,
    len: usize,
    slot_len: usize,
}

// SAFETY: the mapping is owned by one reactor thread at a time.
unsafe impl Send for SlotMemory {}

impl SlotMemory {
    pub fn new(slots: usize, slot_len: usize) -> io::Result<SlotMemory> {
        let slot_len = slot_len.div_ceil(4096) * 4096;
        let len = slots.max(1) * slot_len;
        // SAFETY: an anonymous private mapping, checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SlotMemory {
            base: base.cast(),
            len,
            slot_len,
        })
    }

    pub fn slot_ptr(&self, slot: usize) -> *mut u8 {
        assert!(slot * self.slot_len < self.len);
        // SAFETY: inside the mapping (checked above).
        unsafe { self.base.add(slot * self.slot_len) }
    }

    pub fn slot(&mut self, slot: usize, len: usize) -> &mut [u8] {
        assert!(len <= self.slot_len);
        // SAFETY: inside the mapping, exclusively borrowed through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(slot), len) }
    }
}

impl Drop for SlotMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests;
