//! aio engine: Linux kernel AIO through raw syscalls (`io_setup`,
//! `io_submit`, `io_getevents`, `io_destroy`), like fio's `libaio` engine but
//! without libaio.
//!
//! Kernel AIO is only asynchronous with O_DIRECT: on a buffered file
//! `io_submit` does the whole read or write before it returns (the request is
//! then already complete when `reap` looks), so buffered "aio" measures
//! synchronous I/O with extra steps, exactly as fio's libaio engine does.
//!
//! One preallocated `Iocb` per slot and one pointer array; `queue` fills the
//! slot's iocb and appends its pointer, `submit` hands all staged pointers to
//! the kernel, `reap` collects events. None of these allocate.

use std::io;
use std::os::fd::RawFd;

use super::uring::{is_direct, probe_offset, ProbeBuf, PROBE_BS};
use super::{Completion, Engine, EngineSetup, IoRequest, OpKind};
use crate::results::target::FeatureProbe;

/// `aio_context_t`.
type AioContext = libc::c_ulong;

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
const IOCB_CMD_FSYNC: u16 = 2;

/// The kernel's `struct iocb` (include/uapi/linux/aio_abi.h) on a 64-bit
/// little-endian machine: `aio_key` comes before `aio_rw_flags`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Iocb {
    pub aio_data: u64,
    pub aio_key: u32,
    pub aio_rw_flags: i32,
    pub aio_lio_opcode: u16,
    pub aio_reqprio: i16,
    pub aio_fildes: u32,
    pub aio_buf: u64,
    pub aio_nbytes: u64,
    pub aio_offset: i64,
    pub aio_reserved2: u64,
    pub aio_flags: u32,
    pub aio_resfd: u32,
}

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct IoEvent {
    /// `aio_data` of the iocb: the slot.
    pub data: u64,
    /// Address of the iocb.
    pub obj: u64,
    /// Bytes transferred, or a negative errno.
    pub res: i64,
    pub res2: i64,
}

/// How many times `submit` retries a submission the kernel refused with
/// EAGAIN (out of resources) before failing the rest with -EAGAIN.
const EAGAIN_RETRIES: u32 = 10_000;

pub struct AioEngine {
    ctx: AioContext,
    fd: RawFd,
    /// One iocb per slot; never moves (boxed slice).
    iocbs: Box<[Iocb]>,
    /// Pointers to the staged iocbs, in queue order.
    staged: Vec<*mut Iocb>,
    /// Kernel events land here.
    events: Box<[IoEvent]>,
    /// Requests the kernel refused at submission, reported by the next `reap`.
    failed: Vec<Completion>,
    /// Submitted and not yet reaped.
    in_flight: usize,
}

// SAFETY: the engine exclusively owns its context, iocbs and pointer array
// (the pointers point into its own boxed slice); an AIO context belongs to
// the process, not to the thread that created it.
unsafe impl Send for AioEngine {}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl AioEngine {
    /// io_getevents for at least `want` (at most `max`) events, waiting at
    /// most `timeout` (none: until `want` arrived); appends them to `out`.
    fn get_events(
        &mut self,
        want: usize,
        max: usize,
        timeout: Option<&libc::timespec>,
        out: &mut Vec<Completion>,
    ) -> io::Result<usize> {
        let timeout = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
        let n = loop {
            // SAFETY: `events` has room for `max` events; `timeout` is null
            // or points to a timespec that outlives the call.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    want as libc::c_long,
                    max as libc::c_long,
                    self.events.as_mut_ptr(),
                    timeout,
                )
            };
            if r >= 0 {
                break r as usize;
            }
            let errno = last_errno();
            if errno != libc::EINTR {
                return Err(io::Error::from_raw_os_error(errno));
            }
            if !timeout.is_null() {
                break 0;
            }
        };
        for ev in &self.events[..n] {
            out.push(Completion {
                slot: ev.data as u32,
                result: ev.res,
            });
        }
        self.in_flight -= n;
        Ok(n)
    }

    /// Create an AIO context for `setup.depth` requests in flight.
    pub fn new(setup: &EngineSetup) -> io::Result<AioEngine> {
        let fd = setup.target.local_fd("aio")?;
        let depth = setup.depth.max(1) as usize;
        let mut ctx: AioContext = 0;
        // SAFETY: io_setup writes the new context id into `ctx`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_setup,
                depth as libc::c_long,
                &mut ctx as *mut AioContext,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            let hint = if e.raw_os_error() == Some(libc::EAGAIN) {
                " (the system-wide limit /proc/sys/fs/aio-max-nr is reached; raise it or lower the depth)"
            } else {
                ""
            };
            return Err(io::Error::new(
                e.kind(),
                format!("io_setup({depth}): {e}{hint}"),
            ));
        }
        Ok(AioEngine {
            ctx,
            fd,
            iocbs: vec![Iocb::default(); depth].into_boxed_slice(),
            staged: Vec::with_capacity(depth),
            events: vec![IoEvent::default(); depth].into_boxed_slice(),
            failed: Vec::with_capacity(depth),
            in_flight: 0,
        })
    }

    /// Record a request the kernel refused at submission as a completion.
    fn fail_staged(&mut self, idx: usize, errno: i32) {
        // SAFETY: staged pointers point into `self.iocbs`.
        let slot = unsafe { (*self.staged[idx]).aio_data } as u32;
        self.failed.push(Completion {
            slot,
            result: -(errno as i64),
        });
    }
}

impl Engine for AioEngine {
    #[inline]
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        let slot = req.slot as usize;
        if slot >= self.iocbs.len() || self.staged.len() == self.staged.capacity() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "aio: slot beyond the queue depth",
            ));
        }
        let cb = &mut self.iocbs[slot];
        *cb = Iocb {
            aio_data: req.slot as u64,
            aio_fildes: self.fd as u32,
            ..Iocb::default()
        };
        match req.op {
            OpKind::Read | OpKind::Write => {
                cb.aio_lio_opcode = if req.op == OpKind::Read {
                    IOCB_CMD_PREAD
                } else {
                    IOCB_CMD_PWRITE
                };
                cb.aio_buf = req.buf as u64;
                cb.aio_nbytes = req.len as u64;
                cb.aio_offset = req.offset as i64;
            }
            // The kernel rejects an fsync iocb with buf, nbytes or offset set.
            OpKind::Fsync => cb.aio_lio_opcode = IOCB_CMD_FSYNC,
        }
        let p: *mut Iocb = cb;
        self.staged.push(p);
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        let total = self.staged.len();
        let mut done = 0;
        let mut eagain = 0;
        while done < total {
            // SAFETY: `staged[done..]` are valid iocb pointers into `self.iocbs`,
            // whose buffers stay valid until completion (runner contract).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    (total - done) as libc::c_long,
                    self.staged.as_mut_ptr().add(done),
                )
            };
            if r > 0 {
                // Partial submission: retry the remainder.
                done += r as usize;
                self.in_flight += r as usize;
                continue;
            }
            let errno = if r == 0 { libc::EAGAIN } else { last_errno() };
            match errno {
                libc::EINTR => continue,
                libc::EAGAIN if eagain < EAGAIN_RETRIES => {
                    eagain += 1;
                    std::thread::yield_now();
                }
                libc::EAGAIN => {
                    // Still out of resources: fail the rest rather than spin.
                    while done < total {
                        self.fail_staged(done, libc::EAGAIN);
                        done += 1;
                    }
                }
                // The first remaining iocb is bad (EBADF, EINVAL, EFAULT...):
                // report it as that request's completion and go on.
                e => {
                    self.fail_staged(done, e);
                    done += 1;
                }
            }
        }
        self.staged.clear();
        Ok(total)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        let room = out.capacity() - out.len();
        let mut got = 0;
        while got < room {
            match self.failed.pop() {
                Some(c) => {
                    out.push(c);
                    got += 1;
                }
                None => break,
            }
        }
        let max = (room - got).min(self.events.len());
        if max == 0 || self.in_flight == 0 {
            return Ok(got);
        }
        let want = min.saturating_sub(got).min(self.in_flight).min(max);
        Ok(got + self.get_events(want, max, None, out)?)
    }

    fn reap_timeout(&mut self, timeout_ns: u64, out: &mut Vec<Completion>) -> io::Result<usize> {
        if !self.failed.is_empty() {
            return self.reap(0, out);
        }
        let max = (out.capacity() - out.len()).min(self.events.len());
        if max == 0 || self.in_flight == 0 {
            return Ok(0);
        }
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        self.get_events(1, max, Some(&ts), out)
    }

    fn waits_with_timeout(&self) -> bool {
        true
    }

    fn fsync(&mut self) -> io::Result<()> {
        // SAFETY: plain syscall on the engine's descriptor.
        if unsafe { libc::fsync(self.fd) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for AioEngine {
    fn drop(&mut self) {
        // io_destroy cancels what it can and waits for the rest, so no
        // request writes into a buffer after this returns.
        // SAFETY: our own context, destroyed once.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

/// Check kernel AIO on `fd` before a run: one real 4 KiB read through an
/// AIO context (at the first block holding data), and whether the requests
/// will really be asynchronous (only with O_DIRECT). Never fails; the second
/// entry's `detail` is the warning to show for a buffered aio job.
pub fn probe_aio(fd: RawFd) -> Vec<FeatureProbe> {
    let (supported, detail) = match probe_read(fd) {
        Ok(n) => (true, format!("aio: a 4 KiB probe read returned {n} bytes")),
        Err(why) => (
            false,
            format!(
                "aio is not usable on this target: {why}; use another engine (psync or io_uring)"
            ),
        ),
    };
    let direct = is_direct(fd);
    let async_detail = if direct {
        "aio requests run asynchronously (the target is open with O_DIRECT)".to_string()
    } else {
        "kernel AIO is synchronous without O_DIRECT: io_submit does each request before returning, so queue depth has no effect; run with direct I/O, or use io_uring for buffered asynchronous I/O".to_string()
    };
    vec![
        FeatureProbe {
            feature: "aio".into(),
            supported,
            detail,
        },
        FeatureProbe {
            feature: "aio asynchronous".into(),
            supported: direct,
            detail: async_detail,
        },
    ]
}

fn probe_read(fd: RawFd) -> Result<i64, String> {
    let buf = ProbeBuf::new().ok_or_else(|| "out of memory".to_string())?;
    let setup = EngineSetup::local(fd, 0, false, 1, (buf.ptr, PROBE_BS));
    let mut e = AioEngine::new(&setup).map_err(|e| e.to_string())?;
    let req = IoRequest {
        slot: 0,
        op: OpKind::Read,
        offset: probe_offset(fd),
        len: PROBE_BS as u32,
        buf: buf.ptr,
    };
    e.queue(req).map_err(|e| e.to_string())?;
    e.submit().map_err(|e| format!("io_submit: {e}"))?;
    let mut out = Vec::with_capacity(1);
    while out.is_empty() {
        e.reap(1, &mut out)
            .map_err(|e| format!("io_getevents: {e}"))?;
    }
    // io_destroy (in drop) waits for the read, so the buffer is free after.
    drop(e);
    drop(buf);
    match out[0].result {
        r if r >= 0 => Ok(r),
        r => Err(format!(
            "a 4 KiB read completed with {}",
            io::Error::from_raw_os_error((-r) as i32)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::test_support::*;
    use std::mem::{align_of, offset_of, size_of};
    use std::os::fd::AsRawFd;

    const SIZE: u64 = 1 << 20;

    #[test]
    fn aio_abi_layout() {
        assert_eq!(size_of::<Iocb>(), 64);
        assert_eq!(align_of::<Iocb>(), 8);
        assert_eq!(offset_of!(Iocb, aio_key), 8);
        assert_eq!(offset_of!(Iocb, aio_rw_flags), 12);
        assert_eq!(offset_of!(Iocb, aio_lio_opcode), 16);
        assert_eq!(offset_of!(Iocb, aio_fildes), 20);
        assert_eq!(offset_of!(Iocb, aio_buf), 24);
        assert_eq!(offset_of!(Iocb, aio_nbytes), 32);
        assert_eq!(offset_of!(Iocb, aio_offset), 40);
        assert_eq!(offset_of!(Iocb, aio_flags), 56);
        assert_eq!(offset_of!(Iocb, aio_resfd), 60);
        assert_eq!(size_of::<IoEvent>(), 32);
    }

    fn engine(file: &std::fs::File, pool: &AlignedPool, depth: u32) -> AioEngine {
        AioEngine::new(&setup_for(file, SIZE, depth, pool)).expect("aio engine")
    }

    #[test]
    fn aio_roundtrip_direct() {
        let dir = scratch_dir();
        let f = scratch_file(&dir, "d", SIZE, true);
        let mut pool = AlignedPool::new(16);
        let mut e = engine(&f, &pool, 16);
        roundtrip(&mut e, &mut pool, 16, 31);
    }

    #[test]
    fn aio_roundtrip_buffered() {
        let dir = scratch_dir();
        let f = scratch_file(&dir, "b", SIZE, false);
        let mut pool = AlignedPool::new(8);
        let mut e = engine(&f, &pool, 8);
        roundtrip(&mut e, &mut pool, 8, 32);
    }

    #[test]
    fn aio_errors_are_negative_errno_completions() {
        let dir = scratch_dir();
        let f = scratch_file(&dir, "e", SIZE, true);
        let pool = AlignedPool::new(4);
        let mut e = engine(&f, &pool, 4);
        // Read at EOF (block aligned): 0 bytes.
        let c = run_batch(&mut e, &[req(&pool, 0, OpKind::Read, SIZE)], 4);
        assert_eq!(c[0].result, 0);
        // Unaligned O_DIRECT read next to a good one: -EINVAL for it only.
        let mut bad = req(&pool, 1, OpKind::Read, 0);
        bad.offset = 513;
        let c = run_batch(
            &mut e,
            &[
                req(&pool, 0, OpKind::Read, 0),
                bad,
                req(&pool, 2, OpKind::Read, 8192),
            ],
            4,
        );
        for x in c {
            let expect = if x.slot == 1 {
                -(libc::EINVAL as i64)
            } else {
                BS as i64
            };
            assert_eq!(x.result, expect, "slot {}", x.slot);
        }
        // A request the kernel refuses at submission (bad descriptor) comes
        // back as a completion too, and the others still run.
        let mut bad_fd = AioEngine::new(&setup_for(&f, SIZE, 4, &pool)).unwrap();
        bad_fd.queue(req(&pool, 0, OpKind::Read, 0)).unwrap();
        bad_fd.fd = -1;
        bad_fd.queue(req(&pool, 1, OpKind::Read, 0)).unwrap();
        bad_fd.fd = f.as_raw_fd();
        bad_fd.queue(req(&pool, 2, OpKind::Read, 4096)).unwrap();
        assert_eq!(bad_fd.submit().unwrap(), 3);
        let mut out = Vec::with_capacity(4);
        let mut seen = 0;
        while seen < 3 {
            seen += bad_fd.reap(1, &mut out).unwrap();
        }
        for x in &out {
            let expect = if x.slot == 1 {
                -(libc::EBADF as i64)
            } else {
                BS as i64
            };
            assert_eq!(x.result, expect, "slot {}", x.slot);
        }
    }

    #[test]
    fn aio_probe_reports_buffered_as_synchronous() {
        let dir = scratch_dir();
        let d = scratch_file(&dir, "pd", SIZE, true);
        let p = probe_aio(d.as_raw_fd());
        assert!(p[0].supported && p[1].supported, "{p:?}");
        let b = scratch_file(&dir, "pb", SIZE, false);
        let p = probe_aio(b.as_raw_fd());
        assert!(p[0].supported, "{}", p[0].detail);
        assert!(
            !p[1].supported && p[1].detail.contains("O_DIRECT"),
            "{}",
            p[1].detail
        );
        assert!(!probe_aio(-1)[0].supported);
    }

    #[test]
    fn aio_deep_queue_each_slot_once() {
        let dir = scratch_dir();
        let f = scratch_file(&dir, "q", SIZE, true);
        let pool = AlignedPool::new(64);
        let mut e = engine(&f, &pool, 64);
        let reqs: Vec<IoRequest> = (0..64)
            .map(|s| req(&pool, s, OpKind::Read, s as u64 * 4096))
            .collect();
        let c = run_batch(&mut e, &reqs, 64);
        assert!(c.iter().all(|c| c.result == BS as i64));
        let mut out = Vec::with_capacity(64);
        assert_eq!(
            e.reap(3, &mut out).unwrap(),
            0,
            "min is clamped to what is in flight"
        );
    }
}
