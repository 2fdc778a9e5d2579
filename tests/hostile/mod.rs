//! Hostile peers for the initiator tests: scripted NBD servers and NVMe/TCP
//! controllers on 127.0.0.1 that stall, lie about sizes, or send random and
//! mutated replies, each bounded in connections and in time (a server
//! holds a connection at most `HOLD`, and lets go when its handle drops).
#![allow(dead_code)]

pub mod mutate;
pub mod nbd;
pub mod nvme;

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

/// The longest a hostile server keeps a connection open.
pub const HOLD: Duration = Duration::from_secs(120);

/// A running hostile server: its port; dropping it releases its stalls.
pub struct Server {
    pub port: u16,
    _release: Sender<()>,
}

impl Server {
    pub fn new(port: u16, release: Sender<()>) -> Server {
        Server {
            port,
            _release: release,
        }
    }
}

/// The release signal a server's connections wait on.
pub fn release_pair() -> (Sender<()>, Receiver<()>) {
    mpsc::channel()
}

/// Hold until released or `HOLD` passed (a stalled peer).
pub fn stall(released: &Receiver<()>) {
    let _ = released.recv_timeout(HOLD);
}

/// The resident set of this process in KiB (/proc/self/status VmRSS).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Seconds since `t`, for failure messages.
pub fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}
