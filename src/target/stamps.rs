//! Per-request stamps of iolab's own targets, and the unloaded latency
//! breakdown they give when joined with the initiator's stamps.
//!
//! The target stamps each request with CLOCK_MONOTONIC (the clock the
//! initiator reads too; network namespaces share it) on arrival (the
//! receive that completed its header was reaped), device submit (the
//! io_uring submit that carried the file operation), device completion
//! (the completion was reaped) and reply send (the submit that carried the
//! reply). When a connection closes its stamps are appended to the stamps
//! file as one block, named by the initiator's address; the initiator
//! finds the block holding its requests and joins request by request in
//! arrival order (TCP keeps the order in which the initiator sent them).

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;

/// One request as the target saw it (nanoseconds, CLOCK_MONOTONIC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetStamp {
    /// The request's place in its connection (0, 1, 2, ...).
    pub seq: u64,
    pub arrival: u64,
    pub device_submit: u64,
    pub device_complete: u64,
    pub reply_send: u64,
}

/// Most requests kept per connection (the rest are served, not stamped).
pub const MAX_STAMPS_PER_CONNECTION: usize = 1 << 20;

/// A closing connection's stamps, in arrival order, appended to `path`
/// (when stamps are kept); a failure is said on stderr, the target goes on.
pub fn save(path: Option<&Path>, peer: SocketAddr, stamps: &mut [TargetStamp]) {
    let Some(path) = path else {
        return;
    };
    stamps.sort_unstable_by_key(|s| s.seq);
    if let Err(e) = append(path, peer, stamps) {
        eprintln!(
            "iolab serve: cannot write stamps to {}: {e}",
            path.display()
        );
    }
}

/// Append one connection's stamps to `path` in one write (several
/// reactors share the file; O_APPEND keeps blocks whole).
pub fn append(path: &Path, peer: SocketAddr, stamps: &[TargetStamp]) -> std::io::Result<()> {
    let mut text = String::with_capacity(32 + stamps.len() * 64);
    let _ = writeln!(text, "conn {peer} {}", stamps.len());
    for s in stamps {
        let _ = writeln!(
            text,
            "{} {} {} {} {}",
            s.seq, s.arrival, s.device_submit, s.device_complete, s.reply_send
        );
    }
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    f.write_all(text.as_bytes())
}

/// Every connection's stamps in the text of a stamps file, in file order.
pub fn blocks(text: &str) -> Vec<Vec<TargetStamp>> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut head = line.split_whitespace();
        if head.next() != Some("conn") {
            continue;
        }
        let Some(n) = head.nth(1).and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let block: Option<Vec<TargetStamp>> = lines.by_ref().take(n).map(parse_line).collect();
        out.extend(block);
    }
    out
}

fn parse_line(l: &str) -> Option<TargetStamp> {
    let v: Vec<u64> = l
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    match v[..] {
        [seq, arrival, device_submit, device_complete, reply_send] => Some(TargetStamp {
            seq,
            arrival,
            device_submit,
            device_complete,
            reply_send,
        }),
        _ => None,
    }
}

/// One request as the initiator saw it (nanoseconds, CLOCK_MONOTONIC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InitiatorStamp {
    /// The request was due (its latency starts here).
    pub issue: u64,
    /// Just before the send system call.
    pub send: u64,
    /// The whole reply (header and data) has been received.
    pub received: u64,
    /// The request is complete (its latency ends here).
    pub done: u64,
}

pub use crate::results::sections::remote::{StampBreakdown, STAGES};

/// Join the initiator's and the target's stamps request by request (both
/// in the order the initiator sent them); `skip` leading requests are
/// warm-up. None when the target saw fewer requests than the initiator
/// sent or a stamp is out of order (the two were not the same connection).
pub fn join(ini: &[InitiatorStamp], tgt: &[TargetStamp], skip: usize) -> Option<StampBreakdown> {
    if tgt.len() < ini.len() || ini.len() <= skip {
        return None;
    }
    let mut sum = [0f64; 6];
    for (i, t) in ini.iter().zip(tgt).skip(skip) {
        let ordered = i.issue <= i.send
            && i.send <= t.arrival
            && t.arrival <= t.device_submit
            && t.device_submit <= t.device_complete
            && t.device_complete <= t.reply_send
            && t.reply_send <= i.received
            && i.received <= i.done;
        if !ordered {
            return None;
        }
        let parts = [
            (i.send - i.issue) + (i.done - i.received),
            t.arrival - i.send,
            (t.device_submit - t.arrival) + (t.reply_send - t.device_complete),
            t.device_complete - t.device_submit,
            i.received - t.reply_send,
            i.done - i.issue,
        ];
        for (s, p) in sum.iter_mut().zip(parts) {
            *s += p as f64;
        }
    }
    let n = (ini.len() - skip) as f64;
    Some(StampBreakdown {
        requests: n as u64,
        initiator_ns: sum[0] / n,
        fabric_out_ns: sum[1] / n,
        target_ns: sum[2] / n,
        device_ns: sum[3] / n,
        fabric_back_ns: sum[4] / n,
        unstamped_ns: 0.0,
        latency_ns: sum[5] / n,
        point_mean_ns: None,
        engine_stamps: Some(true),
        path: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgt(seq: u64, base: u64) -> TargetStamp {
        TargetStamp {
            seq,
            arrival: base + 10,
            device_submit: base + 12,
            device_complete: base + 40,
            reply_send: base + 43,
        }
    }

    fn ini(base: u64) -> InitiatorStamp {
        InitiatorStamp {
            issue: base,
            send: base + 1,
            received: base + 50,
            done: base + 52,
        }
    }

    #[test]
    fn stages_sum_to_the_latency() {
        let i: Vec<_> = (0..4).map(|k| ini(k * 100)).collect();
        let t: Vec<_> = (0..4).map(|k| tgt(k, k * 100)).collect();
        let b = join(&i, &t, 1).unwrap();
        assert_eq!(b.requests, 3);
        assert_eq!(b.initiator_ns, 3.0);
        assert_eq!(b.fabric_out_ns, 9.0);
        assert_eq!(b.target_ns, 5.0);
        assert_eq!(b.device_ns, 28.0);
        assert_eq!(b.fabric_back_ns, 7.0);
        assert_eq!(b.latency_ns, 52.0);
        let total: f64 = b.stages().iter().map(|s| s.1).sum();
        assert_eq!(total, b.latency_ns);
    }

    #[test]
    fn a_foreign_connection_does_not_join() {
        let i: Vec<_> = (0..3).map(|k| ini(k * 100)).collect();
        let t: Vec<_> = (0..3).map(|k| tgt(k, k * 100 + 1000)).collect();
        assert_eq!(join(&i, &t, 0), None);
        assert_eq!(join(&i, &t[..2], 0), None, "fewer target stamps");
    }

    #[test]
    fn blocks_are_written_and_read_back_per_connection() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("stamps");
        let a: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:5001".parse().unwrap();
        append(&p, a, &[tgt(0, 0)]).unwrap();
        append(&p, b, &[tgt(0, 7), tgt(1, 9)]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            blocks(&text),
            vec![vec![tgt(0, 0)], vec![tgt(0, 7), tgt(1, 9)]]
        );
        assert!(text.starts_with("conn 127.0.0.1:5000 1\n"), "{text}");
    }
}
