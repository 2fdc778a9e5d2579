//! The reactor loop both targets run, written once: one thread, one
//! io_uring, the connections the acceptor handed over, and a protocol
//! (`Protocol`: NBD's or NVMe/TCP's) that parses, executes and encodes.
//! The substrate owns the ring, the connection table, the stop (every
//! connection told to close, the loop ending when none is left) and the
//! stall cut-off (a connection whose replies have not had a byte taken
//! for the stall timeout is ended). A polling target's reactor (`--poll`,
//! `Control::poll`) runs the same loop without ever waiting in its ring.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use super::poll::set_busy_poll;
use super::ring::{split, Ring, KIND_WAKE};
use super::target::Control;
use crate::measure::clock::mono_now_ns;

/// What the substrate needs of a protocol's connection.
pub trait Connection {
    /// Its socket and peer.
    fn socket(&self) -> (&TcpStream, SocketAddr);
    /// Take no new requests; close once what is in flight is done.
    fn close_soon(&mut self);
    /// While a send is in flight and the socket has not been shut down:
    /// since when its replies have waited (the stall timeout's clock; a
    /// protocol may date it from the oldest reply still queued, so a
    /// client reading a trickle at a time is not taken for a reader).
    fn send_in_flight_since(&self) -> Option<u64>;
    /// The socket was shut down (by `cut_off`).
    fn mark_shut(&mut self);
}

/// The ring and the connections (a slot per connection, reused once
/// closed), which a protocol's hooks work on.
pub struct Io<C> {
    pub ring: Ring,
    pub conns: Vec<Option<Box<C>>>,
}

impl<C> Io<C> {
    pub fn push(&mut self, e: io_uring::squeue::Entry) -> io::Result<()> {
        self.ring.push(e)
    }

    /// Connection `ci`, which must be live.
    pub fn conn(&mut self, ci: usize) -> &mut C {
        self.conns[ci].as_mut().expect("live connection")
    }

    /// Remove connection `ci` (it closes when dropped).
    pub fn take(&mut self, ci: usize) -> Box<C> {
        self.conns[ci].take().expect("live connection")
    }

    /// Put connection `c` in the first free slot of the table.
    pub fn place(&mut self, c: C) {
        let c = Box::new(c);
        match self.conns.iter().position(Option::is_none) {
            Some(i) => self.conns[i] = Some(c),
            None => self.conns.push(Some(c)),
        }
    }
}

/// A protocol served by the substrate: one value per reactor, holding the
/// protocol's shared state and whatever it keeps across connections.
pub trait Protocol: Send + 'static {
    /// A connection as the acceptor hands it over.
    type Handed: Send + 'static;
    type Conn: Connection;
    /// Entries of the reactor's ring.
    fn ring_entries(&self) -> u32;
    /// A connection's state from what the acceptor handed over at `now`.
    fn adopt(&mut self, handed: Self::Handed, now: u64) -> io::Result<Self::Conn>;
    /// Parse what connection `ci` received, post its receive and send,
    /// close it (`io.take`) once it is done.
    fn progress(&mut self, io: &mut Io<Self::Conn>, ci: usize, now: u64) -> io::Result<()>;
    /// One completion (not the wake-up's).
    fn complete(&mut self, io: &mut Io<Self::Conn>, ud: u64, res: i32, now: u64) -> io::Result<()>;
    /// Queue the delayed replies whose time has come.
    fn release_due(&mut self, io: &mut Io<Self::Conn>, now: u64);
    /// Stamp what the coming submit carries; when the reactor must wake
    /// next (a delayed reply, a deadline), if at all.
    fn before_submit(&mut self, io: &mut Io<Self::Conn>, now: u64) -> Option<u64>;
}

/// One reactor: its ring, connections, protocol and the target's control.
pub struct Reactor<P: Protocol> {
    io: Io<P::Conn>,
    proto: P,
    control: Arc<Control>,
    incoming: Receiver<P::Handed>,
}

// SAFETY: the raw pointers a protocol's connections hold (msghdr, iovecs)
// point into memory the reactor owns (the connections' boxes, slot
// memory); the reactor is built on one thread and moved once, before any
// I/O, to the thread that runs it.
unsafe impl<P: Protocol> Send for Reactor<P> {}

impl<P: Protocol> Reactor<P> {
    pub fn new(
        proto: P,
        control: Arc<Control>,
        incoming: Receiver<P::Handed>,
        wake_fd: RawFd,
    ) -> io::Result<Reactor<P>> {
        let mut ring = Ring::new(proto.ring_entries(), wake_fd)?;
        ring.set_polling(control.poll.is_some());
        Ok(Reactor {
            io: Io {
                ring,
                conns: Vec::new(),
            },
            proto,
            control,
            incoming,
        })
    }

    fn adopt(&mut self, now: u64) -> io::Result<()> {
        while let Ok(h) = self.incoming.try_recv() {
            let mut c = self.proto.adopt(h, now)?;
            if self.control.poll.is_some() {
                // Inherited from the listener where it took; a refusal
                // was said at the start.
                let _ = set_busy_poll(c.socket().0.as_raw_fd());
            }
            if self.control.stopping() {
                c.close_soon();
            }
            self.io.place(c);
        }
        Ok(())
    }

    fn close_all(&mut self) {
        for c in self.io.conns.iter_mut().flatten() {
            c.close_soon();
        }
    }

    fn idle(&self) -> bool {
        self.io.conns.iter().all(Option::is_none)
    }

    /// `cut_off` every connection whose send in flight was posted at least
    /// the stall timeout before `now`.
    fn end_stalled(&mut self, now: u64) {
        let timeout = self.control.stall_timeout_ns;
        for c in self.io.conns.iter_mut().flatten() {
            let Some(at) = c.send_in_flight_since() else {
                continue;
            };
            if now.saturating_sub(at) >= timeout {
                let (sock, peer) = c.socket();
                cut_off(sock, peer, timeout);
                c.mark_shut();
                c.close_soon();
            }
        }
    }

    /// Serve until the target stops and every connection has closed.
    pub fn run(mut self) -> io::Result<()> {
        self.io.ring.push_wake_read()?;
        let period = stall_check_period(self.control.stall_timeout_ns);
        let mut tick = mono_now_ns() + period;
        let mut stopping = false;
        loop {
            if !stopping && self.control.stopping() {
                stopping = true;
                self.close_all();
            }
            self.adopt(mono_now_ns())?;
            let now = mono_now_ns();
            if now >= tick {
                self.end_stalled(now);
                tick = now + period;
            }
            self.proto.release_due(&mut self.io, now);
            for ci in 0..self.io.conns.len() {
                if self.io.conns[ci].is_some() {
                    self.proto.progress(&mut self.io, ci, now)?;
                }
            }
            if stopping && self.idle() {
                return Ok(());
            }
            let now = mono_now_ns();
            let due = self.proto.before_submit(&mut self.io, now);
            let n = self.io.ring.submit_and_wait(now, due, tick)?;
            let now = mono_now_ns();
            for k in 0..n {
                let (ud, res) = self.io.ring.cqe(k);
                if split(ud).0 == KIND_WAKE {
                    self.io.ring.woke(res)?;
                } else {
                    self.proto.complete(&mut self.io, ud, res, now)?;
                }
            }
        }
    }
}

/// End a connection whose replies made no send progress for `timeout_ns`
/// (a peer that does not read them), said once on stderr. Shutting the
/// socket down fails its send and receive in flight: the reactor drops its
/// unsent replies and closes it once its file operations are done, as for
/// a peer gone. A zero linger resets it at that close, so the kernel drops
/// what it still holds for the peer too.
pub fn cut_off(sock: &TcpStream, peer: SocketAddr, timeout_ns: u64) {
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
