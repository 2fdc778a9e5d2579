//! Ctrl-C and SIGTERM: the first signal asks the run to stop (measurement
//! loops poll `stop_requested`), so results and cleanup happen on the normal
//! path; a second signal takes down everything `testbed` holds, marks the
//! results files written so far interrupted and exits at once. Either way
//! the exit code is 130 (`exit_code`), also when the signal came during
//! the final teardown, too late for the run to see it. A leaf: what the
//! teardown and the marking do is given by the modules that own that
//! state, through `Hooks` (wired once, in lib.rs's `wire_signals`).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Once, OnceLock};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);
static INSTALL: Once = Once::new();

/// What a second signal and an interrupted exit do beyond stopping.
#[derive(Clone, Copy)]
pub struct Hooks {
    /// Take down everything iolab set up (testbed's registry).
    pub teardown: fn(),
    /// Mark the results files written so far interrupted.
    pub mark_interrupted: fn(),
}

static HOOKS: OnceLock<Hooks> = OnceLock::new();

/// Give the hooks (once; later calls are ignored).
pub fn set_hooks(h: Hooks) {
    let _ = HOOKS.set(h);
}

fn mark_interrupted() {
    if let Some(h) = HOOKS.get() {
        (h.mark_interrupted)();
    }
}

/// Install the handler (idempotent).
pub fn install() {
    INSTALL.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            STOP.store(true, Ordering::SeqCst);
            if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
                park_threads_that_abort();
                emergency_cleanup();
                mark_interrupted();
                // Not `exit`: C++ static destructors must not run while the
                // engine's threads (parked or still going) use those objects.
                // SAFETY: _exit has no preconditions; stderr is unbuffered.
                unsafe { libc::_exit(130) };
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
            mark_interrupted();
        }
        return code;
    }
    mark_interrupted();
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

fn emergency_cleanup() {
    if let Some(h) = HOOKS.get() {
        (h.teardown)();
    }
}

/// The thread running the emergency teardown (its kernel thread id).
static TEARDOWN_TID: AtomicU32 = AtomicU32::new(0);

/// The emergency teardown removes mounts and devices under an embedded
/// database that is still running; a library built with assertions (Debian's
/// librocksdb) then aborts on the I/O error it sees, which would kill the
/// process halfway through the teardown and leave the rest behind. From
/// here on, a thread other than the teardown's that calls `abort` sleeps
/// until the teardown ends the process.
fn park_threads_that_abort() {
    // SAFETY: gettid has no preconditions.
    TEARDOWN_TID.store(unsafe { libc::gettid() } as u32, Ordering::SeqCst);
    // SAFETY: the handler only calls async-signal-safe functions (gettid,
    // signal, raise, pause); SA_NODEFER is not set, so a second abort in
    // the same thread waits behind the first.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = park_on_abort as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
    }
}

extern "C" fn park_on_abort(_signal: libc::c_int) {
    // SAFETY: all async-signal-safe; the teardown thread's own abort keeps
    // its default meaning (a bug there must not hang the process).
    unsafe {
        if libc::gettid() as u32 == TEARDOWN_TID.load(Ordering::SeqCst) {
            // Pending until this handler returns, then fatal.
            libc::signal(libc::SIGABRT, libc::SIG_DFL);
            libc::raise(libc::SIGABRT);
            return;
        }
        loop {
            libc::pause();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `child` in a forked process and returns how it ended:
    /// `Ok(exit code)` or `Err(signal)`.
    fn in_child(child: fn()) -> Result<i32, i32> {
        // SAFETY: the child only parks, spawns a thread and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            child();
            // SAFETY: leaving the forked child without running the harness.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if libc::WIFEXITED(status) {
            Ok(libc::WEXITSTATUS(status))
        } else {
            Err(libc::WTERMSIG(status))
        }
    }

    #[test]
    fn another_threads_abort_during_the_teardown_does_not_end_the_process() {
        let ended = in_child(|| {
            park_threads_that_abort();
            std::thread::spawn(|| unsafe { libc::abort() });
            std::thread::sleep(std::time::Duration::from_millis(300));
            // SAFETY: as the teardown does.
            unsafe { libc::_exit(130) };
        });
        assert_eq!(ended, Ok(130));
    }

    #[test]
    fn the_teardown_threads_own_abort_still_aborts() {
        let ended = in_child(|| {
            park_threads_that_abort();
            // SAFETY: the behaviour under test.
            unsafe { libc::abort() };
        });
        assert_eq!(ended, Err(libc::SIGABRT));
    }
}
