//! The NVMe over RDMA engine: iolab's own initiator (`--target
//! nvme-rdma://HOST:PORT/NQN?nsid=N`). Each worker makes its own
//! association: an admin queue (connected, enabled and identified by the
//! control path NVMe/TCP uses, then kept alive by `keep_alive` on a thread
//! of its own) and one I/O queue pair on which requests are pipelined up
//! to the depth, the command identifier being the request's slot. The
//! runner's buffer pool is registered with the queue pair, so a request's
//! keyed SGL names its own buffer: the controller RDMA WRITEs a read's
//! data into it and RDMA READs a write's from it, no copy on the host.
//!
//! Hot path: a command is written into its slot's send buffer and posted
//! (`ibv_post_send` through the provider's ops, no system call for
//! soft-RoCE's and an RNIC's doorbell alike); completions are polled from
//! the completion queue (the SPDK line: the engine never sleeps in the
//! kernel, its waits spin on the queue and check the limits every
//! `peer_wait::WAKE_NS`).

use std::io;
use std::mem::ManuallyDrop;
use std::net::{SocketAddr, ToSocketAddrs};

use super::queue::{RdmaQueue, Shape};
use crate::engine::nvmetcp::codec::{self, Cqe, Sqe, CQE_LEN};
use crate::engine::nvmetcp::engine::{host_identity, kato_ms, max_transfer};
use crate::engine::nvmetcp::handshake::{self, ControllerInfo, Params};
use crate::engine::nvmetcp::keep_alive::AdminKeeper;
use crate::engine::peer_wait::{Watch, HANDSHAKE_TIMEOUT};
use crate::engine::{Completion, Engine, EngineSetup, EngineTarget, IoRequest, OpKind};
use crate::measure::clock::mono_now_ns;
use crate::native::verbs::{self, Wc};
use crate::plan::endpoint::{RemoteEndpoint, RemoteResource};

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    busy: bool,
    len: u32,
    /// Posted, and its completion received (CLOCK_MONOTONIC).
    t_taken: u64,
    t_received: u64,
    /// Negative errno of a failed completion (the flush slot's), 0 if none.
    error: i32,
}

pub struct NvmeRdmaEngine {
    /// Dropped by hand, before the admin queue's shutdown.
    q: ManuallyDrop<RdmaQueue>,
    peer: String,
    nsid: u32,
    lba_shift: u32,
    flush_works: bool,
    pool_key: u32,
    /// One per request slot, plus one for a flush.
    slots: Vec<Slot>,
    in_flight: usize,
    staged: usize,
    wc: Vec<Wc>,
    watch: Watch,
    admin: AdminKeeper,
    info: ControllerInfo,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn setup_error(ep: &RemoteEndpoint, e: anyhow::Error) -> io::Error {
    io::Error::other(format!("{ep}: {e:#}"))
}

/// The address and connection parameters of an `nvme-rdma://` endpoint.
pub fn params_of(ep: &RemoteEndpoint, queue_size: u16) -> io::Result<(SocketAddr, Params)> {
    let RemoteResource::NvmeNamespace {
        nqn,
        nsid,
        keep_alive_tmo,
        ..
    } = &ep.resource
    else {
        return Err(invalid(
            "the nvme-rdma engine needs an nvme-rdma:// target".into(),
        ));
    };
    let addr = (ep.host.as_str(), ep.port)
        .to_socket_addrs()
        .map_err(|e| invalid(format!("{ep}: resolving {}: {e}", ep.host)))?
        .next()
        .ok_or_else(|| invalid(format!("{ep}: {} has no address", ep.host)))?;
    let (hostid, hostnqn) = host_identity();
    Ok((
        addr,
        Params {
            subnqn: nqn.clone(),
            hostnqn,
            hostid,
            nsid: *nsid,
            digests: Default::default(),
            queue_size,
            kato_ms: kato_ms(*keep_alive_tmo),
        },
    ))
}

impl NvmeRdmaEngine {
    /// Make the association: admin queue, controller enabled, I/O queue
    /// pair with the buffer pool registered.
    pub fn new(setup: &EngineSetup) -> io::Result<NvmeRdmaEngine> {
        let EngineTarget::Remote {
            endpoint, limits, ..
        } = &setup.target
        else {
            return Err(invalid(
                "the nvme-rdma engine needs an nvme-rdma:// target".into(),
            ));
        };
        if let Some(why) = verbs::unavailable() {
            return Err(invalid(format!("{endpoint}: {why}")));
        }
        let depth = setup.depth.max(1) as usize;
        let (addr, p) = params_of(endpoint, (depth + 2).min(u16::MAX as usize) as u16)?;
        let (admin, info) = super::connect_admin(addr, &p, HANDSHAKE_TIMEOUT)
            .map_err(|e| setup_error(endpoint, e))?;
        let admin = AdminKeeper::start(admin, p.kato_ms)?;
        let entries = (p.queue_size as usize).min(info.cap.mqes as usize + 1);
        if entries < depth + 2 {
            return Err(invalid(format!(
                "{endpoint}: the controller's queues hold {} entries (CAP.MQES), fewer than --qd {depth} needs",
                info.cap.mqes as u32 + 1
            )));
        }
        let max_bs = setup.pool_len / depth;
        if max_bs as u64 > max_transfer(&info) || max_bs as u32 > codec::KEYED_MAX {
            return Err(invalid(format!(
                "{endpoint}: blocks of {max_bs} bytes are larger than the controller's maximum transfer of {} (MDTS)",
                max_transfer(&info).min(codec::KEYED_MAX as u64)
            )));
        }
        // The slots' own data buffers carry only the Connect's 1 KiB (the
        // requests' data is the registered pool's).
        let shape = Shape {
            slots: entries,
            receives: entries,
            data_len: codec::CONNECT_DATA_LEN,
        };
        let q = RdmaQueue::open(
            addr,
            1,
            shape,
            HANDSHAKE_TIMEOUT,
            Some((setup.pool_base, setup.pool_len)),
        )
        .and_then(|mut q| {
            handshake::fabrics_connect(&mut q, &p, 1, entries as u16 - 1, info.cntlid)?;
            Ok(q)
        })
        .map_err(|e| setup_error(endpoint, e))?;
        let pool_key = q
            .pool_rkey()
            .ok_or_else(|| invalid(format!("{endpoint}: no buffer pool to register")))?;
        Ok(NvmeRdmaEngine {
            q: ManuallyDrop::new(q),
            peer: endpoint.to_string(),
            nsid: p.nsid,
            lba_shift: info.ns.block_size.trailing_zeros(),
            flush_works: info.id.vwc,
            pool_key,
            slots: vec![Slot::default(); depth + 1],
            in_flight: 0,
            staged: 0,
            wc: vec![Wc::default(); 2 * entries],
            watch: Watch::new(*limits),
            admin,
            info,
        })
    }

    /// What the admin queue learned about the controller and namespace.
    pub fn info(&self) -> &ControllerInfo {
        &self.info
    }

    fn post(&mut self, s: usize, sqe: &Sqe, buf: u64) -> io::Result<()> {
        self.slots[s] = Slot {
            busy: true,
            len: sqe.transfer_len(),
            t_taken: mono_now_ns(),
            t_received: 0,
            error: 0,
        };
        self.q
            .post_command(s, sqe, buf, self.pool_key)
            .map_err(|e| self.lost(e))?;
        self.staged += 1;
        Ok(())
    }

    fn lost(&self, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!(
                "NVMe/RDMA I/O queue to {}: {e} ({} commands in flight)",
                self.peer, self.in_flight
            ),
        )
    }

    /// Take what the completion queue holds; completions of requests
    /// appended to `out`.
    fn drain(&mut self, out: &mut Vec<Completion>) -> io::Result<usize> {
        let mut wc = std::mem::take(&mut self.wc);
        let polled = self.q.poll(&mut wc);
        let result = polled.and_then(|n| {
            let mut got = 0;
            for w in &wc[..n] {
                got += self.on_completion(w, out)?;
            }
            Ok(got)
        });
        self.wc = wc;
        result
    }

    fn on_completion(&mut self, w: &Wc, out: &mut Vec<Completion>) -> io::Result<usize> {
        if w.status != verbs::WC_SUCCESS {
            return Err(self.lost(io::Error::other(format!(
                "a work request failed (ibv_wc status {}, vendor error {:#x})",
                w.status, w.vendor_err
            ))));
        }
        let (i, recv) = RdmaQueue::wr_of(w.wr_id);
        if !recv {
            return Ok(0);
        }
        // A message shorter than a completion would leave an older one's
        // bytes in the buffer: refused before it is read.
        let whole = w.byte_len as usize >= CQE_LEN;
        let cqe = self.q.completion(i).filter(|_| whole);
        self.q
            .post_receive(i)
            .map_err(|e| self.lost(io::Error::other(format!("{e:#}"))))?;
        let cqe = cqe.ok_or_else(|| {
            bad(format!(
                "a {} byte message where a completion was due",
                w.byte_len
            ))
        })?;
        let s = cqe.cid as usize;
        if s >= self.slots.len() || !self.slots[s].busy {
            return Err(bad(format!(
                "the controller answered command {}, which is not in flight",
                cqe.cid
            )));
        }
        Ok(self.complete(s, &cqe, out))
    }

    fn complete(&mut self, s: usize, cqe: &Cqe, out: &mut Vec<Completion>) -> usize {
        let flush_slot = s == self.slots.len() - 1;
        let slot = &mut self.slots[s];
        slot.busy = false;
        slot.t_received = mono_now_ns();
        self.in_flight -= 1;
        let result = if cqe.ok() {
            slot.len as i64
        } else {
            -(codec::errno_of(cqe) as i64)
        };
        if flush_slot {
            slot.error = result.min(0) as i32;
            return 0;
        }
        out.push(Completion {
            slot: s as u32,
            result,
        });
        1
    }

    fn oldest_in_flight(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter(|s| s.busy)
            .map(|s| s.t_taken)
            .min()
    }

    /// Spin on the completion queue until `want` completions or `until_ns`
    /// (CLOCK_MONOTONIC; u64::MAX: none), checking the limits every
    /// `WAKE_NS`.
    fn spin(&mut self, want: usize, until_ns: u64, out: &mut Vec<Completion>) -> io::Result<usize> {
        let mut got = 0;
        loop {
            let drained = self.drain(out)?;
            got += drained;
            if got >= want || self.in_flight == 0 {
                return Ok(got);
            }
            let now = mono_now_ns();
            if now >= until_ns {
                return Ok(got);
            }
            if self.watch.due(now) {
                let oldest = self.oldest_in_flight();
                self.watch
                    .check(now, oldest)
                    .map_err(|g| self.lost(g.error()))?;
            }
            if drained == 0 {
                // Nothing came: let a target or the RDMA stack's work on
                // this CPU run (soft-RoCE's is the kernel's; on a shared
                // CPU a pure spin starves it for a whole time slice).
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl Engine for NvmeRdmaEngine {
    #[inline]
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        let s = req.slot as usize;
        let cid = req.slot as u16;
        let slba = req.offset >> self.lba_shift;
        let blocks = req.len >> self.lba_shift;
        let sqe = match req.op {
            OpKind::Read => Sqe::read(cid, self.nsid, slba, blocks, req.len),
            OpKind::Write => Sqe::write(cid, self.nsid, slba, blocks, req.len, false),
            OpKind::Fsync => Sqe::flush(cid, self.nsid),
        };
        self.post(s, &sqe, req.buf as u64)
    }

    #[inline]
    fn submit(&mut self) -> io::Result<usize> {
        let n = self.staged;
        self.staged = 0;
        self.in_flight += n;
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        let want = min.min(self.in_flight);
        self.spin(want, u64::MAX, out)
    }

    fn reap_timeout(&mut self, timeout_ns: u64, out: &mut Vec<Completion>) -> io::Result<usize> {
        let until = mono_now_ns().saturating_add(timeout_ns);
        self.spin(1, until, out)
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
        self.post(s, &Sqe::flush(s as u16, self.nsid), 0)?;
        self.submit()?;
        // Until nothing is in flight: the flush's completion is not counted.
        self.spin(usize::MAX, u64::MAX, &mut Vec::new())?;
        match self.slots[s].error {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(-e)),
        }
    }
}

impl Drop for NvmeRdmaEngine {
    fn drop(&mut self) {
        // The I/O queue pair first, then the controller's shutdown on the
        // admin queue, as Linux's host does.
        // SAFETY: dropped once, here; never used after.
        unsafe { ManuallyDrop::drop(&mut self.q) };
        self.admin.stop();
    }
}

/// Ask the controller about the namespace without running anything.
pub fn probe(ep: &RemoteEndpoint) -> io::Result<ControllerInfo> {
    let (addr, p) = params_of(ep, 2)?;
    if let Some(why) = verbs::unavailable() {
        return Err(invalid(format!("{ep}: {why}")));
    }
    let (mut admin, info) =
        super::connect_admin(addr, &p, HANDSHAKE_TIMEOUT).map_err(|e| setup_error(ep, e))?;
    let _ = crate::engine::nvmetcp::keep_alive::shutdown(&mut admin);
    Ok(info)
}
