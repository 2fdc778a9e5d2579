//! The byte pump under iolab's network engines (NBD, NVMe/TCP): one TCP
//! socket, a send buffer requests are encoded into and sent from with
//! non-blocking sends, and a receive buffer replies are parsed out of.
//! A blocking receive waits when nothing is left to send (one system call
//! per wait); while sending is stuck, `wait` polls both directions so a
//! server blocked on its replies never deadlocks the client. No allocation
//! after set-up (both buffers are sized for the largest request), no lock;
//! one clock read per receive that returns data (`rx_at`, the time a reply
//! arrived, for the request stamps). Every wait on the peer is cut into
//! slices of at most `peer_wait::WAKE_NS`, between which `peer_wait`'s
//! limits are checked (I/O timeout, the run's end, a stop signal). With
//! `--poll` a wait never sleeps: it spins on non-blocking receives for
//! its slice (`spin`), the limits checked between slices as before.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

use super::peer_wait::{Watch, WAKE_NS};
use crate::measure::clock::mono_now_ns;

pub struct SocketPump {
    sock: TcpStream,
    tx: Vec<u8>,
    /// Bytes of `tx` already sent.
    tx_sent: usize,
    rx: Vec<u8>,
    rx_start: usize,
    rx_end: usize,
    /// When the last receive that returned data returned (CLOCK_MONOTONIC).
    pub rx_at: u64,
    /// How long waits on the peer may last.
    pub watch: Watch,
    /// Spin on non-blocking receives instead of sleeping (`--poll`).
    polling: bool,
}

impl SocketPump {
    /// `tx_capacity`: the most bytes staged at once; `rx_len`: the receive
    /// buffer, which must hold two of the largest replies.
    pub fn new(sock: TcpStream, tx_capacity: usize, rx_len: usize) -> SocketPump {
        SocketPump {
            sock,
            tx: Vec::with_capacity(tx_capacity),
            tx_sent: 0,
            rx: vec![0u8; rx_len],
            rx_start: 0,
            rx_end: 0,
            rx_at: 0,
            watch: Watch::default(),
            polling: false,
        }
    }

    /// Busy-poll from now on (`--poll`): every wait spins on non-blocking
    /// receives (and sends) for its slice instead of sleeping; the socket
    /// asks the kernel to busy-poll its device queue too (SO_BUSY_POLL),
    /// which may be refused (above net.core.busy_read it needs
    /// CAP_NET_ADMIN): whether it took.
    pub fn set_polling(&mut self, on: bool) -> bool {
        self.polling = on;
        if !on {
            return false;
        }
        let v: libc::c_int = BUSY_POLL_US;
        // SAFETY: a live socket and an int of the size given.
        let r = unsafe {
            libc::setsockopt(
                self.sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_BUSY_POLL,
                std::ptr::addr_of!(v).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        r == 0
    }

    /// Whether waits spin (`--poll`).
    pub fn polling(&self) -> bool {
        self.polling
    }

    pub fn socket(&self) -> &TcpStream {
        &self.sock
    }

    /// The send buffer to append a request to; what is still unsent stays
    /// at its front, so the buffer never grows past what is staged.
    #[inline]
    pub fn tx(&mut self) -> &mut Vec<u8> {
        if self.tx_sent > 0 {
            self.tx.copy_within(self.tx_sent.., 0);
            self.tx.truncate(self.tx.len() - self.tx_sent);
            self.tx_sent = 0;
        }
        &mut self.tx
    }

    /// Bytes received and not consumed yet.
    #[inline]
    pub fn received(&self) -> &[u8] {
        &self.rx[self.rx_start..self.rx_end]
    }

    /// Drop the first `n` received bytes (a parsed reply).
    #[inline]
    pub fn consume(&mut self, n: usize) {
        debug_assert!(self.rx_start + n <= self.rx_end);
        self.rx_start += n;
    }

    /// The receive buffer's size: no reply can be longer.
    pub fn rx_capacity(&self) -> usize {
        self.rx.len()
    }

    /// Send what the socket takes now; true when everything is sent.
    pub fn send_some(&mut self) -> io::Result<bool> {
        while self.tx_sent < self.tx.len() {
            let rest = &self.tx[self.tx_sent..];
            // SAFETY: a valid socket and a live buffer of `rest.len()` bytes.
            let n = unsafe {
                libc::send(
                    self.sock.as_raw_fd(),
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) => return Ok(false),
                    Some(libc::EINTR) => continue,
                    _ => return Err(e),
                }
            }
            self.tx_sent += n as usize;
        }
        self.tx.clear();
        self.tx_sent = 0;
        Ok(true)
    }

    /// Receive what has arrived (`wait`: block until something does).
    /// The server closing the connection is an `UnexpectedEof` error.
    pub fn receive(&mut self, wait: bool) -> io::Result<usize> {
        if self.rx_start == self.rx_end {
            self.rx_start = 0;
            self.rx_end = 0;
        } else if self.rx.len() - self.rx_end < self.rx.len() / 2 {
            self.rx.copy_within(self.rx_start..self.rx_end, 0);
            self.rx_end -= self.rx_start;
            self.rx_start = 0;
        }
        let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
        loop {
            let room = &mut self.rx[self.rx_end..];
            // SAFETY: a valid socket and a live buffer of `room.len()` bytes.
            let n = unsafe {
                libc::recv(
                    self.sock.as_raw_fd(),
                    room.as_mut_ptr().cast(),
                    room.len(),
                    flags,
                )
            };
            if n > 0 {
                self.rx_end += n as usize;
                self.rx_at = mono_now_ns();
                return Ok(n as usize);
            }
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => return Ok(0),
                Some(libc::EINTR) => continue,
                _ => return Err(e),
            }
        }
    }

    /// Wait until the socket can be read, or written while sending is
    /// pending, and move bytes; `timeout_ns` < 0 waits without limit.
    /// False on timeout.
    pub fn wait(&mut self, timeout_ns: i64) -> io::Result<bool> {
        if self.polling {
            return self.spin(timeout_ns);
        }
        let sending = self.tx_sent < self.tx.len();
        if !sending && timeout_ns < 0 {
            return Ok(self.receive(true)? > 0);
        }
        let mut p = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN | if sending { libc::POLLOUT } else { 0 },
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: (timeout_ns.max(0) / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns.max(0) % 1_000_000_000) as libc::c_long,
        };
        let tsp = if timeout_ns < 0 {
            std::ptr::null()
        } else {
            &ts as *const libc::timespec
        };
        // SAFETY: one valid pollfd; `tsp` is null or points at `ts`.
        let r = unsafe { libc::ppoll(&mut p, 1, tsp, std::ptr::null()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINTR) {
                Ok(true)
            } else {
                Err(e)
            };
        }
        if r == 0 {
            return Ok(false);
        }
        if p.revents & libc::POLLOUT != 0 {
            self.send_some()?;
        }
        if p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            self.receive(false)?;
        }
        Ok(true)
    }
}

impl SocketPump {
    /// `wait` without sleeping: non-blocking sends and receives in a spin
    /// until bytes arrive (true) or `timeout_ns` passed (false; < 0: one
    /// `WAKE_NS` slice, so the caller's limits are still checked). One
    /// clock read per empty turn.
    fn spin(&mut self, timeout_ns: i64) -> io::Result<bool> {
        let slice = if timeout_ns < 0 { WAKE_NS } else { timeout_ns } as u64;
        let start = mono_now_ns();
        loop {
            if self.tx_sent < self.tx.len() {
                self.send_some()?;
            }
            if self.receive(false)? > 0 {
                return Ok(true);
            }
            if mono_now_ns().saturating_sub(start) >= slice {
                return Ok(false);
            }
            std::hint::spin_loop();
        }
    }
}

/// How long the socket busy-polls its device queue with `--poll`
/// (SO_BUSY_POLL, us; the serving side's value too).
pub const BUSY_POLL_US: libc::c_int = 50;

/// A pipelined engine on a `SocketPump` (the nbd and nvme-tcp engines):
/// what the shared `reap`, `reap_timeout` and `wait` need of it.
pub trait Pumped {
    fn pump(&mut self) -> &mut SocketPump;
    fn in_flight(&self) -> usize;
    /// Parse every complete reply received, appending the completions.
    fn parse(&mut self, out: &mut Vec<crate::engine::Completion>) -> io::Result<usize>;
    /// `e` with what the connection was doing (protocol, peer, requests in flight).
    fn lost(&self, e: io::Error) -> io::Error;
    /// When the oldest request in flight was sent (CLOCK_MONOTONIC), if any.
    fn oldest_in_flight(&self) -> Option<u64>;
}

/// Send what the socket takes now; true when everything is sent.
pub fn send_some<P: Pumped>(p: &mut P) -> io::Result<bool> {
    let r = p.pump().send_some();
    r.map_err(|e| p.lost(e))
}

/// `SocketPump::wait`, its errors with the engine's context; `timeout_ns`
/// < 0 waits until something happens or a limit of `peer_wait` ends the
/// wait with an error naming it. The limits are checked at least every
/// `WAKE_NS`, also while the peer trickles bytes.
pub fn wait<P: Pumped>(p: &mut P, timeout_ns: i64) -> io::Result<bool> {
    let start = mono_now_ns();
    let mut now = start;
    loop {
        let left = if timeout_ns < 0 {
            WAKE_NS
        } else {
            timeout_ns.saturating_sub(now.saturating_sub(start).min(i64::MAX as u64) as i64)
        };
        let r = p.pump().wait(left.clamp(0, WAKE_NS));
        let happened = r.map_err(|e| p.lost(e))?;
        now = mono_now_ns();
        if p.pump().watch.due(now) {
            let oldest = p.oldest_in_flight();
            if let Err(why) = p.pump().watch.check(now, oldest) {
                return Err(p.lost(why.error()));
            }
        }
        if happened {
            return Ok(true);
        }
        if timeout_ns >= 0 && now.saturating_sub(start) >= timeout_ns as u64 {
            return Ok(false);
        }
    }
}

/// `Engine::reap` of a pumped engine: what is parsed already; with
/// nothing to wait for, one non-blocking send and receive; else wait.
pub fn reap<P: Pumped>(
    p: &mut P,
    min: usize,
    out: &mut Vec<crate::engine::Completion>,
) -> io::Result<usize> {
    let want = min.min(p.in_flight());
    let mut got = p.parse(out)?;
    if got == 0 && want == 0 && p.in_flight() > 0 {
        send_some(p)?;
        let r = p.pump().receive(false);
        r.map_err(|e| p.lost(e))?;
        got += p.parse(out)?;
    }
    while got < want {
        wait(p, -1)?;
        got += p.parse(out)?;
    }
    Ok(got)
}

/// `Engine::reap_timeout` of a pumped engine.
pub fn reap_timeout<P: Pumped>(
    p: &mut P,
    timeout_ns: u64,
    out: &mut Vec<crate::engine::Completion>,
) -> io::Result<usize> {
    let got = p.parse(out)?;
    if got > 0 || p.in_flight() == 0 {
        return Ok(got);
    }
    wait(p, timeout_ns.min(i64::MAX as u64) as i64)?;
    p.parse(out)
}
