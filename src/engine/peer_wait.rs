//! How long a network initiator waits on its peer (the NBD server, the
//! NVMe/TCP controller): no request may wait longer than the I/O timeout
//! (`--io-timeout`, 30 s by default like Linux's nvme `io_timeout`), no
//! wait outlasts the run's end by more than a grace, and a Ctrl-C or
//! SIGTERM ends a wait that makes no progress within a second. Waits wake
//! at least every `WAKE_NS` to check these, so a stalled peer can never
//! hold a run (or its first signal) hostage. `Bounded` does the same for
//! the blocking reads and writes of a handshake: a deadline, and a stop
//! signal honoured at once.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::interrupt;

/// The longest a single wait sleeps before the limits are checked again.
pub const WAKE_NS: i64 = 100_000_000;
/// `--io-timeout`'s default: Linux's nvme `io_timeout`.
pub const DEFAULT_IO_TIMEOUT_NS: u64 = 30_000_000_000;
/// How long after the run's end requests still in flight may take.
pub const RUN_END_GRACE_NS: u64 = 10_000_000_000;
/// How long requests in flight may take to drain once a signal asked the
/// run to stop (a healthy peer answers in milliseconds).
pub const STOP_GRACE_NS: u64 = 1_000_000_000;
/// How long connecting and each step of a handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The limits of one connection's waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitLimits {
    /// The longest one request may wait for its reply (ns).
    pub io_timeout_ns: u64,
    /// No wait goes past this CLOCK_MONOTONIC time (ns; `u64::MAX`: none):
    /// the run's end plus `RUN_END_GRACE_NS`.
    pub end_by_ns: u64,
}

impl Default for WaitLimits {
    fn default() -> Self {
        WaitLimits {
            io_timeout_ns: DEFAULT_IO_TIMEOUT_NS,
            end_by_ns: u64::MAX,
        }
    }
}

/// Why a wait on the peer ended without a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// A signal asked the run to stop and the peer did not drain in time.
    Stopped,
    /// The oldest request in flight waited longer than the I/O timeout.
    IoTimeout { waited_ns: u64 },
    /// The run ended more than the grace ago.
    RunEnded,
}

impl GiveUp {
    /// An error saying why (the engine adds the peer and what was in flight).
    pub fn error(self) -> io::Error {
        match self {
            GiveUp::Stopped => stopped("waiting on the peer's replies"),
            GiveUp::IoTimeout { waited_ns } => io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no reply within the I/O timeout (--io-timeout): a request waited {:.1} s",
                    waited_ns as f64 / 1e9
                ),
            ),
            GiveUp::RunEnded => io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "requests still unanswered {} s after the end of the run",
                    RUN_END_GRACE_NS / 1_000_000_000
                ),
            ),
        }
    }
}

/// The error of a wait a signal ended. Never `ErrorKind::Interrupted`:
/// `read_exact` and `write_all` retry that kind, so a stop during a
/// handshake spun at 100% CPU instead of ending the wait.
pub fn stopped(what: &str) -> io::Error {
    io::Error::other(format!("stopped by a signal during {what}"))
}

/// The limits, and when a stop request was first seen.
#[derive(Debug, Clone, Copy, Default)]
pub struct Watch {
    pub limits: WaitLimits,
    stop_seen_ns: Option<u64>,
    /// When the limits are next due a check: every `WAKE_NS`, not after
    /// every reply (that is the hot path).
    next_check_ns: u64,
}

impl Watch {
    pub fn new(limits: WaitLimits) -> Watch {
        Watch {
            limits,
            stop_seen_ns: None,
            next_check_ns: 0,
        }
    }

    /// Whether `WAKE_NS` passed since the last `check`.
    #[inline]
    pub fn due(&self, now: u64) -> bool {
        now >= self.next_check_ns
    }

    /// Whether waiting must end at `now`, with the oldest request in
    /// flight sent at `oldest_ns` (`None`: nothing in flight).
    pub fn check(&mut self, now: u64, oldest_ns: Option<u64>) -> Result<(), GiveUp> {
        self.next_check_ns = now.saturating_add(WAKE_NS as u64);
        self.check_with(now, oldest_ns, interrupt::stop_requested())
    }

    fn check_with(&mut self, now: u64, oldest_ns: Option<u64>, stop: bool) -> Result<(), GiveUp> {
        let Some(oldest) = oldest_ns else {
            return Ok(());
        };
        if stop {
            let seen = *self.stop_seen_ns.get_or_insert(now);
            if now.saturating_sub(seen) >= STOP_GRACE_NS {
                return Err(GiveUp::Stopped);
            }
        }
        let waited_ns = now.saturating_sub(oldest);
        if waited_ns >= self.limits.io_timeout_ns {
            return Err(GiveUp::IoTimeout { waited_ns });
        }
        if now >= self.limits.end_by_ns {
            return Err(GiveUp::RunEnded);
        }
        Ok(())
    }
}

/// A blocking socket whose reads and writes end at `deadline` (a
/// `TimedOut` error naming `what`) or, when `honour_stop`, as soon as a
/// signal asks the run to stop (`Interrupted`). Each read or write sleeps
/// at most `WAKE_NS` between checks.
pub struct Bounded<'a> {
    pub sock: &'a TcpStream,
    pub deadline: Instant,
    pub honour_stop: bool,
    /// What is waited for, e.g. "the NBD handshake".
    pub what: &'a str,
}

impl Bounded<'_> {
    fn io<T>(&mut self, op: impl FnMut(&TcpStream) -> io::Result<T>) -> io::Result<T> {
        self.io_with(interrupt::stop_requested, op)
    }

    fn io_with<T>(
        &mut self,
        stop_requested: impl Fn() -> bool,
        mut op: impl FnMut(&TcpStream) -> io::Result<T>,
    ) -> io::Result<T> {
        let wake = Duration::from_nanos(WAKE_NS as u64);
        loop {
            if self.honour_stop && stop_requested() {
                return Err(stopped(self.what));
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the peer did not answer within the time {} may take",
                        self.what
                    ),
                ));
            }
            let slice = Some(left.min(wake));
            self.sock.set_read_timeout(slice)?;
            self.sock.set_write_timeout(slice)?;
            match op(self.sock) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                r => return r,
            }
        }
    }
}

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.io(|mut s| s.read(buf))
    }
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.io(|mut s| s.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn nothing_in_flight_never_gives_up() {
        let mut w = Watch::new(WaitLimits {
            io_timeout_ns: S,
            end_by_ns: 0,
        });
        assert_eq!(w.check_with(100 * S, None, true), Ok(()));
    }

    #[test]
    fn each_limit_ends_a_wait() {
        let mut w = Watch::new(WaitLimits {
            io_timeout_ns: 30 * S,
            end_by_ns: 50 * S,
        });
        assert_eq!(w.check_with(20 * S, Some(0), false), Ok(()));
        assert_eq!(
            w.check_with(31 * S, Some(S), false),
            Err(GiveUp::IoTimeout { waited_ns: 30 * S })
        );
        assert_eq!(
            w.check_with(50 * S, Some(45 * S), false),
            Err(GiveUp::RunEnded)
        );
        // A stop request drains for a second, then gives up.
        assert_eq!(w.check_with(10 * S, Some(9 * S), true), Ok(()));
        assert_eq!(
            w.check_with(11 * S, Some(9 * S), true),
            Err(GiveUp::Stopped)
        );
        let e = GiveUp::Stopped.error();
        assert_ne!(
            e.kind(),
            io::ErrorKind::Interrupted,
            "read_exact retries it"
        );
    }

    /// `Bounded` with a stop already requested (the process-wide flag
    /// would stop every other test).
    struct AlwaysStopped<'a>(Bounded<'a>);

    impl Read for AlwaysStopped<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.io_with(|| true, |mut s| s.read(buf))
        }
    }

    impl Write for AlwaysStopped<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.io_with(|| true, |mut s| s.write(buf))
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A stop during a handshake ends `read_exact` and `write_all` at once
    /// (they retry `Interrupted`, which spun forever on a silent peer).
    #[test]
    fn a_stop_ends_read_exact_and_write_all_on_a_silent_peer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _peer = l.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut b = AlwaysStopped(Bounded {
                sock: &sock,
                deadline,
                honour_stop: true,
                what: "a test",
            });
            let mut buf = [0u8; 8];
            let read = b.read_exact(&mut buf).map_err(|e| e.kind());
            let big = vec![0u8; 64 << 20];
            let write = b.write_all(&big).map_err(|e| e.kind());
            tx.send((read, write)).unwrap();
        });
        let (read, write) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("read_exact/write_all still waiting after a stop");
        assert_eq!(read, Err(io::ErrorKind::Other));
        assert_eq!(write, Err(io::ErrorKind::Other));
    }
}
