//! The NVMe/TCP protocol on one reactor of the serving substrate
//! (`target::serving`, which owns the thread, its io_uring, the
//! connections and the stop): it parses PDUs, reads and writes the
//! backing file (O_DIRECT), sends PDUs and stamps each I/O command (see
//! `target::stamps`). Nothing blocks but the ring's wait.
//!
//! Per connection: one receive in flight into a byte buffer, out of which
//! whole PDUs are parsed (ICReq first, then command capsules and H2CData);
//! a slot per command in flight (an aligned buffer of the largest
//! transfer; as many as the queue's Connect asked for, so a command never
//! waits for a slot another command of the same queue holds); and one send
//! in flight of everything encoded since the last one. Admin and Fabrics
//! commands are answered at once by the controller model; Read, Write and
//! Flush go to the file: a read's data goes back in one C2HData PDU and
//! its completion in a CapsuleResp; a write's data comes in the capsule
//! (up to the in-capsule size) or in H2CData PDUs after an R2T for all of
//! it. With a fabric delay a completion waits until its command's arrival
//! plus the delay. A connection whose PDUs have not had a byte taken by its
//! socket for the stall timeout is closed (`end_stalled`). What one
//! connection holds, and its bounds: `conn.rs`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use io_uring::{opcode, types};

use super::conn::{
    failed, NvmeConn, Op, QueueRole, Slot, FES_DATA_RANGE, FES_HEADER_DIGEST, FES_INVALID_HEADER,
    FES_LIMIT_EXCEEDED, FES_PDU_SEQUENCE, FES_UNSUPPORTED, MAX_H2C, SC_CONNECT_INVALID,
    SC_INTERNAL, SC_READ_ERROR, SC_WRITE_FAULT, TX_HIGH_WATER,
};
use super::NvmeShared;
use crate::measure::clock::mono_now_ns;
use crate::proto::nvme::codec::{self, Cqe, DataHeader, Digests, Ic, Sqe};
use crate::target::nvme_controller::Action;
use crate::target::serving::{
    self, file_entry, split, user_data, Connection, Inbox, Protocol, SlotMemory, KIND_FILE,
    KIND_RECV, KIND_SEND,
};
use crate::target::stamps::{self, TargetStamp};

pub use super::conn::NvmeNewConnection;

/// The NVMe/TCP protocol on one reactor: the file operations the next
/// submit carries and the completions held back (slots are per connection).
pub struct Nvme {
    shared: Arc<NvmeShared>,
    /// (conn, slot) whose file operation the next submit carries.
    device_pending: Vec<(usize, usize)>,
    delayed: BinaryHeap<Reverse<(u64, usize, usize, i32)>>,
}

type Io = serving::Io<NvmeConn>;

impl Nvme {
    pub fn new(shared: Arc<NvmeShared>) -> Nvme {
        Nvme {
            shared,
            device_pending: Vec::new(),
            delayed: BinaryHeap::new(),
        }
    }

    fn close(&mut self, io: &mut Io, ci: usize) {
        let mut c = io.conns[ci].take().expect("live connection");
        if let QueueRole::Admin { cntlid } = c.queue {
            self.shared.remove(cntlid);
        }
        if let QueueRole::Io { qid } = c.queue {
            if let Some(ctrl) = &c.io_ctrl {
                self.shared.release_queue(ctrl.cntlid, qid);
            }
            stamps::save(self.shared.stamps.as_deref(), c.peer, &mut c.stamps);
        }
    }

    /// Handle every whole PDU received (stopping when a command finds no
    /// free slot: the host's queue size bounds that).
    fn parse(&mut self, io: &mut Io, ci: usize) -> io::Result<()> {
        loop {
            let c = io.conns[ci].as_mut().expect("live connection");
            if c.closing || c.tx.len() >= TX_HIGH_WATER {
                return Ok(());
            }
            let avail = c.inbox.avail();
            let (header, n) = match codec::split_pdu(avail, c.digests) {
                Ok(Some((_, n))) if n > c.queue.max_pdu() => {
                    let why = format!(
                        "a PDU of {n} bytes, over this stage's {}",
                        c.queue.max_pdu()
                    );
                    c.terminate(FES_LIMIT_EXCEEDED, &why);
                    return Ok(());
                }
                Ok(Some((p, n))) => (p.header, n),
                Ok(None) => {
                    // Refused before it is all received (never buffered).
                    let too_big = codec::CommonHeader::parse(avail)
                        .is_ok_and(|h| h.plen as usize > c.queue.max_pdu());
                    if too_big {
                        c.terminate(FES_LIMIT_EXCEEDED, "a PDU larger than any this stage takes");
                    }
                    return Ok(());
                }
                Err(e) => {
                    let fes = if e.0.contains("header digest") {
                        FES_HEADER_DIGEST
                    } else {
                        FES_INVALID_HEADER
                    };
                    c.terminate(fes, &e.0);
                    return Ok(());
                }
            };
            let handled = match (header.pdu_type, c.queue) {
                (codec::PDU_ICREQ, QueueRole::New) => {
                    self.icreq(io, ci, n);
                    true
                }
                (_, QueueRole::New) | (codec::PDU_ICREQ, _) => {
                    c.terminate(FES_PDU_SEQUENCE, "ICReq must come first, and once");
                    true
                }
                (codec::PDU_CAPSULE_CMD, _) => self.capsule(io, ci, n)?,
                (codec::PDU_H2C_DATA, QueueRole::Io { .. }) => self.h2c(io, ci, n)?,
                (codec::PDU_H2C_TERM, _) => {
                    c.closing = true;
                    true
                }
                (t, _) => {
                    c.terminate(
                        FES_INVALID_HEADER,
                        &format!("unexpected PDU type 0x{t:02x}"),
                    );
                    true
                }
            };
            if !handled {
                return Ok(());
            }
        }
    }

    /// The PDU of `n` bytes at the start of connection `ci`'s buffer
    /// (checked by the caller), consumed: its command, if it is a capsule,
    /// and where its data lies in the receive buffer.
    fn take_pdu(&mut self, io: &mut Io, ci: usize, n: usize) -> (Option<Sqe>, usize, usize) {
        let c = io.conns[ci].as_mut().expect("live connection");
        let start = c.inbox.start;
        let (p, _) = codec::split_pdu(&c.inbox.buf[start..start + n], c.digests)
            .ok()
            .flatten()
            .expect("a whole PDU, checked");
        let sqe = codec::parse_capsule(&p).ok();
        let data_at = if p.data.is_empty() {
            start + n
        } else {
            p.data.as_ptr() as usize - c.inbox.buf.as_ptr() as usize
        };
        let data_len = p.data.len();
        c.inbox.start += n;
        (sqe, data_at, data_len)
    }

    fn icreq(&mut self, io: &mut Io, ci: usize, n: usize) {
        let c = io.conns[ci].as_mut().expect("live connection");
        let parsed = {
            let (p, _) = codec::split_pdu(&c.inbox.avail()[..n], Digests::default())
                .ok()
                .flatten()
                .expect("a whole PDU, checked");
            codec::parse_ic(&p)
        };
        c.inbox.start += n;
        let req = match parsed {
            Ok(r) if r.pfv == 0 => r,
            Ok(_) => return c.terminate(FES_UNSUPPORTED, "PDU format version other than 0"),
            Err(e) => return c.terminate(FES_INVALID_HEADER, &e.0),
        };
        let resp = Ic {
            pfv: 0,
            align: 0,
            digests: req.digests,
            max: MAX_H2C,
        };
        match codec::encode_ic(codec::PDU_ICRESP, &resp) {
            Ok(b) => c.tx.extend_from_slice(&b),
            Err(e) => return c.terminate(FES_INVALID_HEADER, &e.0),
        }
        c.digests = req.digests;
        c.hpda = req.align;
        c.queue = QueueRole::Unbound;
    }

    /// A command capsule; false when it must wait for a free slot.
    fn capsule(&mut self, io: &mut Io, ci: usize, n: usize) -> io::Result<bool> {
        let c = io.conns[ci].as_mut().expect("live connection");
        let io_queue = matches!(c.queue, QueueRole::Io { .. });
        if io_queue && c.free.is_empty() {
            return Ok(false);
        }
        let arrival = c.inbox.arrived_at;
        let (sqe, data_at, data_len) = self.take_pdu(io, ci, n);
        let Some(sqe) = sqe else {
            let c = io.conns[ci].as_mut().expect("live connection");
            c.terminate(FES_INVALID_HEADER, "a command capsule without a command");
            return Ok(true);
        };
        let c = io.conns[ci].as_mut().expect("live connection");
        if sqe.opcode() == codec::OPC_FABRICS && sqe.fctype() == codec::FCTYPE_CONNECT {
            let data = c.inbox.buf[data_at..data_at + data_len].to_vec();
            self.connect(io, ci, &sqe, &data);
            return Ok(true);
        }
        match c.queue {
            QueueRole::Admin { cntlid } => {
                let data = c.inbox.buf[data_at..data_at + data_len].to_vec();
                let action = self
                    .shared
                    .with_controller(cntlid, |ctrl| ctrl.admin(&sqe, &data));
                let c = io.conns[ci].as_mut().expect("live connection");
                match action {
                    Some(Action::Reply { cqe, data }) => {
                        if !data.is_empty() && cqe.ok() {
                            c.c2h(cqe.cid, &data);
                        }
                        c.respond(&cqe);
                    }
                    _ => c.respond(&failed(sqe.cid(), SC_INTERNAL)),
                }
                Ok(true)
            }
            QueueRole::Io { .. } => {
                self.io_command(io, ci, &sqe, arrival, data_at, data_len)?;
                Ok(true)
            }
            _ => {
                c.respond(&failed(sqe.cid(), SC_CONNECT_INVALID));
                Ok(true)
            }
        }
    }

    /// Fabrics Connect: a new controller for an admin queue, or an I/O
    /// queue of the controller its data names.
    fn connect(&mut self, io: &mut Io, ci: usize, sqe: &Sqe, data: &[u8]) {
        let qid = sqe.connect_qid();
        let c = io.conns[ci].as_mut().expect("live connection");
        if c.queue != QueueRole::Unbound {
            return c.respond(&failed(sqe.cid(), SC_CONNECT_INVALID));
        }
        if qid == 0 {
            let subnqn = codec::parse_connect_data(data)
                .map(|(_, _, nqn, _)| nqn)
                .unwrap_or_default();
            let local = c.sock.local_addr().unwrap_or(self.shared.listen);
            let mut ctrl = self.shared.new_controller(&subnqn, local);
            let action = ctrl.admin(sqe, data);
            let cntlid = ctrl.cntlid;
            if let Action::Reply { cqe, .. } = &action {
                if cqe.ok() {
                    self.shared.insert(ctrl);
                    c.queue = QueueRole::Admin { cntlid };
                }
                c.respond(cqe);
            }
            return;
        }
        let cntlid = codec::parse_connect_data(data)
            .map(|(_, id, _, _)| id)
            .unwrap_or(0);
        let outcome = self
            .shared
            .with_controller(cntlid, |ctrl| (ctrl.admin(sqe, data), ctrl.clone()));
        match outcome {
            Some((Action::Reply { cqe, .. }, ctrl)) => {
                if cqe.ok() && !self.shared.claim_queue(cntlid, qid) {
                    return c.respond(&failed(sqe.cid(), SC_CONNECT_INVALID));
                }
                if cqe.ok() {
                    // Slots for the entries the host asked for, now.
                    if let Err(e) = c.take_slots(sqe.connect_sqsize() as usize + 1) {
                        eprintln!("iolab serve: {}: no memory for its queue: {e}", c.peer);
                        self.shared.release_queue(cntlid, qid);
                        return c.respond(&failed(sqe.cid(), SC_INTERNAL));
                    }
                    c.queue = QueueRole::Io { qid };
                    c.io_ctrl = Some(ctrl);
                }
                c.respond(&cqe);
            }
            _ => c.respond(&failed(sqe.cid(), SC_CONNECT_INVALID)),
        }
    }

    /// Read, Write or Flush on an I/O queue (a slot is free).
    fn io_command(
        &mut self,
        io: &mut Io,
        ci: usize,
        sqe: &Sqe,
        arrival: u64,
        data_at: usize,
        data_len: usize,
    ) -> io::Result<()> {
        let c = io.conns[ci].as_mut().expect("live connection");
        let action = match &c.io_ctrl {
            Some(ctrl) => ctrl.io(sqe),
            None => Action::Reply {
                cqe: failed(sqe.cid(), SC_INTERNAL),
                data: Vec::new(),
            },
        };
        let (cid, op, offset, len) = match action {
            Action::Reply { cqe, .. } => {
                c.respond(&cqe);
                return Ok(());
            }
            Action::Read { cid, offset, len } => (cid, Op::Read, offset, len),
            Action::Write { cid, offset, len } => (cid, Op::Write, offset, len),
            Action::Flush { cid } => (cid, Op::Flush, 0, 0),
        };
        let s = c.free.pop().expect("checked by the caller");
        c.busy += 1;
        c.slots[s] = Slot {
            cid,
            op,
            offset,
            len,
            got: 0,
            awaiting_data: false,
            stamp: TargetStamp {
                seq: c.seq,
                arrival,
                ..Default::default()
            },
        };
        c.seq += 1;
        if op == Op::Write {
            if data_len == 0 {
                // All of it through H2CData: one R2T, the slot is its tag.
                c.slots[s].awaiting_data = true;
                let r2t = DataHeader {
                    cccid: cid,
                    ttag: s as u16,
                    offset: 0,
                    length: len,
                };
                c.pdu(codec::PDU_R2T, 0, &codec::encode_data_header(&r2t), &[]);
                return Ok(());
            }
            if data_len != len as usize {
                return self.finish(io, ci, s, -libc::EINVAL, arrival);
            }
            let (rx, memory) = (&c.inbox.buf, &mut c.memory);
            memory
                .slot(s, data_len)
                .copy_from_slice(&rx[data_at..data_at + data_len]);
        }
        self.start_file(io, ci, s)
    }

    /// H2CData for a write that got an R2T (always handled: true).
    fn h2c(&mut self, io: &mut Io, ci: usize, n: usize) -> io::Result<bool> {
        let c = io.conns[ci].as_mut().expect("live connection");
        let parsed = codec::split_pdu(&c.inbox.avail()[..n], c.digests)
            .ok()
            .flatten()
            .map(|(p, _)| (codec::parse_data_header(&p), p.header.flags));
        let (header, flags) = match parsed {
            Some((Ok(h), flags)) => (h, flags),
            Some((Err(e), _)) => {
                c.terminate(FES_INVALID_HEADER, &e.0);
                return Ok(true);
            }
            None => unreachable!("a whole PDU, checked"),
        };
        let (_, data_at, data_len) = self.take_pdu(io, ci, n);
        let c = io.conns[ci].as_mut().expect("live connection");
        let h = header;
        let s = h.ttag as usize;
        let ok = s < c.slots.len()
            && c.slots[s].awaiting_data
            && c.slots[s].cid == h.cccid
            && h.offset == c.slots[s].got
            && h.length as usize == data_len
            && h.length <= MAX_H2C
            && h.offset as u64 + h.length as u64 <= c.slots[s].len as u64;
        if !ok {
            c.terminate(FES_DATA_RANGE, "H2CData that no R2T asked for");
            return Ok(true);
        }
        let at = h.offset as usize;
        let (rx, memory) = (&c.inbox.buf, &mut c.memory);
        memory.slot(s, at + data_len)[at..].copy_from_slice(&rx[data_at..data_at + data_len]);
        c.slots[s].got += h.length;
        let last = flags & codec::FLAG_LAST_PDU != 0;
        if c.slots[s].got == c.slots[s].len {
            c.slots[s].awaiting_data = false;
            self.start_file(io, ci, s)?;
        } else if last {
            c.terminate(FES_DATA_RANGE, "the last H2CData PDU before all the data");
        }
        Ok(true)
    }

    fn start_file(&mut self, io: &mut Io, ci: usize, s: usize) -> io::Result<()> {
        let c = io.conns[ci].as_mut().expect("live connection");
        let sl = c.slots[s];
        let e = file_entry(
            &self.shared.file,
            sl.op,
            &mut c.memory,
            s,
            sl.offset,
            sl.len,
        );
        self.device_pending.push((ci, s));
        io.push(e.user_data(user_data(KIND_FILE, ci, s)))
    }

    /// A command's outcome is known: its completion (and a read's data)
    /// is encoded now, or when its fabric delay is over.
    fn finish(&mut self, io: &mut Io, ci: usize, s: usize, res: i32, now: u64) -> io::Result<()> {
        let c = io.conns[ci].as_mut().expect("live connection");
        let st = &mut c.slots[s].stamp;
        st.device_complete = now;
        if st.device_submit == 0 {
            st.device_submit = now;
        }
        match self.shared.delay_ns {
            Some(d) if st.arrival + d > now => {
                self.delayed.push(Reverse((st.arrival + d, ci, s, res)));
            }
            _ => self.encode_completion(io, ci, s, res),
        }
        Ok(())
    }

    fn encode_completion(&mut self, io: &mut Io, ci: usize, s: usize, res: i32) {
        let Some(c) = io.conns[ci].as_mut() else {
            return;
        };
        let sl = c.slots[s];
        if res >= 0 {
            if sl.op == Op::Read {
                let memory = c.memory.slot_ptr(s);
                // SAFETY: the slot's memory holds the read's `len` bytes and
                // is not touched until the slot is freed below.
                let data = unsafe { std::slice::from_raw_parts(memory, sl.len as usize) };
                c.c2h(sl.cid, data);
            }
            c.respond(&Cqe::success(sl.cid, 0));
        } else {
            let status = match (res, sl.op) {
                (r, _) if r == -libc::EINVAL => (0, 0x02),
                (_, Op::Read) => SC_READ_ERROR,
                (_, Op::Write) => SC_WRITE_FAULT,
                (_, Op::Flush) => SC_INTERNAL,
            };
            c.respond(&failed(sl.cid, status));
        }
        if self.shared.stamps.is_some() && c.unsent.len() < stamps::MAX_STAMPS_PER_CONNECTION {
            c.unsent.push(sl.stamp);
        }
        c.busy -= 1;
        c.free.push(s);
    }

    /// Send everything encoded since the last send (one send in flight).
    fn post_send(&mut self, io: &mut Io, ci: usize) -> io::Result<()> {
        let c = io.conns[ci].as_mut().expect("live connection");
        if c.sending || c.tx.is_empty() {
            return Ok(());
        }
        std::mem::swap(&mut c.tx, &mut c.tx_out);
        c.tx_sent = 0;
        let now = mono_now_ns();
        for mut st in c.unsent.drain(..) {
            st.reply_send = now;
            c.stamps.push(st);
        }
        self.push_send(io, ci, now)
    }

    fn push_send(&mut self, io: &mut Io, ci: usize, now: u64) -> io::Result<()> {
        let c = io.conns[ci].as_mut().expect("live connection");
        c.send_posted_at = now;
        let rest = &c.tx_out[c.tx_sent..];
        let e = opcode::Send::new(
            types::Fd(c.sock.as_raw_fd()),
            rest.as_ptr(),
            rest.len() as u32,
        )
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data(user_data(KIND_SEND, ci, 0));
        c.sending = true;
        io.push(e)
    }

    fn sent(&mut self, io: &mut Io, ci: usize, res: i32, now: u64) {
        let c = io.conns[ci].as_mut().expect("live connection");
        c.sending = false;
        if res < 0 {
            // The host is gone: drop what was to be sent.
            c.closing = true;
            c.tx_out.clear();
            c.tx.clear();
            return;
        }
        c.tx_sent += res as usize;
        if c.tx_sent < c.tx_out.len() {
            let _ = self.push_send(io, ci, now);
        } else {
            c.tx_out.clear();
        }
    }
}

impl Connection for NvmeConn {
    fn socket(&self) -> (&TcpStream, SocketAddr) {
        (&self.sock, self.peer)
    }

    fn close_soon(&mut self) {
        self.closing = true;
    }

    fn send_in_flight_since(&self) -> Option<u64> {
        (self.sending && !self.shut).then_some(self.send_posted_at)
    }

    fn mark_shut(&mut self) {
        self.shut = true;
    }
}

impl Protocol for Nvme {
    type Handed = NvmeNewConnection;
    type Conn = NvmeConn;

    fn ring_entries(&self) -> u32 {
        1024
    }

    fn adopt(&mut self, n: NvmeNewConnection, now: u64) -> io::Result<NvmeConn> {
        Ok(NvmeConn {
            sock: n.sock,
            peer: n.peer,
            _permit: n.permit,
            digests: Digests::default(),
            hpda: 0,
            queue: QueueRole::New,
            io_ctrl: None,
            inbox: Inbox::new(2 * QueueRole::New.max_pdu()),
            accepted_at: now,
            closing: false,
            shut: false,
            tx: Vec::new(),
            tx_out: Vec::new(),
            tx_sent: 0,
            sending: false,
            send_posted_at: 0,
            slots: Vec::new(),
            free: Vec::new(),
            // One page of address space until an I/O queue's Connect.
            memory: SlotMemory::new(0, 4096)?,
            busy: 0,
            seq: 0,
            unsent: Vec::new(),
            stamps: Vec::new(),
        })
    }

    /// Parse what arrived, post the receive and the send a connection
    /// needs, and close it once it is done.
    fn progress(&mut self, io: &mut Io, ci: usize, now: u64) -> io::Result<()> {
        if io.conns[ci].is_none() {
            return Ok(());
        }
        let c = io.conns[ci].as_mut().expect("live connection");
        let deadline = c.accepted_at + self.shared.negotiation_deadline_ns;
        if c.queue.negotiating() && !c.closing && now >= deadline {
            c.terminate(FES_PDU_SEQUENCE, "no ICReq and Connect within the deadline");
        }
        self.parse(io, ci)?;
        self.post_send(io, ci)?;
        let c = io.conns[ci].as_mut().expect("live connection");
        if !c.closing {
            c.inbox.grow_to(2 * c.queue.max_pdu());
            let ud = user_data(KIND_RECV, ci, 0);
            if let Some(e) = c.inbox.recv(c.sock.as_raw_fd(), ud) {
                return io.push(e);
            }
        }
        if c.closing {
            c.drop_awaited_writes();
        }
        let done = c.closing && c.busy == 0 && !c.sending && c.tx.is_empty();
        if done && c.inbox.ready_to_close(&c.sock, &mut c.shut) {
            self.close(io, ci);
        }
        Ok(())
    }

    fn complete(&mut self, io: &mut Io, ud: u64, res: i32, now: u64) -> io::Result<()> {
        let (kind, ci, s) = split(ud);
        match kind {
            KIND_RECV => {
                let c = io.conns[ci].as_mut().expect("live connection");
                if !c.inbox.received(res, now) {
                    c.closing = true;
                }
                Ok(())
            }
            KIND_FILE => {
                let c = io.conns[ci].as_ref().expect("live connection");
                let sl = &c.slots[s];
                let short = sl.op != Op::Flush && res >= 0 && res as u32 != sl.len;
                self.finish(io, ci, s, if short { -libc::EIO } else { res }, now)
            }
            KIND_SEND => {
                self.sent(io, ci, res, now);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn release_due(&mut self, io: &mut Io, now: u64) {
        while let Some(&Reverse((due, ci, s, res))) = self.delayed.peek() {
            if due > now {
                break;
            }
            self.delayed.pop();
            self.encode_completion(io, ci, s, res);
        }
    }

    fn before_submit(&mut self, io: &mut Io, now: u64) -> Option<u64> {
        for &(ci, s) in &self.device_pending {
            if let Some(c) = io.conns[ci].as_mut() {
                c.slots[s].stamp.device_submit = now;
            }
        }
        self.device_pending.clear();
        // Wake for the next delayed completion or negotiation deadline.
        let deadline = self.shared.negotiation_deadline_ns;
        let negotiating = io.conns.iter().flatten().filter(|c| c.queue.negotiating());
        let first_deadline = negotiating
            .filter(|c| !c.closing)
            .map(|c| c.accepted_at + deadline)
            .min();
        let delayed = self.delayed.peek().map(|Reverse((due, ..))| *due);
        delayed.into_iter().chain(first_deadline).min()
    }
}
