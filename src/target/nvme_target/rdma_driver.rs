//! `iolab serve --protocol nvme-rdma`: the NVMe target core (`nvmf::Nvmf`)
//! over RDMA queue pairs (`rdma::RdmaQp`), driven by one reactor thread.
//! The serving substrate's connections are TCP sockets, so RDMA brings
//! its own loop (as SPDK's RDMA transport has its own poller): the
//! connection manager's channel (a connect request accepted with the
//! NVMe-oF CM reply, or rejected with its status; established;
//! disconnected), each queue pair's completion queue (commands received,
//! data fetched, completions sent) and the file operations on the
//! reactor's io_uring. It polls while commands come and for a millisecond
//! after the last, then naps 100 us at a time (`--poll`: never naps), as
//! RDMA targets poll their completion queues rather than take an
//! interrupt per completion.

use std::ffi::c_void;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;

use super::nvmf::Nvmf;
use super::queue::{failed, Fabric, QueuePair, QueueRole};
use super::rdma::{self, RdmaQp};
use super::{NvmeShared, NvmeTargetConfig};
use crate::measure::clock::mono_now_ns;
use crate::native::rdma_memory::sockaddr_of;
use crate::native::verbs::{self, CmEvent, ConnParam, Verbs, Wc};
use crate::proto::nvme::codec::{self, Sqe};
use crate::proto::nvme::discovery;
use crate::proto::nvme::rdma_cm::{self, CmRequest};
use crate::target::nvme_controller::QUEUE_ENTRIES;
use crate::target::serving::{self, split, KIND_FILE};

/// How long the reactor keeps polling after its last piece of work.
const IDLE_SPIN_NS: u64 = 1_000_000;
/// How long it naps at a time once idle.
const NAP_NS: u64 = 100_000;
/// The most RDMA READs a queue pair has outstanding.
const MAX_READS: u8 = 16;
/// CM events that end a connection.
const EVENT_CONNECT_ERROR: u32 = 6;
const EVENT_UNREACHABLE: u32 = 7;
const EVENT_DEVICE_REMOVAL: u32 = 11;
const EVENT_TIMEWAIT_EXIT: u32 = 15;

type Io = serving::Io<QueuePair<RdmaQp>>;

/// A running NVMe/RDMA target; dropping it stops it.
pub struct NvmeRdmaTarget {
    pub addr: SocketAddr,
    pub size: u64,
    pub block_size: u32,
    pub direct: bool,
    subnqn: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl NvmeRdmaTarget {
    /// Close every queue pair once what is in flight is done, and join.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> anyhow::Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r.context("NVMe/RDMA reactor"),
            Some(Err(_)) => anyhow::bail!("the NVMe/RDMA reactor panicked"),
            None => Ok(()),
        }
    }

    /// The URL hosts connect to.
    pub fn url(&self) -> String {
        format!("nvme-rdma://{}/{}?nsid=1", self.addr, self.subnqn)
    }
}

impl Drop for NvmeRdmaTarget {
    fn drop(&mut self) {
        let _ = self.stop_thread();
    }
}

/// Listen for NVMe/RDMA hosts on `at` (an address of an RDMA device: a
/// RoCE NIC's or a soft-RoCE link's); connect requests wait until the
/// target starts on it (`start_rdma_on`).
pub fn listen_rdma(at: SocketAddr) -> anyhow::Result<RdmaListener> {
    let v = verbs::verbs().map_err(anyhow::Error::msg)?;
    if let Some(why) = verbs::unavailable() {
        anyhow::bail!("{why}");
    }
    RdmaListener::bind(v, at)
}

/// Listen on `cfg.listen` and serve `cfg.backing`.
pub fn start_rdma(cfg: &NvmeTargetConfig) -> anyhow::Result<NvmeRdmaTarget> {
    start_rdma_on(cfg, listen_rdma(cfg.listen)?)
}

/// Serve `cfg.backing` to the hosts that connect through `listener`.
pub fn start_rdma_on(
    cfg: &NvmeTargetConfig,
    listener: RdmaListener,
) -> anyhow::Result<NvmeRdmaTarget> {
    let v = listener.v;
    let addr = listener.addr;
    let (shared, direct) = NvmeShared::open(cfg, addr, discovery::TRTYPE_RDMA)?;
    let (size, block_size) = (shared.size, shared.block_size);
    let stop = Arc::new(AtomicBool::new(false));
    let ring = serving::Ring::new(1024, -1).context("cannot set up an io_uring for the target")?;
    let mut reactor = Reactor {
        v,
        listener,
        core: Nvmf::new(shared),
        io: serving::Io {
            ring,
            conns: Vec::new(),
        },
        stop: stop.clone(),
        poll: cfg.poll.is_some(),
        last_work: 0,
    };
    let cpu = cfg.poll.as_ref().map(|p| p.cpu_of(0));
    let thread = std::thread::Builder::new()
        .name("nvme-rdma-reactor".into())
        .spawn(move || {
            if let Some(cpu) = cpu {
                serving::pin_to(cpu)?;
            }
            reactor.run()
        })?;
    Ok(NvmeRdmaTarget {
        addr,
        size,
        block_size,
        direct,
        subnqn: cfg.subnqn.clone(),
        stop,
        thread: Some(thread),
    })
}

/// The listening CM id and its event channel (every connection's events
/// come on it too).
pub struct RdmaListener {
    v: &'static Verbs,
    channel: *mut i32,
    id: *mut c_void,
    /// The address bound (with the port, where 0 was asked for).
    pub addr: SocketAddr,
}

// SAFETY: made on the starting thread, then used only by the reactor.
unsafe impl Send for RdmaListener {}

impl RdmaListener {
    fn bind(v: &'static Verbs, at: SocketAddr) -> anyhow::Result<RdmaListener> {
        let mut l = RdmaListener {
            v,
            channel: std::ptr::null_mut(),
            id: std::ptr::null_mut(),
            addr: at,
        };
        // SAFETY: librdmacm calls on objects this listener owns (released on drop).
        unsafe {
            l.channel = (v.create_event_channel)();
            if l.channel.is_null() {
                anyhow::bail!("rdma_create_event_channel: {}", io::Error::last_os_error());
            }
            let fd = *l.channel;
            libc::fcntl(
                fd,
                libc::F_SETFL,
                libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
            );
            if (v.create_id)(l.channel, &mut l.id, std::ptr::null_mut(), verbs::PS_TCP) != 0 {
                anyhow::bail!("rdma_create_id: {}", io::Error::last_os_error());
            }
            let (sa, _) = sockaddr_of(at);
            if (v.bind_addr)(l.id, &sa as *const _ as *const libc::sockaddr) != 0 {
                anyhow::bail!(
                    "cannot listen on {at}: {} (an address of an RDMA device: a RoCE NIC's, or a soft-RoCE link's)",
                    io::Error::last_os_error()
                );
            }
            if (v.listen)(l.id, 64) != 0 {
                anyhow::bail!("cannot listen on {at}: {}", io::Error::last_os_error());
            }
            if let Some(bound) = rdma::local_address(l.id) {
                l.addr = bound;
            }
        }
        Ok(l)
    }

    /// The next CM event, copied out and acknowledged.
    fn next_event(&self) -> Option<Event> {
        let mut ev: *mut CmEvent = std::ptr::null_mut();
        // SAFETY: a non-blocking channel; the event is read, then acked once.
        unsafe {
            if (self.v.get_cm_event)(self.channel, &mut ev) != 0 {
                return None;
            }
            let e = &*ev;
            let mut private = [0u8; 64];
            let n = (e.conn.private_data_len as usize).min(private.len());
            if !e.conn.private_data.is_null() && n > 0 {
                std::ptr::copy_nonoverlapping(
                    e.conn.private_data as *const u8,
                    private.as_mut_ptr(),
                    n,
                );
            }
            let out = Event {
                id: e.id,
                event: e.event,
                private,
                private_len: n,
                initiator_depth: e.conn.initiator_depth,
            };
            (self.v.ack_cm_event)(ev);
            Some(out)
        }
    }
}

impl Drop for RdmaListener {
    fn drop(&mut self) {
        // SAFETY: released once; every connection's id was destroyed before.
        unsafe {
            if !self.id.is_null() {
                (self.v.destroy_id)(self.id);
            }
            if !self.channel.is_null() {
                (self.v.destroy_event_channel)(self.channel);
            }
        }
    }
}

/// A CM event's fields the reactor uses.
struct Event {
    id: *mut c_void,
    event: u32,
    private: [u8; 64],
    private_len: usize,
    /// The RDMA READs the host lets this side have outstanding.
    initiator_depth: u8,
}

struct Reactor {
    v: &'static Verbs,
    // Dropped after every connection (fields drop in order: `io` first).
    io: Io,
    listener: RdmaListener,
    core: Nvmf<RdmaQp>,
    stop: Arc<AtomicBool>,
    poll: bool,
    last_work: u64,
}

impl Reactor {
    fn run(&mut self) -> io::Result<()> {
        loop {
            let now = mono_now_ns();
            let stopping = self.stop.load(Ordering::Relaxed);
            if stopping {
                for c in self.io.conns.iter_mut().flatten() {
                    c.fabric.closing = true;
                }
            }
            let mut worked = self.cm_events(now, stopping)?;
            self.core.release_due(&mut self.io, now);
            self.replies_posted(now);
            for ci in 0..self.io.conns.len() {
                if self.io.conns[ci].is_some() {
                    worked |= self.progress(ci, now)?;
                }
            }
            if stopping && self.io.conns.iter().all(Option::is_none) {
                return Ok(());
            }
            let now = mono_now_ns();
            let busy = self.io.conns.iter().flatten().any(|c| c.busy > 0);
            if worked || busy {
                self.last_work = now;
            }
            let due = self.core.submitting(&mut self.io, now);
            let due = due
                .into_iter()
                .chain(self.core.first_deadline(&self.io))
                .min();
            let napping = !self.poll && now.saturating_sub(self.last_work) > IDLE_SPIN_NS;
            if !worked && !self.poll && !napping {
                // Polling without a core of its own (not --poll): let the
                // host or the RDMA stack's work on this CPU run.
                std::thread::yield_now();
            }
            self.io.ring.set_polling(!napping);
            let n = self.io.ring.submit_and_wait(now, due, now + NAP_NS)?;
            let now = mono_now_ns();
            for k in 0..n {
                let (ud, res) = self.io.ring.cqe(k);
                let (kind, ci, s) = split(ud);
                if kind == KIND_FILE && self.io.conns.get(ci).is_some_and(Option::is_some) {
                    self.core.file_done(&mut self.io, ci, s, res, now)?;
                }
                self.last_work = now;
            }
            self.replies_posted(now);
        }
    }

    /// The completions the core encoded since the last call were posted
    /// (their SENDs are on the queue pairs): their stamps' reply time is
    /// `now`, the time taken before the events that made them (never
    /// after the host could have received them).
    fn replies_posted(&mut self, now: u64) {
        for c in self.io.conns.iter_mut().flatten() {
            if !c.unsent.is_empty() {
                c.replies_sent(now);
            }
        }
    }

    /// Take every pending CM event; whether there was one.
    fn cm_events(&mut self, now: u64, stopping: bool) -> io::Result<bool> {
        let mut any = false;
        while let Some(ev) = self.listener.next_event() {
            any = true;
            let conn = self
                .io
                .conns
                .iter_mut()
                .flatten()
                .find(|c| c.fabric.id == ev.id);
            match (ev.event, conn) {
                (verbs::EVENT_CONNECT_REQUEST, _) => self.connect_request(&ev, now, stopping)?,
                (verbs::EVENT_ESTABLISHED, Some(c)) => c.fabric.established = true,
                (verbs::EVENT_DISCONNECTED | EVENT_TIMEWAIT_EXIT, Some(c)) => {
                    c.fabric.disconnected = true;
                    c.fabric.closing = true;
                }
                (
                    EVENT_CONNECT_ERROR
                    | EVENT_UNREACHABLE
                    | verbs::EVENT_REJECTED
                    | EVENT_DEVICE_REMOVAL,
                    Some(c),
                ) => c
                    .fabric
                    .fail(&format!("connection manager event {}", ev.event)),
                _ => {}
            }
        }
        Ok(any)
    }

    /// A host connects a queue: a queue pair sized by its request,
    /// accepted with the NVMe-oF CM reply, or rejected with why.
    fn connect_request(&mut self, ev: &Event, now: u64, stopping: bool) -> io::Result<()> {
        let reject = |status: u16| {
            let rej = rdma_cm::encode_reject(status);
            // SAFETY: the request's id, rejected then destroyed once.
            unsafe {
                (self.v.reject)(ev.id, rej.as_ptr().cast(), rej.len() as u8);
                (self.v.destroy_id)(ev.id);
            }
        };
        let req = match CmRequest::parse(&ev.private[..ev.private_len]) {
            Ok(r) => r,
            Err(status) => {
                reject(status);
                return Ok(());
            }
        };
        let entries = req.hsqsize as usize + 1;
        let live = self.io.conns.iter().flatten().count();
        if entries > QUEUE_ENTRIES as usize || entries < 2 {
            reject(rdma_cm::REJ_INVALID_HSQSIZE);
            return Ok(());
        }
        if stopping || live >= serving::MAX_CONNECTIONS {
            reject(rdma::REJ_NO_RESOURCES);
            return Ok(());
        }
        let qp = match RdmaQp::new(self.v, ev.id, req.qid, entries) {
            Ok(q) => q,
            Err(e) => {
                eprintln!("iolab serve: cannot make an NVMe/RDMA queue pair: {e}");
                return Ok(());
            }
        };
        let rep = rdma_cm::encode_accept(entries as u16);
        let mut param = ConnParam {
            private_data: rep.as_ptr().cast(),
            private_data_len: rep.len() as u8,
            responder_resources: 0,
            initiator_depth: ev.initiator_depth.min(MAX_READS),
            flow_control: 1,
            retry_count: 7,
            rnr_retry_count: 7,
            srq: 0,
            qp_num: 0,
        };
        // SAFETY: the request's id with its QP made; the reply outlives the call.
        if unsafe { (self.v.accept)(ev.id, &mut param) } != 0 {
            eprintln!("iolab serve: rdma_accept: {}", io::Error::last_os_error());
            return Ok(()); // dropping the queue pair destroys the id
        }
        let c = self.core.admit(qp, now)?;
        self.io.place(c);
        Ok(())
    }

    /// Poll queue pair `ci`'s completions and close it once it is done;
    /// whether anything completed.
    fn progress(&mut self, ci: usize, now: u64) -> io::Result<bool> {
        let c = self.io.conn(ci);
        if self.core.overdue(c, now) {
            c.fabric.fail("no Connect within the negotiation deadline");
        }
        let mut wc = [Wc::default(); 32];
        // SAFETY: the queue pair's live CQ.
        let n = unsafe { verbs::poll_cq(c.fabric.cq, &mut wc) };
        // What completed arrived by now (the stamps' arrival, not before
        // the host sent it).
        let now = if n > 0 { mono_now_ns() } else { now };
        if n < 0 {
            c.fabric.fail(&format!("ibv_poll_cq failed ({n})"));
        }
        for w in &wc[..n.max(0) as usize] {
            self.work_completion(ci, w, now)?;
        }
        let Some(c) = self.io.conns[ci].as_mut() else {
            return Ok(n > 0);
        };
        if !c.unsent.is_empty() {
            c.replies_sent(now);
        }
        if c.fabric.closing {
            c.drop_awaited_writes();
            if c.busy == 0 && c.fabric.outstanding == 0 {
                self.core.close(&mut self.io, ci);
            }
        }
        Ok(n > 0)
    }

    fn work_completion(&mut self, ci: usize, w: &Wc, now: u64) -> io::Result<()> {
        let c = self.io.conn(ci);
        let (kind, i) = rdma::wr_kind(w.wr_id);
        if w.status != verbs::WC_SUCCESS {
            if kind == rdma::WR_SEND || kind == rdma::WR_READ {
                c.fabric.work_done(kind, i);
            }
            if !c.fabric.closing {
                c.fabric.fail(&format!(
                    "a work request failed (ibv_wc status {}, vendor error {:#x})",
                    w.status, w.vendor_err
                ));
            }
            return Ok(());
        }
        match kind {
            rdma::WR_RECV => self.command(ci, i, w.byte_len as usize, now),
            rdma::WR_SEND => {
                c.fabric.work_done(kind, i);
                Ok(())
            }
            rdma::WR_READ => {
                c.fabric.work_done(kind, i);
                if c.fabric.closing {
                    return Ok(());
                }
                let at = c.fabric.stage_at(i);
                let cmd = &mut c.fabric.cmds[i];
                if let Some(sqe) = cmd.staged.take() {
                    let data = (at, cmd.remote_len as usize);
                    return self.core.capsule(&mut self.io, ci, &sqe, data, now);
                }
                match cmd.fetching.take() {
                    Some(tag) => self.core.data_fetched(&mut self.io, ci, tag as usize),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// A command arrived in receive buffer `i` (`len` bytes): to the core
    /// (its data in the capsule, or fetched by the core), or held until
    /// its data is fetched into staging; the buffer posted again.
    fn command(&mut self, ci: usize, i: usize, len: usize, now: u64) -> io::Result<()> {
        let c = self.io.conn(ci);
        if c.fabric.closing {
            return Ok(());
        }
        let Some((sqe, data)) = c.fabric.received(i, len) else {
            c.fabric
                .fail(&format!("a {len} byte message where a command was due"));
            return Ok(());
        };
        if !self.core.can_take(&mut self.io, ci) {
            let c = self.io.conn(ci);
            c.fabric
                .fail("more commands outstanding than its queue has entries");
            return Ok(());
        }
        let c = self.io.conn(ci);
        let Some(r) = c.fabric.begin(&sqe) else {
            c.fabric
                .fail("more commands outstanding than its queue has entries");
            return Ok(());
        };
        if fetched_first(c, &sqe) {
            if !c.fabric.stage(r, &sqe)? {
                c.fabric.send_completion(&failed(sqe.cid(), (0, 0x02)));
            }
        } else {
            self.core.capsule(&mut self.io, ci, &sqe, data, now)?;
        }
        let c = self.io.conn(ci);
        if !c.fabric.closing {
            if let Err(e) = c.fabric.post_receive(i) {
                c.fabric.fail(&format!("ibv_post_recv: {e}"));
            }
        }
        Ok(())
    }
}

/// Whether command `sqe`'s data must be fetched before the core sees it:
/// data from the host by keyed SGL, for anything but an I/O queue's
/// Write (whose data the core fetches into its slot): Connect, and admin
/// commands that carry data.
fn fetched_first(c: &QueuePair<RdmaQp>, sqe: &Sqe) -> bool {
    let (kind, len) = sqe.sgl_desc();
    let to_controller = match sqe.opcode() {
        codec::OPC_FABRICS => sqe.fctype() & 1 == 1,
        op => op & 1 == 1,
    };
    let io_write = matches!(c.queue, QueueRole::Io { .. }) && sqe.opcode() == codec::OPC_WRITE;
    kind >> 4 == codec::SGL_KEYED_KIND && len > 0 && to_controller && !io_write
}
