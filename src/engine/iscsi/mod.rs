//! The iSCSI engine (`--target iscsi://HOST:PORT/IQN/LUN`): libiscsi's
//! asynchronous API, one session per worker (`--jobs N` = N sessions).
//! Login, TEST UNIT READY until the UNIT ATTENTION every new session gets
//! (power on or reset) is cleared, READ CAPACITY(16) for the size and block
//! length, then READ(16)/WRITE(16) straight into and out of the slot's
//! buffer (an iovec, no copy) pipelined to the depth, SYNCHRONIZE CACHE(16)
//! for fsync. libiscsi's own reconnect is off: a lost session is an error.
//!
//! Hot path: `queue` builds the task (libiscsi allocates it and queues its
//! PDU), `reap` polls the socket and lets libiscsi write what is queued and
//! parse what arrived; its callback pushes (slot, status) into a
//! preallocated list. No clock read.

mod ffi;

use std::ffi::{c_int, c_void, CString};
use std::io;

use ffi::{IscsiContext, Lib, ScsiIovec, ScsiTaskHead};

use super::{Completion, Engine, EngineSetup, EngineTarget, IoRequest, OpKind};
use crate::plan::endpoint::{RemoteEndpoint, RemoteResource};

/// What a session found out about the logical unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LunInfo {
    pub size: u64,
    pub block_len: u32,
}

/// Where a task's callback reports to: the engine's list of finished slots.
struct CbSlot {
    done: *mut Vec<(u32, i32)>,
    slot: u32,
}

/// One logged-in session.
struct Session {
    lib: &'static Lib,
    ctx: *mut IscsiContext,
    lun: c_int,
    ep: String,
}

impl Session {
    fn connect(ep: &RemoteEndpoint) -> io::Result<(Session, LunInfo)> {
        let lib = ffi::lib().map_err(|e| io::Error::new(io::ErrorKind::Unsupported, e))?;
        let RemoteResource::IscsiLun { iqn, lun } = &ep.resource else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not an iscsi:// target",
            ));
        };
        let cstr = |s: &str| {
            CString::new(s)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in the URL"))
        };
        reachable(ep)?;
        let initiator = cstr(&format!(
            "iqn.2025-11.io.iolab:initiator-{}",
            std::process::id()
        ))?;
        // SAFETY: a NUL-terminated name; the context is destroyed in Drop.
        let ctx = unsafe { (lib.create_context)(initiator.as_ptr()) };
        if ctx.is_null() {
            return Err(io::Error::other("libiscsi could not create a context"));
        }
        let s = Session {
            lib,
            ctx,
            lun: *lun as c_int,
            ep: ep.to_string(),
        };
        let portal = if ep.host.contains(':') {
            format!("[{}]:{}", ep.host, ep.port)
        } else {
            format!("{}:{}", ep.host, ep.port)
        };
        let (target, portal) = (cstr(iqn)?, cstr(&portal)?);
        // SAFETY: a live context and NUL-terminated strings.
        unsafe {
            (lib.set_targetname)(ctx, target.as_ptr());
            (lib.set_session_type)(ctx, ffi::ISCSI_SESSION_NORMAL);
            (lib.set_header_digest)(ctx, ffi::ISCSI_HEADER_DIGEST_NONE_CRC32C);
            (lib.set_noautoreconnect)(ctx, 1);
            if (lib.full_connect_sync)(ctx, portal.as_ptr(), s.lun) != 0 {
                return Err(s.error(io::ErrorKind::ConnectionRefused, "login failed"));
            }
        }
        s.until_ready()?;
        let info = s.read_capacity()?;
        Ok((s, info))
    }

    fn error(&self, kind: io::ErrorKind, what: &str) -> io::Error {
        io::Error::new(
            kind,
            format!("{}: {what}: {}", self.ep, ffi::error_of(self.lib, self.ctx)),
        )
    }

    /// TEST UNIT READY until GOOD: the first command of a session gets a
    /// UNIT ATTENTION (29/00, power on or reset), which is normal.
    fn until_ready(&self) -> io::Result<()> {
        for _ in 0..20 {
            // SAFETY: a logged-in context; the task is freed below.
            let t = unsafe { (self.lib.testunitready_sync)(self.ctx, self.lun) };
            if t.is_null() {
                return Err(self.error(io::ErrorKind::Other, "TEST UNIT READY failed"));
            }
            // SAFETY: a task libiscsi returned; read, then freed once.
            let (status, key) = unsafe { ((*t).status, (*t).sense_key) };
            unsafe { (self.lib.free_scsi_task)(t) };
            match (status, key) {
                (ffi::SCSI_STATUS_GOOD, _) => return Ok(()),
                (
                    ffi::SCSI_STATUS_CHECK_CONDITION,
                    ffi::SENSE_KEY_UNIT_ATTENTION | ffi::SENSE_KEY_NOT_READY,
                ) => std::thread::sleep(std::time::Duration::from_millis(5)),
                _ => {
                    return Err(io::Error::other(format!(
                        "{}: the LUN is not ready (SCSI status {status:#x}, sense key {key})",
                        self.ep
                    )))
                }
            }
        }
        Err(io::Error::other(format!(
            "{}: the LUN never became ready",
            self.ep
        )))
    }

    fn read_capacity(&self) -> io::Result<LunInfo> {
        // SAFETY: a logged-in context; the task is freed below.
        let t = unsafe { (self.lib.readcapacity16_sync)(self.ctx, self.lun) };
        if t.is_null() {
            return Err(self.error(io::ErrorKind::Other, "READ CAPACITY(16) failed"));
        }
        // SAFETY: a task libiscsi returned; its data unmarshalled by libiscsi.
        let cap = unsafe {
            let ok = (*t).status == ffi::SCSI_STATUS_GOOD;
            let rc = (self.lib.datain_unmarshall)(t) as *const ffi::ReadCapacity16;
            let v = (ok && !rc.is_null()).then(|| ((*rc).returned_lba, (*rc).block_length));
            (self.lib.free_scsi_task)(t);
            v
        };
        let (lba, block_len) =
            cap.ok_or_else(|| io::Error::other(format!("{}: READ CAPACITY(16) failed", self.ep)))?;
        checked_capacity(&self.ep, lba, block_len)
    }
}

/// READ CAPACITY(16)'s last LBA and block length, refused where no real
/// LUN could say them: a block length of 0 or over 1 MiB, a size past
/// 2^63 - 1 bytes.
fn checked_capacity(ep: &str, lba: u64, block_len: u32) -> io::Result<LunInfo> {
    let bad = |why: String| io::Error::new(io::ErrorKind::InvalidData, format!("{ep}: {why}"));
    if block_len == 0 || block_len > 1 << 20 {
        return Err(bad(format!(
            "READ CAPACITY(16) block length {block_len} is not 1 byte to 1 MiB"
        )));
    }
    let size = lba
        .checked_add(1)
        .and_then(|n| n.checked_mul(block_len as u64))
        .filter(|&n| n <= i64::MAX as u64)
        .ok_or_else(|| {
            bad(format!(
                "READ CAPACITY(16) says {lba} + 1 blocks of {block_len} bytes, past 2^63 - 1 bytes"
            ))
        })?;
    Ok(LunInfo { size, block_len })
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: the context made in `connect`, logged out and destroyed once.
        unsafe {
            (self.lib.logout_sync)(self.ctx);
            (self.lib.destroy_context)(self.ctx);
        }
    }
}

/// libiscsi's completion callback: record (slot, status) and free the task.
unsafe extern "C" fn on_complete(
    _ctx: *mut IscsiContext,
    status: c_int,
    task: *mut c_void,
    private: *mut c_void,
) {
    // SAFETY: `private` is the slot's CbSlot, alive while the engine is;
    // `task` is the finished task, ours to free.
    unsafe {
        let cb = &*(private as *const CbSlot);
        let mut result = status;
        let task = task as *mut ScsiTaskHead;
        if !task.is_null() {
            if status == ffi::SCSI_STATUS_CHECK_CONDITION {
                result = -(match (*task).sense_key {
                    ffi::SENSE_KEY_DATA_PROTECTION => libc::EPERM,
                    ffi::SENSE_KEY_ILLEGAL_REQUEST => libc::EINVAL,
                    _ => libc::EIO,
                });
            }
            (ffi::lib().expect("loaded").free_scsi_task)(task);
        }
        (*cb.done).push((cb.slot, result));
    }
}

pub struct IscsiEngine {
    session: Session,
    info: LunInfo,
    /// One per slot plus one for SYNCHRONIZE CACHE; boxed so their
    /// addresses stay put for libiscsi.
    cbs: Box<[CbSlot]>,
    iovs: Box<[ScsiIovec]>,
    /// Boxed: callbacks hold its address while the engine itself moves.
    #[allow(clippy::box_collection)]
    done: Box<Vec<(u32, i32)>>,
    lens: Vec<u32>,
    in_flight: usize,
    staged: usize,
}

impl IscsiEngine {
    pub fn new(setup: &EngineSetup) -> io::Result<IscsiEngine> {
        let EngineTarget::Remote { endpoint, .. } = &setup.target else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the iscsi engine needs an iscsi:// target",
            ));
        };
        let (session, info) = Session::connect(endpoint)?;
        let depth = setup.depth.max(1) as usize;
        let mut done = Box::new(Vec::with_capacity(depth + 1));
        let done_ptr: *mut Vec<(u32, i32)> = &mut *done;
        let cbs = (0..=depth)
            .map(|i| CbSlot {
                done: done_ptr,
                slot: i as u32,
            })
            .collect();
        let iovs = (0..=depth)
            .map(|_| ScsiIovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            })
            .collect();
        Ok(IscsiEngine {
            session,
            info,
            cbs,
            iovs,
            done,
            lens: vec![0; depth + 1],
            in_flight: 0,
            staged: 0,
        })
    }

    pub fn info(&self) -> LunInfo {
        self.info
    }

    fn lost(&self, what: &str) -> io::Error {
        let e = self.session.error(io::ErrorKind::ConnectionAborted, what);
        io::Error::new(
            e.kind(),
            format!("{e} ({} requests in flight)", self.in_flight),
        )
    }

    /// Let libiscsi send and receive what the socket allows now (`revents`),
    /// or after waiting up to `timeout_ms` (-1: without limit).
    fn service(&mut self, timeout_ms: c_int) -> io::Result<()> {
        let lib = self.session.lib;
        let ctx = self.session.ctx;
        // SAFETY: a live context.
        let mut p = libc::pollfd {
            fd: unsafe { (lib.get_fd)(ctx) },
            events: unsafe { (lib.which_events)(ctx) } as i16,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINTR) {
                Ok(())
            } else {
                Err(e)
            };
        }
        if r == 0 {
            return Ok(());
        }
        // SAFETY: a live context; callbacks run inside and touch only `done`.
        if unsafe { (lib.service)(ctx, p.revents as c_int) } < 0 {
            return Err(self.lost("the session failed"));
        }
        Ok(())
    }

    /// Hand the finished slots to the runner. A task libiscsi cancelled,
    /// failed or timed out means the session is gone: an error naming it.
    fn drain(&mut self, out: &mut Vec<Completion>) -> io::Result<usize> {
        let mut got = 0;
        let flush = self.cbs.len() as u32 - 1;
        let mut lost = false;
        for (slot, status) in self.done.drain(..) {
            self.in_flight -= 1;
            if matches!(
                status,
                ffi::SCSI_STATUS_CANCELLED | ffi::SCSI_STATUS_ERROR | ffi::SCSI_STATUS_TIMEOUT
            ) {
                lost = true;
            }
            if slot == flush {
                self.lens[slot as usize] = status as u32;
                continue;
            }
            let result = match status {
                ffi::SCSI_STATUS_GOOD => self.lens[slot as usize] as i64,
                s if s < 0 => s as i64,
                _ => -(libc::EIO as i64),
            };
            out.push(Completion { slot, result });
            got += 1;
        }
        if lost {
            return Err(self.lost("the session was lost"));
        }
        Ok(got)
    }
}

impl Engine for IscsiEngine {
    #[inline]
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        let s = req.slot as usize;
        let bl = self.info.block_len;
        if !req.offset.is_multiple_of(bl as u64) || !req.len.is_multiple_of(bl) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("iSCSI requests must be multiples of the LUN's {bl}-byte blocks"),
            ));
        }
        self.lens[s] = req.len;
        self.iovs[s] = ScsiIovec {
            iov_base: req.buf.cast(),
            iov_len: req.len as usize,
        };
        let lib = self.session.lib;
        let (ctx, lun) = (self.session.ctx, self.session.lun);
        let lba = req.offset / bl as u64;
        let cb = &self.cbs[s] as *const CbSlot as *mut c_void;
        let iov = &mut self.iovs[s] as *mut ScsiIovec;
        // SAFETY: a live context; the slot's buffer, iovec and callback slot
        // stay valid until the callback has run.
        let task = unsafe {
            match req.op {
                OpKind::Read => (lib.read16_iov_task)(
                    ctx,
                    lun,
                    lba,
                    req.len,
                    bl as c_int,
                    0,
                    0,
                    0,
                    0,
                    0,
                    on_complete,
                    cb,
                    iov,
                    1,
                ),
                OpKind::Write => (lib.write16_iov_task)(
                    ctx,
                    lun,
                    lba,
                    std::ptr::null_mut(),
                    req.len,
                    bl as c_int,
                    0,
                    0,
                    0,
                    0,
                    0,
                    on_complete,
                    cb,
                    iov,
                    1,
                ),
                OpKind::Fsync => {
                    (lib.synchronizecache16_task)(ctx, lun, 0, 0, 0, 0, on_complete, cb)
                }
            }
        };
        if task.is_null() {
            return Err(self.lost("cannot queue a command"));
        }
        self.staged += 1;
        Ok(())
    }

    /// With other commands in flight, these go out at the next `reap`: its
    /// poll finds the socket writable and libiscsi writes every queued PDU
    /// in one go, so a batch of refills costs one write (iscsi-perf's loop
    /// does the same). With none in flight they go now: nothing else would
    /// wake the target.
    #[inline]
    fn submit(&mut self) -> io::Result<usize> {
        let n = self.staged;
        self.staged = 0;
        let idle = self.in_flight == 0;
        self.in_flight += n;
        if idle && n > 0 {
            let (lib, ctx) = (self.session.lib, self.session.ctx);
            // SAFETY: a live context: write what the socket takes now.
            if unsafe { (lib.service)(ctx, libc::POLLOUT as c_int) } < 0 {
                return Err(self.lost("the session failed"));
            }
        }
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        let want = min.min(self.in_flight + self.done.len());
        let mut got = self.drain(out)?;
        if got == 0 && want == 0 && self.in_flight > 0 {
            self.service(0)?;
            got += self.drain(out)?;
        }
        while got < want {
            self.service(-1)?;
            got += self.drain(out)?;
        }
        Ok(got)
    }

    fn reap_timeout(&mut self, timeout_ns: u64, out: &mut Vec<Completion>) -> io::Result<usize> {
        let got = self.drain(out)?;
        if got > 0 || self.in_flight == 0 {
            return Ok(got);
        }
        self.service((timeout_ns / 1_000_000).min(i32::MAX as u64) as c_int)?;
        self.drain(out)
    }

    fn waits_with_timeout(&self) -> bool {
        true
    }

    fn fsync(&mut self) -> io::Result<()> {
        let s = self.cbs.len() - 1;
        self.queue(IoRequest {
            slot: s as u32,
            op: OpKind::Fsync,
            offset: 0,
            len: 0,
            buf: std::ptr::null_mut(),
        })?;
        // Pending until the callback stores the status here.
        self.lens[s] = u32::MAX;
        self.submit()?;
        let mut none = Vec::new();
        while self.lens[s] == u32::MAX {
            self.service(-1)?;
            self.drain(&mut none)?;
        }
        match self.lens[s] as i32 {
            ffi::SCSI_STATUS_GOOD => Ok(()),
            e if e < 0 => Err(io::Error::from_raw_os_error(-e)),
            _ => Err(io::Error::other(format!(
                "{}: SYNCHRONIZE CACHE failed",
                self.session.ep
            ))),
        }
    }
}

/// Log in, ask the LUN its size and block length, log out.
pub fn probe(ep: &RemoteEndpoint) -> io::Result<LunInfo> {
    Session::connect(ep).map(|(_, info)| info)
}

/// Whether libiscsi can be loaded; the reason when not.
pub fn unavailable() -> Option<String> {
    ffi::lib().err()
}

/// A TCP connect to the portal first: with nothing listening, libiscsi
/// says only "iscsi_service_reconnect_if_loggedin. Can not reconnect
/// right now"; this says what the other initiators say.
fn reachable(ep: &RemoteEndpoint) -> io::Result<()> {
    use std::net::{TcpStream, ToSocketAddrs};
    let addrs: Vec<_> = (ep.host.as_str(), ep.port)
        .to_socket_addrs()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot resolve {}: {e}", ep.host)))?
        .collect();
    let mut last = io::Error::other("no address");
    for a in &addrs {
        match TcpStream::connect_timeout(a, crate::engine::peer_wait::HANDSHAKE_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(io::Error::new(
        last.kind(),
        format!("{ep}: cannot connect to {}:{}: {last}", ep.host, ep.port),
    ))
}

#[cfg(test)]
mod tests {
    use super::checked_capacity;

    #[test]
    fn capacities_no_lun_could_have_are_refused() {
        let ok = checked_capacity("iscsi://h/t/0", (1 << 20) - 1, 512).unwrap();
        assert_eq!((ok.size, ok.block_len), (512 << 20, 512));
        for (lba, bl, says) in [
            (100, 0, "block length 0"),
            (100, 2 << 20, "block length 2097152"),
            (u64::MAX, 512, "past 2^63 - 1"),
            (1 << 60, 4096, "past 2^63 - 1"),
        ] {
            let e = checked_capacity("iscsi://h/t/0", lba, bl)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says) && e.contains("iscsi://h/t/0"), "{e}");
        }
    }
}
