//! Locks a signal's teardown takes: the registries of what iolab created
//! (`testbed`) and of the files it is writing (`results::output`,
//! `results::written`) are held by the normal path only for a moment, and
//! the second Ctrl-C's teardown must neither hang on them nor skip them.
//! A leaf: it imports nothing of the crate, so both can use it.

use std::sync::{Mutex, MutexGuard};

/// `m` locked, waiting up to 200 ms for a thread that holds it for a moment
/// (the second Ctrl-C's teardown must neither hang on it nor skip it).
pub(crate) fn lock_briefly<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    for _ in 0..200 {
        if let Ok(g) = m.try_lock() {
            return Some(g);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    None
}
