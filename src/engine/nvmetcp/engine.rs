//! The NVMe/TCP engine: iolab's own initiator (`--target
//! nvme-tcp://HOST:PORT/NQN?nsid=N`). Each worker makes its own
//! association with the subsystem: an admin queue (connected, enabled and
//! identified by `handshake`, then kept alive by `keep_alive` in a thread
//! of its own) and one I/O queue on which requests are pipelined up to the
//! depth, the command identifier being the request's slot. Reads come back
//! in C2HData PDUs copied into the slot's buffer; writes up to the
//! controller's in-capsule size travel in the command capsule, larger ones
//! in H2CData PDUs when the controller asks with R2T. Digests as
//! negotiated. The shape is fio's SPDK plugin's: one qpair per job.
//!
//! Hot path: PDUs are framed into the `SocketPump`'s send buffer and parsed
//! out of its receive buffer; no allocation, lock or system call beyond
//! the pump's sends and receives.

use std::io;
use std::net::Shutdown;

use super::codec::{self, Cqe, DataHeader, Digests, Sqe};
use super::handshake::{self, ControllerInfo, Params};
use super::keep_alive::AdminKeeper;
use crate::engine::peer_wait::Watch;
use crate::engine::socket_pump::{self, SocketPump};
use crate::engine::{Completion, Engine, EngineSetup, EngineTarget, IoRequest, OpKind};
use crate::measure::clock::mono_now_ns;
use crate::plan::endpoint::RemoteEndpoint;
use crate::plan::endpoint::RemoteResource;
use crate::plan::engines::NetOptions;

/// The keep-alive timeout each association asks for.
pub const KATO_MS: u32 = 30_000;
/// Receive buffer floor; it also always holds two of the largest PDUs.
const MIN_RX: usize = 256 * 1024;
/// A PDU's header, digests and padding beyond its data, at most.
const PDU_SLACK: usize = 256;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    busy: bool,
    op: Option<OpKind>,
    buf: usize,
    len: u32,
    /// Read data received so far (C2HData).
    got: u32,
    /// Taken (framed and sent at once), and its completion received (CLOCK_MONOTONIC).
    t_taken: u64,
    t_received: u64,
    /// Negative errno of a failed completion (the flush slot's), 0 if none.
    error: i32,
}

pub struct NvmeTcpEngine {
    pump: SocketPump,
    /// The endpoint, for errors.
    peer: String,
    digests: Digests,
    cpda: u8,
    maxh2cdata: u32,
    nsid: u32,
    lba_shift: u32,
    in_capsule: u32,
    flush_works: bool,
    /// One per request slot, plus one for a flush.
    slots: Vec<Slot>,
    in_flight: usize,
    staged: usize,
    admin: AdminKeeper,
    info: ControllerInfo,
}

/// How iolab introduces itself: a host NQN and identifier derived from
/// /etc/machine-id (the same on every run of this machine), as nvme-cli
/// derives its default host NQN.
pub fn host_identity() -> ([u8; 16], String) {
    let id = std::fs::read_to_string("/etc/machine-id").unwrap_or_default();
    let hex: Vec<u8> = id
        .trim()
        .as_bytes()
        .chunks(2)
        .filter_map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect();
    let mut hostid = [0x10u8; 16];
    for (d, s) in hostid.iter_mut().zip(hex) {
        *d = s;
    }
    let h = |r: std::ops::Range<usize>| -> String {
        hostid[r].iter().map(|b| format!("{b:02x}")).collect()
    };
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        h(0..4),
        h(4..6),
        h(6..8),
        h(8..10),
        h(10..16)
    );
    (hostid, format!("nqn.2014-08.org.nvmexpress:uuid:{uuid}"))
}

/// The connection parameters of an `nvme-tcp://` endpoint.
pub fn params_of(ep: &RemoteEndpoint, queue_size: u16) -> io::Result<(String, Params)> {
    let RemoteResource::NvmeNamespace {
        nqn,
        nsid,
        hdr_digest,
        data_digest,
        keep_alive_tmo,
    } = &ep.resource
    else {
        return Err(invalid(
            "the nvme-tcp engine needs an nvme-tcp:// target".into(),
        ));
    };
    let (hostid, hostnqn) = host_identity();
    let addr = if ep.host.contains(':') {
        format!("[{}]:{}", ep.host, ep.port)
    } else {
        format!("{}:{}", ep.host, ep.port)
    };
    Ok((
        addr,
        Params {
            subnqn: nqn.clone(),
            hostnqn,
            hostid,
            nsid: *nsid,
            digests: Digests {
                header: *hdr_digest,
                data: *data_digest,
            },
            queue_size,
            kato_ms: kato_ms(*keep_alive_tmo),
        },
    ))
}

/// The keep-alive timeout an endpoint asks for, in ms (`KATO_MS` unless
/// its URL's `keep_alive_tmo` says).
pub fn kato_ms(keep_alive_tmo: Option<u32>) -> u32 {
    keep_alive_tmo.map_or(KATO_MS, |s| s.saturating_mul(1000))
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn setup_error(ep: &RemoteEndpoint, e: anyhow::Error) -> io::Error {
    io::Error::other(format!("{ep}: {e:#}"))
}

/// The most bytes one command may move (MDTS; 0 is no limit).
pub fn max_transfer(info: &ControllerInfo) -> u64 {
    // MDTS is a power of two of the minimum page size; a shift past 2^63
    // (any MDTS over 51) is no limit either.
    match info.id.mdts {
        0 => u64::MAX,
        m => match info.cap.mpsmin as u32 + m as u32 {
            s if s > 51 => u64::MAX,
            s => 4096u64 << s,
        },
    }
}

impl NvmeTcpEngine {
    /// Make the association: admin queue, controller enabled, I/O queue.
    pub fn new(setup: &EngineSetup) -> io::Result<NvmeTcpEngine> {
        NvmeTcpEngine::with_options(setup, NetOptions::default())
    }

    /// `new`, with the engine's own options (`--poll`).
    pub fn with_options(setup: &EngineSetup, net: NetOptions) -> io::Result<NvmeTcpEngine> {
        let EngineTarget::Remote {
            endpoint, limits, ..
        } = &setup.target
        else {
            return Err(invalid(
                "the nvme-tcp engine needs an nvme-tcp:// target".into(),
            ));
        };
        let depth = setup.depth.max(1) as usize;
        // Room for every request slot and the flush, with one entry to spare.
        let (addr, p) = params_of(endpoint, (depth + 2).min(u16::MAX as usize) as u16)?;
        let (admin, info) =
            handshake::connect_admin(&addr, &p).map_err(|e| setup_error(endpoint, e))?;
        let admin = AdminKeeper::start(admin, p.kato_ms)?;
        let io_q =
            handshake::connect_io(&addr, &p, &info, 1).map_err(|e| setup_error(endpoint, e))?;
        let entries = p.queue_size.min(info.cap.mqes.saturating_add(1));
        if (entries as usize) < depth + 2 {
            return Err(invalid(format!(
                "{endpoint}: the controller's queues hold {} entries (CAP.MQES), fewer than --qd {depth} needs",
                info.cap.mqes as u32 + 1
            )));
        }
        let max_bs = setup.pool_len / depth;
        if max_bs as u64 > max_transfer(&info) {
            return Err(invalid(format!(
                "{endpoint}: blocks of {max_bs} bytes are larger than the controller's maximum transfer of {} (MDTS)",
                max_transfer(&info)
            )));
        }
        let block = info.ns.block_size;
        let pdu_max = max_bs + PDU_SLACK;
        let in_capsule = info.id.in_capsule_data() as u32;
        let h2c_pdus = max_bs.div_ceil(io_q.maxh2cdata as usize);
        // The pump bounds its own waits; the handshake's socket timeouts go.
        io_q.sock.set_read_timeout(None)?;
        io_q.sock.set_write_timeout(None)?;
        let mut pump = SocketPump::new(
            io_q.sock,
            depth * (pdu_max + h2c_pdus * PDU_SLACK) + PDU_SLACK,
            MIN_RX.max(2 * pdu_max),
        );
        pump.watch = Watch::new(*limits);
        pump.set_polling(net.poll);
        Ok(NvmeTcpEngine {
            pump,
            peer: endpoint.to_string(),
            digests: io_q.digests,
            cpda: io_q.cpda,
            maxh2cdata: io_q.maxh2cdata,
            nsid: p.nsid,
            lba_shift: block.trailing_zeros(),
            in_capsule,
            flush_works: info.id.vwc,
            slots: vec![Slot::default(); depth + 1],
            in_flight: 0,
            staged: 0,
            admin,
            info,
        })
    }

    /// What the admin queue learned about the controller and namespace.
    pub fn info(&self) -> &ControllerInfo {
        &self.info
    }

    /// Frame `sqe` (with `data` in the capsule) into the send buffer.
    #[inline]
    fn stage(&mut self, sqe: &Sqe, data: &[u8]) {
        codec::frame_into(
            self.pump.tx(),
            codec::PDU_CAPSULE_CMD,
            0,
            &sqe.0,
            data,
            self.digests,
            self.cpda,
        )
        .expect("a command capsule always frames");
        self.staged += 1;
    }

    fn lost(&self, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!(
                "NVMe/TCP I/O queue to {}: {e} ({} commands in flight)",
                self.peer, self.in_flight
            ),
        )
    }

    fn slot_of(&self, cid: u16) -> io::Result<usize> {
        let s = cid as usize;
        if s < self.slots.len() && self.slots[s].busy {
            Ok(s)
        } else {
            Err(bad_stream(format!(
                "the controller answered command {cid}, which is not in flight"
            )))
        }
    }

    /// Parse every complete PDU in the receive buffer.
    fn parse_replies(&mut self, out: &mut Vec<Completion>) -> io::Result<usize> {
        let mut got = 0;
        loop {
            let avail = self.pump.received();
            let Some((pdu, n)) = codec::split_pdu(avail, self.digests).map_err(bad_data)? else {
                self.check_fits()?;
                return Ok(got);
            };
            match pdu.header.pdu_type {
                codec::PDU_CAPSULE_RESP => {
                    let cqe = codec::parse_response(&pdu).map_err(bad_data)?;
                    let s = self.slot_of(cqe.cid)?;
                    self.pump.consume(n);
                    got += self.complete(s, &cqe, out);
                }
                codec::PDU_C2H_DATA => {
                    let h = codec::parse_data_header(&pdu).map_err(bad_data)?;
                    let s = self.slot_of(h.cccid)?;
                    take_data(&mut self.slots[s], &h, pdu.data)?;
                    let success = pdu.header.flags & codec::FLAG_SUCCESS != 0;
                    self.pump.consume(n);
                    if success {
                        got += self.complete(s, &Cqe::success(h.cccid, 0), out);
                    }
                }
                codec::PDU_R2T => {
                    let h = codec::parse_data_header(&pdu).map_err(bad_data)?;
                    let s = self.slot_of(h.cccid)?;
                    self.pump.consume(n);
                    self.send_data(s, &h)?;
                }
                codec::PDU_C2H_TERM => {
                    return Err(bad_stream(format!(
                        "the controller ended the connection: {}",
                        codec::describe_term(&pdu)
                    )))
                }
                t => {
                    return Err(bad_stream(format!(
                        "unexpected PDU type 0x{t:02x} on an I/O queue"
                    )))
                }
            }
        }
    }

    /// An incomplete PDU must fit the receive buffer, or it never completes.
    fn check_fits(&self) -> io::Result<()> {
        let avail = self.pump.received();
        if avail.len() >= codec::COMMON_HEADER_LEN {
            let h = codec::CommonHeader::parse(avail).map_err(bad_data)?;
            if h.plen as usize > self.pump.rx_capacity() {
                return Err(bad_stream(format!(
                    "a PDU of {} bytes is larger than any request",
                    h.plen
                )));
            }
        }
        Ok(())
    }

    /// Answer an R2T: the part of slot `s`'s write it asks for, in H2CData
    /// PDUs of at most MAXH2CDATA bytes.
    fn send_data(&mut self, s: usize, r2t: &DataHeader) -> io::Result<()> {
        let slot = self.slots[s];
        let end = r2t.offset as u64 + r2t.length as u64;
        if slot.op != Some(OpKind::Write) || end > slot.len as u64 || r2t.length == 0 {
            return Err(bad_stream(format!(
                "R2T for command {} asks for {}+{} of a {} byte write",
                r2t.cccid, r2t.offset, r2t.length, slot.len
            )));
        }
        let mut at = r2t.offset;
        while (at as u64) < end {
            let n = (end as u32 - at).min(self.maxh2cdata);
            let h = DataHeader {
                cccid: r2t.cccid,
                ttag: r2t.ttag,
                offset: at,
                length: n,
            };
            let last = if (at + n) as u64 == end {
                codec::FLAG_LAST_PDU
            } else {
                0
            };
            // SAFETY: [at, at+n) lies inside the slot's buffer (checked
            // above), which stays valid while the request is in flight.
            let data = unsafe {
                std::slice::from_raw_parts((slot.buf + at as usize) as *const u8, n as usize)
            };
            codec::frame_into(
                self.pump.tx(),
                codec::PDU_H2C_DATA,
                last,
                &codec::encode_data_header(&h),
                data,
                self.digests,
                self.cpda,
            )
            .map_err(bad_data)?;
            at += n;
        }
        socket_pump::send_some(self)?;
        Ok(())
    }

    fn complete(&mut self, s: usize, cqe: &Cqe, out: &mut Vec<Completion>) -> usize {
        let flush_slot = s == self.slots.len() - 1;
        let slot = &mut self.slots[s];
        slot.busy = false;
        slot.t_received = self.pump.rx_at;
        self.in_flight -= 1;
        let result = if !cqe.ok() {
            -(codec::errno_of(cqe) as i64)
        } else if slot.op == Some(OpKind::Read) && slot.got != slot.len {
            -(libc::EIO as i64) // success without all of the data
        } else {
            slot.len as i64
        };
        if flush_slot {
            // The flush slot: `fsync` looks at it, not the runner.
            slot.error = result.min(0) as i32;
            return 0;
        }
        out.push(Completion {
            slot: s as u32,
            result,
        });
        1
    }

    fn take_slot(&mut self, s: usize, op: OpKind, buf: usize, len: u32) {
        self.slots[s] = Slot {
            busy: true,
            op: Some(op),
            buf,
            len,
            got: 0,
            t_taken: mono_now_ns(),
            t_received: 0,
            error: 0,
        };
    }
}

/// Copy one C2HData PDU's data into its slot's buffer.
fn take_data(slot: &mut Slot, h: &DataHeader, data: &[u8]) -> io::Result<()> {
    let end = h.offset as u64 + data.len() as u64;
    if slot.op != Some(OpKind::Read) || end > slot.len as u64 {
        return Err(bad_stream(format!(
            "C2HData for command {} at {}+{} lies outside its {} byte read",
            h.cccid,
            h.offset,
            data.len(),
            slot.len
        )));
    }
    // SAFETY: [offset, end) lies inside the slot's buffer (checked
    // above), which stays valid while the request is in flight.
    unsafe {
        std::ptr::copy_nonoverlapping(
            data.as_ptr(),
            (slot.buf + h.offset as usize) as *mut u8,
            data.len(),
        )
    };
    slot.got += data.len() as u32;
    Ok(())
}

fn bad_data(e: codec::NvmeTcpError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

fn bad_stream(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl socket_pump::Pumped for NvmeTcpEngine {
    fn pump(&mut self) -> &mut SocketPump {
        &mut self.pump
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn parse(&mut self, out: &mut Vec<Completion>) -> io::Result<usize> {
        self.parse_replies(out)
    }

    fn lost(&self, e: io::Error) -> io::Error {
        NvmeTcpEngine::lost(self, e)
    }

    fn oldest_in_flight(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter(|s| s.busy)
            .map(|s| s.t_taken)
            .min()
    }
}

impl Engine for NvmeTcpEngine {
    #[inline]
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        let s = req.slot as usize;
        let cid = req.slot as u16;
        self.take_slot(s, req.op, req.buf as usize, req.len);
        let slba = req.offset >> self.lba_shift;
        let blocks = req.len >> self.lba_shift;
        match req.op {
            OpKind::Read => self.stage(&Sqe::read(cid, self.nsid, slba, blocks, req.len), &[]),
            OpKind::Write => {
                let in_capsule = req.len <= self.in_capsule;
                let sqe = Sqe::write(cid, self.nsid, slba, blocks, req.len, in_capsule);
                if in_capsule {
                    // SAFETY: the request's buffer holds `len` bytes until it completes.
                    let data = unsafe { std::slice::from_raw_parts(req.buf, req.len as usize) };
                    self.stage(&sqe, data)
                } else {
                    self.stage(&sqe, &[])
                }
            }
            OpKind::Fsync => self.stage(&Sqe::flush(cid, self.nsid), &[]),
        }
        Ok(())
    }

    #[inline]
    fn submit(&mut self) -> io::Result<usize> {
        let n = self.staged;
        self.staged = 0;
        self.in_flight += n;
        socket_pump::send_some(self)?;
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        socket_pump::reap(self, min, out)
    }

    fn reap_timeout(&mut self, timeout_ns: u64, out: &mut Vec<Completion>) -> io::Result<usize> {
        socket_pump::reap_timeout(self, timeout_ns, out)
    }

    fn request_stamps(&self, slot: u32) -> Option<(u64, u64)> {
        let s = self.slots.get(slot as usize)?;
        Some((s.t_taken, s.t_received))
    }

    fn waits_with_timeout(&self) -> bool {
        true
    }

    fn fsync(&mut self) -> io::Result<()> {
        if !self.flush_works {
            return Ok(()); // no volatile write cache: writes are durable on completion
        }
        let s = self.slots.len() - 1;
        self.take_slot(s, OpKind::Fsync, 0, 0);
        self.stage(&Sqe::flush(s as u16, self.nsid), &[]);
        self.submit()?;
        let mut none = Vec::new();
        while self.slots[s].busy {
            socket_pump::wait(self, -1)?;
            self.parse_replies(&mut none)?;
        }
        match self.slots[s].error {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(-e)),
        }
    }
}

impl Drop for NvmeTcpEngine {
    fn drop(&mut self) {
        // The I/O queue first, then the controller's shutdown on the admin queue.
        let _ = self.pump.socket().shutdown(Shutdown::Both);
        self.admin.stop();
    }
}

/// Ask the controller about the namespace without running anything.
pub fn probe(ep: &RemoteEndpoint) -> io::Result<ControllerInfo> {
    let (addr, p) = params_of(ep, 2)?;
    let (mut admin, info) = handshake::connect_admin(&addr, &p).map_err(|e| setup_error(ep, e))?;
    let _ = super::keep_alive::shutdown(&mut admin);
    Ok(info)
}
