//! The NBD engine: iolab's own NBD client (`--target nbd://HOST:PORT/EXPORT`).
//! One TCP connection per worker (`--jobs N` = N connections), requests
//! pipelined up to the depth and matched to their slot by cookie, simple
//! or structured replies, read/write/flush. fio's engines/nbd.c (through
//! libnbd) is the shape; here the wire format is iolab's own (`codec`).
//!
//! Hot path: `queue` encodes a request header (and a write's data) into
//! the send buffer of the `SocketPump`, `submit` sends it with one
//! non-blocking send, `reap` parses replies out of the pump's receive
//! buffer and copies each read's data into its slot's buffer. No
//! allocation or lock.

/// The wire format, shared with the NBD target: `proto::nbd`.
pub use crate::proto::nbd as codec;
pub mod handshake;

use crate::measure::clock::mono_now_ns;
use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;

use super::peer_wait::Watch;
use super::socket_pump::{self, SocketPump};
use crate::plan::engines::NetOptions;

use codec::{ExportInfo, ReplyHeader};

use super::{Completion, Engine, EngineSetup, EngineTarget, IoRequest, OpKind};

/// Receive buffer floor; it also always holds two of the largest replies.
const MIN_RX: usize = 256 * 1024;
/// Room for an error chunk's message and headers beyond a read's data.
const REPLY_SLACK: usize = 70 * 1024;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    busy: bool,
    op: Option<OpKind>,
    buf: usize,
    len: u32,
    offset: u64,
    /// First error of a structured reply (negative errno), 0 if none.
    error: i32,
    /// Taken (encoded and sent at once), and its reply received (CLOCK_MONOTONIC).
    t_taken: u64,
    t_received: u64,
}

pub struct NbdEngine {
    pump: SocketPump,
    /// `host:port/export`, for errors.
    peer: String,
    info: ExportInfo,
    /// One per request slot, plus one for a flush.
    slots: Vec<Slot>,
    in_flight: usize,
    staged: usize,
}

impl NbdEngine {
    /// Connect to the endpoint of `setup` and negotiate the export.
    pub fn new(setup: &EngineSetup) -> io::Result<NbdEngine> {
        NbdEngine::with_options(setup, NetOptions::default())
    }

    /// `new`, with the engine's own options (`--poll`).
    pub fn with_options(setup: &EngineSetup, net: NetOptions) -> io::Result<NbdEngine> {
        let EngineTarget::Remote {
            endpoint,
            writable,
            limits,
            ..
        } = &setup.target
        else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the nbd engine needs an nbd:// target",
            ));
        };
        let (sock, info) = handshake::connect(endpoint)?;
        if *writable && info.read_only() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{endpoint}: the export is read-only"),
            ));
        }
        let depth = setup.depth.max(1) as usize;
        let max_bs = setup.pool_len / depth;
        if max_bs as u64 > info.max_block as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{endpoint}: blocks of {max_bs} bytes are larger than the server's maximum of {}",
                    info.max_block
                ),
            ));
        }
        let reply_max = max_bs + REPLY_SLACK;
        let mut pump = SocketPump::new(
            sock,
            depth * (codec::REQUEST_LEN + max_bs) + codec::REQUEST_LEN,
            MIN_RX.max(2 * reply_max),
        );
        pump.watch = Watch::new(*limits);
        pump.set_polling(net.poll);
        Ok(NbdEngine {
            pump,
            peer: endpoint.to_string(),
            info,
            slots: vec![Slot::default(); depth + 1],
            in_flight: 0,
            staged: 0,
        })
    }

    /// What the server said about the export.
    pub fn info(&self) -> ExportInfo {
        self.info
    }

    fn stage(&mut self, slot: usize, cmd: u16, offset: u64, len: u32, data: Option<&[u8]>) {
        let tx = self.pump.tx();
        let at = tx.len();
        tx.resize(at + codec::REQUEST_LEN, 0);
        codec::encode_request(&mut tx[at..], cmd, slot as u64, offset, len);
        if let Some(d) = data {
            tx.extend_from_slice(d);
        }
        self.staged += 1;
    }

    fn lost(&self, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!(
                "NBD connection to {}: {e} ({} requests in flight)",
                self.peer, self.in_flight
            ),
        )
    }

    fn slot_of(&self, cookie: u64) -> io::Result<usize> {
        let s = cookie as usize;
        if cookie < self.slots.len() as u64 && self.slots[s].busy {
            Ok(s)
        } else {
            Err(bad_stream(format!(
                "the server replied to cookie {cookie}, which is not in flight"
            )))
        }
    }

    /// Parse every complete reply in the receive buffer.
    fn parse_replies(&mut self, out: &mut Vec<Completion>) -> io::Result<usize> {
        let mut got = 0;
        loop {
            let avail = self.pump.received();
            let Some((h, hlen)) = codec::parse_reply_header(avail).map_err(bad_data)? else {
                return Ok(got);
            };
            match h {
                ReplyHeader::Simple { cookie, error } => {
                    let s = self.slot_of(cookie)?;
                    let slot = self.slots[s];
                    let data = if error == 0 && slot.op == Some(OpKind::Read) {
                        slot.len as usize
                    } else {
                        0
                    };
                    if avail.len() < hlen + data {
                        return Ok(got);
                    }
                    if data > 0 && slot.buf != 0 {
                        let src = &avail[hlen..hlen + data];
                        // SAFETY: the slot's buffer holds `len` bytes and
                        // stays valid while the request is in flight.
                        unsafe {
                            std::ptr::copy_nonoverlapping(src.as_ptr(), slot.buf as *mut u8, data)
                        };
                    }
                    self.pump.consume(hlen + data);
                    let result = if error == 0 {
                        slot.len as i64
                    } else {
                        -(codec::errno_of(error) as i64)
                    };
                    got += self.complete(s, result, out);
                }
                ReplyHeader::Chunk {
                    cookie,
                    flags,
                    kind,
                    len,
                } => {
                    let len = len as usize;
                    if hlen + len > self.pump.rx_capacity() {
                        return Err(bad_stream(format!(
                            "a reply chunk of {len} bytes is larger than any request"
                        )));
                    }
                    if avail.len() < hlen + len {
                        return Ok(got);
                    }
                    let s = self.slot_of(cookie)?;
                    self.chunk(s, kind, hlen, len)?;
                    self.pump.consume(hlen + len);
                    if flags & codec::REPLY_FLAG_DONE != 0 {
                        let slot = self.slots[s];
                        let result = if slot.error != 0 {
                            slot.error as i64
                        } else {
                            slot.len as i64
                        };
                        got += self.complete(s, result, out);
                    }
                }
            }
        }
    }

    /// One structured chunk for slot `s`, its payload `len` bytes at
    /// `start` of what was received.
    fn chunk(&mut self, s: usize, kind: u16, start: usize, len: usize) -> io::Result<()> {
        let payload = &self.pump.received()[start..start + len];
        let slot = self.slots[s];
        match kind {
            codec::REPLY_TYPE_NONE => {}
            codec::REPLY_TYPE_OFFSET_DATA | codec::REPLY_TYPE_OFFSET_HOLE => {
                let at = codec::chunk_offset(payload).map_err(bad_data)?;
                let n = if kind == codec::REPLY_TYPE_OFFSET_DATA {
                    len - 8
                } else {
                    codec::hole_len(payload).map_err(bad_data)? as usize
                };
                let within = at
                    .checked_sub(slot.offset)
                    .filter(|d| {
                        d.checked_add(n as u64)
                            .is_some_and(|e| e <= slot.len as u64)
                    })
                    .ok_or_else(|| {
                        bad_stream(format!(
                            "a reply chunk at {at}+{n} lies outside its read at {}+{}",
                            slot.offset, slot.len
                        ))
                    })? as usize;
                if slot.buf == 0 {
                    return Ok(()); // drained at close: the data goes nowhere
                }
                let dst = (slot.buf + within) as *mut u8;
                // SAFETY: [within, within+n) lies inside the slot's buffer
                // (checked above), which is valid while in flight.
                unsafe {
                    if kind == codec::REPLY_TYPE_OFFSET_DATA {
                        std::ptr::copy_nonoverlapping(payload[8..].as_ptr(), dst, n)
                    } else {
                        std::ptr::write_bytes(dst, 0, n)
                    }
                }
            }
            k if codec::is_error_chunk(k) => {
                let (code, _msg) = codec::parse_error_chunk(payload).map_err(bad_data)?;
                if self.slots[s].error == 0 {
                    self.slots[s].error = -codec::errno_of(code);
                }
            }
            _ => {} // block status and other chunk types carry no data for iolab
        }
        Ok(())
    }

    fn complete(&mut self, s: usize, result: i64, out: &mut Vec<Completion>) -> usize {
        self.slots[s].busy = false;
        self.slots[s].t_received = self.pump.rx_at;
        self.in_flight -= 1;
        if s == self.slots.len() - 1 {
            // The flush slot: `fsync` looks at it, not the runner.
            self.slots[s].error = if result < 0 { result as i32 } else { 0 };
            return 0;
        }
        out.push(Completion {
            slot: s as u32,
            result,
        });
        1
    }
}

fn bad_data(e: codec::NbdError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

fn bad_stream(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl socket_pump::Pumped for NbdEngine {
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
        NbdEngine::lost(self, e)
    }

    fn oldest_in_flight(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter(|s| s.busy)
            .map(|s| s.t_taken)
            .min()
    }
}

impl Engine for NbdEngine {
    #[inline]
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        let s = req.slot as usize;
        self.slots[s] = Slot {
            busy: true,
            op: Some(req.op),
            buf: req.buf as usize,
            len: req.len,
            offset: req.offset,
            error: 0,
            t_taken: mono_now_ns(),
            t_received: 0,
        };
        match req.op {
            OpKind::Read => self.stage(s, codec::CMD_READ, req.offset, req.len, None),
            OpKind::Write => {
                // SAFETY: the request's buffer holds `len` bytes until it completes.
                let data = unsafe { std::slice::from_raw_parts(req.buf, req.len as usize) };
                self.stage(s, codec::CMD_WRITE, req.offset, req.len, Some(data))
            }
            OpKind::Fsync => self.stage(s, codec::CMD_FLUSH, 0, 0, None),
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
        if !self.info.can_flush() {
            return Ok(()); // the server offers no flush: its writes are not cached
        }
        let s = self.slots.len() - 1;
        self.slots[s] = Slot {
            busy: true,
            op: Some(OpKind::Fsync),
            t_taken: mono_now_ns(),
            ..Slot::default()
        };
        self.stage(s, codec::CMD_FLUSH, 0, 0, None);
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

/// How long a closing engine waits for the replies still in flight.
const DRAIN_NS: u64 = 1_000_000_000;

impl NbdEngine {
    /// Take the replies of every request still in flight (at most
    /// `DRAIN_NS`, and not at all once the connection failed), their data
    /// thrown away: the requests' buffers may be gone by now. A server
    /// that writes replies to a socket closed under it may fail or even
    /// crash (nbdkit 1.32 aborts on the broken pipe); NBD_CMD_DISC after
    /// the last reply is the protocol's clean end.
    fn drain_in_flight(&mut self) {
        // Staged requests are sent with the rest; count them in flight.
        self.in_flight += std::mem::take(&mut self.staged);
        for slot in &mut self.slots {
            slot.buf = 0;
        }
        let deadline = mono_now_ns() + DRAIN_NS;
        let mut thrown = Vec::new();
        while self.in_flight > 0 {
            let now = mono_now_ns();
            if now >= deadline {
                break;
            }
            thrown.clear();
            if socket_pump::reap_timeout(self, deadline - now, &mut thrown).is_err() {
                break;
            }
        }
    }
}

impl Drop for NbdEngine {
    fn drop(&mut self) {
        self.drain_in_flight();
        disconnect(self.pump.socket(), Shutdown::Write);
    }
}

/// NBD_CMD_DISC, best effort and without blocking (the server then closes
/// cleanly), and the socket shut down `how`.
fn disconnect(sock: &TcpStream, how: Shutdown) {
    let mut b = [0u8; codec::REQUEST_LEN];
    codec::encode_request(&mut b, codec::CMD_DISC, 0, 0, 0);
    // SAFETY: a valid socket and a live 28-byte buffer.
    unsafe {
        libc::send(
            sock.as_raw_fd(),
            b.as_ptr().cast(),
            b.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    let _ = sock.shutdown(how);
}

/// Ask the server about the export (size, flags) without running anything.
pub fn probe(ep: &crate::plan::endpoint::RemoteEndpoint) -> io::Result<ExportInfo> {
    let (sock, info) = handshake::connect(ep)?;
    disconnect(&sock, Shutdown::Both);
    Ok(info)
}

#[cfg(test)]
mod tests;
