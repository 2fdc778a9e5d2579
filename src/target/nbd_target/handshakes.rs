//! The NBD target's handshakes, run concurrently: each accepted connection
//! negotiates on a thread of its own (at most `max_negotiating` at once,
//! beyond that a new connection is closed at once) within a deadline for
//! the whole handshake, then goes to the next reactor in turn. A client
//! that stalls, or a flood of idle connections, delays no one else, and
//! established connections (on the reactors) never wait for a handshake.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::reactor::NbdNewConnection;
use super::NbdShared;
use crate::target::nbd_negotiate::{self, Negotiation};
use crate::target::serving::{self, ConnPermit, Handoff, Port};

/// A blocking read or write waits this long at most before checking the
/// deadline and whether the target stops.
const POLL: Duration = Duration::from_millis(200);

/// A socket whose reads and writes fail with `TimedOut` once `deadline`
/// passed (the whole handshake's, not each call's: a client trickling a
/// byte at a time cannot stretch it), or when the target stops.
struct DeadlineStream<'a> {
    sock: &'a TcpStream,
    deadline: Instant,
    shared: &'a NbdShared,
}

impl DeadlineStream<'_> {
    /// The time a call may wait now, or why it may not.
    fn wait_for(&self) -> io::Result<Duration> {
        if self.shared.stopping() {
            // Not `Interrupted`: read_exact would retry it forever.
            return Err(io::Error::other("the target is stopping"));
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the handshake took longer than {} s",
                    self.shared.negotiation_deadline.as_secs_f64()
                ),
            ));
        }
        Ok(left.min(POLL))
    }
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Read for DeadlineStream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            self.sock.set_read_timeout(Some(self.wait_for()?))?;
            match (&mut &*self.sock).read(buf) {
                Err(e) if timed_out(&e) => continue,
                r => return r,
            }
        }
    }
}

impl Write for DeadlineStream<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            self.sock.set_write_timeout(Some(self.wait_for()?))?;
            match (&mut &*self.sock).write(buf) {
                Err(e) if timed_out(&e) => continue,
                r => return r,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One slot of the negotiation bound, given back when dropped (also when
/// the thread could not be started).
struct Negotiating(Arc<AtomicUsize>);

impl Drop for Negotiating {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Negotiate on `sock` and hand it to a reactor (`to`).
fn negotiate_and_hand(
    sock: TcpStream,
    peer: SocketAddr,
    permit: ConnPermit,
    shared: &NbdShared,
    to: &Port<NbdNewConnection>,
) {
    let mut s = DeadlineStream {
        sock: &sock,
        deadline: Instant::now() + shared.negotiation_deadline,
        shared,
    };
    match nbd_negotiate::negotiate(&mut s, &shared.export) {
        Ok(Negotiation::Transmission { structured }) => {
            let reset = sock
                .set_read_timeout(None)
                .and_then(|()| sock.set_write_timeout(None));
            if reset.is_err() {
                return;
            }
            let conn = NbdNewConnection {
                sock,
                peer,
                structured,
                permit,
            };
            to.hand(conn);
        }
        Ok(Negotiation::Aborted) => {}
        Err(e) if shared.stopping() => drop(e),
        Err(e) => eprintln!("iolab serve: handshake with {peer} failed: {e}"),
    }
}

/// Accept connections until the target stops, each negotiated on its own
/// thread; then wait for the handshakes under way (they end within
/// `POLL` of the stop).
pub fn accept_loop(
    listener: TcpListener,
    shared: Arc<NbdShared>,
    mut reactors: Handoff<NbdNewConnection>,
) -> io::Result<()> {
    let negotiating = Arc::new(AtomicUsize::new(0));
    let mut said_full = false;
    let stopping = shared.clone();
    let r = serving::accept_loop(
        listener,
        &serving::ConnLimits::standard(),
        move || stopping.stopping(),
        |sock, peer, permit| {
            if negotiating.load(Ordering::SeqCst) >= shared.max_negotiating {
                if !said_full {
                    eprintln!(
                        "iolab serve: {} connections are in their handshake; new ones are closed \
                         until one finishes (said once)",
                        shared.max_negotiating
                    );
                    said_full = true;
                }
                return Ok(());
            }
            negotiating.fetch_add(1, Ordering::SeqCst);
            let slot = Negotiating(negotiating.clone());
            let to = reactors.next_port();
            let shared = shared.clone();
            let spawned = std::thread::Builder::new()
                .name("nbd-handshake".into())
                .stack_size(256 << 10)
                .spawn(move || {
                    let _slot = slot;
                    negotiate_and_hand(sock, peer, permit, &shared, &to);
                });
            if let Err(e) = spawned {
                eprintln!("iolab serve: no thread for the handshake with {peer}: {e}; closed");
            }
            Ok(())
        },
    );
    let deadline = Instant::now() + POLL * 20;
    while negotiating.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    r
}
