//! The NBD protocol on one reactor of the serving substrate
//! (`target::serving`, which owns the thread, its io_uring, the
//! connections and the stop): it parses requests, reads and writes the
//! backing file (O_DIRECT), sends replies and stamps each request (see
//! `target::stamps`). Nothing blocks but the ring's wait.
//!
//! Per connection one receive is in flight into a byte buffer; whole
//! requests are parsed out of it and each takes a slot (an aligned buffer
//! of the largest block) until its reply is sent; when no slot is free,
//! parsing waits, which holds the client back through TCP. A connection
//! holds at most half the reactor's slots (`share`), so one that never
//! reads its replies cannot take them all, and one whose oldest reply has
//! waited the stall timeout to leave whole is closed (`end_stalled`), so
//! two such (not reading, or reading a trickle at a time) cannot keep them
//! for ever. Replies leave in
//! completion order, several per `sendmsg`, one send in flight per
//! connection so their bytes never interleave. With a fabric delay a reply
//! waits until its arrival plus the delay (a sleep in the ring's wait, a
//! spin for the last few microseconds).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use io_uring::{opcode, types};

use super::NbdShared;
use crate::proto::nbd as codec;
use crate::target::serving::{
    self, file_entry, split, user_data, ConnPermit, Connection, FileOp, Inbox, Protocol,
    SlotMemory, KIND_FILE, KIND_RECV, KIND_SEND,
};
use crate::target::stamps::{self, TargetStamp};

/// A connection handed over by the acceptor, its handshake done.
pub struct NbdNewConnection {
    pub sock: TcpStream,
    pub peer: SocketAddr,
    pub structured: bool,
    /// Its place under the target's connection caps, held until it closes.
    pub permit: ConnPermit,
}

/// Replies gathered into one sendmsg at most.
const MAX_IOV_REPLIES: usize = 32;
/// NBD_REPLY_TYPE_ERROR.
const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;
const NBD_EPERM: u32 = 1;
const NBD_EIO: u32 = 5;
const NBD_EINVAL: u32 = 22;
const NBD_ENOSPC: u32 = 28;

#[derive(Default, Clone, Copy)]
struct Slot {
    conn: usize,
    cookie: u64,
    cmd: u16,
    offset: u64,
    len: u32,
    /// Bytes of reply header in `hdr`, and of data after it.
    hdr_len: usize,
    data_len: usize,
    hdr: [u8; 32],
    stamp: TargetStamp,
    /// When the reply joined its connection's queue (ready to send).
    ready_at: u64,
}

pub struct NbdConn {
    sock: TcpStream,
    peer: SocketAddr,
    _permit: ConnPermit,
    structured: bool,
    inbox: Inbox,
    /// The client disconnected (or the target stops): take no new requests.
    closing: bool,
    shut: bool,
    /// Slots whose file operation is in flight or whose reply waits.
    busy: usize,
    ready: VecDeque<usize>,
    /// Bytes of the first ready reply already sent.
    sent_of_first: usize,
    /// Replies in the sendmsg in flight (0: none in flight).
    sending: usize,
    /// When that sendmsg was posted.
    send_posted_at: u64,
    /// When the first ready reply joined the queue: its age is how long
    /// the oldest reply has waited to leave whole. A client that reads a
    /// trickle at a time keeps sends completing, but not replies leaving.
    head_ready_at: u64,
    iov: Vec<libc::iovec>,
    msg: libc::msghdr,
    seq: u64,
    stamps: Vec<TargetStamp>,
}

/// Slots one connection may hold (file operations in flight and replies
/// not yet sent): half the reactor's, 128 of the default 256. That is the
/// whole queue of a well-behaved client at the depths iolab's engine and
/// fio's nbd engine are run at (32 to 128; neither has a maximum, deeper
/// requests wait in the socket), and two such clients fill a reactor; a
/// client that never reads its replies leaves the other half to the rest.
fn share(slots: usize) -> usize {
    (slots / 2).max(1)
}

/// The NBD protocol on one reactor: the reactor's slots (shared by its
/// connections, at most `per_conn` each) and the replies held back.
pub struct Nbd {
    shared: Arc<NbdShared>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Slots one connection may hold at once (see `share`).
    per_conn: usize,
    memory: SlotMemory,
    /// Slots whose file operation, or replies whose send, the next submit carries.
    device_pending: Vec<usize>,
    send_pending: Vec<usize>,
    delayed: BinaryHeap<Reverse<(u64, usize)>>,
}

type Io = serving::Io<NbdConn>;

impl Nbd {
    pub fn new(shared: Arc<NbdShared>, slots: usize) -> io::Result<Nbd> {
        let memory = SlotMemory::new(slots, shared.export.max_block as usize)?;
        Ok(Nbd {
            shared,
            slots: vec![Slot::default(); slots],
            free: (0..slots).rev().collect(),
            per_conn: share(slots),
            memory,
            device_pending: Vec::with_capacity(slots),
            send_pending: Vec::with_capacity(slots),
            delayed: BinaryHeap::with_capacity(slots),
        })
    }

    fn close(&mut self, io: &mut Io, ci: usize) {
        let mut c = io.take(ci);
        stamps::save(self.shared.stamps.as_deref(), c.peer, &mut c.stamps);
    }

    fn parse_requests(&mut self, io: &mut Io, ci: usize) -> io::Result<()> {
        loop {
            let c = io.conns[ci].as_mut().unwrap();
            if c.closing || c.inbox.avail().len() < codec::REQUEST_LEN {
                return Ok(());
            }
            let head: &[u8; codec::REQUEST_LEN] =
                c.inbox.avail()[..codec::REQUEST_LEN].try_into().unwrap();
            let req = match codec::decode_request(head) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("iolab serve: {}: {}; closing the connection", c.peer, e.0);
                    c.closing = true;
                    return Ok(());
                }
            };
            let payload = if req.cmd == codec::CMD_WRITE {
                req.len as usize
            } else {
                0
            };
            if payload > self.shared.export.max_block as usize {
                eprintln!(
                    "iolab serve: {}: a write of {} bytes is over the advertised maximum; closing",
                    c.peer, req.len
                );
                c.closing = true;
                return Ok(());
            }
            if c.inbox.avail().len() < codec::REQUEST_LEN + payload {
                return Ok(());
            }
            if req.cmd == codec::CMD_DISC {
                c.inbox.start += codec::REQUEST_LEN;
                c.closing = true;
                return Ok(());
            }
            // At its share, the connection waits (its requests in its
            // inbox, then its socket) until a reply of its own is sent;
            // `sent` frees the slot and the next `progress` parses again.
            if c.busy >= self.per_conn {
                return Ok(());
            }
            let Some(s) = self.free.pop() else {
                return Ok(());
            };
            let data_at = c.inbox.start + codec::REQUEST_LEN;
            c.inbox.start = data_at + payload;
            c.busy += 1;
            let stamp = TargetStamp {
                seq: c.seq,
                arrival: c.inbox.arrived_at,
                ..Default::default()
            };
            c.seq += 1;
            self.slots[s] = Slot {
                conn: ci,
                cookie: req.cookie,
                cmd: req.cmd,
                offset: req.offset,
                len: req.len,
                stamp,
                ..Default::default()
            };
            if payload > 0 {
                let c = io.conns[ci].as_ref().unwrap();
                self.memory
                    .slot(s, payload)
                    .copy_from_slice(&c.inbox.buf[data_at..data_at + payload]);
            }
            self.start(io, s, req.flags)?;
        }
    }

    /// Check a request and hand it to the file, or answer it at once.
    fn start(&mut self, io: &mut Io, s: usize, _flags: u16) -> io::Result<()> {
        let export = &self.shared.export;
        let sl = self.slots[s];
        let end = sl.offset.checked_add(sl.len as u64);
        let in_bounds = end.is_some_and(|e| e <= export.size);
        let aligned = sl.offset.is_multiple_of(export.min_block as u64)
            && sl.len.is_multiple_of(export.min_block)
            && sl.len <= export.max_block;
        let ud = user_data(KIND_FILE, sl.conn, s);
        let op = match sl.cmd {
            codec::CMD_READ | codec::CMD_WRITE if !in_bounds || !aligned => {
                return self.finish(io, s, -libc::EINVAL, self.slots[s].stamp.arrival)
            }
            codec::CMD_WRITE if export.read_only => {
                return self.finish(io, s, -libc::EPERM, self.slots[s].stamp.arrival)
            }
            _ if sl.len == 0 && sl.cmd != codec::CMD_FLUSH => {
                return self.finish(io, s, 0, self.slots[s].stamp.arrival)
            }
            codec::CMD_READ => FileOp::Read,
            codec::CMD_WRITE => FileOp::Write,
            codec::CMD_FLUSH => FileOp::Flush,
            _ => return self.finish(io, s, -libc::EINVAL, self.slots[s].stamp.arrival),
        };
        let e = file_entry(
            &self.shared.file,
            op,
            &mut self.memory,
            s,
            sl.offset,
            sl.len,
        );
        self.device_pending.push(s);
        io.push(e.user_data(ud))
    }

    /// The request's outcome is known: build its reply and queue it (after
    /// the fabric delay, if any).
    fn finish(&mut self, io: &mut Io, s: usize, res: i32, now: u64) -> io::Result<()> {
        let structured = io.conns[self.slots[s].conn].as_ref().unwrap().structured;
        let sl = &mut self.slots[s];
        sl.stamp.device_complete = now;
        if sl.stamp.device_submit == 0 {
            sl.stamp.device_submit = now;
        }
        let error = match res {
            r if r >= 0 => 0,
            r if -r == libc::EPERM || -r == libc::EROFS => NBD_EPERM,
            r if -r == libc::EINVAL => NBD_EINVAL,
            r if -r == libc::ENOSPC => NBD_ENOSPC,
            _ => NBD_EIO,
        };
        let data = error == 0 && sl.cmd == codec::CMD_READ;
        sl.data_len = if data { sl.len as usize } else { 0 };
        sl.hdr_len = match (structured, error, data) {
            (false, _, _) => {
                sl.hdr[..16].copy_from_slice(&codec::encode_simple_reply(sl.cookie, error));
                16
            }
            (true, 0, true) => {
                let h = codec::encode_chunk_header(
                    sl.cookie,
                    codec::REPLY_FLAG_DONE,
                    codec::REPLY_TYPE_OFFSET_DATA,
                    8 + sl.len,
                );
                sl.hdr[..20].copy_from_slice(&h);
                sl.hdr[20..28].copy_from_slice(&sl.offset.to_be_bytes());
                28
            }
            (true, 0, false) => {
                let h = codec::encode_chunk_header(
                    sl.cookie,
                    codec::REPLY_FLAG_DONE,
                    codec::REPLY_TYPE_NONE,
                    0,
                );
                sl.hdr[..20].copy_from_slice(&h);
                20
            }
            (true, e, _) => {
                let h = codec::encode_chunk_header(
                    sl.cookie,
                    codec::REPLY_FLAG_DONE,
                    REPLY_TYPE_ERROR,
                    6,
                );
                sl.hdr[..20].copy_from_slice(&h);
                sl.hdr[20..24].copy_from_slice(&e.to_be_bytes());
                sl.hdr[24..26].copy_from_slice(&0u16.to_be_bytes());
                26
            }
        };
        match self.shared.delay_ns {
            Some(d) if sl.stamp.arrival + d > now => {
                self.delayed.push(Reverse((sl.stamp.arrival + d, s)));
            }
            _ => {
                let ci = sl.conn;
                self.enqueue(io, ci, s, now);
            }
        }
        Ok(())
    }

    /// Reply `s` is ready to leave on connection `ci`.
    fn enqueue(&mut self, io: &mut Io, ci: usize, s: usize, now: u64) {
        self.slots[s].ready_at = now;
        let c = io.conns[ci].as_mut().unwrap();
        if c.ready.is_empty() {
            c.head_ready_at = now;
        }
        c.ready.push_back(s);
    }

    /// Gather the ready replies of a connection into one sendmsg.
    fn post_send(&mut self, io: &mut Io, ci: usize, now: u64) -> io::Result<()> {
        let c = io.conns[ci].as_mut().unwrap();
        if c.sending > 0 || c.ready.is_empty() {
            return Ok(());
        }
        c.send_posted_at = now;
        c.iov.clear();
        let mut skip = c.sent_of_first;
        for &s in c.ready.iter().take(MAX_IOV_REPLIES) {
            let sl = &self.slots[s];
            let data = self.memory.slot_ptr(s);
            for (base, len) in [
                (sl.hdr.as_ptr(), sl.hdr_len),
                (data.cast_const(), sl.data_len),
            ] {
                if len > skip {
                    c.iov.push(libc::iovec {
                        // SAFETY: within the header array or the slot's memory.
                        iov_base: unsafe { base.add(skip) } as *mut libc::c_void,
                        iov_len: len - skip,
                    });
                    skip = 0;
                } else {
                    skip -= len;
                }
            }
            if self.slots[s].stamp.reply_send == 0 {
                self.send_pending.push(s);
            }
            c.sending += 1;
        }
        c.msg.msg_iov = c.iov.as_mut_ptr();
        c.msg.msg_iovlen = c.iov.len();
        let e = opcode::SendMsg::new(types::Fd(c.sock.as_raw_fd()), &c.msg)
            .flags(libc::MSG_NOSIGNAL as u32)
            .build()
            .user_data(user_data(KIND_SEND, ci, 0));
        io.push(e)
    }

    fn sent(&mut self, io: &mut Io, ci: usize, res: i32) -> io::Result<()> {
        let c = io.conns[ci].as_mut().unwrap();
        c.sending = 0;
        if res < 0 {
            // The client is gone: drop its replies.
            c.closing = true;
            while let Some(s) = c.ready.pop_front() {
                c.busy -= 1;
                self.free.push(s);
            }
            c.sent_of_first = 0;
            return Ok(());
        }
        let mut n = res as usize + c.sent_of_first;
        c.sent_of_first = 0;
        while let Some(&s) = c.ready.front() {
            let sl = &self.slots[s];
            let total = sl.hdr_len + sl.data_len;
            if n < total {
                c.sent_of_first = n;
                break;
            }
            n -= total;
            c.ready.pop_front();
            if let Some(&next) = c.ready.front() {
                c.head_ready_at = self.slots[next].ready_at;
            }
            c.busy -= 1;
            if c.stamps.len() < stamps::MAX_STAMPS_PER_CONNECTION && self.shared.stamps.is_some() {
                c.stamps.push(sl.stamp);
            }
            self.free.push(s);
        }
        Ok(())
    }
}

impl Connection for NbdConn {
    fn socket(&self) -> (&TcpStream, SocketAddr) {
        (&self.sock, self.peer)
    }

    fn close_soon(&mut self) {
        self.closing = true;
    }

    fn send_in_flight_since(&self) -> Option<u64> {
        // The oldest reply's wait, not the send's: a trickle keeps sends
        // completing while the slots stay held.
        (self.sending > 0 && !self.shut).then_some(self.head_ready_at.min(self.send_posted_at))
    }

    fn mark_shut(&mut self) {
        self.shut = true;
    }
}

impl Protocol for Nbd {
    type Handed = NbdNewConnection;
    type Conn = NbdConn;

    fn ring_entries(&self) -> u32 {
        // Every slot's file operation and reply send, each connection's
        // receive, and the wake-up read fit in the ring at once.
        (2 * self.slots.len() + 64).next_power_of_two() as u32
    }

    fn adopt(&mut self, n: NbdNewConnection, _now: u64) -> io::Result<NbdConn> {
        let rx_len = 2 * (codec::REQUEST_LEN + self.shared.export.max_block as usize);
        Ok(NbdConn {
            sock: n.sock,
            peer: n.peer,
            _permit: n.permit,
            structured: n.structured,
            inbox: Inbox::new(rx_len),
            closing: false,
            shut: false,
            busy: 0,
            ready: VecDeque::new(),
            sent_of_first: 0,
            sending: 0,
            send_posted_at: 0,
            head_ready_at: 0,
            iov: Vec::with_capacity(2 * MAX_IOV_REPLIES),
            // SAFETY: msghdr is plain data; zero is its empty value.
            msg: unsafe { std::mem::zeroed() },
            seq: 0,
            stamps: Vec::new(),
        })
    }

    /// Parse what arrived, post the receive and the send a connection
    /// needs, and close it once it is done.
    fn progress(&mut self, io: &mut Io, ci: usize, now: u64) -> io::Result<()> {
        if io.conns[ci].is_none() {
            return Ok(());
        }
        self.parse_requests(io, ci)?;
        self.post_send(io, ci, now)?;
        let c = io.conns[ci].as_mut().unwrap();
        if !c.closing {
            let ud = user_data(KIND_RECV, ci, 0);
            if let Some(e) = c.inbox.recv(c.sock.as_raw_fd(), ud) {
                return io.push(e);
            }
        }
        let done = c.closing && c.busy == 0 && c.sending == 0 && c.ready.is_empty();
        if done && c.inbox.ready_to_close(&c.sock, &mut c.shut) {
            self.close(io, ci);
        }
        Ok(())
    }

    fn complete(&mut self, io: &mut Io, ud: u64, res: i32, now: u64) -> io::Result<()> {
        let (kind, ci, s) = split(ud);
        match kind {
            KIND_RECV => {
                let c = io.conns[ci].as_mut().unwrap();
                if !c.inbox.received(res, now) {
                    c.closing = true;
                }
                Ok(())
            }
            KIND_FILE => {
                let sl = &self.slots[s];
                let short = sl.cmd != codec::CMD_FLUSH && res >= 0 && res as u32 != sl.len;
                self.finish(io, s, if short { -libc::EIO } else { res }, now)
            }
            KIND_SEND => self.sent(io, ci, res),
            _ => Ok(()),
        }
    }

    fn release_due(&mut self, io: &mut Io, now: u64) {
        while let Some(&Reverse((due, s))) = self.delayed.peek() {
            if due > now {
                break;
            }
            self.delayed.pop();
            let ci = self.slots[s].conn;
            self.enqueue(io, ci, s, now);
        }
    }

    fn before_submit(&mut self, _io: &mut Io, now: u64) -> Option<u64> {
        for &s in &self.device_pending {
            self.slots[s].stamp.device_submit = now;
        }
        for &s in &self.send_pending {
            self.slots[s].stamp.reply_send = now;
        }
        self.device_pending.clear();
        self.send_pending.clear();
        self.delayed.peek().map(|Reverse((due, _))| *due)
    }
}
