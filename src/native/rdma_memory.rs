//! What RDMA users share besides the verbs: page-aligned memory to
//! register (`RdmaMemory`) and the `sockaddr` the connection manager takes
//! (`sockaddr_of`), for iolab's initiator and its target alike.

use std::net::SocketAddr;

/// A page-aligned, zeroed allocation (memory to register).
pub struct RdmaMemory {
    pub ptr: *mut u8,
    pub len: usize,
}

impl RdmaMemory {
    pub fn new(len: usize) -> anyhow::Result<RdmaMemory> {
        let layout = std::alloc::Layout::from_size_align(len.max(4096), 4096)?;
        // SAFETY: a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        anyhow::ensure!(!ptr.is_null(), "cannot allocate {len} bytes");
        Ok(RdmaMemory {
            ptr,
            len: len.max(4096),
        })
    }
}

impl Drop for RdmaMemory {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len, 4096).expect("made before");
        // SAFETY: allocated with this layout in `new`.
        unsafe { std::alloc::dealloc(self.ptr, layout) };
    }
}

/// `addr` as a `sockaddr_in` or `sockaddr_in6` in a `sockaddr_storage`.
pub fn sockaddr_of(addr: SocketAddr) -> (libc::sockaddr_storage, usize) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as u16,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            (ss, std::mem::size_of::<libc::sockaddr_in>())
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as u16,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (ss, std::mem::size_of::<libc::sockaddr_in6>())
        }
    }
}
