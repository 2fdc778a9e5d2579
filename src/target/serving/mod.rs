//! The TCP serving substrate of iolab's targets (NBD, and NVMe over its
//! TCP fabric): a protocol (`reactor::Protocol`) decodes, executes and
//! encodes on its connections; the substrate owns the sockets, threads,
//! limits and stop. (NVMe's own fabric seam, under which TCP is one
//! transport as in SPDK's lib/nvmf, is `nvme_target`'s `Fabric`.)
//! `backing` (the file or device opened with O_DIRECT, slot memory),
//! `ring` (a reactor's io_uring, its wake-up eventfd, user data),
//! `inbox` (a connection's receive buffer), `limits` (the caps on
//! connections, in total and per peer), `reactor` (the loop, the
//! connection table, the stall cut-off), `poll` (`--poll`: reactors
//! pinned and busy-polling, SO_BUSY_POLL), `target` (the reactor threads,
//! the acceptor and its handoff, `Running`: stop and Drop).

mod backing;
mod inbox;
mod limits;
mod poll;
mod reactor;
mod ring;
mod target;

pub use backing::{backing_size, file_entry, open_backing, FileOp, SlotMemory};
pub use inbox::Inbox;
pub use limits::{ConnLimits, ConnPermit, MAX_CONNECTIONS, MAX_PER_PEER};
pub use poll::{
    allowed_cpus, busy_poll_of, busy_poll_on_listener, busy_poll_outcome, cpu_list, pin_to,
    set_busy_poll, PollPlan, BUSY_POLL_US,
};
pub use reactor::{Connection, Io, Protocol};
pub use ring::{split, user_data, Ring, KIND_FILE, KIND_RECV, KIND_SEND};
pub use target::{accept_loop, start, Control, Handoff, Port, Running};

#[cfg(test)]
use std::io;
#[cfg(test)]
use std::net::TcpStream;
#[cfg(test)]
use std::os::fd::AsRawFd;

/// Whether the target ended `s` within `within`: a hang-up or a reset
/// seen without reading (a read would let a stalled connection's replies
/// move), then, after what it holds is drained, an end of stream or the
/// reset.
#[cfg(test)]
pub fn ended_by_target(s: &mut TcpStream, within: std::time::Duration) -> bool {
    use std::io::Read;
    let mut pfd = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, within.as_millis() as i32) };
    if n != 1 {
        return false;
    }
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                )
            }
        }
    }
}

#[cfg(test)]
mod tests;
