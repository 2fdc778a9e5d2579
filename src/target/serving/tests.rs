//! The substrate with the smallest protocol that plugs in (an echo): the
//! accept loop spreads connections over the reactors, each connection is
//! served by its reactor, and `stop` and `Drop` end every connection and
//! join every thread.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::*;

struct Echo;

struct EchoConn {
    sock: TcpStream,
    peer: SocketAddr,
    _permit: ConnPermit,
    inbox: Inbox,
    out: Vec<u8>,
    sending: bool,
    closing: bool,
    shut: bool,
}

impl Connection for EchoConn {
    fn socket(&self) -> (&TcpStream, SocketAddr) {
        (&self.sock, self.peer)
    }
    fn close_soon(&mut self) {
        self.closing = true;
    }
    fn send_in_flight_since(&self) -> Option<u64> {
        None
    }
    fn mark_shut(&mut self) {
        self.shut = true;
    }
}

impl Protocol for Echo {
    type Handed = (TcpStream, SocketAddr, ConnPermit);
    type Conn = EchoConn;

    fn ring_entries(&self) -> u32 {
        64
    }

    fn adopt(&mut self, (sock, peer, permit): Self::Handed, _now: u64) -> io::Result<EchoConn> {
        Ok(EchoConn {
            sock,
            peer,
            _permit: permit,
            inbox: Inbox::new(4096),
            out: Vec::new(),
            sending: false,
            closing: false,
            shut: false,
        })
    }

    fn progress(&mut self, io: &mut Io<EchoConn>, ci: usize, _now: u64) -> io::Result<()> {
        let c = io.conn(ci);
        if !c.sending && c.out.is_empty() && !c.inbox.avail().is_empty() {
            c.out = c.inbox.avail().to_vec();
            c.inbox.start = c.inbox.end;
            c.sending = true;
            let e = io_uring::opcode::Send::new(
                io_uring::types::Fd(c.sock.as_raw_fd()),
                c.out.as_ptr(),
                c.out.len() as u32,
            )
            .build()
            .user_data(user_data(KIND_SEND, ci, 0));
            io.push(e)?;
        }
        let c = io.conn(ci);
        if !c.closing {
            if let Some(e) = c
                .inbox
                .recv(c.sock.as_raw_fd(), user_data(KIND_RECV, ci, 0))
            {
                io.push(e)?;
            }
        } else if !c.sending && c.inbox.ready_to_close(&c.sock, &mut c.shut) {
            io.take(ci);
        }
        Ok(())
    }

    fn complete(&mut self, io: &mut Io<EchoConn>, ud: u64, res: i32, now: u64) -> io::Result<()> {
        let (kind, ci, _) = split(ud);
        let c = io.conn(ci);
        match kind {
            KIND_RECV if !c.inbox.received(res, now) => c.closing = true,
            KIND_SEND => {
                c.sending = false;
                c.out.clear();
            }
            _ => {}
        }
        Ok(())
    }

    fn release_due(&mut self, _io: &mut Io<EchoConn>, _now: u64) {}

    fn before_submit(&mut self, _io: &mut Io<EchoConn>, _now: u64) -> Option<u64> {
        None
    }
}

fn echo_target() -> (SocketAddr, Running) {
    echo_target_with(ConnLimits::standard())
}

fn echo_target_with(limits: std::sync::Arc<ConnLimits>) -> (SocketAddr, Running) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let control = Control::new(Duration::from_secs(30));
    let stopping = control.clone();
    let running = start("echo", &control, vec![Echo, Echo], move |mut handoff| {
        accept_loop(
            listener,
            &limits,
            move || stopping.stopping(),
            |sock, peer, permit| {
                handoff.hand((sock, peer, permit));
                Ok(())
            },
        )
    })
    .unwrap();
    (addr, running)
}

/// A connection beyond the caps is closed at accept; one closed gives its
/// place back.
#[test]
fn connections_beyond_the_cap_are_closed_and_places_come_back() {
    let limits = ConnLimits::new(8, 2);
    let (addr, running) = echo_target_with(limits.clone());
    let mut a = TcpStream::connect(addr).unwrap();
    let mut b = TcpStream::connect(addr).unwrap();
    assert_eq!(echoed(&mut a, b"a"), b"a");
    assert_eq!(echoed(&mut b, b"b"), b"b");
    let mut c = TcpStream::connect(addr).unwrap();
    assert!(ended(&mut c), "a third connection from one peer is closed");
    drop(a);
    let t = std::time::Instant::now();
    while limits.held() > 1 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut d = TcpStream::connect(addr).unwrap();
    assert_eq!(echoed(&mut d, b"d"), b"d", "a place freed is taken again");
    running.stop().unwrap();
}

fn echoed(s: &mut TcpStream, msg: &[u8]) -> Vec<u8> {
    s.write_all(msg).unwrap();
    let mut got = vec![0u8; msg.len()];
    s.read_exact(&mut got).unwrap();
    got
}

/// Bounded: a connection the target never ends fails the test, not hangs it.
fn ended(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    match s.read(&mut [0u8; 16]) {
        Ok(n) => n == 0,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn a_protocol_plugged_in_is_served_on_every_reactor_and_stopped() {
    let (addr, running) = echo_target();
    let mut clients: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for (i, c) in clients.iter_mut().enumerate() {
        let msg = format!("hello {i}");
        assert_eq!(echoed(c, msg.as_bytes()), msg.as_bytes());
    }
    running.stop().unwrap();
    for c in &mut clients {
        assert!(ended(c), "stop ends every connection");
    }
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens after stop"
    );
}

#[test]
fn dropping_a_running_target_stops_it() {
    let (addr, running) = echo_target();
    let mut c = TcpStream::connect(addr).unwrap();
    assert_eq!(echoed(&mut c, b"x"), b"x");
    drop(running);
    assert!(ended(&mut c));
}
