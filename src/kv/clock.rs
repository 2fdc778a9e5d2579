//! The clock kv's workers time operations with: the TSC where it can be
//! used (as `device`'s default `--clock auto`: invariant, and the kernel's
//! own clocksource), else CLOCK_MONOTONIC through the vDSO. A TSC reading
//! costs a few nanoseconds against the vDSO's ~23, which is 3-5% of a
//! cached point read; its readings are CLOCK_MONOTONIC nanoseconds, so a
//! phase's start, deadlines and sleeps mix with it. Chosen once per
//! process (`init`, before a phase's workers start); each phase point says
//! which clock timed it and how far the TSC drifted (`info`).

use std::sync::OnceLock;

use crate::measure::clock::{mono_now_ns, Clock};
use crate::measure::tsc::{TscClock, DRIFT_WARN_PPM};
use crate::results::ClockInfo;

static CHOSEN: OnceLock<Option<TscClock>> = OnceLock::new();

/// Choose the clock (calibrating the TSC once: about 20 ms).
pub fn init() {
    CHOSEN.get_or_init(|| TscClock::get().ok());
}

/// Now, in CLOCK_MONOTONIC nanoseconds.
#[inline(always)]
pub fn now_ns() -> u64 {
    match CHOSEN.get() {
        Some(Some(tsc)) => tsc.now(),
        _ => mono_now_ns(),
    }
}

/// Which clock timed the operations, and a warning when the TSC drifted
/// from CLOCK_MONOTONIC beyond what latencies can ignore.
pub fn info() -> (ClockInfo, Option<String>) {
    let Some(Some(tsc)) = CHOSEN.get() else {
        let mono = ClockInfo {
            source: "mono".into(),
            ghz: None,
            drift_ppm: None,
        };
        return (mono, None);
    };
    let drift = tsc.drift_ppm();
    let warning = (drift.abs() > DRIFT_WARN_PPM).then(|| {
        format!("the TSC clock drifted {drift:.0} ppm from CLOCK_MONOTONIC since calibration: latencies are off by about that much")
    });
    let info = ClockInfo {
        source: "tsc".into(),
        ghz: Some((tsc.ghz() * 1e6).round() / 1e6),
        drift_ppm: Some((drift * 10.0).round() / 10.0),
    };
    (info, warning)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_monotonic_nanoseconds_whichever_clock_was_chosen() {
        init();
        let a = mono_now_ns();
        let b = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let c = now_ns();
        let d = mono_now_ns();
        // The TSC is aligned with CLOCK_MONOTONIC: its readings sit between
        // readings of it (to the calibration's few microseconds).
        assert!(b + 50_000 >= a && d + 50_000 >= c, "{a} {b} {c} {d}");
        assert!(c - b >= 5_000_000, "5 ms passed: {}", c - b);
        let (info, _) = info();
        let tsc_here = TscClock::get().is_ok();
        assert_eq!(info.source, if tsc_here { "tsc" } else { "mono" });
    }
}
