//! The backing store both targets serve (a file or block device opened
//! with O_DIRECT, buffered where the filesystem refuses it; its size) and
//! the page-aligned slot memory requests are read and written through.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::Context;

/// O_DIRECT when the filesystem takes it, buffered otherwise.
pub fn open_backing(path: &Path, read_only: bool) -> anyhow::Result<(File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let open = |flags: i32| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(!read_only)
            .custom_flags(flags)
            .open(path)
    };
    match open(libc::O_DIRECT) {
        Ok(f) => Ok((f, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok((
            open(0).with_context(|| format!("cannot open {}", path.display()))?,
            false,
        )),
        Err(e) => Err(e).with_context(|| format!("cannot open {}", path.display())),
    }
}

pub fn backing_size(f: &File) -> io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    // Block devices report 0 in metadata; seeking to the end works for both.
    let mut f = f;
    let n = f.seek(SeekFrom::End(0))?;
    f.seek(SeekFrom::Start(0))?;
    Ok(n)
}

/// Page-aligned slot buffers from one anonymous mapping: memory is
/// committed only where requests touch it, so a pool of 1 MiB slots costs
/// a page per slot when clients send 4 KiB blocks.
pub struct SlotMemory {
    base: *mut u8,
    len: usize,
    slot_len: usize,
}

// SAFETY: the mapping is owned by one reactor thread at a time.
unsafe impl Send for SlotMemory {}

impl SlotMemory {
    pub fn new(slots: usize, slot_len: usize) -> io::Result<SlotMemory> {
        let slot_len = slot_len.div_ceil(4096) * 4096;
        let len = slots.max(1) * slot_len;
        // SAFETY: an anonymous private mapping, checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SlotMemory {
            base: base.cast(),
            len,
            slot_len,
        })
    }

    /// The whole mapping: (start, length).
    pub fn span(&self) -> (*mut u8, usize) {
        (self.base, self.len)
    }

    pub fn slot_ptr(&self, slot: usize) -> *mut u8 {
        assert!(slot * self.slot_len < self.len);
        // SAFETY: inside the mapping (checked above).
        unsafe { self.base.add(slot * self.slot_len) }
    }

    pub fn slot(&mut self, slot: usize, len: usize) -> &mut [u8] {
        assert!(len <= self.slot_len);
        // SAFETY: inside the mapping, exclusively borrowed through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(slot), len) }
    }
}

impl Drop for SlotMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// What a request does to the backing store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileOp {
    #[default]
    Read,
    Write,
    Flush,
}

/// The ring entry that does `op` on `file`: `len` bytes at `offset` into
/// or out of slot `slot` of `memory` (a flush moves none).
pub fn file_entry(
    file: &File,
    op: FileOp,
    memory: &mut SlotMemory,
    slot: usize,
    offset: u64,
    len: u32,
) -> io_uring::squeue::Entry {
    use io_uring::{opcode, types};
    let fd = types::Fd(file.as_raw_fd());
    match op {
        FileOp::Read => {
            let buf = memory.slot(slot, len as usize).as_mut_ptr();
            opcode::Read::new(fd, buf, len).offset(offset).build()
        }
        FileOp::Write => {
            let buf = memory.slot(slot, len as usize).as_ptr();
            opcode::Write::new(fd, buf, len).offset(offset).build()
        }
        FileOp::Flush => opcode::Fsync::new(fd).build(),
    }
}
