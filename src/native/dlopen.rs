//! Libraries loaded at run time (libiscsi, libibverbs, librdmacm): a
//! machine without them builds and runs iolab, and the engine that needs
//! one says what is missing.

use std::ffi::{c_void, CStr};

/// The first of `names` that dlopen finds (RTLD_NOW, never closed), or
/// `missing` as the reason.
pub fn open(names: &[&CStr], missing: &str) -> Result<*mut c_void, String> {
    names
        .iter()
        // SAFETY: dlopen with NUL-terminated names; the handle is never closed.
        .map(|n| unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) })
        .find(|h| !h.is_null())
        .ok_or_else(|| missing.to_string())
}

/// The symbol `name` (NUL-terminated) of `handle` (the library `lib`) as a
/// function pointer `T`.
///
/// # Safety
/// `T` must be the function pointer type of the symbol's C signature.
pub unsafe fn symbol<T>(handle: *mut c_void, name: &str, lib: &str) -> Result<T, String> {
    // SAFETY: a library handle and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle, name.as_ptr().cast()) };
    if p.is_null() {
        return Err(format!("{lib} lacks {}", name.trim_end_matches('\0')));
    }
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: a non-null code address of the signature `T` names (caller's promise).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}
