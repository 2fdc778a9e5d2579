//! What iolab's two targets (NBD, NVMe/TCP) share: the backing store
//! opened with O_DIRECT (buffered where the filesystem refuses it), its
//! size, page-aligned slot buffers for requests, the eventfd that wakes a
//! reactor, the accept loop handing connections to reactors in turn, and
//! the reactor loop (`run`), whose timer ends connections whose replies
//! stall (`cut_off`).

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::thread::JoinHandle;

use anyhow::Context;

/// A fresh eventfd to wake a reactor's ring.
pub fn waker() -> anyhow::Result<OwnedFd> {
    // SAFETY: plain eventfd creation; the descriptor is owned below.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error()).context("eventfd");
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn wake(fd: i32) {
    let one: u64 = 1;
    // SAFETY: writing 8 bytes from a live u64 to an eventfd.
    unsafe { libc::write(fd, std::ptr::addr_of!(one).cast(), 8) };
}

/// Join the target's threads; the first error (or panic) they ended with.
pub fn join_all(threads: Vec<JoinHandle<io::Result<()>>>) -> anyhow::Result<()> {
    let mut first_error = None;
    for t in threads {
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

/// Accept connections on the non-blocking `listener` until `stopping`,
/// each made blocking with TCP_NODELAY and given to `hand`.
pub fn accept_loop(
    listener: TcpListener,
    stopping: impl Fn() -> bool,
    mut hand: impl FnMut(TcpStream, SocketAddr) -> io::Result<()>,
) -> io::Result<()> {
    while !stopping() {
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 100) };
        let (sock, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if passing(&e) => {
                // Out of descriptors or memory, or a peer gone before its
                // accept: the target keeps serving, and accepts again soon.
                std::thread::sleep(std::time::Duration::from_millis(100));
                continue;
            }
            Err(e) => return Err(e),
        };
        // A socket that cannot be set up is that connection's problem only.
        if sock.set_nonblocking(false).is_err() || sock.set_nodelay(true).is_err() {
            continue;
        }
        hand(sock, peer)?;
    }
    Ok(())
}

/// An accept error that ends one connection or lasts a moment (too many
/// open descriptors, no memory), not the target.
fn passing(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EMFILE
                | libc::ENFILE
                | libc::ENOBUFS
                | libc::ENOMEM
                | libc::ECONNABORTED
                | libc::EPROTO
                | libc::EPERM
        )
    )
}

/// O_DIRECT when the filesystem takes it, buffered otherwise.
pub fn open_backing(path: &Path, read_only: bool) -> anyhow::Result<(File, bool)> {
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

pub fn backing_size(f: &File) -> io::Result<u64> {
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

/// What a ring entry is for, packed with the connection and slot into its
/// user data.
pub const KIND_RECV: u64 = 1;
pub const KIND_FILE: u64 = 2;
pub const KIND_SEND: u64 = 3;
pub const KIND_WAKE: u64 = 4;
const KIND_SHIFT: u32 = 56;
const CONN_SHIFT: u32 = 24;
/// The last stretch of a fabric delay is spun, not slept (a wake-up costs more).
const SPIN_NS: u64 = 60_000;

pub fn user_data(kind: u64, conn: usize, slot: usize) -> u64 {
    kind << KIND_SHIFT | (conn as u64) << CONN_SHIFT | slot as u64
}

/// (kind, connection, slot) of a user data word.
pub fn split(ud: u64) -> (u64, usize, usize) {
    (
        ud >> KIND_SHIFT,
        ((ud >> CONN_SHIFT) & 0xff_ffff) as usize,
        (ud & 0xff_ffff) as usize,
    )
}

/// A reactor's io_uring, with the eventfd read that wakes it and the
/// completions of its last wait.
pub struct Ring {
    ring: io_uring::IoUring,
    wake_fd: std::os::fd::RawFd,
    wake_buf: u64,
    cqes: Vec<(u64, i32)>,
    /// The kernel takes a timeout in the ring's wait (IORING_FEAT_EXT_ARG).
    timed_waits: bool,
}

impl Ring {
    pub fn new(entries: u32, wake_fd: std::os::fd::RawFd) -> io::Result<Ring> {
        let ring = io_uring::IoUring::builder()
            .setup_cqsize(entries * 2)
            .build(entries)?;
        Ok(Ring {
            timed_waits: ring.params().is_feature_ext_arg(),
            ring,
            wake_fd,
            wake_buf: 0,
            cqes: Vec::with_capacity(entries as usize * 2),
        })
    }

    /// Queue `e`, submitting first when the submission queue is full.
    pub fn push(&mut self, e: io_uring::squeue::Entry) -> io::Result<()> {
        // SAFETY: every buffer an entry points at (slot memory, a
        // connection's buffers, the wake-up word) lives until its
        // completion is reaped; the callers keep them so.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// (Re)arm the read of the wake-up eventfd. The ring must not move
    /// while the read is in flight (reactors arm it on their own thread).
    pub fn push_wake_read(&mut self) -> io::Result<()> {
        let ptr = std::ptr::addr_of_mut!(self.wake_buf).cast();
        let e = io_uring::opcode::Read::new(io_uring::types::Fd(self.wake_fd), ptr, 8)
            .build()
            .user_data(user_data(KIND_WAKE, 0, 0));
        self.push(e)
    }

    /// The wake-up read completed with `res`: arm it again.
    pub fn woke(&mut self, res: i32) -> io::Result<()> {
        if res < 0 && res != -libc::EINTR && res != -libc::EAGAIN {
            return Err(io::Error::from_raw_os_error(-res));
        }
        self.push_wake_read()
    }

    /// Submit and wait for a completion, or (with a delayed reply `due`)
    /// only until shortly before it, and never past `tick`; then collect
    /// the completions.
    pub fn submit_and_wait(&mut self, now: u64, due: Option<u64>, tick: u64) -> io::Result<usize> {
        let sleep = match due {
            Some(d) if d <= now + SPIN_NS => 0,
            Some(d) => (d - now - SPIN_NS).min(tick.saturating_sub(now)),
            None => tick.saturating_sub(now),
        };
        let r = match sleep {
            0 => self.ring.submit(),
            // Before Linux 5.11 the ring has no timed wait: the tick waits
            // for the next completion.
            _ if due.is_none() && !self.timed_waits => self.ring.submit_and_wait(1),
            sleep => {
                let ts = io_uring::types::Timespec::new()
                    .sec(sleep / 1_000_000_000)
                    .nsec((sleep % 1_000_000_000) as u32);
                let args = io_uring::types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
        };
        match r {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => {}
            Err(e) => return Err(e),
        }
        self.cqes.clear();
        self.cqes
            .extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        Ok(self.cqes.len())
    }

    /// The `k`th completion of the last wait: (user data, result).
    pub fn cqe(&self, k: usize) -> (u64, i32) {
        self.cqes[k]
    }
}

/// A connection's receive side: one receive in flight into a byte buffer
/// out of which whole requests are parsed.
pub struct Inbox {
    pub buf: Vec<u8>,
    pub start: usize,
    pub end: usize,
    pub in_flight: bool,
    /// When the last receive completed: the arrival of what it brought.
    pub arrived_at: u64,
}

impl Inbox {
    pub fn new(len: usize) -> Inbox {
        Inbox {
            buf: vec![0; len],
            start: 0,
            end: 0,
            in_flight: false,
            arrived_at: 0,
        }
    }

    /// Make the buffer `len` bytes long, if it is shorter and no receive
    /// is in flight into it (it is grown before the next one).
    pub fn grow_to(&mut self, len: usize) {
        if !self.in_flight && self.buf.len() < len {
            self.buf.resize(len, 0);
        }
    }

    /// What was received and not parsed yet.
    pub fn avail(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The receive to post into the free room (what is unparsed moved to
    /// the front first when less than half the buffer is left), or None
    /// while one is in flight or the buffer is full.
    pub fn recv(&mut self, fd: std::os::fd::RawFd, ud: u64) -> Option<io_uring::squeue::Entry> {
        if self.in_flight {
            return None;
        }
        if self.start > 0 && self.buf.len() - self.end < self.buf.len() / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let room = &mut self.buf[self.end..];
        if room.is_empty() {
            return None;
        }
        self.in_flight = true;
        Some(
            io_uring::opcode::Recv::new(
                io_uring::types::Fd(fd),
                room.as_mut_ptr(),
                room.len() as u32,
            )
            .build()
            .user_data(ud),
        )
    }

    /// A receive completed with `res` at `now`: false when the peer closed
    /// the connection (or the receive failed).
    pub fn received(&mut self, res: i32, now: u64) -> bool {
        self.in_flight = false;
        if res <= 0 {
            return false;
        }
        self.end += res as usize;
        self.arrived_at = now;
        true
    }

    /// Whether a connection that is done with its work can close now; a
    /// receive still in flight is woken by shutting the socket down (once).
    pub fn ready_to_close(&self, sock: &TcpStream, shut: &mut bool) -> bool {
        if !self.in_flight {
            return true;
        }
        if !*shut {
            let _ = sock.shutdown(std::net::Shutdown::Both);
            *shut = true;
        }
        false
    }
}

/// A target's reactor, as `run` drives it.
pub trait Serving {
    fn ring(&mut self) -> &mut Ring;
    /// The target is stopping.
    fn stopping(&self) -> bool;
    /// Take no new requests on any connection; close each when it is done.
    fn close_all(&mut self);
    /// Take the connections the acceptor handed over.
    fn adopt(&mut self) -> io::Result<()>;
    /// Queue the delayed replies whose time has come.
    fn release_due(&mut self, now: u64);
    /// Parse, post receives and sends (noting `now` as when each send
    /// was posted), close what is done.
    fn progress_all(&mut self, now: u64) -> io::Result<()>;
    /// No connection is left.
    fn idle(&self) -> bool;
    /// Stamp what the coming submit carries; when the next delayed reply is due.
    fn before_submit(&mut self, now: u64) -> Option<u64>;
    /// One completion (not the wake-up's).
    fn complete(&mut self, ud: u64, res: i32, now: u64) -> io::Result<()>;
    /// How long a connection's replies may make no send progress.
    fn stall_timeout_ns(&self) -> u64;
    /// `cut_off` every connection whose send in flight was posted at least
    /// the stall timeout before `now`.
    fn end_stalled(&mut self, now: u64);
}

/// End a connection whose replies made no send progress for `timeout_ns`
/// (a peer that does not read them), said once on stderr. Shutting the
/// socket down fails its send and receive in flight: the reactor drops its
/// unsent replies and closes it once its file operations are done, as for
/// a peer gone. A zero linger resets it at that close, so the kernel drops
/// what it still holds for the peer too.
pub fn cut_off(sock: &TcpStream, peer: SocketAddr, timeout_ns: u64, shut: &mut bool) {
    eprintln!(
        "iolab serve: {peer}: not one byte of its replies taken in {:?} (--stall-timeout): \
         it does not read them; closing the connection",
        std::time::Duration::from_nanos(timeout_ns)
    );
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a live socket and a linger struct of the size given.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    let _ = sock.shutdown(std::net::Shutdown::Both);
    *shut = true;
}

/// A stall timeout in nanoseconds, at least a millisecond.
pub fn stall_timeout_ns(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos())
        .unwrap_or(u64::MAX)
        .max(1_000_000)
}

/// How often the reactor looks for stalled connections: every second, or
/// every stall timeout if that is shorter.
fn stall_check_period(timeout_ns: u64) -> u64 {
    timeout_ns.clamp(1_000_000, 1_000_000_000)
}

/// Serve until the target stops and every connection has closed.
pub fn run<S: Serving>(s: &mut S) -> io::Result<()> {
    use crate::measure::clock::mono_now_ns;
    s.ring().push_wake_read()?;
    let period = stall_check_period(s.stall_timeout_ns());
    let mut tick = mono_now_ns() + period;
    let mut stopping = false;
    loop {
        if !stopping && s.stopping() {
            stopping = true;
            s.close_all();
        }
        s.adopt()?;
        let now = mono_now_ns();
        if now >= tick {
            s.end_stalled(now);
            tick = now + period;
        }
        s.release_due(now);
        s.progress_all(now)?;
        if stopping && s.idle() {
            return Ok(());
        }
        let now = mono_now_ns();
        let due = s.before_submit(now);
        let n = s.ring().submit_and_wait(now, due, tick)?;
        let now = mono_now_ns();
        for k in 0..n {
            let (ud, res) = s.ring().cqe(k);
            if split(ud).0 == KIND_WAKE {
                s.ring().woke(res)?;
            } else {
                s.complete(ud, res, now)?;
            }
        }
    }
}

/// A target's threads (reactors and the acceptor) and the eventfds that
/// wake its reactors.
#[derive(Default)]
pub struct Threads {
    pub wakers: Vec<OwnedFd>,
    pub handles: Vec<JoinHandle<io::Result<()>>>,
}

impl Threads {
    pub fn wake_fds(&self) -> Vec<i32> {
        self.wakers.iter().map(|w| w.as_raw_fd()).collect()
    }

    /// Raise `stop`, wake every reactor and join every thread; the first
    /// error they ended with.
    pub fn stop(&mut self, stop: &std::sync::atomic::AtomicBool) -> anyhow::Result<()> {
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for w in &self.wakers {
            wake(w.as_raw_fd());
        }
        join_all(std::mem::take(&mut self.handles))
    }
}

/// Whether the target ended `s` within `within`: a hang-up or a reset
/// seen without reading (a read would let a stalled connection's replies
/// move), then, after what it holds is drained, an end of stream or the
/// reset.
#[cfg(test)]
pub fn ended_by_target(s: &mut TcpStream, within: std::time::Duration) -> bool {
    use std::io::Read;
    let mut pfd = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, within.as_millis() as i32) };
    if n != 1 {
        return false;
    }
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                )
            }
        }
    }
}
