//! A connection's receive side: one receive in flight into a byte buffer
//! out of which whole requests are parsed.

use std::net::TcpStream;

pub struct Inbox {
    pub buf: Vec<u8>,
    pub start: usize,
    pub end: usize,
    pub in_flight: bool,
    /// When the last receive completed: the arrival of what it brought.
    pub arrived_at: u64,
}

impl Inbox {
    pub fn new(len: usize) -> Inbox {
        Inbox {
            buf: vec![0; len],
            start: 0,
            end: 0,
            in_flight: false,
            arrived_at: 0,
        }
    }

    /// Make the buffer `len` bytes long, if it is shorter and no receive
    /// is in flight into it (it is grown before the next one).
    pub fn grow_to(&mut self, len: usize) {
        if !self.in_flight && self.buf.len() < len {
            self.buf.resize(len, 0);
        }
    }

    /// What was received and not parsed yet.
    pub fn avail(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The receive to post into the free room (what is unparsed moved to
    /// the front first when less than half the buffer is left), or None
    /// while one is in flight or the buffer is full.
    pub fn recv(&mut self, fd: std::os::fd::RawFd, ud: u64) -> Option<io_uring::squeue::Entry> {
        if self.in_flight {
            return None;
        }
        if self.start > 0 && self.buf.len() - self.end < self.buf.len() / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let room = &mut self.buf[self.end..];
        if room.is_empty() {
            return None;
        }
        self.in_flight = true;
        Some(
            io_uring::opcode::Recv::new(
                io_uring::types::Fd(fd),
                room.as_mut_ptr(),
                room.len() as u32,
            )
            .build()
            .user_data(ud),
        )
    }

    /// A receive completed with `res` at `now`: false when the peer closed
    /// the connection (or the receive failed).
    pub fn received(&mut self, res: i32, now: u64) -> bool {
        self.in_flight = false;
        if res <= 0 {
            return false;
        }
        self.end += res as usize;
        self.arrived_at = now;
        true
    }

    /// Whether a connection that is done with its work can close now; a
    /// receive still in flight is woken by shutting the socket down (once).
    pub fn ready_to_close(&self, sock: &TcpStream, shut: &mut bool) -> bool {
        if !self.in_flight {
            return true;
        }
        if !*shut {
            let _ = sock.shutdown(std::net::Shutdown::Both);
            *shut = true;
        }
        false
    }
}
