//! NVMe/TCP on one reactor of the serving substrate (`target::serving`,
//! which owns the thread, its io_uring, the connections and the stop):
//! `NvmeTcp`, the substrate's `Protocol`, is the NVMe target core
//! (`nvmf::Nvmf`) over the TCP fabric (`tcp.rs`). It receives into each
//! connection's buffer (one receive in flight) and hands what arrived to
//! `tcp::receive`, sends everything encoded since the last send (one send
//! in flight), gives file completions and due delayed completions to the
//! core, holds a connection to its negotiation deadline (ICReq and
//! Connect) and closes it once it is done. Nothing blocks but the ring's
//! wait. A connection whose PDUs have not had a byte taken by its socket
//! for the stall timeout is closed by the substrate (`end_stalled`).

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use io_uring::{opcode, types};

use super::nvmf::Nvmf;
use super::queue::QueuePair;
use super::tcp::{self, TcpQueue, FES_PDU_SEQUENCE};
use super::NvmeShared;
use crate::measure::clock::mono_now_ns;
use crate::target::serving::{
    self, split, user_data, Connection, Protocol, KIND_FILE, KIND_RECV, KIND_SEND,
};

pub use super::tcp::NvmeNewConnection;

/// The NVMe/TCP protocol on one reactor: the NVMe target core over TCP.
pub struct NvmeTcp {
    core: Nvmf<TcpQueue>,
}

type Io = serving::Io<QueuePair<TcpQueue>>;

impl NvmeTcp {
    pub fn new(shared: Arc<NvmeShared>) -> NvmeTcp {
        NvmeTcp {
            core: Nvmf::new(shared),
        }
    }

    /// Send everything encoded since the last send (one send in flight).
    fn post_send(&mut self, io: &mut Io, ci: usize) -> io::Result<()> {
        let c = io.conn(ci);
        let t = &mut c.fabric;
        if t.sending || t.tx.is_empty() {
            return Ok(());
        }
        std::mem::swap(&mut t.tx, &mut t.tx_out);
        t.tx_sent = 0;
        let now = mono_now_ns();
        c.replies_sent(now);
        push_send(io, ci, now)
    }

    fn sent(&mut self, io: &mut Io, ci: usize, res: i32, now: u64) {
        let t = &mut io.conn(ci).fabric;
        t.sending = false;
        if res < 0 {
            // The host is gone: drop what was to be sent.
            t.closing = true;
            t.tx_out.clear();
            t.tx.clear();
            return;
        }
        t.tx_sent += res as usize;
        if t.tx_sent < t.tx_out.len() {
            let _ = push_send(io, ci, now);
        } else {
            t.tx_out.clear();
        }
    }
}

fn push_send(io: &mut Io, ci: usize, now: u64) -> io::Result<()> {
    let t = &mut io.conn(ci).fabric;
    t.send_posted_at = now;
    let rest = &t.tx_out[t.tx_sent..];
    let e = opcode::Send::new(
        types::Fd(t.sock.as_raw_fd()),
        rest.as_ptr(),
        rest.len() as u32,
    )
    .flags(libc::MSG_NOSIGNAL)
    .build()
    .user_data(user_data(KIND_SEND, ci, 0));
    t.sending = true;
    io.push(e)
}

impl Connection for QueuePair<TcpQueue> {
    fn socket(&self) -> (&TcpStream, SocketAddr) {
        (&self.fabric.sock, self.fabric.peer)
    }

    fn close_soon(&mut self) {
        self.fabric.closing = true;
    }

    fn send_in_flight_since(&self) -> Option<u64> {
        let t = &self.fabric;
        (t.sending && !t.shut).then_some(t.send_posted_at)
    }

    fn mark_shut(&mut self) {
        self.fabric.shut = true;
    }
}

impl Protocol for NvmeTcp {
    type Handed = NvmeNewConnection;
    type Conn = QueuePair<TcpQueue>;

    fn ring_entries(&self) -> u32 {
        1024
    }

    fn adopt(&mut self, n: NvmeNewConnection, now: u64) -> io::Result<QueuePair<TcpQueue>> {
        self.core.admit(TcpQueue::new(n), now)
    }

    /// Parse what arrived, post the receive and the send a connection
    /// needs, and close it once it is done.
    fn progress(&mut self, io: &mut Io, ci: usize, now: u64) -> io::Result<()> {
        if io.conns[ci].is_none() {
            return Ok(());
        }
        let c = io.conn(ci);
        if self.core.overdue(c, now) {
            c.fabric
                .terminate(FES_PDU_SEQUENCE, "no ICReq and Connect within the deadline");
        }
        tcp::receive(&mut self.core, io, ci)?;
        self.post_send(io, ci)?;
        let c = io.conn(ci);
        let max = tcp::max_pdu(c);
        let t = &mut c.fabric;
        if !t.closing {
            t.inbox.grow_to(2 * max);
            let ud = user_data(KIND_RECV, ci, 0);
            if let Some(e) = t.inbox.recv(t.sock.as_raw_fd(), ud) {
                return io.push(e);
            }
        }
        if c.fabric.closing {
            c.drop_awaited_writes();
        }
        let t = &mut c.fabric;
        let done = t.closing && c.busy == 0 && !t.sending && t.tx.is_empty();
        if done && t.inbox.ready_to_close(&t.sock, &mut t.shut) {
            self.core.close(io, ci);
        }
        Ok(())
    }

    fn complete(&mut self, io: &mut Io, ud: u64, res: i32, now: u64) -> io::Result<()> {
        let (kind, ci, s) = split(ud);
        match kind {
            KIND_RECV => {
                let t = &mut io.conn(ci).fabric;
                if !t.inbox.received(res, now) {
                    t.closing = true;
                }
                Ok(())
            }
            KIND_FILE => self.core.file_done(io, ci, s, res, now),
            KIND_SEND => {
                self.sent(io, ci, res, now);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn release_due(&mut self, io: &mut Io, now: u64) {
        self.core.release_due(io, now);
    }

    fn before_submit(&mut self, io: &mut Io, now: u64) -> Option<u64> {
        // Wake for the next delayed completion or negotiation deadline.
        let delayed = self.core.submitting(io, now);
        delayed
            .into_iter()
            .chain(self.core.first_deadline(io))
            .min()
    }
}
