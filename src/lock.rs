//! Locks a signal's teardown takes: the registries of what iolab created
//! (`testbed`) and of the files it is writing (`results::output`,
//! `results::written`) are held by the normal path only for a moment, and
//! the second Ctrl-C's teardown must neither hang on them nor skip them.
//! A leaf: it imports nothing of the crate, so both can use it.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// `m` locked, waiting up to 200 ms for a thread that holds it for a moment
/// (the second Ctrl-C's teardown must neither hang on it nor skip it).
pub(crate) fn lock_briefly<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    lock_within(m, Duration::from_millis(200))
}

/// `m` locked, waiting up to `patience` for its holder; `None` after that
/// (or if a holder panicked).
pub(crate) fn lock_within<T>(m: &Mutex<T>, patience: Duration) -> Option<MutexGuard<'_, T>> {
    let until = Instant::now() + patience;
    loop {
        if let Ok(g) = m.try_lock() {
            return Some(g);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_for_a_while_is_waited_for_within_the_patience() {
        let m = Mutex::new(0);
        let held = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = m.lock().unwrap();
                held.wait();
                std::thread::sleep(Duration::from_millis(50));
                *g = 1;
            });
            held.wait();
            let g = lock_within(&m, Duration::from_secs(30)).expect("waited for");
            assert_eq!(*g, 1, "taken only after the holder let go");
        });
    }

    #[test]
    fn a_lock_never_released_is_given_up() {
        let m = Mutex::new(());
        let _held = m.lock().unwrap();
        assert!(lock_within(&m, Duration::from_millis(5)).is_none());
    }
}
