//! A reactor's io_uring: the user data that says what a completion is
//! for (kind, connection, slot), the eventfd that wakes the ring, and the
//! wait that sleeps until a completion, a delayed reply or the next tick
//! (or, polling, only submits and peeks).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

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

/// What a ring entry is for, packed with the connection and slot into its
/// user data.
pub const KIND_RECV: u64 = 1;
pub const KIND_FILE: u64 = 2;
pub const KIND_SEND: u64 = 3;
pub const KIND_WAKE: u64 = 4;
const KIND_SHIFT: u32 = 56;
const CONN_SHIFT: u32 = 24;
/// The last stretch of a fabric delay is spun, not slept (a wake-up costs more).
const SPIN_NS: u64 = 60_000;

pub fn user_data(kind: u64, conn: usize, slot: usize) -> u64 {
    kind << KIND_SHIFT | (conn as u64) << CONN_SHIFT | slot as u64
}

/// (kind, connection, slot) of a user data word.
pub fn split(ud: u64) -> (u64, usize, usize) {
    (
        ud >> KIND_SHIFT,
        ((ud >> CONN_SHIFT) & 0xff_ffff) as usize,
        (ud & 0xff_ffff) as usize,
    )
}

/// A reactor's io_uring, with the eventfd read that wakes it and the
/// completions of its last wait.
pub struct Ring {
    ring: io_uring::IoUring,
    wake_fd: std::os::fd::RawFd,
    wake_buf: u64,
    cqes: Vec<(u64, i32)>,
    /// The kernel takes a timeout in the ring's wait (IORING_FEAT_EXT_ARG).
    timed_waits: bool,
    /// Never wait: submit and peek at the completions (`--poll`).
    polling: bool,
}

impl Ring {
    pub fn new(entries: u32, wake_fd: std::os::fd::RawFd) -> io::Result<Ring> {
        let ring = io_uring::IoUring::builder()
            .setup_cqsize(entries * 2)
            .build(entries)?;
        Ok(Ring {
            timed_waits: ring.params().is_feature_ext_arg(),
            ring,
            wake_fd,
            wake_buf: 0,
            cqes: Vec::with_capacity(entries as usize * 2),
            polling: false,
        })
    }

    /// Busy-poll from now on: `submit_and_wait` only submits and peeks.
    pub fn set_polling(&mut self, polling: bool) {
        self.polling = polling;
    }

    /// Queue `e`, submitting first when the submission queue is full.
    pub fn push(&mut self, e: io_uring::squeue::Entry) -> io::Result<()> {
        // SAFETY: every buffer an entry points at (slot memory, a
        // connection's buffers, the wake-up word) lives until its
        // completion is reaped; the callers keep them so.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// (Re)arm the read of the wake-up eventfd. The ring must not move
    /// while the read is in flight (reactors arm it on their own thread).
    pub fn push_wake_read(&mut self) -> io::Result<()> {
        let ptr = std::ptr::addr_of_mut!(self.wake_buf).cast();
        let e = io_uring::opcode::Read::new(io_uring::types::Fd(self.wake_fd), ptr, 8)
            .build()
            .user_data(user_data(KIND_WAKE, 0, 0));
        self.push(e)
    }

    /// The wake-up read completed with `res`: arm it again.
    pub fn woke(&mut self, res: i32) -> io::Result<()> {
        if res < 0 && res != -libc::EINTR && res != -libc::EAGAIN {
            return Err(io::Error::from_raw_os_error(-res));
        }
        self.push_wake_read()
    }

    /// Submit and wait for a completion, or (with a delayed reply `due`)
    /// only until shortly before it, and never past `tick`; then collect
    /// the completions. A polling ring never waits: it submits (the
    /// system call also runs the ring's pending completion work) and
    /// takes what has completed.
    pub fn submit_and_wait(&mut self, now: u64, due: Option<u64>, tick: u64) -> io::Result<usize> {
        let sleep = match due {
            _ if self.polling => 0,
            Some(d) if d <= now + SPIN_NS => 0,
            Some(d) => (d - now - SPIN_NS).min(tick.saturating_sub(now)),
            None => tick.saturating_sub(now),
        };
        let r = match sleep {
            0 => self.ring.submit(),
            // Before Linux 5.11 the ring has no timed wait: the tick waits
            // for the next completion.
            _ if due.is_none() && !self.timed_waits => self.ring.submit_and_wait(1),
            sleep => {
                let ts = io_uring::types::Timespec::new()
                    .sec(sleep / 1_000_000_000)
                    .nsec((sleep % 1_000_000_000) as u32);
                let args = io_uring::types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
        };
        match r {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => {}
            Err(e) => return Err(e),
        }
        self.cqes.clear();
        self.cqes
            .extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        Ok(self.cqes.len())
    }

    /// The `k`th completion of the last wait: (user data, result).
    pub fn cqe(&self, k: usize) -> (u64, i32) {
        self.cqes[k]
    }
}
