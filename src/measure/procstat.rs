//! System-wide CPU time from /proc/stat (the aggregate `cpu` line), as deltas
//! over a phase: where getrusage covers iolab's own process, this shows the
//! machine, including time the CPUs sat idle waiting for I/O (iowait).

use serde::{Deserialize, Serialize};

/// Cumulative ticks of the aggregate `cpu` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// The aggregate `cpu` line of /proc/stat text (no allocation: the
    /// timeline reads it every second).
    pub fn parse(text: &str) -> Option<CpuTicks> {
        let line = text.lines().find(|l| l.starts_with("cpu "))?;
        let mut v = [0u64; 8];
        for (slot, x) in v.iter_mut().zip(line.split_whitespace().skip(1)) {
            *slot = x.parse().unwrap_or(0);
        }
        Some(CpuTicks {
            user: v[0],
            nice: v[1],
            system: v[2],
            idle: v[3],
            iowait: v[4],
            irq: v[5],
            softirq: v[6],
            steal: v[7],
        })
    }

    pub fn now() -> Option<CpuTicks> {
        CpuTicks::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// Shares of the machine's CPU time between `earlier` and `self`, in
    /// percent of one CPU (so they stack with the process usr/sys figures).
    pub fn since(&self, earlier: &CpuTicks, ncpu: usize) -> SystemCpu {
        let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
        let total = d(self.total(), earlier.total()).max(1.0);
        let pct = |x: f64| x / total * 100.0 * ncpu as f64;
        SystemCpu {
            usr_pct: pct(d(self.user + self.nice, earlier.user + earlier.nice)),
            sys_pct: pct(d(
                self.system + self.irq + self.softirq,
                earlier.system + earlier.irq + earlier.softirq,
            )),
            iowait_pct: pct(d(self.iowait, earlier.iowait)),
            idle_pct: pct(d(self.idle, earlier.idle)),
            steal_pct: pct(d(self.steal, earlier.steal)),
        }
    }
}

/// The machine's CPU time over an interval split the way /proc/stat
/// splits it, in percent of all CPUs: the six shares add up to 100 (guest
/// time is inside user, as the kernel counts it).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuShares {
    /// user + nice
    pub usr_pct: f64,
    /// system alone
    pub sys_pct: f64,
    /// irq + softirq
    pub irq_pct: f64,
    pub iowait_pct: f64,
    pub idle_pct: f64,
    /// Time a hypervisor gave this VM's CPUs to someone else.
    pub steal_pct: f64,
}

impl CpuTicks {
    /// Shares of all CPUs' time between `earlier` and `self`.
    pub fn shares_since(&self, earlier: &CpuTicks) -> CpuShares {
        let d = |f: fn(&CpuTicks) -> u64| f(self).saturating_sub(f(earlier)) as f64;
        let total = d(CpuTicks::total).max(1.0);
        let pct = |x: f64| x / total * 100.0;
        CpuShares {
            usr_pct: pct(d(|c| c.user + c.nice)),
            sys_pct: pct(d(|c| c.system)),
            irq_pct: pct(d(|c| c.irq + c.softirq)),
            iowait_pct: pct(d(|c| c.iowait)),
            idle_pct: pct(d(|c| c.idle)),
            steal_pct: pct(d(|c| c.steal)),
        }
    }
}

/// The machine's CPU time over a phase, percent of one CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemCpu {
    pub usr_pct: f64,
    pub sys_pct: f64,
    pub iowait_pct: f64,
    pub idle_pct: f64,
    pub steal_pct: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_diffs() {
        let a = CpuTicks::parse("cpu  100 0 50 800 40 5 5 0 0 0\ncpu0 1 2 3\n").unwrap();
        let b = CpuTicks::parse("cpu  150 0 70 900 70 5 5 0 0 0\n").unwrap();
        let s = b.since(&a, 2);
        // 200 ticks in all: user 50, sys 20, idle 100, iowait 30, on 2 CPUs.
        assert!((s.usr_pct - 50.0).abs() < 1e-9);
        assert!((s.sys_pct - 20.0).abs() < 1e-9);
        assert!((s.iowait_pct - 30.0).abs() < 1e-9);
        assert!((s.idle_pct - 100.0).abs() < 1e-9);
        assert!(CpuTicks::parse("nothing").is_none());
        // irq 10, softirq 10, steal 20 more: 240 ticks in all.
        let c = CpuTicks::parse("cpu  150 0 70 900 70 15 15 20 0 0\n").unwrap();
        let sh = c.shares_since(&a);
        let sum = sh.usr_pct + sh.sys_pct + sh.irq_pct + sh.iowait_pct + sh.idle_pct + sh.steal_pct;
        assert!((sum - 100.0).abs() < 1e-9, "{sh:?}");
        assert!((sh.steal_pct - 20.0 / 240.0 * 100.0).abs() < 1e-9);
        assert!((sh.irq_pct - 20.0 / 240.0 * 100.0).abs() < 1e-9);
        assert!(CpuTicks::now().is_some());
    }
}
