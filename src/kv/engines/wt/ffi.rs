//! The shim's functions (`shim.c`, built by build.rs): WiredTiger's handles
//! stay opaque here, and every call returns WiredTiger's error code, turned
//! into an error with the library's own message by `check`.

use std::ffi::{c_char, c_int, c_void, CStr};

/// `WT_CONNECTION`, `WT_SESSION`, `WT_CURSOR`: only passed back to the shim.
#[repr(C)]
pub struct WtConnection {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct Session {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct Cursor {
    _opaque: [u8; 0],
}

/// WiredTiger's `WT_NOTFOUND` (checked against the header by a test).
pub const NOTFOUND: c_int = -31803;

extern "C" {
    #[cfg(test)]
    pub fn iolab_wt_notfound() -> c_int;
    pub fn iolab_wt_version() -> *const c_char;
    pub fn iolab_wt_strerror(err: c_int) -> *const c_char;
    pub fn iolab_wt_last_error() -> *const c_char;
    pub fn iolab_wt_open(
        home: *const c_char,
        config: *const c_char,
        conn: *mut *mut WtConnection,
    ) -> c_int;
    pub fn iolab_wt_close(conn: *mut WtConnection) -> c_int;
    pub fn iolab_wt_open_session(conn: *mut WtConnection, s: *mut *mut Session) -> c_int;
    pub fn iolab_wt_session_close(s: *mut Session) -> c_int;
    pub fn iolab_wt_create(s: *mut Session, uri: *const c_char, config: *const c_char) -> c_int;
    pub fn iolab_wt_open_cursor(s: *mut Session, uri: *const c_char, c: *mut *mut Cursor) -> c_int;
    pub fn iolab_wt_checkpoint(s: *mut Session) -> c_int;
    pub fn iolab_wt_put(
        c: *mut Cursor,
        k: *const c_void,
        kl: usize,
        v: *const c_void,
        vl: usize,
    ) -> c_int;
    pub fn iolab_wt_get(
        c: *mut Cursor,
        k: *const c_void,
        kl: usize,
        v: *mut *const c_void,
        vl: *mut usize,
    ) -> c_int;
    pub fn iolab_wt_remove(c: *mut Cursor, k: *const c_void, kl: usize) -> c_int;
    pub fn iolab_wt_reset(c: *mut Cursor) -> c_int;
    pub fn iolab_wt_seek(c: *mut Cursor, k: *const c_void, kl: usize) -> c_int;
    pub fn iolab_wt_next(c: *mut Cursor) -> c_int;
    pub fn iolab_wt_current(
        c: *mut Cursor,
        k: *mut *const c_void,
        kl: *mut usize,
        v: *mut *const c_void,
        vl: *mut usize,
    ) -> c_int;
}

/// WiredTiger's message for an error code.
pub fn message(err: c_int) -> String {
    // SAFETY: wiredtiger_strerror returns a static (or thread-local)
    // NUL-terminated string for any code.
    unsafe { CStr::from_ptr(iolab_wt_strerror(err)) }
        .to_string_lossy()
        .into_owned()
}

/// `Ok` for 0, else an error naming what was done, the code's message and
/// what WiredTiger said about it on this thread.
#[inline]
pub fn check(ret: c_int, what: &str) -> anyhow::Result<()> {
    if ret == 0 {
        return Ok(());
    }
    Err(error(ret, what))
}

/// The error `check` returns, kept out of line: every operation calls
/// `check`, and only a failure needs the message.
#[cold]
#[inline(never)]
fn error(ret: c_int, what: &str) -> anyhow::Error {
    // SAFETY: a thread-local NUL-terminated buffer of the shim's.
    let said = unsafe { CStr::from_ptr(iolab_wt_last_error()) }.to_string_lossy();
    let mut e = format!("wiredtiger {what}: {} ({ret})", message(ret));
    if !said.is_empty() {
        e += &format!(": {said}");
    }
    anyhow::anyhow!(e)
}

/// The library's version string ("WiredTiger 3.2.1: (August 27, 2019)").
pub fn version() -> String {
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(iolab_wt_version()) }
        .to_string_lossy()
        .into_owned()
}

/// A slice over memory WiredTiger owns (valid until the cursor's next call).
///
/// # Safety
/// `p` must point at `len` readable bytes for the returned lifetime.
pub unsafe fn bytes<'a>(p: *const c_void, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p.cast(), len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notfound_is_the_headers() {
        assert_eq!(unsafe { iolab_wt_notfound() }, NOTFOUND);
        assert!(version().starts_with("WiredTiger "), "{}", version());
        assert!(check(NOTFOUND, "search")
            .unwrap_err()
            .to_string()
            .contains("WT_NOTFOUND"));
    }
}
