//! mmap engine: the target is mapped shared once; a read copies from the map
//! into the request buffer, a write copies from the buffer into the map, and a
//! sync is `msync(MS_SYNC)` of the whole map (fio's `mmap` engine, with one
//! mapping instead of one per request). Synchronous: the copy happens inside
//! `queue` and the completion is handed out by the next `reap`.
//!
//! Requests outside the map complete with -EINVAL and writes to a read-only
//! map with -EBADF, instead of faulting. The file must not shrink while mapped
//! (a page past its end would raise SIGBUS); `new` checks its size once.

use std::io;
use std::os::fd::RawFd;

use super::{Completion, Engine, EngineSetup, IoRequest, OpKind};

pub struct MmapEngine {
    map: *mut u8,
    len: usize,
    writable: bool,
    /// Completions done by `queue`, not yet reaped (at most `depth`).
    done: Vec<Completion>,
}

// SAFETY: the engine exclusively owns its mapping; nothing in it is tied to
// the creating thread.
unsafe impl Send for MmapEngine {}

/// Size in bytes of the file or block device behind `fd`.
fn backing_size(fd: RawFd) -> io::Result<u64> {
    // SAFETY: zeroed stat is a valid out-parameter for fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    if st.st_mode & libc::S_IFMT == libc::S_IFBLK {
        let mut size: u64 = 0;
        // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
        const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
        // SAFETY: the ioctl writes one u64.
        if unsafe { libc::ioctl(fd, BLKGETSIZE64, &mut size as *mut u64) } < 0 {
            return Err(io::Error::last_os_error());
        }
        return Ok(size);
    }
    Ok(st.st_size as u64)
}

fn errno_result(ok: bool) -> i64 {
    if ok {
        0
    } else {
        -(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as i64)
    }
}

impl MmapEngine {
    /// Map the target's size in bytes of its local descriptor, shared,
    /// read-write when it was opened writable, otherwise read-only.
    pub fn new(setup: &EngineSetup) -> io::Result<MmapEngine> {
        let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        let fd = setup.target.local_fd("mmap")?;
        let (file_size, writable) = (setup.target.size(), setup.target.writable());
        if file_size == 0 {
            return Err(invalid("mmap: the region to map is empty".into()));
        }
        let len = usize::try_from(file_size).map_err(|_| {
            invalid(format!(
                "mmap: {file_size} bytes do not fit in the address space"
            ))
        })?;
        let have = backing_size(fd)?;
        if have < file_size {
            return Err(invalid(format!(
                "mmap: the target holds {have} bytes, fewer than the {file_size} to map (touching the rest would fault)"
            )));
        }
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh shared mapping of our descriptor; checked below.
        let map = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        if map == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("mmap of {len} bytes: {e}"),
            ));
        }
        Ok(MmapEngine {
            map: map.cast(),
            len,
            writable,
            done: Vec::with_capacity(setup.depth.max(1) as usize),
        })
    }

    fn msync(&self) -> bool {
        // SAFETY: the whole mapping we own.
        unsafe { libc::msync(self.map.cast(), self.len, libc::MS_SYNC) == 0 }
    }

    /// Do one request now; the byte count or a negative errno.
    #[inline]
    fn execute(&self, req: &IoRequest) -> i64 {
        if req.op == OpKind::Fsync {
            return errno_result(self.msync());
        }
        let len = req.len as usize;
        let in_map = usize::try_from(req.offset)
            .ok()
            .and_then(|o| o.checked_add(len))
            .is_some_and(|end| end <= self.len);
        if !in_map || (len > 0 && req.buf.is_null()) {
            return -(libc::EINVAL as i64);
        }
        // SAFETY: [offset, offset+len) is inside the map (checked above);
        // `req.buf` points to `len` bytes of the worker's pool (runner contract).
        unsafe {
            let at = self.map.add(req.offset as usize);
            match req.op {
                OpKind::Read => std::ptr::copy_nonoverlapping(at, req.buf, len),
                OpKind::Write if self.writable => std::ptr::copy_nonoverlapping(req.buf, at, len),
                OpKind::Write => return -(libc::EBADF as i64),
                OpKind::Fsync => unreachable!("handled above"),
            }
        }
        len as i64
    }
}

impl Engine for MmapEngine {
    #[inline]
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        if self.done.len() == self.done.capacity() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "mmap: more requests than the queue depth",
            ));
        }
        let result = self.execute(&req);
        self.done.push(Completion {
            slot: req.slot,
            result,
        });
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        Ok(0)
    }

    #[inline]
    fn reap(&mut self, _min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        let room = out.capacity() - out.len();
        let n = room.min(self.done.len());
        out.extend(self.done.drain(..n));
        Ok(n)
    }

    fn fsync(&mut self) -> io::Result<()> {
        if !self.msync() {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for MmapEngine {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.map.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::test_support::*;

    const SIZE: u64 = 1 << 20;

    fn engine(file: &std::fs::File, pool: &AlignedPool, depth: u32, writable: bool) -> MmapEngine {
        let mut s = setup_for(file, SIZE, depth, pool);
        if let crate::engine::EngineTarget::LocalFd { writable: w, .. } = &mut s.target {
            *w = writable;
        }
        MmapEngine::new(&s).expect("mmap engine")
    }

    #[test]
    fn mmap_roundtrip_buffered_and_direct() {
        let dir = scratch_dir();
        for (i, direct) in [false, true].into_iter().enumerate() {
            let f = scratch_file(&dir, &format!("m{i}"), SIZE, direct);
            let mut pool = AlignedPool::new(8);
            let mut e = engine(&f, &pool, 8, true);
            roundtrip(&mut e, &mut pool, 8, 41 + i as u64);
        }
    }

    #[test]
    fn mmap_writes_reach_the_file() {
        use std::os::unix::fs::FileExt;
        let dir = scratch_dir();
        let f = scratch_file(&dir, "w", SIZE, false);
        let mut pool = AlignedPool::new(1);
        fill_pattern(pool.slot_mut(0), 7, 8192);
        let mut e = engine(&f, &pool, 1, true);
        run_batch(&mut e, &[req(&pool, 0, OpKind::Write, 8192)], 1);
        e.fsync().unwrap();
        let mut back = vec![0u8; BS];
        f.read_exact_at(&mut back, 8192).unwrap();
        assert!(back == pool.slot(0));
    }

    #[test]
    fn mmap_errors_are_negative_errno_completions() {
        let dir = scratch_dir();
        let f = scratch_file(&dir, "e", SIZE, false);
        let pool = AlignedPool::new(4);
        let mut e = engine(&f, &pool, 4, true);
        let c = run_batch(
            &mut e,
            &[
                req(&pool, 0, OpKind::Read, SIZE),          // at the end of the map
                req(&pool, 1, OpKind::Read, SIZE - 100),    // straddles the end
                req(&pool, 2, OpKind::Write, u64::MAX - 1), // overflows
                req(&pool, 3, OpKind::Read, SIZE - BS as u64),
            ],
            4,
        );
        for x in c {
            let expect = if x.slot == 3 {
                BS as i64
            } else {
                -(libc::EINVAL as i64)
            };
            assert_eq!(x.result, expect, "slot {}", x.slot);
        }
        // A read-only map refuses writes without faulting.
        let mut ro = engine(&f, &pool, 4, false);
        let c = run_batch(
            &mut ro,
            &[
                req(&pool, 0, OpKind::Write, 0),
                req(&pool, 1, OpKind::Read, 0),
            ],
            4,
        );
        for x in c {
            let expect = if x.slot == 0 {
                -(libc::EBADF as i64)
            } else {
                BS as i64
            };
            assert_eq!(x.result, expect, "slot {}", x.slot);
        }
    }

    #[test]
    fn mmap_refuses_a_region_larger_than_the_file() {
        let dir = scratch_dir();
        let f = scratch_file(&dir, "small", 8192, false);
        let pool = AlignedPool::new(1);
        let s = setup_for(&f, SIZE, 1, &pool);
        let err = MmapEngine::new(&s).err().expect("must refuse");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let s0 = setup_for(&f, 0, 1, &pool);
        assert!(MmapEngine::new(&s0).is_err());
    }
}
