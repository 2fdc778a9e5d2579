//! A hostile peer for the targets' fuzz tests: a seeded generator of
//! random and mutated byte streams, and one bounded exchange with a
//! target over loopback (send everything, end the sending side, drain
//! what comes back until the target closes or a timeout).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The seed of a fuzz run: `IOLAB_FUZZ_SEED` to replay one, else fixed
/// (repeatable, as `tests/fuzz_parsers.rs`).
pub fn seed() -> u64 {
    std::env::var("IOLAB_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x28_f022)
}

/// xorshift64*: small, seeded, good enough to pick mutations.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    /// A value a length or offset field may hold, biased to the edges.
    pub fn edge_u32(&mut self) -> u32 {
        const EDGES: [u32; 8] = [0, 1, 4095, 4096, 1 << 20, (1 << 20) + 1, u32::MAX, 1 << 31];
        match self.below(3) {
            0 => EDGES[self.below(EDGES.len())],
            _ => self.next_u64() as u32,
        }
    }
}

/// `valid` with a few random changes: bytes flipped, a 32-bit field
/// overwritten (lengths, offsets), a cut, a stretch repeated or random
/// bytes inserted.
pub fn mutate(valid: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = valid.to_vec();
    for _ in 0..1 + rng.below(4) {
        if v.is_empty() {
            let n = 1 + rng.below(64);
            v = rng.bytes(n);
            continue;
        }
        let at = rng.below(v.len());
        match rng.below(5) {
            0 => v[at] ^= 1 << rng.below(8),
            1 => {
                let w = rng.edge_u32();
                let (le, be) = (w.to_le_bytes(), w.to_be_bytes());
                let b = if rng.below(2) == 0 { le } else { be };
                for (i, x) in b.iter().enumerate() {
                    if let Some(y) = v.get_mut(at + i) {
                        *y = *x;
                    }
                }
            }
            2 => v.truncate(at),
            3 => {
                let end = (at + 1 + rng.below(256)).min(v.len());
                let stretch = v[at..end].to_vec();
                v.splice(at..at, stretch);
            }
            _ => {
                let n = 1 + rng.below(32);
                let junk = rng.bytes(n);
                v.splice(at..at, junk);
            }
        }
    }
    v
}

/// Send `bytes` to `addr`, end the sending side and read until the target
/// closes; false when it did not close within `wait` (a target must end a
/// connection whose peer has nothing more to say).
pub fn exchange(addr: SocketAddr, bytes: &[u8], wait: Duration) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, wait) else {
        return false;
    };
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    // A target that refuses early resets the connection: not a failure.
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let start = Instant::now();
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = vec![0u8; 64 << 10];
    while start.elapsed() < wait {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

/// This process's resident memory in KiB.
pub fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
