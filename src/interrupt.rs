//! Ctrl-C and SIGTERM: the first signal asks the run to stop (measurement
//! loops poll `stop_requested`), so results and cleanup happen on the normal
//! path; a second signal takes down everything `testbed` holds, marks the
//! results files written so far interrupted and exits at once. Either way
//! the exit code is 130 (`exit_code`), also when the signal came during
//! the final teardown, too late for the run to see it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Once;

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);
static INSTALL: Once = Once::new();

/// Install the handler (idempotent).
pub fn install() {
    INSTALL.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            STOP.store(true, Ordering::SeqCst);
            if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
                emergency_cleanup();
                crate::results::written::mark_interrupted();
                std::process::exit(130);
            }
            eprintln!("\niolab: stopping (Ctrl-C again to abort at once)...");
        });
    });
}

/// The global stop flag, for loops that cannot take a reference.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

#[inline(always)]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Whether a signal (SIGINT, SIGTERM) asked the run to stop; unlike
/// `stop_requested`, not set by `request_stop`.
pub fn signalled() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0
}

/// The exit code of a run that would end with `code`: 130 when a signal
/// asked it to stop (its results files then say `interrupted`), except for
/// bad input (2) and a verification mismatch (3). After a second signal the
/// handler is tearing down and ends the process itself with 130: wait for
/// it (bounded) instead of cutting its teardown short.
pub fn exit_code(code: i32) -> i32 {
    if SIGNALS.load(Ordering::SeqCst) >= 2 {
        std::thread::sleep(std::time::Duration::from_secs(60));
        return 130;
    }
    if !signalled() || matches!(code, 2 | 3 | 130) {
        if code == 130 {
            crate::results::written::mark_interrupted();
        }
        return code;
    }
    crate::results::written::mark_interrupted();
    130
}

/// Ask everything to stop (used by tests and by fatal worker errors).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Clear the flag (tests run several jobs in one process).
pub fn reset() {
    STOP.store(false, Ordering::SeqCst);
    SIGNALS.store(0, Ordering::SeqCst);
}

/// A path iolab created (scratch file or directory, tracefs instance):
/// removed by a second signal, and by the next start after a SIGKILL.
pub fn register_cleanup(path: PathBuf) {
    crate::testbed::register(crate::testbed::Resource::Path(path));
}

/// The path's guard removed it (or keeps it on purpose).
pub fn unregister_cleanup(path: &std::path::Path) {
    crate::testbed::release_path(path);
}

fn emergency_cleanup() {
    crate::testbed::teardown_all();
}
