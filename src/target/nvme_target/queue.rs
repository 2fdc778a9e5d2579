//! One NVMe queue pair of the target, independent of its fabric: the
//! `Fabric` trait (what a transport must do for a queue pair: hand over
//! in-capsule data, fetch a write's data from the host, push a read's data
//! to it, send a completion) and `QueuePair`, the fabric's side of the
//! queue pair (`fabric`) next to the NVMe side (its stage, controller,
//! slots, slot memory and stamps). The command state machine that drives
//! them is `nvmf.rs`; NVMe/TCP's side is `tcp.rs`.

use std::io;
use std::net::SocketAddr;

use crate::proto::nvme::codec::Cqe;
use crate::target::nvme_controller::Controller;
use crate::target::serving::SlotMemory;
use crate::target::stamps::TargetStamp;

pub(super) use crate::target::serving::FileOp as Op;

/// Status codes for failed file operations: Internal Error (type 0),
/// Write Fault and Unrecovered Read Error (type 2).
pub(super) const SC_INTERNAL: (u8, u8) = (0, 0x06);
pub(super) const SC_WRITE_FAULT: (u8, u8) = (2, 0x80);
pub(super) const SC_READ_ERROR: (u8, u8) = (2, 0x81);
/// Connect: Invalid Parameters (type 1).
pub(super) const SC_CONNECT_INVALID: (u8, u8) = (1, 0x82);

/// What the NVMe target core needs of a fabric's queue pair (NVMe/TCP's
/// is `tcp::TcpQueue`, NVMe over RDMA's `rdma::RdmaQp`). The fabric
/// receives capsules and data on its own and hands them to the core
/// (`nvmf::Nvmf::capsule`, `Nvmf::data_fetched`); the core calls back here
/// to move data and completions. Every call is on the reactor's thread;
/// the core is generic over the fabric (static dispatch).
pub trait Fabric {
    /// The largest transfer one command may move (the slot size).
    const MAX_TRANSFER: usize;
    /// The most in-capsule data a command may carry; at least what the
    /// controller's Identify says (IOCCSZ, `nvme_controller::IN_CAPSULE`).
    const IN_CAPSULE: u32;
    /// The fabric's own set-up of the queue pair is done (TCP: the
    /// ICReq/ICResp exchange): Connect may come.
    fn ready(&self) -> bool;
    /// The queue pair takes no new commands and closes once what is in
    /// flight is done.
    fn closing(&self) -> bool;
    /// The host at the other end (stderr, the stamps file).
    fn peer(&self) -> SocketAddr;
    /// The address the host reached (the discovery log names it), if known.
    fn local_addr(&self) -> Option<SocketAddr>;
    /// `len` bytes of in-capsule data at `at` of what the fabric received
    /// (the range the fabric gave with the capsule).
    fn in_capsule(&self, at: usize, len: usize) -> &[u8];
    /// Ask the host for all `len` bytes of write `cid` into `into` (slot
    /// `tag`'s memory): TCP sends an R2T and copies the H2CData that
    /// follows, RDMA posts an RDMA READ into it. Either way the
    /// fabric calls `Nvmf::data_fetched` once all of it is there.
    fn fetch_data(&mut self, cid: u16, tag: u16, len: u32, into: &mut [u8]);
    /// Push command `cid`'s data to the host ahead of its completion (TCP:
    /// a C2HData PDU; RDMA: an RDMA WRITE).
    fn send_data(&mut self, cid: u16, data: &[u8]);
    /// Send a completion (TCP: a CapsuleResp PDU; RDMA: a SEND).
    fn send_completion(&mut self, cqe: &Cqe);
    /// The queue pair's slot memory is now `len` bytes at `base` (an I/O
    /// queue's Connect): a fabric whose hardware moves the data itself
    /// (RDMA) registers it here.
    fn slot_memory(&mut self, _base: *mut u8, _len: usize) -> io::Result<()> {
        Ok(())
    }
}

/// One command in flight on an I/O queue.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Slot {
    pub(super) cid: u16,
    pub(super) op: Op,
    pub(super) offset: u64,
    pub(super) len: u32,
    /// Write data received so far through the fabric's fetch.
    pub(super) got: u32,
    /// Waiting for the host's data (the fabric was asked to fetch it).
    pub(super) awaiting_data: bool,
    pub(super) stamp: TargetStamp,
}

/// Which queue a queue pair is, once its Connect succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QueueRole {
    /// Before Connect.
    Unbound,
    Admin {
        cntlid: u16,
    },
    Io {
        qid: u16,
    },
}

/// A queue pair: its fabric's side and the NVMe side the core keeps.
pub struct QueuePair<F> {
    pub(super) fabric: F,
    pub(super) queue: QueueRole,
    /// When it was admitted: the fabric's set-up and the Connect must
    /// come within the negotiation deadline.
    pub(super) admitted_at: u64,
    /// The controller as of the I/O queue's Connect (I/O commands read it
    /// without a lock).
    pub(super) io_ctrl: Option<Controller>,
    /// A slot per entry of the I/O queue (none before its Connect).
    pub(super) slots: Vec<Slot>,
    pub(super) free: Vec<usize>,
    pub(super) memory: SlotMemory,
    /// Slots whose data, file operation or completion is awaited.
    pub(super) busy: usize,
    pub(super) seq: u64,
    /// Stamps of completions encoded but not yet handed to a send.
    pub(super) unsent: Vec<TargetStamp>,
    pub(super) stamps: Vec<TargetStamp>,
}

impl<F: Fabric> QueuePair<F> {
    /// A new queue pair over `fabric` admitted at `now`, before its Connect.
    pub(super) fn new(fabric: F, now: u64) -> io::Result<QueuePair<F>> {
        Ok(QueuePair {
            fabric,
            queue: QueueRole::Unbound,
            admitted_at: now,
            io_ctrl: None,
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

    /// Before the fabric's set-up or the Connect is done, and not closing:
    /// the negotiation deadline runs.
    pub(super) fn negotiating(&self) -> bool {
        (!self.fabric.ready() || self.queue == QueueRole::Unbound) && !self.fabric.closing()
    }

    /// A slot, with its buffer of the largest transfer, per queue entry.
    pub(super) fn take_slots(&mut self, entries: usize) -> io::Result<()> {
        self.memory = SlotMemory::new(entries, F::MAX_TRANSFER)?;
        let (base, len) = self.memory.span();
        self.fabric.slot_memory(base, len)?;
        self.slots = vec![Slot::default(); entries];
        self.free = (0..entries).rev().collect();
        Ok(())
    }

    /// The completions encoded so far are handed to a send at `now`: their
    /// stamps' reply time.
    pub(super) fn replies_sent(&mut self, now: u64) {
        for mut st in self.unsent.drain(..) {
            st.reply_send = now;
            self.stamps.push(st);
        }
    }

    /// A closing queue pair takes no more write data: the writes still
    /// waiting for theirs are dropped (they held it open for ever).
    pub(super) fn drop_awaited_writes(&mut self) {
        for (s, slot) in self.slots.iter_mut().enumerate() {
            if slot.awaiting_data {
                slot.awaiting_data = false;
                self.busy -= 1;
                self.free.push(s);
            }
        }
    }
}

pub(super) fn failed(cid: u16, (sct, sc): (u8, u8)) -> Cqe {
    Cqe {
        status: Cqe::status_of(sct, sc, true),
        ..Cqe::success(cid, 0)
    }
}
