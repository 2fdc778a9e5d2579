//! libibverbs and librdmacm (rdma-core, Debian's libibverbs1 and
//! librdmacm1), loaded at run time with dlopen so a machine without them
//! builds and runs iolab and the nvme-rdma engine and RDMA target say what
//! is missing. Only what they call is declared, with the layouts of rdma-core
//! 44's public headers (infiniband/verbs.h, rdma/rdma_cma.h; checked
//! against offsetof by `tests::layouts_match_rdma_core`). `ibv_post_send`,
//! `ibv_post_recv` and `ibv_poll_cq` are inline functions in the headers,
//! calls through the context's ops table: `post_send`, `post_recv` and
//! `poll_cq` here make the same calls.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use super::dlopen;

/// `struct ibv_sge`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `struct ibv_send_wr` (128 bytes): the fields of a SEND and of an RDMA
/// READ or WRITE (`wr.rdma`: remote address and key); the rest zero.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SendWr {
    pub wr_id: u64,
    pub next: *mut SendWr,
    pub sg_list: *mut Sge,
    pub num_sge: c_int,
    pub opcode: u32,
    pub send_flags: u32,
    pub imm_data: u32,
    pub remote_addr: u64,
    pub rkey: u32,
    pub _wr_rest: [u8; 20],
    pub _tail: [u8; 56],
}

impl Default for SendWr {
    fn default() -> SendWr {
        SendWr {
            wr_id: 0,
            next: std::ptr::null_mut(),
            sg_list: std::ptr::null_mut(),
            num_sge: 0,
            opcode: 0,
            send_flags: 0,
            imm_data: 0,
            remote_addr: 0,
            rkey: 0,
            _wr_rest: [0; 20],
            _tail: [0; 56],
        }
    }
}

impl SendWr {
    /// One work request of `opcode` over the one `sge`; `signaled`: its
    /// completion is reported (an unsignaled one only if it fails).
    pub fn one(wr_id: u64, sge: &mut Sge, opcode: u32, signaled: bool) -> SendWr {
        SendWr {
            wr_id,
            sg_list: sge,
            num_sge: 1,
            opcode,
            send_flags: if signaled { SEND_SIGNALED } else { 0 },
            ..SendWr::default()
        }
    }

    /// The same, reaching `remote_addr` with `rkey` (RDMA READ and WRITE).
    pub fn at(mut self, remote_addr: u64, rkey: u32) -> SendWr {
        self.remote_addr = remote_addr;
        self.rkey = rkey;
        self
    }
}

/// `struct ibv_recv_wr`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RecvWr {
    pub wr_id: u64,
    pub next: *mut RecvWr,
    pub sg_list: *mut Sge,
    pub num_sge: c_int,
}

/// `struct ibv_wc`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Wc {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: u32,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

/// `struct ibv_qp_cap`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct QpCap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_init_attr`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct QpInitAttr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut c_void,
    pub recv_cq: *mut c_void,
    pub srq: *mut c_void,
    pub cap: QpCap,
    pub qp_type: u32,
    pub sq_sig_all: c_int,
}

/// `struct ibv_mr`.
#[repr(C)]
#[derive(Debug)]
pub struct Mr {
    pub context: *mut c_void,
    pub pd: *mut c_void,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct rdma_conn_param`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ConnParam {
    pub private_data: *const c_void,
    pub private_data_len: u8,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub flow_control: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    pub srq: u8,
    pub qp_num: u32,
}

/// `struct rdma_cm_event`: the id, the event and its status, and the
/// connection parameters (`param.conn`) whose private data a REJECTED,
/// CONNECT_REQUEST or ESTABLISHED event carries.
#[repr(C)]
#[derive(Debug)]
pub struct CmEvent {
    pub id: *mut c_void,
    pub listen_id: *mut c_void,
    pub event: u32,
    pub status: c_int,
    pub conn: ConnParam,
    _rest: [u8; 32],
}

/// The leading fields of `struct rdma_cm_id`.
#[repr(C)]
pub struct CmIdHead {
    pub verbs: *mut c_void,
    pub channel: *mut c_void,
    pub context: *mut c_void,
    pub qp: *mut c_void,
}

pub const PS_TCP: u32 = 0x0106;
pub const QPT_RC: u32 = 2;
pub const WR_SEND: u32 = 2;
pub const WR_RDMA_WRITE: u32 = 0;
pub const WR_RDMA_READ: u32 = 4;
pub const SEND_SIGNALED: u32 = 2;
pub const WC_SUCCESS: u32 = 0;
pub const WC_RECV: u32 = 128;
pub const ACCESS_LOCAL_WRITE: c_int = 1;
pub const ACCESS_REMOTE_WRITE: c_int = 2;
pub const ACCESS_REMOTE_READ: c_int = 4;

/// `enum rdma_cm_event_type`, the events the engine waits for.
pub const EVENT_ADDR_RESOLVED: u32 = 0;
pub const EVENT_ROUTE_RESOLVED: u32 = 2;
pub const EVENT_CONNECT_REQUEST: u32 = 4;
pub const EVENT_REJECTED: u32 = 8;
pub const EVENT_ESTABLISHED: u32 = 9;
pub const EVENT_DISCONNECTED: u32 = 10;

/// Byte offsets in `struct ibv_context` of the ops the headers' inline
/// functions call.
const OPS_POLL_CQ: usize = 8 + 88;
const OPS_POST_SEND: usize = 8 + 200;
const OPS_POST_RECV: usize = 8 + 208;

type PollCq = unsafe extern "C" fn(*mut c_void, c_int, *mut Wc) -> c_int;
type PostSend = unsafe extern "C" fn(*mut c_void, *mut SendWr, *mut *mut SendWr) -> c_int;
type PostRecv = unsafe extern "C" fn(*mut c_void, *mut RecvWr, *mut *mut RecvWr) -> c_int;

/// The libraries' entry points.
pub struct Verbs {
    pub get_device_list: unsafe extern "C" fn(*mut c_int) -> *mut *mut c_void,
    pub free_device_list: unsafe extern "C" fn(*mut *mut c_void),
    pub get_device_name: unsafe extern "C" fn(*mut c_void) -> *const c_char,
    pub alloc_pd: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    pub dealloc_pd: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub reg_mr: unsafe extern "C" fn(*mut c_void, *mut c_void, usize, c_int) -> *mut Mr,
    pub dereg_mr: unsafe extern "C" fn(*mut Mr) -> c_int,
    pub create_cq:
        unsafe extern "C" fn(*mut c_void, c_int, *mut c_void, *mut c_void, c_int) -> *mut c_void,
    pub destroy_cq: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub create_event_channel: unsafe extern "C" fn() -> *mut c_int,
    pub destroy_event_channel: unsafe extern "C" fn(*mut c_int),
    pub create_id: unsafe extern "C" fn(*mut c_int, *mut *mut c_void, *mut c_void, u32) -> c_int,
    pub destroy_id: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub resolve_addr: unsafe extern "C" fn(
        *mut c_void,
        *const libc::sockaddr,
        *const libc::sockaddr,
        c_int,
    ) -> c_int,
    pub resolve_route: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    pub create_qp: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut QpInitAttr) -> c_int,
    pub destroy_qp: unsafe extern "C" fn(*mut c_void),
    pub connect: unsafe extern "C" fn(*mut c_void, *mut ConnParam) -> c_int,
    pub disconnect: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub bind_addr: unsafe extern "C" fn(*mut c_void, *const libc::sockaddr) -> c_int,
    pub listen: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    pub accept: unsafe extern "C" fn(*mut c_void, *mut ConnParam) -> c_int,
    pub reject: unsafe extern "C" fn(*mut c_void, *const c_void, u8) -> c_int,
    pub get_cm_event: unsafe extern "C" fn(*mut c_int, *mut *mut CmEvent) -> c_int,
    pub ack_cm_event: unsafe extern "C" fn(*mut CmEvent) -> c_int,
}

// SAFETY: plain function pointers into libraries that stay loaded.
unsafe impl Send for Verbs {}
unsafe impl Sync for Verbs {}

static VERBS: OnceLock<Result<Verbs, String>> = OnceLock::new();

/// The libraries, loaded once; the reason when they cannot be.
pub fn verbs() -> Result<&'static Verbs, String> {
    VERBS.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Verbs, String> {
    let missing = |lib: &str| {
        format!("{lib} is not installed (rdma-core; Debian: libibverbs1 librdmacm1 ibverbs-providers; scripts/install-deps.sh installs them)")
    };
    let ibv = dlopen::open(&[c"libibverbs.so.1"], &missing("libibverbs"))?;
    let cm = dlopen::open(&[c"librdmacm.so.1"], &missing("librdmacm"))?;
    macro_rules! sym {
        ($h:expr, $lib:literal, $name:literal) => {
            // SAFETY: the field's type is the symbol's C signature.
            unsafe { dlopen::symbol($h, concat!($name, "\0"), $lib)? }
        };
    }
    Ok(Verbs {
        get_device_list: sym!(ibv, "libibverbs", "ibv_get_device_list"),
        free_device_list: sym!(ibv, "libibverbs", "ibv_free_device_list"),
        get_device_name: sym!(ibv, "libibverbs", "ibv_get_device_name"),
        alloc_pd: sym!(ibv, "libibverbs", "ibv_alloc_pd"),
        dealloc_pd: sym!(ibv, "libibverbs", "ibv_dealloc_pd"),
        reg_mr: sym!(ibv, "libibverbs", "ibv_reg_mr"),
        dereg_mr: sym!(ibv, "libibverbs", "ibv_dereg_mr"),
        create_cq: sym!(ibv, "libibverbs", "ibv_create_cq"),
        destroy_cq: sym!(ibv, "libibverbs", "ibv_destroy_cq"),
        create_event_channel: sym!(cm, "librdmacm", "rdma_create_event_channel"),
        destroy_event_channel: sym!(cm, "librdmacm", "rdma_destroy_event_channel"),
        create_id: sym!(cm, "librdmacm", "rdma_create_id"),
        destroy_id: sym!(cm, "librdmacm", "rdma_destroy_id"),
        resolve_addr: sym!(cm, "librdmacm", "rdma_resolve_addr"),
        resolve_route: sym!(cm, "librdmacm", "rdma_resolve_route"),
        create_qp: sym!(cm, "librdmacm", "rdma_create_qp"),
        destroy_qp: sym!(cm, "librdmacm", "rdma_destroy_qp"),
        connect: sym!(cm, "librdmacm", "rdma_connect"),
        disconnect: sym!(cm, "librdmacm", "rdma_disconnect"),
        bind_addr: sym!(cm, "librdmacm", "rdma_bind_addr"),
        listen: sym!(cm, "librdmacm", "rdma_listen"),
        accept: sym!(cm, "librdmacm", "rdma_accept"),
        reject: sym!(cm, "librdmacm", "rdma_reject"),
        get_cm_event: sym!(cm, "librdmacm", "rdma_get_cm_event"),
        ack_cm_event: sym!(cm, "librdmacm", "rdma_ack_cm_event"),
    })
}

/// The names of this machine's RDMA devices (`ibv_get_device_list`).
pub fn device_names(v: &Verbs) -> Vec<String> {
    let mut n: c_int = 0;
    // SAFETY: the list is read up to its count and freed once.
    unsafe {
        let list = (v.get_device_list)(&mut n);
        if list.is_null() {
            return Vec::new();
        }
        let names = (0..n.max(0) as usize)
            .map(|i| {
                let name = (v.get_device_name)(*list.add(i));
                if name.is_null() {
                    String::new()
                } else {
                    std::ffi::CStr::from_ptr(name)
                        .to_string_lossy()
                        .into_owned()
                }
            })
            .collect();
        (v.free_device_list)(list);
        names
    }
}

/// Why iolab's RDMA initiator and target cannot run here: rdma-core is
/// missing, or this machine has no RDMA device.
pub fn unavailable() -> Option<String> {
    let v = match verbs() {
        Ok(v) => v,
        Err(why) => return Some(why),
    };
    device_names(v).is_empty().then(|| {
        "this machine has no RDMA device (no RNIC, and no soft-RoCE link: `rdma link add NAME type rxe netdev IFACE` makes one where the kernel has rdma_rxe)".to_string()
    })
}

/// The context an object (QP, CQ) was made in: its first field.
///
/// # Safety
/// `obj` is a live `ibv_qp` or `ibv_cq`.
unsafe fn context_of(obj: *mut c_void) -> *mut u8 {
    // SAFETY: the caller's promise; the context pointer is the first field.
    unsafe { *(obj as *const *mut u8) }
}

/// `ibv_post_send`.
///
/// # Safety
/// `qp` is a live QP; `wr` a valid chain whose buffers are registered.
pub unsafe fn post_send(qp: *mut c_void, wr: *mut SendWr) -> c_int {
    let mut bad = std::ptr::null_mut();
    // SAFETY: the ops table of a live context holds post_send at this offset.
    unsafe {
        let f: PostSend = *(context_of(qp).add(OPS_POST_SEND) as *const PostSend);
        f(qp, wr, &mut bad)
    }
}

/// `ibv_post_recv`.
///
/// # Safety
/// As `post_send`.
pub unsafe fn post_recv(qp: *mut c_void, wr: *mut RecvWr) -> c_int {
    let mut bad = std::ptr::null_mut();
    // SAFETY: the ops table of a live context holds post_recv at this offset.
    unsafe {
        let f: PostRecv = *(context_of(qp).add(OPS_POST_RECV) as *const PostRecv);
        f(qp, wr, &mut bad)
    }
}

/// Post one receive of `sge` named `wr_id` (`ibv_post_recv` of a
/// one-element chain).
///
/// # Safety
/// As `post_send`: `qp` is live and `sge` lies in registered memory.
pub unsafe fn post_one_recv(qp: *mut c_void, wr_id: u64, mut sge: Sge) -> std::io::Result<()> {
    let mut wr = RecvWr {
        wr_id,
        next: std::ptr::null_mut(),
        sg_list: &mut sge,
        num_sge: 1,
    };
    // SAFETY: the caller's promise.
    match unsafe { post_recv(qp, &mut wr) } {
        0 => Ok(()),
        rc => Err(std::io::Error::from_raw_os_error(rc)),
    }
}

/// `ibv_poll_cq`: completions into `wc`, how many (negative on error).
///
/// # Safety
/// `cq` is a live CQ.
pub unsafe fn poll_cq(cq: *mut c_void, wc: &mut [Wc]) -> c_int {
    // SAFETY: the ops table of a live context holds poll_cq at this offset.
    unsafe {
        let f: PollCq = *(context_of(cq).add(OPS_POLL_CQ) as *const PollCq);
        f(cq, wc.len() as c_int, wc.as_mut_ptr())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The sizes and offsets rdma-core 44's headers give (offsetof).
    #[test]
    fn layouts_match_rdma_core() {
        assert_eq!(size_of::<Sge>(), 16);
        assert_eq!(size_of::<SendWr>(), 128);
        assert_eq!(offset_of!(SendWr, opcode), 28);
        assert_eq!(offset_of!(SendWr, send_flags), 32);
        assert_eq!(offset_of!(SendWr, remote_addr), 40);
        assert_eq!(offset_of!(SendWr, rkey), 48);
        assert_eq!(size_of::<RecvWr>(), 32);
        assert_eq!(size_of::<Wc>(), 48);
        assert_eq!(offset_of!(Wc, byte_len), 20);
        assert_eq!(size_of::<QpInitAttr>(), 64);
        assert_eq!(offset_of!(QpInitAttr, cap), 32);
        assert_eq!(offset_of!(QpInitAttr, qp_type), 52);
        assert_eq!(offset_of!(Mr, lkey), 36);
        assert_eq!(offset_of!(Mr, rkey), 40);
        assert_eq!(size_of::<ConnParam>(), 24);
        assert_eq!(offset_of!(ConnParam, retry_count), 12);
        assert_eq!(offset_of!(ConnParam, qp_num), 16);
        assert_eq!(size_of::<CmEvent>(), 80);
        assert_eq!(offset_of!(CmEvent, event), 16);
        assert_eq!(offset_of!(CmEvent, conn), 24);
        assert_eq!(offset_of!(CmIdHead, qp), 24);
    }
}
