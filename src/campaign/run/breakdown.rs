//! The stack-breakdown step of `iolab run`: the capability check (root,
//! tracefs) for the plan, and one traced job through the tracer of
//! `iolab device --breakdown` (`trace::point_tracer::Tracer`, which sets
//! up `trace::config::run_config` like `iolab trace` does).

use anyhow::Result;

use crate::dut::Target;
use crate::plan::job::JobSpec;
use crate::results::Point;
use crate::trace::point_tracer::Tracer;
use crate::trace::tracefs;

/// Per-CPU ring buffer of the trace, KiB (`iolab trace`'s default).
const BUFFER_KB: u32 = 16_384;

/// Why tracing cannot run here (None: root and tracefs are available).
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("tracing needs root".into());
    }
    let mut caps = tracefs::probe();
    // Unmount again at once if the probe mounted tracefs.
    let _mount = caps.take_mount();
    caps.why_not
}

/// Run `spec` traced on `target`: the point carries `extra.trace` like the
/// points of `iolab trace`. Errors say why the step cannot run here.
pub fn run(target: &Target, spec: &JobSpec) -> Result<Point> {
    let mut tracer = Tracer::new(target, BUFFER_KB);
    if let Some(why) = tracer.why_not_for(spec) {
        anyhow::bail!("{why}");
    }
    let (mut pt, res) = tracer.run(spec)?;
    pt.params.insert("scheduler".into(), res.scheduler.clone());
    pt.extra.trace = Some(Box::new(res));
    Ok(pt)
}
