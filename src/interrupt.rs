//! Ctrl-C and SIGTERM: the first signal asks the run to stop (measurement
//! loops poll `stop_requested`), so results and cleanup happen on the normal
//! path; a second signal removes registered scratch paths and exits at once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, Once};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);
static INSTALL: Once = Once::new();
static CLEANUP: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Install the handler (idempotent).
pub fn install() {
    INSTALL.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            STOP.store(true, Ordering::SeqCst);
            if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
                emergency_cleanup();
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

/// Ask everything to stop (used by tests and by fatal worker errors).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Clear the flag (tests run several jobs in one process).
pub fn reset() {
    STOP.store(false, Ordering::SeqCst);
    SIGNALS.store(0, Ordering::SeqCst);
}

/// Remember a path to delete if the process is aborted by a second signal.
pub fn register_cleanup(path: PathBuf) {
    if let Ok(mut v) = CLEANUP.lock() {
        v.push(path);
    }
}

pub fn unregister_cleanup(path: &std::path::Path) {
    if let Ok(mut v) = CLEANUP.lock() {
        v.retain(|p| p != path);
    }
}

fn emergency_cleanup() {
    if let Ok(v) = CLEANUP.try_lock() {
        for p in v.iter() {
            if p.is_dir() {
                // A tracefs instance goes with a plain rmdir (its files
                // cannot be unlinked); a scratch directory needs the recursion.
                if std::fs::remove_dir(p).is_err() {
                    let _ = std::fs::remove_dir_all(p);
                }
            } else {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}
