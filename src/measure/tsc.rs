//! A clock read from the CPU's time-stamp counter (rdtsc), like fio's
//! `clocksource=cpu`: a few nanoseconds per read instead of the vDSO's ~23.
//! Used only where the TSC is invariant (constant and non-stop) and the
//! kernel itself keeps time with it (clocksource `tsc`, which means the
//! kernel found it synchronized across CPUs). Calibrated once per process
//! against CLOCK_MONOTONIC and aligned with it, so its readings are
//! CLOCK_MONOTONIC nanoseconds (deadlines and sleeps can mix the two); each
//! job checks at its end how far the two have drifted apart.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::clock::{mono_now_ns, Clock, MonoClock};

/// Which clock timestamps requests (`--clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockChoice {
    /// The TSC where it can be used, else CLOCK_MONOTONIC.
    #[default]
    Auto,
    /// The TSC; refused where it cannot be used.
    Tsc,
    /// CLOCK_MONOTONIC through the vDSO.
    Mono,
}

impl ClockChoice {
    pub fn parse(s: &str) -> Option<ClockChoice> {
        match s {
            "auto" => Some(ClockChoice::Auto),
            "tsc" => Some(ClockChoice::Tsc),
            "mono" => Some(ClockChoice::Mono),
            _ => None,
        }
    }
}

/// Nanoseconds per tick as a 32.32 fixed-point factor, and a (tsc, ns)
/// pair read together, from which every reading is extrapolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TscClock {
    base_tsc: u64,
    base_ns: u64,
    mult: u64,
}

/// Drift beyond which a job's results get a warning (parts per million).
pub const DRIFT_WARN_PPM: f64 = 100.0;
/// How long calibration compares the TSC with CLOCK_MONOTONIC.
const CALIBRATION_NS: u64 = 20_000_000;

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdtsc() -> u64 {
    0
}

impl TscClock {
    /// The process's calibrated TSC clock, or why it cannot be used.
    pub fn get() -> Result<TscClock, String> {
        static CALIBRATED: OnceLock<Result<TscClock, String>> = OnceLock::new();
        CALIBRATED.get_or_init(calibrate).clone()
    }

    /// Nanoseconds since boot (CLOCK_MONOTONIC's scale) for a TSC reading.
    #[inline(always)]
    pub fn ns_of(&self, tsc: u64) -> u64 {
        let ticks = tsc.wrapping_sub(self.base_tsc);
        self.base_ns + ((ticks as u128 * self.mult as u128) >> 32) as u64
    }

    /// TSC frequency in GHz (ticks per nanosecond).
    pub fn ghz(&self) -> f64 {
        (1u64 << 32) as f64 / self.mult as f64
    }

    /// How far this clock and CLOCK_MONOTONIC are apart now, in parts per
    /// million of the time since calibration.
    pub fn drift_ppm(&self) -> f64 {
        let (tsc, mono) = read_pair();
        let elapsed = mono.saturating_sub(self.base_ns).max(1) as f64;
        (self.ns_of(tsc) as f64 - mono as f64) / elapsed * 1e6
    }
}

impl Clock for TscClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        self.ns_of(rdtsc())
    }

    fn wait_until(&self, t: u64) {
        // Readings are CLOCK_MONOTONIC nanoseconds (to the drift).
        MonoClock.wait_until(t)
    }
}

/// Why the TSC cannot be used here, if it cannot.
pub fn unusable_because() -> Option<String> {
    if !cfg!(target_arch = "x86_64") {
        return Some("the TSC clock is only implemented on x86_64".into());
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    unusable_given(&cpuinfo, &source)
}

/// Why the TSC cannot be used, given /proc/cpuinfo and the kernel's
/// current clocksource.
fn unusable_given(cpuinfo: &str, source: &str) -> Option<String> {
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    for needed in ["constant_tsc", "nonstop_tsc"] {
        if !flags.contains(&needed) {
            return Some(format!(
                "the CPU does not report {needed} (the TSC is not invariant)"
            ));
        }
    }
    if source.trim() != "tsc" {
        return Some(format!(
            "the kernel's clocksource is '{}', not tsc (it does not trust the TSC here)",
            source.trim()
        ));
    }
    None
}

/// A TSC reading and the CLOCK_MONOTONIC time at the same moment: the pair
/// with the tightest bracket of five tries (the TSC is read before and
/// after the clock, and the middle kept).
fn read_pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let a = rdtsc();
        let m = mono_now_ns();
        let b = rdtsc();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, m);
        }
    }
    (best.1, best.2)
}

fn calibrate() -> Result<TscClock, String> {
    if let Some(why) = unusable_because() {
        return Err(why);
    }
    let (t0, m0) = read_pair();
    MonoClock.sleep_until(m0 + CALIBRATION_NS);
    let (t1, m1) = read_pair();
    let ticks = t1.wrapping_sub(t0);
    if ticks == 0 || m1 <= m0 {
        return Err("the TSC did not advance during calibration".into());
    }
    let mult = (((m1 - m0) as u128) << 32) / ticks as u128;
    Ok(TscClock {
        base_tsc: t1,
        base_ns: m1,
        mult: mult as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_is_exact_in_fixed_point() {
        // 2 GHz: half a nanosecond per tick.
        let c = TscClock {
            base_tsc: 1_000,
            base_ns: 5_000,
            mult: 1 << 31,
        };
        assert_eq!(c.ns_of(1_000), 5_000);
        assert_eq!(c.ns_of(3_000), 6_000);
        assert!((c.ghz() - 2.0).abs() < 1e-12);
        // Far from the base the product needs more than 64 bits.
        assert_eq!(c.ns_of(1_000 + (1 << 50)), 5_000 + (1 << 49));
    }

    #[test]
    fn where_usable_it_follows_the_monotonic_clock() {
        let Ok(c) = TscClock::get() else {
            eprintln!("SKIP: {}", unusable_because().unwrap_or_default());
            return;
        };
        let (a, m) = (c.now(), mono_now_ns());
        // Aligned with CLOCK_MONOTONIC to well under a millisecond.
        assert!(a.abs_diff(m) < 1_000_000, "tsc {a} mono {m}");
        let mut last = c.now();
        for _ in 0..10_000 {
            let t = c.now();
            assert!(t >= last, "went backwards");
            last = t;
        }
        assert!(c.ghz() > 0.1 && c.ghz() < 10.0, "{} GHz", c.ghz());
    }

    #[test]
    fn detection_names_what_is_missing() {
        let good = "processor : 0\nflags : fpu tsc constant_tsc nonstop_tsc rdtscp\n";
        assert_eq!(unusable_given(good, "tsc\n"), None);
        let why = unusable_given(good, "kvm-clock\n").unwrap();
        assert!(why.contains("'kvm-clock'"), "{why}");
        let why = unusable_given("flags : fpu tsc constant_tsc\n", "tsc").unwrap();
        assert!(why.contains("nonstop_tsc"), "{why}");
        assert!(unusable_given("", "tsc").unwrap().contains("constant_tsc"));
    }

    #[test]
    fn choices_parse() {
        assert_eq!(ClockChoice::parse("tsc"), Some(ClockChoice::Tsc));
        assert_eq!(ClockChoice::parse("mono"), Some(ClockChoice::Mono));
        assert_eq!(ClockChoice::parse("auto"), Some(ClockChoice::Auto));
        assert_eq!(ClockChoice::parse("hpet"), None);
    }
}
