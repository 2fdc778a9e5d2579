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

/// Mean time of each stage of one request's life, in nanoseconds; the
/// stages of every request sum to its latency, so the means sum to the
/// mean latency.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StampBreakdown {
    pub requests: u64,
    /// Initiator user space: building the request, handling the reply.
    pub initiator_ns: f64,
    /// The send system call, TCP and the link, the target's wake-up and receive.
    pub fabric_out_ns: f64,
    /// The target between arrival and device submit, and between device
    /// completion and reply send.
    pub target_ns: f64,
    /// Device submit to device completion, as the target saw it.
    pub device_ns: f64,
    /// The target's send, TCP and the link, the initiator's wake-up and receive.
    pub fabric_back_ns: f64,
    /// Fabric, target and device together, over a target that keeps no
    /// stamps (a server other than iolab's own); 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unstamped_ns: f64,
    /// Mean latency measured by the initiator (issue to done).
    pub latency_ns: f64,
    /// The mean latency of the job the requests came from, as its point
    /// reports it (all its requests, warm-up included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point_mean_ns: Option<f64>,
    /// Where the initiator stage ends: `true` at the engine's own stamps
    /// (before its send call, from its receive call's return: the system
    /// calls are in the next stage), `false` at the return of the submit
    /// call (the kernel's submission path inside it: DAS, iscsi). Absent in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_stamps: Option<bool>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The stages in the order of a request's life, each with its name.
pub const STAGES: [&str; 6] = [
    "initiator",
    "fabric out",
    "target",
    "device",
    "fabric back",
    "fabric, target and device (no target stamps)",
];

impl StampBreakdown {
    /// Every stage of `STAGES` with its mean.
    pub fn all_stages(&self) -> [(&'static str, f64); 6] {
        let v = [
            self.initiator_ns,
            self.fabric_out_ns,
            self.target_ns,
            self.device_ns,
            self.fabric_back_ns,
            self.unstamped_ns,
        ];
        std::array::from_fn(|i| (STAGES[i], v[i]))
    }

    /// What the initiator stage covers here, in words (its boundary is not
    /// the same on every transport: `engine_stamps`).
    pub fn initiator_scope(&self) -> &'static str {
        const ENGINE: &str = "due to the engine's send call, and the receive call's return to reaped: iolab's user space only (the send and receive calls are in the next stage)";
        const SUBMIT: &str = "due to the return of the submit call: iolab's user space and the kernel's submission path (the system call included)";
        let stamped = self.fabric_out_ns > 0.0 || self.fabric_back_ns > 0.0;
        match self.engine_stamps {
            Some(true) => ENGINE,
            Some(false) => SUBMIT,
            None if stamped => ENGINE,
            None if self.unstamped_ns == 0.0 => SUBMIT,
            None => "iolab's user space; the send call is outside it with the nbd and nvme-tcp engines, inside it (to the submit call's return) otherwise (not recorded in this file)",
        }
    }

    /// The stages this breakdown measured: over iolab's own target the five
    /// stamped ones; over another target the initiator and the rest; on
    /// the local disk (DAS, the reference) the initiator and the device.
    pub fn stages(&self) -> Vec<(&'static str, f64)> {
        let all = self.all_stages();
        if self.unstamped_ns > 0.0 {
            vec![all[0], all[5]]
        } else if self.fabric_out_ns == 0.0 && self.target_ns == 0.0 && self.fabric_back_ns == 0.0 {
            vec![all[0], all[3]]
        } else {
            all[..5].to_vec()
        }
    }
}

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
