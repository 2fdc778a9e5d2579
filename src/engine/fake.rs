//! fake: a scripted device on a virtual clock, for deterministic tests of the
//! runner, statistics and open-loop scheduling. It has `servers` parallel
//! service units; each request takes the next latency of the script (cycled)
//! and starts when a server is free, so queueing behaves like a real device.
//! A submit call may cost virtual time (`submit_ns`), like a system call.

use std::io;

use super::{Completion, Engine, IoRequest};
use crate::measure::clock::{Clock, VirtualClock};
use crate::plan::engines::FakeScript;

pub struct FakeEngine {
    clock: VirtualClock,
    script: FakeScript,
    next: usize,
    /// When each server becomes free.
    server_free_at: Vec<u64>,
    staged: Vec<IoRequest>,
    /// (done_at, completion), unsorted; small (<= depth).
    in_flight: Vec<(u64, Completion)>,
    /// Reaps that neither waited nor found a completion (busy polls).
    pub empty_polls: u64,
    /// How late a timed wait that times out ends (a kernel's timer wakes late).
    pub late_wake_ns: u64,
}

impl FakeEngine {
    pub fn new(script: FakeScript, depth: u32, clock: VirtualClock) -> Self {
        let servers = script.servers.max(1) as usize;
        FakeEngine {
            clock,
            script,
            next: 0,
            server_free_at: vec![0; servers],
            staged: Vec::with_capacity(depth as usize),
            in_flight: Vec::with_capacity(depth as usize),
            empty_polls: 0,
            late_wake_ns: 0,
        }
    }

    fn next_latency(&mut self) -> u64 {
        let l = self.script.latencies_ns[self.next % self.script.latencies_ns.len()];
        self.next += 1;
        l
    }
}

impl Engine for FakeEngine {
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        self.staged.push(req);
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        let now = self.clock.now();
        let n = self.staged.len();
        for i in 0..n {
            let req = self.staged[i];
            let lat = self.next_latency();
            let (idx, free_at) = self
                .server_free_at
                .iter()
                .copied()
                .enumerate()
                .min_by_key(|&(_, t)| t)
                .expect("at least one server");
            let done = free_at.max(now) + lat;
            self.server_free_at[idx] = done;
            self.in_flight.push((
                done,
                Completion {
                    slot: req.slot,
                    result: req.len as i64,
                },
            ));
        }
        self.staged.clear();
        self.clock.advance(self.script.submit_ns);
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        let min = min.min(self.in_flight.len());
        if min > 0 {
            // Advance virtual time to the min-th earliest completion.
            let mut times: Vec<u64> = self.in_flight.iter().map(|&(t, _)| t).collect();
            times.sort_unstable();
            let target = times[min - 1];
            if target > self.clock.now() {
                self.clock.set(target);
            }
        }
        let now = self.clock.now();
        let before = out.len();
        self.in_flight.retain(|&(t, c)| {
            if t <= now {
                out.push(c);
                false
            } else {
                true
            }
        });
        if min == 0 && out.len() == before {
            self.empty_polls += 1;
        }
        Ok(out.len() - before)
    }

    fn reap_timeout(&mut self, timeout_ns: u64, out: &mut Vec<Completion>) -> io::Result<usize> {
        let deadline = self.clock.now() + timeout_ns;
        let first = self.in_flight.iter().map(|&(t, _)| t).min();
        match first {
            Some(t) if t <= deadline => self.reap(1, out),
            _ => {
                self.clock.set(deadline + self.late_wake_ns);
                Ok(0)
            }
        }
    }

    fn waits_with_timeout(&self) -> bool {
        true
    }

    fn fsync(&mut self) -> io::Result<()> {
        Ok(())
    }
}
