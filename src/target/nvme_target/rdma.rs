//! NVMe over RDMA, the target's second fabric: `RdmaQp`, one RC queue pair
//! accepted through the RDMA connection manager, as a `Fabric` of the
//! target core. Commands arrive as SENDs into posted receive buffers
//! (64 bytes and up to IN_CAPSULE of in-capsule data each); a command's
//! data is moved by the target itself: an RDMA READ of the host's keyed
//! SGL into the slot's memory for a write, an RDMA WRITE from it for a
//! read, and the completion SENT after the WRITE on the same queue pair
//! (so it cannot overtake the data). The slot memory is registered once,
//! at the I/O queue's Connect; admin data and a Connect's data (which
//! Linux's host sends by keyed SGL, not in the capsule) go through a
//! small registered staging buffer per command. `rdma_driver.rs` runs the
//! connection manager and the completion queues.

use std::collections::HashMap;
use std::ffi::c_void;
use std::io;
use std::net::SocketAddr;

use super::queue::Fabric;
use super::MAX_TRANSFER as TCP_MAX_TRANSFER;
use crate::native::rdma_memory::RdmaMemory;
use crate::native::verbs::{self, CmIdHead, Mr, QpCap, QpInitAttr, SendWr, Sge, Verbs};
use crate::proto::nvme::codec::{self, Cqe, Sqe, CQE_LEN, SQE_LEN};
use crate::proto::nvme::rdma_cm;
use crate::target::nvme_controller::IN_CAPSULE;

/// `rdma_reject` status: no resources.
pub const REJ_NO_RESOURCES: u16 = 0x05;
/// The largest transfer over RDMA: 128 KiB (the slot memory is pinned
/// when registered, so a queue of 128 slots pins 16 MiB, not 128).
pub const RDMA_MAX_TRANSFER: usize = 128 << 10;
const _: () = assert!(RDMA_MAX_TRANSFER <= TCP_MAX_TRANSFER);
/// Staging for data that is not an I/O command's (Identify, log pages,
/// Connect's 1024 bytes): per command.
const STAGE_LEN: usize = 8192;
/// A receive buffer: a command and its in-capsule data.
const RECV_LEN: usize = SQE_LEN + IN_CAPSULE as usize;

/// Work request IDs: the kind in the top bits, the buffer or command below.
pub const WR_RECV: u64 = 1 << 60;
pub const WR_SEND: u64 = 2 << 60;
pub const WR_READ: u64 = 3 << 60;
/// An RDMA WRITE (unsignaled: only a failure completes it).
pub const WR_WRITE: u64 = 4 << 60;
const WR_KIND: u64 = 0xF << 60;

/// What a work request ID names: (kind, index).
pub fn wr_kind(wr_id: u64) -> (u64, usize) {
    (wr_id & WR_KIND, (wr_id & !WR_KIND) as usize)
}

/// One command between its arrival and its completion's SEND: the host's
/// keyed SGL, and (for data fetched before the core sees the command)
/// the command itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cmd {
    pub remote_addr: u64,
    pub remote_len: u32,
    pub rkey: u32,
    /// A command held until its data is in its staging buffer.
    pub staged: Option<Sqe>,
    /// The slot of an I/O write whose data an RDMA READ is fetching.
    pub fetching: Option<u16>,
}

/// One accepted queue pair: the CM id, verbs objects and its memory
/// (receive buffers, completions to send, staging), released on drop.
pub struct RdmaQp {
    v: &'static Verbs,
    pub id: *mut c_void,
    pd: *mut c_void,
    pub cq: *mut c_void,
    qp: *mut c_void,
    mem: RdmaMemory,
    mr: *mut Mr,
    slot_mr: *mut Mr,
    slot_span: (u64, usize),
    /// Commands the host may have outstanding (its SQ size).
    pub entries: usize,
    pub cmds: Vec<Cmd>,
    free: Vec<usize>,
    by_cid: HashMap<u16, usize>,
    /// Posted sends and reads whose completions have not come.
    pub outstanding: usize,
    pub established: bool,
    pub closing: bool,
    pub disconnected: bool,
    pub qid: u16,
    peer: SocketAddr,
    local: Option<SocketAddr>,
}

// SAFETY: a queue pair is made on the driver thread and used only there.
unsafe impl Send for RdmaQp {}

impl RdmaQp {
    /// The queue pair of the connect request on `id` (host queue `qid`,
    /// `entries` commands): protection domain, completion queue, queue
    /// pair, memory registered and every receive posted, ready for
    /// `rdma_accept`. The queue pair owns `id` (destroyed on drop); one
    /// that cannot be made is rejected (no resources).
    pub fn new(v: &'static Verbs, id: *mut c_void, qid: u16, entries: usize) -> io::Result<RdmaQp> {
        let mem = RdmaMemory::new(entries * (RECV_LEN + CQE_LEN + STAGE_LEN))
            .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e.to_string()))?;
        let mut q = RdmaQp {
            v,
            id: std::ptr::null_mut(),
            pd: std::ptr::null_mut(),
            cq: std::ptr::null_mut(),
            qp: std::ptr::null_mut(),
            mem,
            mr: std::ptr::null_mut(),
            slot_mr: std::ptr::null_mut(),
            slot_span: (0, 0),
            entries,
            cmds: vec![Cmd::default(); entries],
            free: (0..entries).rev().collect(),
            by_cid: HashMap::new(),
            outstanding: 0,
            established: false,
            closing: false,
            disconnected: false,
            qid,
            // SAFETY: a live id of a connect request; its route's addresses are set.
            peer: unsafe { address_at(id, DST_ADDR_AT) }.unwrap_or(([0, 0, 0, 0], 0).into()),
            // SAFETY: as above.
            local: unsafe { address_at(id, SRC_ADDR_AT) },
        };
        q.id = id;
        if let Err(e) = q.make(id) {
            let rej = rdma_cm::encode_reject(REJ_NO_RESOURCES);
            // SAFETY: the request's id (destroyed when `q` drops).
            unsafe { (v.reject)(id, rej.as_ptr().cast(), rej.len() as u8) };
            q.disconnected = true;
            return Err(e);
        }
        for i in 0..entries {
            q.post_receive(i)?;
        }
        Ok(q)
    }

    fn make(&mut self, id: *mut c_void) -> io::Result<()> {
        let v = self.v;
        let n = self.entries;
        // SAFETY: verbs calls on the id's device; the objects are this queue pair's.
        unsafe {
            let ctx = (*(id as *const CmIdHead)).verbs;
            self.pd = (v.alloc_pd)(ctx);
            if self.pd.is_null() {
                return Err(last("ibv_alloc_pd"));
            }
            self.cq = (v.create_cq)(
                ctx,
                (3 * n + 4) as i32,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            );
            if self.cq.is_null() {
                return Err(last("ibv_create_cq"));
            }
            let mut attr = QpInitAttr {
                qp_context: std::ptr::null_mut(),
                send_cq: self.cq,
                recv_cq: self.cq,
                srq: std::ptr::null_mut(),
                cap: QpCap {
                    max_send_wr: (3 * n + 2) as u32,
                    max_recv_wr: n as u32,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                qp_type: verbs::QPT_RC,
                sq_sig_all: 0,
            };
            if (v.create_qp)(id, self.pd, &mut attr) != 0 {
                return Err(last("rdma_create_qp"));
            }
            self.qp = (*(id as *const CmIdHead)).qp;
        }
        self.mr = self.register(self.mem.ptr, self.mem.len)?;
        Ok(())
    }

    fn register(&self, base: *mut u8, len: usize) -> io::Result<*mut Mr> {
        let access =
            verbs::ACCESS_LOCAL_WRITE | verbs::ACCESS_REMOTE_READ | verbs::ACCESS_REMOTE_WRITE;
        // SAFETY: a live PD; the memory outlives the registration (dropped first).
        let mr = unsafe { (self.v.reg_mr)(self.pd, base.cast(), len, access) };
        if mr.is_null() {
            return Err(last(&format!("ibv_reg_mr ({len} bytes)")));
        }
        Ok(mr)
    }

    fn recv_at(&self, i: usize) -> usize {
        i * RECV_LEN
    }

    fn cqe_at(&self, r: usize) -> usize {
        self.entries * RECV_LEN + r * CQE_LEN
    }

    /// Where command `r`'s staging buffer starts in the region.
    pub fn stage_at(&self, r: usize) -> usize {
        (self.entries * (RECV_LEN + CQE_LEN)).next_multiple_of(64) + r * STAGE_LEN
    }

    fn lkey(&self) -> u32 {
        // SAFETY: registered in `make`, live until drop.
        unsafe { (*self.mr).lkey }
    }

    fn addr(&self, at: usize) -> u64 {
        self.mem.ptr as u64 + at as u64
    }

    /// The bytes of the region at `at`.
    fn bytes(&self, at: usize, len: usize) -> &[u8] {
        assert!(at + len <= self.mem.len);
        // SAFETY: within the region (checked).
        unsafe { std::slice::from_raw_parts(self.mem.ptr.add(at), len) }
    }

    fn bytes_mut(&mut self, at: usize, len: usize) -> &mut [u8] {
        assert!(at + len <= self.mem.len);
        // SAFETY: within the region (checked), borrowed exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.mem.ptr.add(at), len) }
    }

    /// Post receive buffer `i` for the next command.
    pub fn post_receive(&mut self, i: usize) -> io::Result<()> {
        let sge = Sge {
            addr: self.addr(self.recv_at(i)),
            length: RECV_LEN as u32,
            lkey: self.lkey(),
        };
        // SAFETY: a live QP; the buffer is in the registered region.
        unsafe { verbs::post_one_recv(self.qp, WR_RECV | i as u64, sge) }
    }

    /// The command that arrived in receive buffer `i` (`len` bytes) and
    /// where its in-capsule data lies: (command, (offset, length)).
    pub fn received(&self, i: usize, len: usize) -> Option<(Sqe, (usize, usize))> {
        if !(SQE_LEN..=RECV_LEN).contains(&len) {
            return None;
        }
        let at = self.recv_at(i);
        let sqe = Sqe(self.bytes(at, SQE_LEN).try_into().ok()?);
        Some((sqe, (at + SQE_LEN, len - SQE_LEN)))
    }

    /// A command context for `sqe`; `None` when the host has more
    /// commands out than its queue size.
    pub fn begin(&mut self, sqe: &Sqe) -> Option<usize> {
        let r = self.free.pop()?;
        let (kind, _) = sqe.sgl_desc();
        let (addr, len, key) = if kind >> 4 == codec::SGL_KEYED_KIND {
            sqe.keyed_desc()
        } else {
            (0, 0, 0)
        };
        self.cmds[r] = Cmd {
            remote_addr: addr,
            remote_len: len,
            rkey: key,
            staged: None,
            fetching: None,
        };
        self.by_cid.insert(sqe.cid(), r);
        Some(r)
    }

    /// Fetch command `r`'s data into its staging buffer (the command is
    /// held meanwhile); false if it does not fit there.
    pub fn stage(&mut self, r: usize, sqe: &Sqe) -> io::Result<bool> {
        let len = self.cmds[r].remote_len as usize;
        if len > STAGE_LEN {
            return Ok(false);
        }
        self.cmds[r].staged = Some(*sqe);
        let local = Sge {
            addr: self.addr(self.stage_at(r)),
            length: len as u32,
            lkey: self.lkey(),
        };
        self.post_read(r, local)?;
        Ok(true)
    }

    /// RDMA READ of command `r`'s keyed SGL into `local`.
    fn post_read(&mut self, r: usize, mut local: Sge) -> io::Result<()> {
        let c = self.cmds[r];
        let mut wr = SendWr::one(WR_READ | r as u64, &mut local, verbs::WR_RDMA_READ, true)
            .at(c.remote_addr, c.rkey);
        self.post(&mut wr)
    }

    fn post(&mut self, wr: &mut SendWr) -> io::Result<()> {
        // SAFETY: a live QP; every buffer is in a registered region.
        match unsafe { verbs::post_send(self.qp, wr) } {
            0 => {
                if wr.send_flags & verbs::SEND_SIGNALED != 0 {
                    self.outstanding += 1;
                }
                Ok(())
            }
            rc => Err(io::Error::from_raw_os_error(rc)),
        }
    }

    /// A posted send or read completed: command `r`'s completion was
    /// sent (its context is free again) or its data fetched.
    pub fn work_done(&mut self, kind: u64, r: usize) {
        self.outstanding = self.outstanding.saturating_sub(1);
        if kind == WR_SEND {
            self.free.push(r);
        }
    }

    /// Any failure of a work request ends the queue pair: said once.
    pub fn fail(&mut self, what: &str) {
        if !self.closing {
            eprintln!(
                "iolab serve: {}: NVMe/RDMA queue {}: {what}; closing it",
                self.peer, self.qid
            );
        }
        self.closing = true;
    }

    /// Whether `data` lies in the registered slot memory: its key.
    fn slot_key(&self, data: &[u8]) -> Option<u32> {
        let (base, len) = self.slot_span;
        let at = data.as_ptr() as u64;
        (!self.slot_mr.is_null() && at >= base && at + data.len() as u64 <= base + len as u64)
            // SAFETY: registered in slot_memory, live until drop.
            .then(|| unsafe { (*self.slot_mr).lkey })
    }

    fn cmd_of(&self, cid: u16) -> Option<usize> {
        self.by_cid.get(&cid).copied()
    }
}

impl Fabric for RdmaQp {
    const MAX_TRANSFER: usize = RDMA_MAX_TRANSFER;
    const IN_CAPSULE: u32 = IN_CAPSULE;

    fn ready(&self) -> bool {
        self.established
    }

    fn closing(&self) -> bool {
        self.closing
    }

    fn peer(&self) -> SocketAddr {
        self.peer
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.local
    }

    fn in_capsule(&self, at: usize, len: usize) -> &[u8] {
        self.bytes(at, len)
    }

    fn fetch_data(&mut self, cid: u16, tag: u16, len: u32, into: &mut [u8]) {
        let Some(r) = self.cmd_of(cid) else {
            return self.fail("a write's data asked for an unknown command");
        };
        let (Some(lkey), true) = (self.slot_key(into), self.cmds[r].remote_len >= len) else {
            return self.fail("a write whose data does not fit its SGL or slot");
        };
        self.cmds[r].fetching = Some(tag);
        let local = Sge {
            addr: into.as_ptr() as u64,
            length: len,
            lkey,
        };
        if let Err(e) = self.post_read(r, local) {
            self.fail(&format!("ibv_post_send (RDMA READ): {e}"));
        }
    }

    fn send_data(&mut self, cid: u16, data: &[u8]) {
        let Some(r) = self.cmd_of(cid) else {
            return self.fail("data for an unknown command");
        };
        let c = self.cmds[r];
        let len = data.len().min(c.remote_len as usize);
        if len == 0 {
            return;
        }
        let mut local = match self.slot_key(data) {
            Some(lkey) => Sge {
                addr: data.as_ptr() as u64,
                length: len as u32,
                lkey,
            },
            None => {
                let len = len.min(STAGE_LEN);
                let at = self.stage_at(r);
                self.bytes_mut(at, len).copy_from_slice(&data[..len]);
                Sge {
                    addr: self.addr(at),
                    length: len as u32,
                    lkey: self.lkey(),
                }
            }
        };
        // Unsignaled: the completion's SEND after it is signaled, and an
        // RC queue pair completes them in order.
        let mut wr = SendWr::one(WR_WRITE | r as u64, &mut local, verbs::WR_RDMA_WRITE, false)
            .at(c.remote_addr, c.rkey);
        if let Err(e) = self.post(&mut wr) {
            self.fail(&format!("ibv_post_send (RDMA WRITE): {e}"));
        }
    }

    fn send_completion(&mut self, cqe: &Cqe) {
        let Some(r) = self.by_cid.remove(&cqe.cid) else {
            return self.fail("a completion for an unknown command");
        };
        let at = self.cqe_at(r);
        self.bytes_mut(at, CQE_LEN).copy_from_slice(&cqe.encode());
        let mut sge = Sge {
            addr: self.addr(at),
            length: CQE_LEN as u32,
            lkey: self.lkey(),
        };
        let mut wr = SendWr::one(WR_SEND | r as u64, &mut sge, verbs::WR_SEND, true);
        if let Err(e) = self.post(&mut wr) {
            self.free.push(r);
            self.fail(&format!("ibv_post_send (SEND): {e}"));
        }
    }

    fn slot_memory(&mut self, base: *mut u8, len: usize) -> io::Result<()> {
        if !self.slot_mr.is_null() {
            // SAFETY: registered before, no transfer in flight (Connect comes first).
            unsafe { (self.v.dereg_mr)(self.slot_mr) };
            self.slot_mr = std::ptr::null_mut();
        }
        self.slot_mr = self.register(base, len)?;
        self.slot_span = (base as u64, len);
        Ok(())
    }
}

impl Drop for RdmaQp {
    fn drop(&mut self) {
        let v = self.v;
        // SAFETY: each object released once, in the reverse order of making;
        // the id's events were all acknowledged by the driver.
        unsafe {
            if !self.disconnected && !self.id.is_null() {
                (v.disconnect)(self.id);
            }
            if !self.qp.is_null() {
                (v.destroy_qp)(self.id);
            }
            if !self.slot_mr.is_null() {
                (v.dereg_mr)(self.slot_mr);
            }
            if !self.mr.is_null() {
                (v.dereg_mr)(self.mr);
            }
            if !self.cq.is_null() {
                (v.destroy_cq)(self.cq);
            }
            if !self.pd.is_null() {
                (v.dealloc_pd)(self.pd);
            }
            if !self.id.is_null() {
                (v.destroy_id)(self.id);
            }
        }
    }
}

/// `struct rdma_cm_id`'s route: its source and destination addresses
/// (`rdma_get_local_addr`, `rdma_get_peer_addr`, inline functions).
const SRC_ADDR_AT: usize = 32;
const DST_ADDR_AT: usize = 32 + 128;

/// The address a CM id is bound to (a listener's, with its port).
///
/// # Safety
/// `id` is a live `rdma_cm_id`.
pub unsafe fn local_address(id: *mut c_void) -> Option<SocketAddr> {
    // SAFETY: the caller's promise.
    unsafe { address_at(id, SRC_ADDR_AT) }
}

/// The socket address at byte `at` of a CM id.
///
/// # Safety
/// `id` is a live `rdma_cm_id`.
unsafe fn address_at(id: *mut c_void, at: usize) -> Option<SocketAddr> {
    // SAFETY: the caller's promise; a sockaddr_storage lies at `at`.
    let ss = unsafe { &*((id as *const u8).add(at) as *const libc::sockaddr_storage) };
    match ss.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: an AF_INET address.
            let sin = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::from((
                u32::from_be(sin.sin_addr.s_addr).to_be_bytes(),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 address.
            let sin6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::from((
                sin6.sin6_addr.s6_addr,
                u16::from_be(sin6.sin6_port),
            )))
        }
        _ => None,
    }
}

fn last(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}
