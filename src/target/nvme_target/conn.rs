//! One connection of iolab's NVMe/TCP target as its reactor sees it: the
//! stage it is at (before ICReq, before Connect, admin or I/O queue) and
//! the largest PDU each stage takes, its receive and send buffers, its
//! slots (made at an I/O queue's Connect) and the PDUs it encodes.

use std::io;
use std::net::{SocketAddr, TcpStream};

use super::MAX_TRANSFER;
use crate::proto::nvme::codec::{self, Cqe, DataHeader, Digests};
use crate::target::nvme_controller::{Controller, IN_CAPSULE};
use crate::target::serving::{ConnPermit, Inbox, SlotMemory};
use crate::target::stamps::TargetStamp;

/// A connection handed over by the acceptor (nothing exchanged yet).
pub struct NvmeNewConnection {
    pub sock: TcpStream,
    pub peer: SocketAddr,
    /// Its place under the target's connection caps, held until it closes.
    pub permit: ConnPermit,
}

/// Most data per H2CData PDU the target accepts (ICResp's MAXH2CDATA).
pub(super) const MAX_H2C: u32 = 128 * 1024;
/// A PDU's header with its digest and padding up to its data (PDO is one byte).
const MAX_PDU_HEAD: usize = 256;
/// Encoded PDUs waiting for a send beyond which no new command is taken
/// (a host that does not read its completions holds only this much, plus
/// the completions of the commands it has in flight).
pub(super) const TX_HIGH_WATER: usize = 2 * MAX_TRANSFER;
/// Status codes for failed file operations: Internal Error (type 0),
/// Write Fault and Unrecovered Read Error (type 2).
pub(super) const SC_INTERNAL: (u8, u8) = (0, 0x06);
pub(super) const SC_WRITE_FAULT: (u8, u8) = (2, 0x80);
pub(super) const SC_READ_ERROR: (u8, u8) = (2, 0x81);
/// Connect: Invalid Parameters (type 1).
pub(super) const SC_CONNECT_INVALID: (u8, u8) = (1, 0x82);
/// Fatal error statuses of a termination request.
pub(super) const FES_INVALID_HEADER: u16 = 0x01;
pub(super) const FES_PDU_SEQUENCE: u16 = 0x02;
pub(super) const FES_HEADER_DIGEST: u16 = 0x03;
pub(super) const FES_DATA_RANGE: u16 = 0x04;
pub(super) const FES_LIMIT_EXCEEDED: u16 = 0x05;
pub(super) const FES_UNSUPPORTED: u16 = 0x06;

pub(super) use crate::target::serving::FileOp as Op;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Slot {
    pub(super) cid: u16,
    pub(super) op: Op,
    pub(super) offset: u64,
    pub(super) len: u32,
    /// Write data received so far through H2CData (after the R2T).
    pub(super) got: u32,
    /// Waiting for H2CData (an R2T went out).
    pub(super) awaiting_data: bool,
    pub(super) stamp: TargetStamp,
}

/// Which queue a connection is, once its Connect succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QueueRole {
    /// Before ICReq.
    New,
    /// After ICReq, before Connect.
    Unbound,
    Admin {
        cntlid: u16,
    },
    Io {
        qid: u16,
    },
}

impl QueueRole {
    /// The largest PDU a connection at this stage may send: ICReq first,
    /// then capsules with in-capsule data (the admin queue's 8 KiB, the
    /// I/O queues' IOCCSZ), and on an I/O queue H2CData of MAXH2CDATA.
    pub(super) fn max_pdu(self) -> usize {
        let tail = codec::DIGEST_LEN;
        match self {
            QueueRole::New => codec::IC_LEN,
            QueueRole::Unbound | QueueRole::Admin { .. } => {
                MAX_PDU_HEAD + IN_CAPSULE as usize + tail
            }
            QueueRole::Io { .. } => MAX_PDU_HEAD + (MAX_H2C.max(IN_CAPSULE)) as usize + tail,
        }
    }

    pub(super) fn negotiating(self) -> bool {
        matches!(self, QueueRole::New | QueueRole::Unbound)
    }
}

pub struct NvmeConn {
    pub(super) sock: TcpStream,
    pub(super) peer: SocketAddr,
    pub(super) _permit: ConnPermit,
    pub(super) digests: Digests,
    /// The host's data alignment for C2HData (HPDA).
    pub(super) hpda: u8,
    pub(super) queue: QueueRole,
    /// The controller as of the I/O queue's Connect (I/O commands read it
    /// without a lock).
    pub(super) io_ctrl: Option<Controller>,
    /// Sized for the largest PDU of the connection's stage, grown as it
    /// goes (an idle connection holds a few hundred bytes).
    pub(super) inbox: Inbox,
    /// When it was accepted: ICReq and Connect must come within the
    /// negotiation deadline.
    pub(super) accepted_at: u64,
    pub(super) closing: bool,
    pub(super) shut: bool,
    /// Encoded PDUs waiting for the next send, and the send in flight.
    pub(super) tx: Vec<u8>,
    pub(super) tx_out: Vec<u8>,
    pub(super) tx_sent: usize,
    pub(super) sending: bool,
    /// When the send in flight was posted: it completes once the socket
    /// takes a byte, so its age is how long the PDUs have not moved.
    pub(super) send_posted_at: u64,
    /// A slot per entry of the I/O queue (none before its Connect).
    pub(super) slots: Vec<Slot>,
    pub(super) free: Vec<usize>,
    pub(super) memory: SlotMemory,
    /// Slots whose file operation is in flight or whose completion waits.
    pub(super) busy: usize,
    pub(super) seq: u64,
    /// Stamps of completions encoded but not yet handed to a send.
    pub(super) unsent: Vec<TargetStamp>,
    pub(super) stamps: Vec<TargetStamp>,
}

impl NvmeConn {
    pub(super) fn pdu(&mut self, pdu_type: u8, flags: u8, specific: &[u8], data: &[u8]) {
        let align = if pdu_type == codec::PDU_C2H_DATA {
            self.hpda
        } else {
            0
        };
        codec::frame_into(
            &mut self.tx,
            pdu_type,
            flags,
            specific,
            data,
            self.digests,
            align,
        )
        .expect("PDUs the target builds always frame");
    }

    pub(super) fn respond(&mut self, cqe: &Cqe) {
        self.pdu(codec::PDU_CAPSULE_RESP, 0, &cqe.encode(), &[]);
    }

    pub(super) fn c2h(&mut self, cid: u16, data: &[u8]) {
        let h = DataHeader {
            cccid: cid,
            ttag: 0,
            offset: 0,
            length: data.len() as u32,
        };
        self.pdu(
            codec::PDU_C2H_DATA,
            codec::FLAG_LAST_PDU,
            &codec::encode_data_header(&h),
            data,
        );
    }

    /// A slot, with its buffer of the largest transfer, per queue entry.
    pub(super) fn take_slots(&mut self, entries: usize) -> io::Result<()> {
        self.memory = SlotMemory::new(entries, MAX_TRANSFER)?;
        self.slots = vec![Slot::default(); entries];
        self.free = (0..entries).rev().collect();
        Ok(())
    }

    /// A closing connection takes no more H2CData: the writes still waiting
    /// for theirs are dropped (they held the connection open for ever).
    pub(super) fn drop_awaited_writes(&mut self) {
        for (s, slot) in self.slots.iter_mut().enumerate() {
            if slot.awaiting_data {
                slot.awaiting_data = false;
                self.busy -= 1;
                self.free.push(s);
            }
        }
    }

    /// End the connection with a C2HTermReq saying why.
    pub(super) fn terminate(&mut self, fes: u16, why: &str) {
        eprintln!("iolab serve: {}: {why}; ending the connection", self.peer);
        if let Ok(t) = codec::encode_term(codec::PDU_C2H_TERM, fes, 0, &[]) {
            self.tx.extend_from_slice(&t);
        }
        self.closing = true;
    }
}

pub(super) fn failed(cid: u16, (sct, sc): (u8, u8)) -> Cqe {
    Cqe {
        status: Cqe::status_of(sct, sc, true),
        ..Cqe::success(cid, 0)
    }
}
