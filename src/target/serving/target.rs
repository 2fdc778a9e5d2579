//! A target's threads, written once for both protocols: the stop flag
//! and stall timeout every thread reads (`Control`), the reactors started
//! one per protocol value, the acceptor handing connections to them in
//! turn (`Handoff`, `Port`), and the handle (`Running`) whose `stop` and
//! `Drop` raise the flag, wake every reactor and join every thread.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;

use super::limits::{ConnLimits, ConnPermit};
use super::poll::{pin_to, PollPlan};
use super::reactor::{stall_timeout_ns, Protocol, Reactor};
use super::ring::{wake, waker};

/// What every thread of a target reads.
pub struct Control {
    stop: AtomicBool,
    /// How long a connection's replies may make no send progress.
    pub stall_timeout_ns: u64,
    /// Busy-polling reactors, each pinned to its CPU (`--poll`); `None`:
    /// reactors sleep in their ring until something happens.
    pub poll: Option<PollPlan>,
}

impl Control {
    pub fn new(stall_timeout: Duration) -> Arc<Control> {
        Control::polling(stall_timeout, None)
    }

    /// A target whose reactors busy-poll on `poll`'s CPUs (when given).
    pub fn polling(stall_timeout: Duration, poll: Option<PollPlan>) -> Arc<Control> {
        Arc::new(Control {
            stop: AtomicBool::new(false),
            stall_timeout_ns: stall_timeout_ns(stall_timeout),
            poll,
        })
    }

    /// The target is stopping.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// One reactor's door: its channel, and the eventfd that wakes it.
pub struct Port<N> {
    to: Sender<N>,
    wake_fd: RawFd,
}

impl<N> Clone for Port<N> {
    fn clone(&self) -> Self {
        Port {
            to: self.to.clone(),
            wake_fd: self.wake_fd,
        }
    }
}

impl<N> Port<N> {
    /// Give the reactor a connection and wake it.
    pub fn hand(&self, n: N) {
        if self.to.send(n).is_ok() {
            wake(self.wake_fd);
        }
    }
}

/// The reactors, each in turn.
pub struct Handoff<N> {
    ports: Vec<Port<N>>,
    next: usize,
}

impl<N> Handoff<N> {
    /// The next reactor's door.
    pub fn next_port(&mut self) -> Port<N> {
        let p = self.ports[self.next].clone();
        self.next = (self.next + 1) % self.ports.len();
        p
    }

    /// Give the next reactor a connection.
    pub fn hand(&mut self, n: N) {
        self.next_port().hand(n);
    }
}

/// A running target's threads; dropping it stops them.
pub struct Running {
    control: Arc<Control>,
    wakers: Vec<OwnedFd>,
    handles: Vec<JoinHandle<io::Result<()>>>,
}

impl Running {
    /// Stop taking connections, finish what is in flight, close every
    /// connection and join the threads; the first error they ended with.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.stop_threads()
    }

    fn stop_threads(&mut self) -> anyhow::Result<()> {
        self.control.stop.store(true, Ordering::SeqCst);
        for w in &self.wakers {
            wake(w.as_raw_fd());
        }
        join_all(std::mem::take(&mut self.handles))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop_threads();
    }
}

/// Start a reactor thread (`NAME-reactor-I`) per value of `reactors`, then
/// the acceptor (`NAME-accept`) running `accept` with the door to each.
/// What was started is stopped again if a later start fails.
pub fn start<P: Protocol>(
    name: &str,
    control: &Arc<Control>,
    reactors: Vec<P>,
    accept: impl FnOnce(Handoff<P::Handed>) -> io::Result<()> + Send + 'static,
) -> anyhow::Result<Running> {
    let mut running = Running {
        control: control.clone(),
        wakers: Vec::new(),
        handles: Vec::new(),
    };
    let mut ports = Vec::new();
    for (i, proto) in reactors.into_iter().enumerate() {
        let waker = waker()?;
        let (to, incoming) = mpsc::channel();
        let r = Reactor::new(proto, control.clone(), incoming, waker.as_raw_fd())
            .context("cannot set up an io_uring for the target")?;
        ports.push(Port {
            to,
            wake_fd: waker.as_raw_fd(),
        });
        running.wakers.push(waker);
        let cpu = control.poll.as_ref().map(|p| p.cpu_of(i));
        running.handles.push(
            std::thread::Builder::new()
                .name(format!("{name}-reactor-{i}"))
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        pin_to(cpu).map_err(|e| {
                            io::Error::new(
                                e.kind(),
                                format!("cannot pin reactor {i} to CPU {cpu}: {e}"),
                            )
                        })?;
                    }
                    r.run()
                })?,
        );
    }
    let handoff = Handoff { ports, next: 0 };
    running.handles.push(
        std::thread::Builder::new()
            .name(format!("{name}-accept"))
            .spawn(move || accept(handoff))?,
    );
    Ok(running)
}

/// Join the target's threads; the first error (or panic) they ended with.
fn join_all(threads: Vec<JoinHandle<io::Result<()>>>) -> anyhow::Result<()> {
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
/// each admitted under `limits` (else closed at once, said once), made
/// blocking with TCP_NODELAY and given to `hand` with its permit.
pub fn accept_loop(
    listener: TcpListener,
    limits: &Arc<ConnLimits>,
    stopping: impl Fn() -> bool,
    mut hand: impl FnMut(TcpStream, SocketAddr, ConnPermit) -> io::Result<()>,
) -> io::Result<()> {
    let mut said_refused = false;
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
        let permit = match limits.admit(peer.ip()) {
            Ok(p) => p,
            Err(why) => {
                if !said_refused {
                    eprintln!("iolab serve: closing a connection from {peer}: {why} (said once)");
                    said_refused = true;
                }
                continue;
            }
        };
        // A socket that cannot be set up is that connection's problem only.
        if sock.set_nonblocking(false).is_err() || sock.set_nodelay(true).is_err() {
            continue;
        }
        hand(sock, peer, permit)?;
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
