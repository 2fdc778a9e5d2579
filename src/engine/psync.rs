//! psync: one `pread`/`pwrite` per request, synchronous (fio's `psync`).

use std::io;
use std::os::fd::RawFd;

use super::{Completion, Engine, IoRequest, OpKind};

pub struct PsyncEngine {
    fd: RawFd,
    done: Option<Completion>,
}

impl PsyncEngine {
    pub fn new(fd: RawFd) -> Self {
        PsyncEngine { fd, done: None }
    }
}

impl Engine for PsyncEngine {
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        // SAFETY: `req.buf` points to `req.len` bytes of the worker's buffer pool.
        let res = unsafe {
            match req.op {
                OpKind::Read => {
                    libc::pread(self.fd, req.buf.cast(), req.len as usize, req.offset as i64)
                }
                OpKind::Write => {
                    libc::pwrite(self.fd, req.buf.cast(), req.len as usize, req.offset as i64)
                }
                OpKind::Fsync => libc::fsync(self.fd) as isize,
            }
        };
        let result = if res < 0 {
            -(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO) as i64)
        } else {
            res as i64
        };
        self.done = Some(Completion {
            slot: req.slot,
            result,
        });
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        Ok(0)
    }

    fn reap(&mut self, _min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        match self.done.take() {
            Some(c) => {
                out.push(c);
                Ok(1)
            }
            None => Ok(0),
        }
    }

    fn fsync(&mut self) -> io::Result<()> {
        // SAFETY: plain syscall on our own descriptor.
        if unsafe { libc::fsync(self.fd) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
