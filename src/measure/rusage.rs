//! Process CPU time and context switches from getrusage, as deltas over a
//! measured phase, reported the way fio does (usr/sys as % of wall time).

use serde::{Deserialize, Serialize};

/// A getrusage(RUSAGE_SELF) reading.
#[derive(Debug, Clone, Copy, Default)]
pub struct RusageSnapshot {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    pub fs_in_blocks: u64,
    pub fs_out_blocks: u64,
    pub major_faults: u64,
    pub minor_faults: u64,
}

impl RusageSnapshot {
    pub fn now() -> Self {
        Self::of(libc::RUSAGE_SELF)
    }

    /// Children that were waited for (external tools iolab ran).
    pub fn children() -> Self {
        Self::of(libc::RUSAGE_CHILDREN)
    }

    fn of(who: libc::c_int) -> Self {
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer; `who` is one of the defined constants.
        unsafe { libc::getrusage(who, &mut ru) };
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        RusageSnapshot {
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
            ctx_voluntary: ru.ru_nvcsw as u64,
            ctx_involuntary: ru.ru_nivcsw as u64,
            fs_in_blocks: ru.ru_inblock as u64,
            fs_out_blocks: ru.ru_oublock as u64,
            major_faults: ru.ru_majflt as u64,
            minor_faults: ru.ru_minflt as u64,
        }
    }

    /// CPU usage between `earlier` and `self` over `wall_ns` of wall time.
    pub fn since(&self, earlier: &RusageSnapshot, wall_ns: u64) -> CpuStats {
        let user = self.user_ns.saturating_sub(earlier.user_ns);
        let sys = self.sys_ns.saturating_sub(earlier.sys_ns);
        let wall = wall_ns.max(1) as f64;
        CpuStats {
            wall_ns,
            user_ns: user,
            sys_ns: sys,
            usr_pct: user as f64 * 100.0 / wall,
            sys_pct: sys as f64 * 100.0 / wall,
            ctx_voluntary: self.ctx_voluntary.saturating_sub(earlier.ctx_voluntary),
            ctx_involuntary: self.ctx_involuntary.saturating_sub(earlier.ctx_involuntary),
            fs_in_blocks: self.fs_in_blocks.saturating_sub(earlier.fs_in_blocks),
            fs_out_blocks: self.fs_out_blocks.saturating_sub(earlier.fs_out_blocks),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
        }
    }
}

/// CPU use of the iolab process over a phase. Percentages are of one CPU, so
/// several busy workers can exceed 100 (fio reports per job thread instead).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuStats {
    pub wall_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub usr_pct: f64,
    pub sys_pct: f64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    /// Filesystem input/output operations (512-byte blocks, from getrusage).
    pub fs_in_blocks: u64,
    pub fs_out_blocks: u64,
    pub major_faults: u64,
    pub minor_faults: u64,
}

impl CpuStats {
    /// (user + sys) / wall, in percent of one CPU.
    pub fn cpu_pct(&self) -> f64 {
        self.usr_pct + self.sys_pct
    }

    pub fn ctx_total(&self) -> u64 {
        self.ctx_voluntary + self.ctx_involuntary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_loop_shows_user_time() {
        let a = RusageSnapshot::now();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < 30 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = RusageSnapshot::now();
        let c = b.since(&a, start.elapsed().as_nanos() as u64);
        assert!(c.user_ns + c.sys_ns > 0);
        assert!(c.cpu_pct() > 0.0);
    }
}
