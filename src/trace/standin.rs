//! Stand-in aio and io_uring engines for `iolab trace`, used only until the
//! core's engines (src/engine/aio.rs, uring.rs) exist; they implement the
//! core's `Engine` trait so the swap is one line in `driver::make_engine`.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, types, IoUring};

use crate::engine::{Completion, Engine, IoRequest, OpKind};

/// io_uring with one read/write SQE per request; user_data is the slot.
pub struct UringStandin {
    ring: IoUring,
    fd: RawFd,
}

impl UringStandin {
    pub fn new(fd: RawFd, depth: u32, sqpoll: bool) -> io::Result<Self> {
        let ring = if sqpoll {
            IoUring::builder().setup_sqpoll(2000).build(depth.max(1))?
        } else {
            IoUring::new(depth.max(1))?
        };
        Ok(UringStandin { ring, fd })
    }
}

impl Engine for UringStandin {
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        let sqe = match req.op {
            OpKind::Read => opcode::Read::new(types::Fd(self.fd), req.buf, req.len)
                .offset(req.offset)
                .build(),
            OpKind::Write => opcode::Write::new(types::Fd(self.fd), req.buf, req.len)
                .offset(req.offset)
                .build(),
            OpKind::Fsync => opcode::Fsync::new(types::Fd(self.fd)).build(),
        }
        .user_data(u64::from(req.slot));
        // SAFETY: the buffer stays valid until the request completes (runner contract).
        unsafe { self.ring.submission().push(&sqe) }
            .map_err(|_| io::Error::other("submission queue full"))
    }

    fn submit(&mut self) -> io::Result<usize> {
        self.ring.submit()
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        if min > 0 && self.ring.completion().is_empty() {
            self.ring.submit_and_wait(min)?;
        }
        let mut n = 0;
        for cqe in self.ring.completion() {
            out.push(Completion {
                slot: cqe.user_data() as u32,
                result: i64::from(cqe.result()),
            });
            n += 1;
        }
        Ok(n)
    }

    fn fsync(&mut self) -> io::Result<()> {
        // SAFETY: plain syscall on our descriptor.
        if unsafe { libc::fsync(self.fd) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

/// Linux native AIO through raw syscalls.
pub struct AioStandin {
    ctx: libc::c_ulong,
    fd: RawFd,
    iocbs: Vec<Iocb>,
    staged: Vec<*mut Iocb>,
    events: Vec<IoEvent>,
}

impl AioStandin {
    pub fn new(fd: RawFd, depth: u32) -> io::Result<Self> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the context id to `ctx`.
        if unsafe { libc::syscall(libc::SYS_io_setup, depth.max(1) as libc::c_long, &mut ctx) } < 0
        {
            return Err(io::Error::last_os_error());
        }
        let d = depth.max(1) as usize;
        Ok(AioStandin {
            ctx,
            fd,
            iocbs: vec![Iocb::default(); d],
            staged: Vec::with_capacity(d),
            events: vec![IoEvent::default(); d],
        })
    }
}

impl Engine for AioStandin {
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        let cb = self
            .iocbs
            .get_mut(req.slot as usize)
            .ok_or_else(|| io::Error::other("slot beyond depth"))?;
        *cb = Iocb {
            aio_data: u64::from(req.slot),
            aio_lio_opcode: if req.op == OpKind::Write { 1 } else { 0 },
            aio_fildes: self.fd as u32,
            aio_buf: req.buf as u64,
            aio_nbytes: u64::from(req.len),
            aio_offset: req.offset as i64,
            ..Default::default()
        };
        self.staged.push(cb as *mut Iocb);
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        if self.staged.is_empty() {
            return Ok(0);
        }
        // SAFETY: the staged pointers point into `self.iocbs`, alive and unmoved.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_submit,
                self.ctx,
                self.staged.len() as libc::c_long,
                self.staged.as_mut_ptr(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = r as usize;
        self.staged.drain(..n);
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        // SAFETY: `events` has room for `len` events.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                self.ctx,
                min as libc::c_long,
                self.events.len() as libc::c_long,
                self.events.as_mut_ptr(),
                std::ptr::null_mut::<libc::timespec>(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        for ev in &self.events[..r as usize] {
            out.push(Completion {
                slot: ev.data as u32,
                result: ev.res,
            });
        }
        Ok(r as usize)
    }

    fn fsync(&mut self) -> io::Result<()> {
        // SAFETY: plain syscall on our descriptor.
        if unsafe { libc::fsync(self.fd) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for AioStandin {
    fn drop(&mut self) {
        // SAFETY: destroys our own context.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}
