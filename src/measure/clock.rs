//! Clocks. `MonoClock` reads CLOCK_MONOTONIC through the vDSO (the same clock
//! tracefs uses with `trace_clock=mono`, so kernel and user stamps compare).
//! `VirtualClock` is a shared counter that tests and the fake engine advance.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A monotonic nanosecond clock the runner is generic over.
pub trait Clock: Clone + Send + Sync + 'static {
    fn now(&self) -> u64;
    /// Sleep in the kernel until about `t`: never spins, may wake late
    /// (the open loop measures by how much and wakes that much earlier).
    fn wait_until(&self, t: u64);
    /// Busy-wait until `now() >= t` (burns the CPU, as fio's thinktime_spin).
    fn spin_until(&self, t: u64) {
        while self.now() < t {
            std::hint::spin_loop();
        }
    }
    /// Block until `now() >= t` (returns at once when it already is):
    /// sleep most of the gap, spin the last 50 us for precision.
    fn sleep_until(&self, t: u64) {
        loop {
            let now = self.now();
            if now >= t {
                return;
            }
            if t - now > 80_000 {
                self.wait_until(t - 50_000);
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonoClock;

#[inline(always)]
pub fn mono_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Clock for MonoClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        mono_now_ns()
    }

    fn wait_until(&self, t: u64) {
        let ts = libc::timespec {
            tv_sec: (t / 1_000_000_000) as libc::time_t,
            tv_nsec: (t % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: valid timespec; absolute CLOCK_MONOTONIC time, no remainder.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock(Arc<AtomicU64>);

impl VirtualClock {
    pub fn new(start_ns: u64) -> Self {
        VirtualClock(Arc::new(AtomicU64::new(start_ns)))
    }

    pub fn set(&self, t: u64) {
        self.0.store(t, Ordering::SeqCst);
    }

    pub fn advance(&self, d: u64) {
        self.0.fetch_add(d, Ordering::SeqCst);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    fn sleep_until(&self, t: u64) {
        if self.now() < t {
            self.set(t);
        }
    }

    fn spin_until(&self, t: u64) {
        self.sleep_until(t);
    }

    fn wait_until(&self, t: u64) {
        self.sleep_until(t);
    }
}
