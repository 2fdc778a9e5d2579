//! oltp's measured window (`driver::MeasuredWindow`) is a database
//! phase probe (`measure::probe::PhaseProbe`).

use std::sync::atomic::Ordering;

use super::driver::MeasuredWindow;
pub use crate::measure::probe::{PhaseProbe, ProbeResult};

impl MeasuredWindow for PhaseProbe<'_> {
    fn begin(&mut self) {
        PhaseProbe::begin(self);
    }

    fn progress(&mut self, txns: u64) {
        self.ops().store(txns, Ordering::Relaxed);
    }

    fn end(&mut self) {
        let ops = self.ops().load(Ordering::Relaxed);
        self.end_with(ops);
    }
}
