//! What iolab's two targets (NBD, NVMe/TCP) share: the backing store
//! opened with O_DIRECT (buffered where the filesystem refuses it), its
//! size, page-aligned slot buffers for requests, the eventfd that wakes a
//! reactor, and the accept loop handing connections to reactors in turn.

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::thread::JoinHandle;

use anyhow::Context;

/// A fresh eventfd to wake a reactor's ring.
pub fn waker() -> anyhow::Result<OwnedFd> {
    // SAFETY: plain eventfd creation; the descriptor is owned below.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error()).context("eventfd");
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn wake(fd: i32) {
    let one: u64 = 1;
    // SAFETY: writing 8 bytes from a live u64 to an eventfd.
    unsafe { libc::write(fd, std::ptr::addr_of!(one).cast(), 8) };
}

/// Join the target's threads; the first error (or panic) they ended with.
pub fn join_all(threads: Vec<JoinHandle<io::Result<()>>>) -> anyhow::Result<()> {
    let mut first_error = None;
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(anyhow::Error::new(e).context("target reactor"));
            }
            Err(_) => {
                first_error.get_or_insert(anyhow::anyhow!("a target thread panicked"));
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Accept connections on the non-blocking `listener` until `stopping`,
/// each made blocking with TCP_NODELAY and given to `hand`.
pub fn accept_loop(
    listener: TcpListener,
    stopping: impl Fn() -> bool,
    mut hand: impl FnMut(TcpStream, SocketAddr) -> io::Result<()>,
) -> io::Result<()> {
    while !stopping() {
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 100) };
        let (sock, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        sock.set_nonblocking(false)?;
        sock.set_nodelay(true)?;
        hand(sock, peer)?;
    }
    Ok(())
}

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
