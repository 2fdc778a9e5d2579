//! Caps on a target's connections, in total and per peer address: a
//! connection beyond them is closed at accept, before it costs a buffer,
//! a handshake thread or a controller. Each admitted connection holds a
//! `ConnPermit` until it is closed. Without caps, 3,000 idle NVMe/TCP
//! connections from one host took a target from 219 to 873 MB.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Connections a target holds at once (docs/safety.md).
pub const MAX_CONNECTIONS: usize = 1024;
/// Connections one peer address may hold at once: a Linux host opens one
/// per CPU and controller, plus the admin queue (a 256-CPU host, two
/// controllers: 514).
pub const MAX_PER_PEER: usize = 512;

/// The counts behind the caps.
#[derive(Debug)]
pub struct ConnLimits {
    max_total: usize,
    max_per_peer: usize,
    held: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Total(usize),
    PerPeer(usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Total(n) => write!(f, "the target holds its most connections ({n})"),
            Refused::PerPeer(n) => write!(f, "this peer holds its most connections ({n})"),
        }
    }
}

/// One admitted connection; its count is given back when dropped.
#[derive(Debug)]
pub struct ConnPermit {
    limits: Arc<ConnLimits>,
    ip: IpAddr,
}

impl ConnLimits {
    pub fn new(max_total: usize, max_per_peer: usize) -> Arc<ConnLimits> {
        Arc::new(ConnLimits {
            max_total: max_total.max(1),
            max_per_peer: max_per_peer.max(1),
            held: Mutex::new((0, HashMap::new())),
        })
    }

    /// The caps of docs/safety.md.
    pub fn standard() -> Arc<ConnLimits> {
        Self::new(MAX_CONNECTIONS, MAX_PER_PEER)
    }

    /// Admit a connection from `ip`, or say which cap it met.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<ConnPermit, Refused> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.0 >= self.max_total {
            return Err(Refused::Total(self.max_total));
        }
        let of_peer = held.1.entry(ip).or_insert(0);
        if *of_peer >= self.max_per_peer {
            return Err(Refused::PerPeer(self.max_per_peer));
        }
        *of_peer += 1;
        held.0 += 1;
        Ok(ConnPermit {
            limits: self.clone(),
            ip,
        })
    }

    /// Connections held now.
    pub fn held(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

impl Drop for ConnPermit {
    fn drop(&mut self) {
        let mut held = self.limits.held.lock().unwrap_or_else(|e| e.into_inner());
        held.0 = held.0.saturating_sub(1);
        if let Some(n) = held.1.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.1.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_peer_and_in_total_and_permits_give_back() {
        let l = ConnLimits::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a1 = l.admit(a).unwrap();
        let _a2 = l.admit(a).unwrap();
        assert_eq!(l.admit(a).unwrap_err(), Refused::PerPeer(2));
        let _b1 = l.admit(b).unwrap();
        assert_eq!(l.admit(b).unwrap_err(), Refused::Total(3));
        drop(a1);
        assert_eq!(l.held(), 2);
        assert!(l.admit(a).is_ok());
    }
}
