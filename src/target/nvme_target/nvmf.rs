//! The NVMe target's command state machine, once for every fabric (as
//! SPDK's lib/nvmf is under its transports): a command capsule arrives on
//! a queue pair (`capsule`), is answered by its controller (Connect,
//! admin and Fabrics commands, keep-alive) or checked by it and given a
//! slot (Read, Write, Flush); a write's data is in the capsule or fetched
//! from the host by the fabric (`Fabric::fetch_data`, then
//! `data_fetched`); the file operation goes to the reactor's io_uring; a
//! read's data is pushed to the host (`Fabric::send_data`) and the
//! completion sent (`Fabric::send_completion`), at once or when the fabric
//! delay is over. Every I/O command is stamped here (`target::stamps`).
//! `Nvmf` is one reactor's: the file operations its next submit carries
//! and the completions it holds back.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::marker::PhantomData;
use std::sync::Arc;

use super::queue::{
    failed, Fabric, Op, QueuePair, QueueRole, Slot, SC_CONNECT_INVALID, SC_INTERNAL, SC_READ_ERROR,
    SC_WRITE_FAULT,
};
use super::NvmeShared;
use crate::proto::nvme::codec::{self, Cqe, Sqe};
use crate::target::nvme_controller::{Action, IN_CAPSULE};
use crate::target::serving::{self, file_entry, user_data, KIND_FILE};
use crate::target::stamps::{self, TargetStamp};

type Io<F> = serving::Io<QueuePair<F>>;

/// One reactor's NVMe target core over fabric `F`.
pub struct Nvmf<F> {
    shared: Arc<NvmeShared>,
    /// (queue pair, slot) whose file operation the next submit carries.
    device_pending: Vec<(usize, usize)>,
    delayed: BinaryHeap<Reverse<(u64, usize, usize, i32)>>,
    fabric: PhantomData<fn() -> F>,
}

impl<F: Fabric> Nvmf<F> {
    pub fn new(shared: Arc<NvmeShared>) -> Nvmf<F> {
        Nvmf {
            shared,
            device_pending: Vec::new(),
            delayed: BinaryHeap::new(),
            fabric: PhantomData,
        }
    }

    /// A new queue pair over `fabric`, admitted at `now` (before its
    /// Connect).
    pub fn admit(&self, fabric: F, now: u64) -> io::Result<QueuePair<F>> {
        const { assert!(F::IN_CAPSULE >= IN_CAPSULE) };
        QueuePair::new(fabric, now)
    }

    /// Whether queue pair `c` is past its negotiation deadline at `now`
    /// (its fabric ends it, saying why in its own terms).
    pub fn overdue(&self, c: &QueuePair<F>, now: u64) -> bool {
        c.negotiating() && now >= c.admitted_at + self.shared.negotiation_deadline_ns
    }

    /// The first negotiation deadline among the queue pairs, if any.
    pub fn first_deadline(&self, io: &Io<F>) -> Option<u64> {
        let deadline = self.shared.negotiation_deadline_ns;
        let negotiating = io.conns.iter().flatten().filter(|c| c.negotiating());
        negotiating.map(|c| c.admitted_at + deadline).min()
    }

    /// Whether queue pair `ci` can take a command now (an I/O queue needs a
    /// free slot: the host's queue size bounds that).
    pub fn can_take(&self, io: &mut Io<F>, ci: usize) -> bool {
        let c = io.conn(ci);
        !matches!(c.queue, QueueRole::Io { .. }) || !c.free.is_empty()
    }

    /// Close queue pair `ci`: its controller or I/O queue given up, its
    /// stamps saved.
    pub fn close(&mut self, io: &mut Io<F>, ci: usize) {
        let mut c = io.take(ci);
        if let QueueRole::Admin { cntlid } = c.queue {
            self.shared.remove(cntlid);
        }
        if let QueueRole::Io { qid } = c.queue {
            if let Some(ctrl) = &c.io_ctrl {
                self.shared.release_queue(ctrl.cntlid, qid);
            }
            let peer = c.fabric.peer();
            stamps::save(self.shared.stamps.as_deref(), peer, &mut c.stamps);
        }
    }

    /// A command capsule on queue pair `ci` (which `can_take` it), arrived
    /// at `arrival`, with `len` bytes of in-capsule data at `at` of what
    /// the fabric received.
    pub fn capsule(
        &mut self,
        io: &mut Io<F>,
        ci: usize,
        sqe: &Sqe,
        (at, len): (usize, usize),
        arrival: u64,
    ) -> io::Result<()> {
        let c = io.conn(ci);
        if sqe.opcode() == codec::OPC_FABRICS && sqe.fctype() == codec::FCTYPE_CONNECT {
            let data = c.fabric.in_capsule(at, len).to_vec();
            self.connect(io, ci, sqe, &data);
            return Ok(());
        }
        match c.queue {
            QueueRole::Admin { cntlid } => {
                let data = c.fabric.in_capsule(at, len).to_vec();
                let action = self
                    .shared
                    .with_controller(cntlid, |ctrl| ctrl.admin(sqe, &data));
                let f = &mut io.conn(ci).fabric;
                match action {
                    Some(Action::Reply { cqe, data }) => {
                        if !data.is_empty() && cqe.ok() {
                            f.send_data(cqe.cid, &data);
                        }
                        f.send_completion(&cqe);
                    }
                    _ => f.send_completion(&failed(sqe.cid(), SC_INTERNAL)),
                }
                Ok(())
            }
            QueueRole::Io { .. } => self.io_command(io, ci, sqe, arrival, (at, len)),
            QueueRole::Unbound => {
                c.fabric
                    .send_completion(&failed(sqe.cid(), SC_CONNECT_INVALID));
                Ok(())
            }
        }
    }

    /// Fabrics Connect: a new controller for an admin queue, or an I/O
    /// queue of the controller its data names.
    fn connect(&mut self, io: &mut Io<F>, ci: usize, sqe: &Sqe, data: &[u8]) {
        let qid = sqe.connect_qid();
        let c = io.conn(ci);
        if c.queue != QueueRole::Unbound {
            return c
                .fabric
                .send_completion(&failed(sqe.cid(), SC_CONNECT_INVALID));
        }
        if qid == 0 {
            let subnqn = codec::parse_connect_data(data)
                .map(|(_, _, nqn, _)| nqn)
                .unwrap_or_default();
            let local = c.fabric.local_addr().unwrap_or(self.shared.listen);
            let mut ctrl = self
                .shared
                .new_controller(&subnqn, local, mdts_of(F::MAX_TRANSFER));
            let action = ctrl.admin(sqe, data);
            let cntlid = ctrl.cntlid;
            if let Action::Reply { cqe, .. } = &action {
                if cqe.ok() {
                    self.shared.insert(ctrl);
                    c.queue = QueueRole::Admin { cntlid };
                }
                c.fabric.send_completion(cqe);
            }
            return;
        }
        let cntlid = codec::parse_connect_data(data)
            .map(|(_, id, _, _)| id)
            .unwrap_or(0);
        let outcome = self
            .shared
            .with_controller(cntlid, |ctrl| (ctrl.admin(sqe, data), ctrl.clone()));
        let Some((Action::Reply { cqe, .. }, ctrl)) = outcome else {
            return c
                .fabric
                .send_completion(&failed(sqe.cid(), SC_CONNECT_INVALID));
        };
        if cqe.ok() && !self.shared.claim_queue(cntlid, qid) {
            return c
                .fabric
                .send_completion(&failed(sqe.cid(), SC_CONNECT_INVALID));
        }
        if cqe.ok() {
            // Slots for the entries the host asked for, now.
            if let Err(e) = c.take_slots(sqe.connect_sqsize() as usize + 1) {
                let peer = c.fabric.peer();
                eprintln!("iolab serve: {peer}: no memory for its queue: {e}");
                self.shared.release_queue(cntlid, qid);
                return c.fabric.send_completion(&failed(sqe.cid(), SC_INTERNAL));
            }
            c.queue = QueueRole::Io { qid };
            c.io_ctrl = Some(ctrl);
        }
        c.fabric.send_completion(&cqe);
    }

    /// Read, Write or Flush on an I/O queue (a slot is free).
    fn io_command(
        &mut self,
        io: &mut Io<F>,
        ci: usize,
        sqe: &Sqe,
        arrival: u64,
        (at, data_len): (usize, usize),
    ) -> io::Result<()> {
        let c = io.conn(ci);
        let action = match &c.io_ctrl {
            Some(ctrl) => ctrl.io(sqe),
            None => Action::Reply {
                cqe: failed(sqe.cid(), SC_INTERNAL),
                data: Vec::new(),
            },
        };
        let (cid, op, offset, len) = match action {
            Action::Reply { cqe, .. } => {
                c.fabric.send_completion(&cqe);
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
                // All of it from the host, the slot its tag.
                c.slots[s].awaiting_data = true;
                let into = c.memory.slot(s, len as usize);
                c.fabric.fetch_data(cid, s as u16, len, into);
                return Ok(());
            }
            if data_len != len as usize {
                return self.finish(io, ci, s, -libc::EINVAL, arrival);
            }
            let (fabric, memory) = (&c.fabric, &mut c.memory);
            memory
                .slot(s, data_len)
                .copy_from_slice(fabric.in_capsule(at, data_len));
        }
        self.start_file(io, ci, s)
    }

    /// All of slot `s`'s write data is in its memory: write it.
    pub fn data_fetched(&mut self, io: &mut Io<F>, ci: usize, s: usize) -> io::Result<()> {
        io.conn(ci).slots[s].awaiting_data = false;
        self.start_file(io, ci, s)
    }

    fn start_file(&mut self, io: &mut Io<F>, ci: usize, s: usize) -> io::Result<()> {
        let c = io.conn(ci);
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

    /// Slot `s`'s file operation completed with `res` at `now`.
    pub fn file_done(
        &mut self,
        io: &mut Io<F>,
        ci: usize,
        s: usize,
        res: i32,
        now: u64,
    ) -> io::Result<()> {
        let sl = &io.conn(ci).slots[s];
        let short = sl.op != Op::Flush && res >= 0 && res as u32 != sl.len;
        self.finish(io, ci, s, if short { -libc::EIO } else { res }, now)
    }

    /// A command's outcome is known: its completion (and a read's data)
    /// is sent now, or when its fabric delay is over.
    fn finish(
        &mut self,
        io: &mut Io<F>,
        ci: usize,
        s: usize,
        res: i32,
        now: u64,
    ) -> io::Result<()> {
        let st = &mut io.conn(ci).slots[s].stamp;
        st.device_complete = now;
        if st.device_submit == 0 {
            st.device_submit = now;
        }
        match self.shared.delay_ns {
            Some(d) if st.arrival + d > now => {
                self.delayed.push(Reverse((st.arrival + d, ci, s, res)));
            }
            _ => self.complete(io, ci, s, res),
        }
        Ok(())
    }

    fn complete(&mut self, io: &mut Io<F>, ci: usize, s: usize, res: i32) {
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
                c.fabric.send_data(sl.cid, data);
            }
            c.fabric.send_completion(&Cqe::success(sl.cid, 0));
        } else {
            let status = match (res, sl.op) {
                (r, _) if r == -libc::EINVAL => (0, 0x02),
                (_, Op::Read) => SC_READ_ERROR,
                (_, Op::Write) => SC_WRITE_FAULT,
                (_, Op::Flush) => SC_INTERNAL,
            };
            c.fabric.send_completion(&failed(sl.cid, status));
        }
        if self.shared.stamps.is_some() && c.unsent.len() < stamps::MAX_STAMPS_PER_CONNECTION {
            c.unsent.push(sl.stamp);
        }
        c.busy -= 1;
        c.free.push(s);
    }

    /// Send the delayed completions whose time has come.
    pub fn release_due(&mut self, io: &mut Io<F>, now: u64) {
        while let Some(&Reverse((due, ci, s, res))) = self.delayed.peek() {
            if due > now {
                break;
            }
            self.delayed.pop();
            self.complete(io, ci, s, res);
        }
    }

    /// The coming submit carries the file operations started since the
    /// last one (stamped `now`); when the next delayed completion is due.
    pub fn submitting(&mut self, io: &mut Io<F>, now: u64) -> Option<u64> {
        for &(ci, s) in &self.device_pending {
            if let Some(c) = io.conns[ci].as_mut() {
                c.slots[s].stamp.device_submit = now;
            }
        }
        self.device_pending.clear();
        self.delayed.peek().map(|Reverse((due, ..))| *due)
    }
}

/// The MDTS that says `max` bytes (pages of 4 KiB, a power of two).
const fn mdts_of(max: usize) -> u8 {
    (max / 4096).trailing_zeros() as u8
}
