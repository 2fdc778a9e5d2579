//! Clock offsets between the control side and each agent, NTP-style over
//! the channel: several probes, each giving (sent, agent's clock, received);
//! the probe with the smallest round trip is kept, its offset is the
//! agent's clock minus the control's at the round trip's midpoint, and its
//! uncertainty is half the round trip. Both sides use CLOCK_MONOTONIC, which
//! NTP slews but never steps, so an offset holds through a pass.

use std::time::Duration;

use super::conn::{unexpected, Conn};
use super::proto::{ClockReply, Message};
use crate::measure::clock::mono_now_ns;

/// Probes per host (the best of them is kept).
pub const PROBES: u32 = 8;

/// One probe: the control's clock when sent and received, the agent's between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub sent_ns: u64,
    pub agent_ns: u64,
    pub received_ns: u64,
}

pub use crate::results::ext::ClockOffset;

impl ClockOffset {
    /// A control-side instant in the agent's clock.
    pub fn to_agent(&self, control_ns: u64) -> u64 {
        (control_ns as i128 + self.offset_ns as i128).max(0) as u64
    }

    /// An agent's instant in the control's clock.
    pub fn to_control(&self, agent_ns: u64) -> u64 {
        (agent_ns as i128 - self.offset_ns as i128).max(0) as u64
    }

    /// When a host that was told to start at `start_ns` (control clock)
    /// says it started (`started_ns`, its own clock), relative to the
    /// start; refused beyond `MAX_START_OFFSET_NS` either way (an agent
    /// reporting started_ns = u64::MAX recorded a 6,112 s skew).
    pub fn start_offset(&self, started_ns: u64, start_ns: u64) -> Result<i64, String> {
        let off = started_ns as i128 - self.offset_ns as i128 - start_ns as i128;
        if off.unsigned_abs() > MAX_START_OFFSET_NS as u128 {
            return Err(format!(
                "it reports starting {:.3} s from the common start (more than {} s): its clock or its report is wrong",
                off as f64 / 1e9,
                MAX_START_OFFSET_NS / 1_000_000_000
            ));
        }
        Ok(off as i64)
    }
}

/// How far from the common start a host may say it started: agents sleep
/// until the start instant, so real offsets are microseconds to a few ms.
pub const MAX_START_OFFSET_NS: u64 = 10_000_000_000;

/// The estimate from the probe with the smallest round trip; `None` with no
/// usable sample (a reply received before it was sent is not usable).
pub fn estimate(samples: &[Sample]) -> Option<ClockOffset> {
    let best = samples
        .iter()
        .filter(|s| s.received_ns >= s.sent_ns)
        .min_by_key(|s| s.received_ns - s.sent_ns)?;
    let rtt = best.received_ns - best.sent_ns;
    let mid = best.sent_ns as i128 + (rtt / 2) as i128;
    Some(ClockOffset {
        offset_ns: (best.agent_ns as i128 - mid).clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        uncertainty_ns: rtt.div_ceil(2),
        rtt_ns: rtt,
        probes: samples.len() as u32,
    })
}

/// Probe `conn`'s agent `n` times, one probe in flight at a time.
pub fn measure(conn: &mut Conn, n: u32, timeout: Duration) -> anyhow::Result<ClockOffset> {
    let mut samples = Vec::with_capacity(n as usize);
    for seq in 0..n {
        let sent_ns = mono_now_ns();
        conn.send(&Message::ClockProbe { seq })?;
        match conn.recv_skipping_progress(std::time::Instant::now() + timeout)? {
            Message::ClockReply(ClockReply { seq: s, agent_ns }) if s == seq => {
                samples.push(Sample {
                    sent_ns,
                    agent_ns,
                    received_ns: mono_now_ns(),
                })
            }
            other => return Err(unexpected(&conn.host, other, "a clock reply")),
        }
    }
    estimate(&samples).ok_or_else(|| super::conn::host_error(&conn.host, "no usable clock probe"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_round_trip_wins() {
        // Agent clock = control + 1000; a slow probe skews, the fast one does not.
        let s = [
            Sample {
                sent_ns: 0,
                agent_ns: 1000 + 900,
                received_ns: 1000,
            },
            Sample {
                sent_ns: 5000,
                agent_ns: 1000 + 5050,
                received_ns: 5100,
            },
        ];
        let o = estimate(&s).unwrap();
        assert_eq!(o.offset_ns, 1000);
        assert_eq!(o.rtt_ns, 100);
        assert_eq!(o.uncertainty_ns, 50);
        assert_eq!(o.to_agent(7000), 8000);
        assert_eq!(o.to_control(8000), 7000);
    }

    #[test]
    fn negative_offsets_and_no_samples() {
        let s = [Sample {
            sent_ns: 10_000,
            agent_ns: 10,
            received_ns: 10_020,
        }];
        assert_eq!(estimate(&s).unwrap().offset_ns, -10_000);
        assert!(estimate(&[]).is_none());
        let backwards = [Sample {
            sent_ns: 5,
            agent_ns: 1,
            received_ns: 4,
        }];
        assert!(estimate(&backwards).is_none());
    }

    #[test]
    fn a_start_far_from_the_common_start_is_refused() {
        let c = ClockOffset {
            offset_ns: 1_000,
            uncertainty_ns: 10,
            rtt_ns: 20,
            probes: 4,
        };
        assert_eq!(c.start_offset(5_000_001_000, 5_000_000_000), Ok(0));
        assert_eq!(c.start_offset(5_000_501_000, 5_000_000_000), Ok(500_000));
        assert!(c.start_offset(u64::MAX, 5_000_000_000).is_err());
        assert!(c.start_offset(0, 50_000_000_000).is_err());
    }
}
