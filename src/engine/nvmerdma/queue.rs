//! One NVMe over RDMA queue pair, host side (the NVMe-oF RDMA transport
//! binding): an RC queue pair made through the RDMA connection manager
//! (address and route resolved, then a connect carrying the NVMe-oF CM
//! request: queue ID, host receive and send queue sizes), one registered
//! memory region holding each slot's command (64 bytes), the receive
//! buffers of completions (16 bytes each) and each slot's data. A command
//! is SENT with a keyed SGL naming its slot's data, the controller moves
//! the data itself (RDMA WRITE for a read, RDMA READ for a write) and
//! SENDs the completion into a posted receive buffer.
//!
//! `command` runs one command to its completion (the control path);
//! `post_command` and `poll` are the engine's pipelined path. Every wait
//! on the connection manager has a deadline and ends on a stop signal.

use std::ffi::{c_int, c_void};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::engine::nvmetcp::handshake::HostQueue;
use crate::native::rdma_memory::{sockaddr_of, RdmaMemory};
use crate::native::verbs::{
    self, CmEvent, CmIdHead, ConnParam, Mr, QpCap, QpInitAttr, SendWr, Sge, Verbs, Wc,
};
use crate::proto::nvme::codec::{self, Cqe, Sqe, CQE_LEN, SQE_LEN};
use crate::proto::nvme::rdma_cm::{self, CmRequest};

/// Work request IDs: the kind in the top bits, the slot or buffer below.
pub const WR_SEND: u64 = 1 << 62;
pub const WR_RECV: u64 = 2 << 62;
const WR_KIND: u64 = 3 << 62;

/// How a queue's memory is laid out.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Command slots (the queue's depth).
    pub slots: usize,
    /// Receive buffers for completions (the host receive queue size).
    pub receives: usize,
    /// Bytes of data per slot.
    pub data_len: usize,
}

impl Shape {
    fn sqe_at(&self, slot: usize) -> usize {
        slot * SQE_LEN
    }

    fn cqe_at(&self, i: usize) -> usize {
        self.slots * SQE_LEN + i * CQE_LEN
    }

    fn data_at(&self, slot: usize) -> usize {
        let start = (self.cqe_at(self.receives) + 4095) & !4095;
        start + slot * self.data_len.next_multiple_of(4096)
    }

    fn len(&self) -> usize {
        self.data_at(self.slots)
    }
}

/// One connected queue pair and its memory; everything released on drop.
pub struct RdmaQueue {
    v: &'static Verbs,
    channel: *mut c_int,
    id: *mut c_void,
    pd: *mut c_void,
    cq: *mut c_void,
    qp: *mut c_void,
    mr: *mut Mr,
    /// The runner's buffer pool, registered: requests' data moves straight
    /// between it and the controller.
    pool_mr: *mut Mr,
    mem: RdmaMemory,
    pub shape: Shape,
    connected: bool,
    next_cid: u16,
    /// How long each control-path step may take.
    pub step_timeout: Duration,
    /// Whether a stop signal ends a wait at once.
    pub honour_stop: bool,
}

// SAFETY: the queue's objects are used by one thread at a time (moved
// with the queue, never shared).
unsafe impl Send for RdmaQueue {}

impl RdmaQueue {
    /// Connect queue `qid` to the controller at `addr` with `shape`'s
    /// slots and receive buffers (the CM request's sizes follow from
    /// them), `pool` (start, length) registered beside its own memory.
    pub fn open(
        addr: SocketAddr,
        qid: u16,
        shape: Shape,
        step: Duration,
        pool: Option<(*mut u8, usize)>,
    ) -> anyhow::Result<RdmaQueue> {
        let v = verbs::verbs().map_err(anyhow::Error::msg)?;
        let mut q = RdmaQueue {
            v,
            channel: std::ptr::null_mut(),
            id: std::ptr::null_mut(),
            pd: std::ptr::null_mut(),
            cq: std::ptr::null_mut(),
            qp: std::ptr::null_mut(),
            mr: std::ptr::null_mut(),
            pool_mr: std::ptr::null_mut(),
            mem: RdmaMemory::new(shape.len())?,
            shape,
            connected: false,
            next_cid: 0,
            step_timeout: step,
            honour_stop: true,
        };
        q.resolve(addr)?;
        q.make_qp()?;
        if let Some((base, len)) = pool.filter(|p| !p.0.is_null() && p.1 > 0) {
            q.pool_mr = q.register(base, len)?;
        }
        for i in 0..shape.receives {
            q.post_receive(i)?;
        }
        q.connect(addr, qid)?;
        Ok(q)
    }

    /// Event channel, id, address and route.
    fn resolve(&mut self, addr: SocketAddr) -> anyhow::Result<()> {
        let v = self.v;
        // SAFETY: librdmacm calls on objects this queue owns.
        unsafe {
            self.channel = (v.create_event_channel)();
            if self.channel.is_null() {
                bail!(
                    "rdma_create_event_channel: {}",
                    std::io::Error::last_os_error()
                );
            }
            let fd = *self.channel;
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            if (v.create_id)(
                self.channel,
                &mut self.id,
                std::ptr::null_mut(),
                verbs::PS_TCP,
            ) != 0
            {
                bail!("rdma_create_id: {}", std::io::Error::last_os_error());
            }
            let (sa, _len) = sockaddr_of(addr);
            let ms = self.step_timeout.as_millis().min(i32::MAX as u128) as c_int;
            if (v.resolve_addr)(
                self.id,
                std::ptr::null(),
                &sa as *const _ as *const libc::sockaddr,
                ms,
            ) != 0
            {
                bail!(
                    "rdma_resolve_addr {addr}: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
        self.wait_event(verbs::EVENT_ADDR_RESOLVED, "address resolution")
            .with_context(|| format!("resolving {addr} to an RDMA device"))?;
        let ms = self.step_timeout.as_millis().min(i32::MAX as u128) as c_int;
        // SAFETY: a live id with its address resolved.
        if unsafe { (self.v.resolve_route)(self.id, ms) } != 0 {
            bail!(
                "rdma_resolve_route {addr}: {}",
                std::io::Error::last_os_error()
            );
        }
        self.wait_event(verbs::EVENT_ROUTE_RESOLVED, "route resolution")
            .with_context(|| format!("resolving a route to {addr}"))
    }

    /// Protection domain, completion queue, queue pair, memory region.
    fn make_qp(&mut self) -> anyhow::Result<()> {
        let v = self.v;
        let s = self.shape;
        // SAFETY: verbs calls on the device the id resolved to, objects this queue owns.
        unsafe {
            let ctx = (*(self.id as *const CmIdHead)).verbs;
            self.pd = (v.alloc_pd)(ctx);
            if self.pd.is_null() {
                bail!("ibv_alloc_pd: {}", std::io::Error::last_os_error());
            }
            let entries = (2 * s.slots + s.receives + 4) as c_int;
            self.cq = (v.create_cq)(ctx, entries, std::ptr::null_mut(), std::ptr::null_mut(), 0);
            if self.cq.is_null() {
                bail!(
                    "ibv_create_cq ({entries} entries): {}",
                    std::io::Error::last_os_error()
                );
            }
            let mut attr = QpInitAttr {
                qp_context: std::ptr::null_mut(),
                send_cq: self.cq,
                recv_cq: self.cq,
                srq: std::ptr::null_mut(),
                cap: QpCap {
                    max_send_wr: (2 * s.slots + 2) as u32,
                    max_recv_wr: s.receives as u32,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                qp_type: verbs::QPT_RC,
                sq_sig_all: 0,
            };
            if (v.create_qp)(self.id, self.pd, &mut attr) != 0 {
                bail!("rdma_create_qp: {}", std::io::Error::last_os_error());
            }
            self.qp = (*(self.id as *const CmIdHead)).qp;
        }
        self.mr = self.register(self.mem.ptr, self.mem.len)?;
        Ok(())
    }

    /// Register `len` bytes at `base` for the controller to read and write.
    fn register(&mut self, base: *mut u8, len: usize) -> anyhow::Result<*mut Mr> {
        let access =
            verbs::ACCESS_LOCAL_WRITE | verbs::ACCESS_REMOTE_READ | verbs::ACCESS_REMOTE_WRITE;
        // SAFETY: a live PD; the memory outlives the registration (dropped first).
        let mr = unsafe { (self.v.reg_mr)(self.pd, base.cast(), len, access) };
        if mr.is_null() {
            bail!(
                "ibv_reg_mr ({len} bytes): {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(mr)
    }

    /// The key the controller reaches the registered pool with.
    pub fn pool_rkey(&self) -> Option<u32> {
        // SAFETY: registered in open, live until drop.
        (!self.pool_mr.is_null()).then(|| unsafe { (*self.pool_mr).rkey })
    }

    /// The CM connect with the NVMe-oF RDMA CM request as private data.
    fn connect(&mut self, addr: SocketAddr, qid: u16) -> anyhow::Result<()> {
        let req = CmRequest {
            qid,
            hrqsize: self.shape.receives as u16,
            hsqsize: self.shape.slots as u16 - 1,
            cntlid: 0,
        }
        .encode();
        let mut param = ConnParam {
            private_data: req.as_ptr().cast(),
            private_data_len: req.len() as u8,
            responder_resources: 16,
            initiator_depth: 0,
            flow_control: 1,
            retry_count: 7,
            rnr_retry_count: 7,
            srq: 0,
            qp_num: 0,
        };
        // SAFETY: a live id with its QP; the private data outlives the call.
        if unsafe { (self.v.connect)(self.id, &mut param) } != 0 {
            bail!("rdma_connect {addr}: {}", std::io::Error::last_os_error());
        }
        self.wait_event(verbs::EVENT_ESTABLISHED, "the connection")
            .with_context(|| format!("connecting queue {qid} to {addr}"))?;
        self.connected = true;
        Ok(())
    }

    /// Wait for the next CM event, which must be `want`.
    fn wait_event(&mut self, want: u32, what: &str) -> anyhow::Result<()> {
        let until = Instant::now() + self.step_timeout;
        // SAFETY: the channel is live; its first field is its descriptor.
        let fd = unsafe { *self.channel };
        loop {
            let mut ev: *mut CmEvent = std::ptr::null_mut();
            // SAFETY: a non-blocking channel; an event is acked once read.
            if unsafe { (self.v.get_cm_event)(self.channel, &mut ev) } == 0 {
                // SAFETY: a valid event until acked.
                let (event, status, rej) =
                    unsafe { ((*ev).event, (*ev).status, reject_status(&*ev)) };
                // SAFETY: acked once.
                unsafe { (self.v.ack_cm_event)(ev) };
                if event == want {
                    return Ok(());
                }
                let why = match (event, rej) {
                    (verbs::EVENT_REJECTED, Some(sts)) => {
                        format!("rejected by the controller: {}", rdma_cm::reject_text(sts))
                    }
                    _ => format!("CM event {event} (status {status}) instead"),
                };
                bail!("{what}: {why}");
            }
            if self.honour_stop && crate::interrupt::stop_requested() {
                bail!("{what}: stopped by a signal");
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("{what}: no answer within {:?}", self.step_timeout);
            }
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd.
            unsafe { libc::poll(&mut p, 1, left.as_millis().min(100) as c_int) };
        }
    }

    fn base(&self) -> u64 {
        self.mem.ptr as u64
    }

    fn lkey(&self) -> u32 {
        // SAFETY: registered in make_qp, live until drop.
        unsafe { (*self.mr).lkey }
    }

    /// The key the controller reaches this queue's data with.
    pub fn rkey(&self) -> u32 {
        // SAFETY: as lkey.
        unsafe { (*self.mr).rkey }
    }

    /// Slot `slot`'s data buffer.
    pub fn data(&mut self, slot: usize) -> &mut [u8] {
        let at = self.shape.data_at(slot);
        // SAFETY: within the region (Shape::len covers every slot's data).
        unsafe { std::slice::from_raw_parts_mut(self.mem.ptr.add(at), self.shape.data_len) }
    }

    /// Slot `slot`'s data buffer's address in the controller's terms.
    pub fn data_addr(&self, slot: usize) -> u64 {
        self.base() + self.shape.data_at(slot) as u64
    }

    /// Post receive buffer `i` for a completion.
    pub fn post_receive(&mut self, i: usize) -> anyhow::Result<()> {
        let sge = Sge {
            addr: self.base() + self.shape.cqe_at(i) as u64,
            length: CQE_LEN as u32,
            lkey: self.lkey(),
        };
        // SAFETY: a live QP; the buffer is in the registered region.
        unsafe { verbs::post_one_recv(self.qp, WR_RECV | i as u64, sge) }
            .map_err(|e| anyhow::anyhow!("ibv_post_recv: {e}"))
    }

    /// SEND `sqe` from slot `slot`'s command buffer, its data described by
    /// a keyed SGL: `addr` reached with `key`.
    pub fn post_command(
        &mut self,
        slot: usize,
        sqe: &Sqe,
        addr: u64,
        key: u32,
    ) -> std::io::Result<()> {
        let keyed = Sqe(sqe.0).keyed(addr, sqe.transfer_len(), key);
        let at = self.shape.sqe_at(slot);
        // SAFETY: the slot's command buffer is within the region.
        unsafe { std::ptr::copy_nonoverlapping(keyed.0.as_ptr(), self.mem.ptr.add(at), SQE_LEN) };
        let mut sge = Sge {
            addr: self.base() + at as u64,
            length: SQE_LEN as u32,
            lkey: self.lkey(),
        };
        let mut wr = SendWr::one(WR_SEND | slot as u64, &mut sge, verbs::WR_SEND, true);
        // SAFETY: a live QP; the command buffer is in the registered region.
        let rc = unsafe { verbs::post_send(self.qp, &mut wr) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(())
    }

    /// Work completions into `wc`; how many.
    pub fn poll(&mut self, wc: &mut [Wc]) -> std::io::Result<usize> {
        // SAFETY: a live CQ.
        let n = unsafe { verbs::poll_cq(self.cq, wc) };
        if n < 0 {
            return Err(std::io::Error::other(format!("ibv_poll_cq failed ({n})")));
        }
        Ok(n as usize)
    }

    /// The completion in receive buffer `i` (after its receive completed).
    pub fn completion(&self, i: usize) -> Option<Cqe> {
        let at = self.shape.cqe_at(i);
        // SAFETY: within the region.
        let b = unsafe { std::slice::from_raw_parts(self.mem.ptr.add(at), CQE_LEN) };
        Cqe::parse(b).ok()
    }

    /// The slot or buffer a work request ID names, and whether it is a receive.
    pub fn wr_of(wr_id: u64) -> (usize, bool) {
        ((wr_id & !WR_KIND) as usize, wr_id & WR_KIND == WR_RECV)
    }
}

/// The NVMe-oF RDMA CM reject's status, if a REJECTED event carries one.
fn reject_status(ev: &CmEvent) -> Option<u16> {
    let p = ev.conn.private_data as *const u8;
    if ev.event != verbs::EVENT_REJECTED || p.is_null() || ev.conn.private_data_len < 4 {
        return None;
    }
    // SAFETY: private_data_len bytes are readable until the event is acked.
    rdma_cm::parse_reject(unsafe { std::slice::from_raw_parts(p, rdma_cm::REJ_LEN) })
}

impl HostQueue for RdmaQueue {
    fn next_cid(&mut self) -> u16 {
        self.next_cid = self.next_cid.wrapping_add(1);
        self.next_cid
    }

    /// On slot 0: `out` copied into its data buffer (the controller reads
    /// it), the command sent, completions polled until its own; what the
    /// controller wrote into the buffer is copied into `into`.
    fn command(&mut self, sqe: &Sqe, out: &[u8], into: &mut Vec<u8>) -> anyhow::Result<Cqe> {
        let len = sqe.transfer_len() as usize;
        if len > self.shape.data_len || out.len() > len {
            bail!(
                "a {len} byte transfer does not fit the control path's {} byte buffer",
                self.shape.data_len
            );
        }
        self.data(0)[..out.len()].copy_from_slice(out);
        let (addr, key) = (self.data_addr(0), self.rkey());
        self.post_command(0, sqe, addr, key)
            .context("ibv_post_send")?;
        let until = Instant::now() + self.step_timeout;
        let mut wc = [Wc::default(); 8];
        loop {
            let n = self.poll(&mut wc)?;
            for w in &wc[..n] {
                if w.status != verbs::WC_SUCCESS {
                    bail!(
                        "a work request failed (ibv_wc status {}, vendor error {:#x})",
                        w.status,
                        w.vendor_err
                    );
                }
                let (i, recv) = RdmaQueue::wr_of(w.wr_id);
                if !recv {
                    continue;
                }
                let cqe = self.completion(i);
                self.post_receive(i)?;
                let Some(cqe) = cqe.filter(|_| w.byte_len as usize >= CQE_LEN) else {
                    bail!("a {} byte message where a completion was due", w.byte_len);
                };
                if cqe.cid != sqe.cid() {
                    bail!(
                        "a completion for command {} while {} runs",
                        cqe.cid,
                        sqe.cid()
                    );
                }
                if !cqe.ok() {
                    let (sct, sc) = cqe.code();
                    bail!("{}", codec::status_text(sct, sc));
                }
                if out.is_empty() && len > 0 {
                    into.clear();
                    into.extend_from_slice(&self.data(0)[..len]);
                }
                return Ok(cqe);
            }
            if self.honour_stop && crate::interrupt::stop_requested() {
                bail!("stopped by a signal while command {} ran", sqe.cid());
            }
            if Instant::now() > until {
                bail!(
                    "no completion of command {} within {:?}",
                    sqe.cid(),
                    self.step_timeout
                );
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    fn honour_stop(&self) -> bool {
        self.honour_stop
    }

    fn set_control(&mut self, step: Duration, honour_stop: bool) {
        self.step_timeout = step;
        self.honour_stop = honour_stop;
    }
}

impl Drop for RdmaQueue {
    fn drop(&mut self) {
        let v = self.v;
        // SAFETY: each object released once, in the reverse order of making.
        unsafe {
            if self.connected {
                (v.disconnect)(self.id);
            }
            if !self.qp.is_null() {
                (v.destroy_qp)(self.id);
            }
            if !self.mr.is_null() {
                (v.dereg_mr)(self.mr);
            }
            if !self.pool_mr.is_null() {
                (v.dereg_mr)(self.pool_mr);
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
            if !self.channel.is_null() {
                (v.destroy_event_channel)(self.channel);
            }
        }
    }
}
