//! NVMe/TCP, the target's first fabric: one connection is one queue pair
//! (`TcpQueue`, the `queue::Fabric` it implements). What it receives is
//! parsed into PDUs here (`receive`: the ICReq/ICResp exchange first, then
//! command capsules handed to the core, `nvmf::Nvmf`, and H2CData copied
//! into the slot an R2T named); what it sends is framed here (ICResp, R2T,
//! C2HData, CapsuleResp, C2HTermReq, with the digests ICReq asked for)
//! into a buffer the reactor (`reactor.rs`) sends. Each stage's largest
//! PDU bounds what a connection buffers.

use std::net::{SocketAddr, TcpStream};

use super::nvmf::Nvmf;
use super::queue::{Fabric, QueuePair, QueueRole};
use super::MAX_TRANSFER;
use crate::proto::nvme::codec::{self, Cqe, DataHeader, Digests, Ic, Sqe};
use crate::target::nvme_controller::IN_CAPSULE;
use crate::target::serving::{self, ConnPermit, Inbox};

/// A connection handed over by the acceptor (nothing exchanged yet).
pub struct NvmeNewConnection {
    pub sock: TcpStream,
    pub peer: SocketAddr,
    /// Its place under the target's connection caps, held until it closes.
    pub permit: ConnPermit,
}

/// Most data per H2CData PDU the target accepts (ICResp's MAXH2CDATA).
const MAX_H2C: u32 = 128 * 1024;
/// A PDU's header with its digest and padding up to its data (PDO is one byte).
const MAX_PDU_HEAD: usize = 256;
/// Encoded PDUs waiting for a send beyond which no new command is taken
/// (a host that does not read its completions holds only this much, plus
/// the completions of the commands it has in flight).
const TX_HIGH_WATER: usize = 2 * MAX_TRANSFER;
/// Fatal error statuses of a termination request.
const FES_INVALID_HEADER: u16 = 0x01;
pub(super) const FES_PDU_SEQUENCE: u16 = 0x02;
const FES_HEADER_DIGEST: u16 = 0x03;
const FES_DATA_RANGE: u16 = 0x04;
const FES_LIMIT_EXCEEDED: u16 = 0x05;
const FES_UNSUPPORTED: u16 = 0x06;

type Io = serving::Io<QueuePair<TcpQueue>>;

/// The TCP side of one queue pair: the socket, the receive buffer, the
/// PDUs waiting for a send and the one in flight.
pub struct TcpQueue {
    pub(super) sock: TcpStream,
    pub(super) peer: SocketAddr,
    _permit: ConnPermit,
    digests: Digests,
    /// The host's data alignment for C2HData (HPDA).
    hpda: u8,
    /// The ICReq/ICResp exchange is done.
    ic_done: bool,
    /// Sized for the largest PDU of the connection's stage, grown as it
    /// goes (an idle connection holds a few hundred bytes).
    pub(super) inbox: Inbox,
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
}

impl TcpQueue {
    /// A connection the acceptor handed over, before its ICReq.
    pub(super) fn new(n: NvmeNewConnection) -> TcpQueue {
        TcpQueue {
            sock: n.sock,
            peer: n.peer,
            _permit: n.permit,
            digests: Digests::default(),
            hpda: 0,
            ic_done: false,
            inbox: Inbox::new(2 * codec::IC_LEN),
            closing: false,
            shut: false,
            tx: Vec::new(),
            tx_out: Vec::new(),
            tx_sent: 0,
            sending: false,
            send_posted_at: 0,
        }
    }

    fn pdu(&mut self, pdu_type: u8, flags: u8, specific: &[u8], data: &[u8]) {
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

    /// End the connection with a C2HTermReq saying why.
    pub(super) fn terminate(&mut self, fes: u16, why: &str) {
        eprintln!("iolab serve: {}: {why}; ending the connection", self.peer);
        if let Ok(t) = codec::encode_term(codec::PDU_C2H_TERM, fes, 0, &[]) {
            self.tx.extend_from_slice(&t);
        }
        self.closing = true;
    }
}

impl Fabric for TcpQueue {
    const MAX_TRANSFER: usize = MAX_TRANSFER;
    const IN_CAPSULE: u32 = IN_CAPSULE;

    fn ready(&self) -> bool {
        self.ic_done
    }

    fn closing(&self) -> bool {
        self.closing
    }

    fn peer(&self) -> SocketAddr {
        self.peer
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.sock.local_addr().ok()
    }

    fn in_capsule(&self, at: usize, len: usize) -> &[u8] {
        &self.inbox.buf[at..at + len]
    }

    /// One R2T for all of it, the slot its tag; `h2c` copies the H2CData.
    fn fetch_data(&mut self, cid: u16, tag: u16, len: u32, _into: &mut [u8]) {
        let r2t = DataHeader {
            cccid: cid,
            ttag: tag,
            offset: 0,
            length: len,
        };
        self.pdu(codec::PDU_R2T, 0, &codec::encode_data_header(&r2t), &[]);
    }

    fn send_data(&mut self, cid: u16, data: &[u8]) {
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

    fn send_completion(&mut self, cqe: &Cqe) {
        self.pdu(codec::PDU_CAPSULE_RESP, 0, &cqe.encode(), &[]);
    }
}

/// The largest PDU a connection at its stage may send: ICReq first, then
/// capsules with in-capsule data (the admin queue's 8 KiB, the I/O
/// queues' IOCCSZ), and on an I/O queue H2CData of MAXH2CDATA.
pub(super) fn max_pdu(c: &QueuePair<TcpQueue>) -> usize {
    let tail = codec::DIGEST_LEN;
    match (c.fabric.ic_done, c.queue) {
        (false, _) => codec::IC_LEN,
        (true, QueueRole::Unbound | QueueRole::Admin { .. }) => {
            MAX_PDU_HEAD + TcpQueue::IN_CAPSULE as usize + tail
        }
        (true, QueueRole::Io { .. }) => {
            MAX_PDU_HEAD + (MAX_H2C.max(TcpQueue::IN_CAPSULE)) as usize + tail
        }
    }
}

/// Handle every whole PDU connection `ci` received (stopping when a
/// command finds no free slot, or its sends pile up).
pub(super) fn receive(core: &mut Nvmf<TcpQueue>, io: &mut Io, ci: usize) -> std::io::Result<()> {
    loop {
        let c = io.conn(ci);
        let max = max_pdu(c);
        let t = &mut c.fabric;
        if t.closing || t.tx.len() >= TX_HIGH_WATER {
            return Ok(());
        }
        let avail = t.inbox.avail();
        let (header, n) = match codec::split_pdu(avail, t.digests) {
            Ok(Some((_, n))) if n > max => {
                let why = format!("a PDU of {n} bytes, over this stage's {max}");
                t.terminate(FES_LIMIT_EXCEEDED, &why);
                return Ok(());
            }
            Ok(Some((p, n))) => (p.header, n),
            Ok(None) => {
                // Refused before it is all received (never buffered).
                let too_big =
                    codec::CommonHeader::parse(avail).is_ok_and(|h| h.plen as usize > max);
                if too_big {
                    t.terminate(FES_LIMIT_EXCEEDED, "a PDU larger than any this stage takes");
                }
                return Ok(());
            }
            Err(e) => {
                let fes = if e.0.contains("header digest") {
                    FES_HEADER_DIGEST
                } else {
                    FES_INVALID_HEADER
                };
                t.terminate(fes, &e.0);
                return Ok(());
            }
        };
        let io_queue = matches!(c.queue, QueueRole::Io { .. });
        let handled = match (header.pdu_type, t.ic_done) {
            (codec::PDU_ICREQ, false) => {
                icreq(t, n);
                true
            }
            (_, false) | (codec::PDU_ICREQ, _) => {
                t.terminate(FES_PDU_SEQUENCE, "ICReq must come first, and once");
                true
            }
            (codec::PDU_CAPSULE_CMD, _) => capsule(core, io, ci, n)?,
            (codec::PDU_H2C_DATA, _) if io_queue => h2c(core, io, ci, n)?,
            (codec::PDU_H2C_TERM, _) => {
                t.closing = true;
                true
            }
            (t_, _) => {
                t.terminate(
                    FES_INVALID_HEADER,
                    &format!("unexpected PDU type 0x{t_:02x}"),
                );
                true
            }
        };
        if !handled {
            return Ok(());
        }
    }
}

/// The PDU of `n` bytes at the start of the receive buffer (checked by
/// the caller), consumed: its command, if it is a capsule, and where its
/// data lies in the receive buffer.
fn take_pdu(t: &mut TcpQueue, n: usize) -> (Option<Sqe>, usize, usize) {
    let start = t.inbox.start;
    let (p, _) = codec::split_pdu(&t.inbox.buf[start..start + n], t.digests)
        .ok()
        .flatten()
        .expect("a whole PDU, checked");
    let sqe = codec::parse_capsule(&p).ok();
    let data_at = if p.data.is_empty() {
        start + n
    } else {
        p.data.as_ptr() as usize - t.inbox.buf.as_ptr() as usize
    };
    let data_len = p.data.len();
    t.inbox.start += n;
    (sqe, data_at, data_len)
}

fn icreq(t: &mut TcpQueue, n: usize) {
    let parsed = {
        let (p, _) = codec::split_pdu(&t.inbox.avail()[..n], Digests::default())
            .ok()
            .flatten()
            .expect("a whole PDU, checked");
        codec::parse_ic(&p)
    };
    t.inbox.start += n;
    let req = match parsed {
        Ok(r) if r.pfv == 0 => r,
        Ok(_) => return t.terminate(FES_UNSUPPORTED, "PDU format version other than 0"),
        Err(e) => return t.terminate(FES_INVALID_HEADER, &e.0),
    };
    let resp = Ic {
        pfv: 0,
        align: 0,
        digests: req.digests,
        max: MAX_H2C,
    };
    match codec::encode_ic(codec::PDU_ICRESP, &resp) {
        Ok(b) => t.tx.extend_from_slice(&b),
        Err(e) => return t.terminate(FES_INVALID_HEADER, &e.0),
    }
    t.digests = req.digests;
    t.hpda = req.align;
    t.ic_done = true;
}

/// A command capsule, handed to the core; false when it must wait for a
/// free slot.
fn capsule(core: &mut Nvmf<TcpQueue>, io: &mut Io, ci: usize, n: usize) -> std::io::Result<bool> {
    if !core.can_take(io, ci) {
        return Ok(false);
    }
    let t = &mut io.conn(ci).fabric;
    let arrival = t.inbox.arrived_at;
    let (sqe, data_at, data_len) = take_pdu(t, n);
    let Some(sqe) = sqe else {
        t.terminate(FES_INVALID_HEADER, "a command capsule without a command");
        return Ok(true);
    };
    core.capsule(io, ci, &sqe, (data_at, data_len), arrival)?;
    Ok(true)
}

/// H2CData for a write that got an R2T (always handled: true).
fn h2c(core: &mut Nvmf<TcpQueue>, io: &mut Io, ci: usize, n: usize) -> std::io::Result<bool> {
    let c = io.conn(ci);
    let t = &mut c.fabric;
    let parsed = codec::split_pdu(&t.inbox.avail()[..n], t.digests)
        .ok()
        .flatten()
        .map(|(p, _)| (codec::parse_data_header(&p), p.header.flags));
    let (h, flags) = match parsed {
        Some((Ok(h), flags)) => (h, flags),
        Some((Err(e), _)) => {
            t.terminate(FES_INVALID_HEADER, &e.0);
            return Ok(true);
        }
        None => unreachable!("a whole PDU, checked"),
    };
    let (_, data_at, data_len) = take_pdu(t, n);
    let s = h.ttag as usize;
    let ok = s < c.slots.len()
        && c.slots[s].awaiting_data
        && c.slots[s].cid == h.cccid
        && h.offset == c.slots[s].got
        && h.length as usize == data_len
        && h.length <= MAX_H2C
        && h.offset as u64 + h.length as u64 <= c.slots[s].len as u64;
    if !ok {
        c.fabric
            .terminate(FES_DATA_RANGE, "H2CData that no R2T asked for");
        return Ok(true);
    }
    let at = h.offset as usize;
    let (rx, memory) = (&c.fabric.inbox.buf, &mut c.memory);
    memory.slot(s, at + data_len)[at..].copy_from_slice(&rx[data_at..data_at + data_len]);
    c.slots[s].got += h.length;
    let last = flags & codec::FLAG_LAST_PDU != 0;
    if c.slots[s].got == c.slots[s].len {
        core.data_fetched(io, ci, s)?;
    } else if last {
        c.fabric
            .terminate(FES_DATA_RANGE, "the last H2CData PDU before all the data");
    }
    Ok(true)
}
