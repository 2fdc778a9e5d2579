//! libiscsi (LGPL-2.1), loaded at run time with dlopen: a machine without
//! it builds and runs iolab, and the iscsi engine says what is missing.
//! Only the calls the engine makes are declared, with the layouts of
//! libiscsi 1.19's public headers (iscsi/iscsi.h, iscsi/scsi-lowlevel.h).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// `struct iscsi_context` (opaque).
#[repr(C)]
pub struct IscsiContext {
    _private: [u8; 0],
}

/// `struct scsi_iovec`.
#[repr(C)]
pub struct ScsiIovec {
    pub iov_base: *mut c_void,
    pub iov_len: usize,
}

/// The leading fields of `struct scsi_task` (status and sense), which is
/// all the engine reads of it.
#[repr(C)]
pub struct ScsiTaskHead {
    pub status: c_int,
    pub cdb_size: c_int,
    pub xfer_dir: c_int,
    pub expxferlen: c_int,
    pub cdb: [u8; 16],
    pub residual_status: c_int,
    pub residual: usize,
    pub sense_error_type: u8,
    pub sense_key: c_int,
    pub sense_ascq: c_int,
}

/// `struct scsi_readcapacity16` (leading fields).
#[repr(C)]
pub struct ReadCapacity16 {
    pub returned_lba: u64,
    pub block_length: u32,
}

pub type CommandCb = unsafe extern "C" fn(*mut IscsiContext, c_int, *mut c_void, *mut c_void);

pub const SCSI_STATUS_GOOD: c_int = 0;
pub const SCSI_STATUS_CHECK_CONDITION: c_int = 2;
pub const SCSI_STATUS_CANCELLED: c_int = 0x0f00_0000;
pub const SCSI_STATUS_ERROR: c_int = 0x0f00_0001;
pub const SCSI_STATUS_TIMEOUT: c_int = 0x0f00_0002;
pub const SENSE_KEY_NOT_READY: c_int = 2;
pub const SENSE_KEY_UNIT_ATTENTION: c_int = 6;
pub const SENSE_KEY_DATA_PROTECTION: c_int = 7;
pub const SENSE_KEY_ILLEGAL_REQUEST: c_int = 5;
pub const ISCSI_SESSION_NORMAL: c_int = 2;
pub const ISCSI_HEADER_DIGEST_NONE_CRC32C: c_int = 1;

type ReadIov = unsafe extern "C" fn(
    *mut IscsiContext,
    c_int,
    u64,
    u32,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    CommandCb,
    *mut c_void,
    *mut ScsiIovec,
    c_int,
) -> *mut ScsiTaskHead;
type WriteIov = unsafe extern "C" fn(
    *mut IscsiContext,
    c_int,
    u64,
    *mut u8,
    u32,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    CommandCb,
    *mut c_void,
    *mut ScsiIovec,
    c_int,
) -> *mut ScsiTaskHead;

/// The library's entry points.
pub struct Lib {
    pub create_context: unsafe extern "C" fn(*const c_char) -> *mut IscsiContext,
    pub destroy_context: unsafe extern "C" fn(*mut IscsiContext) -> c_int,
    pub set_targetname: unsafe extern "C" fn(*mut IscsiContext, *const c_char) -> c_int,
    pub set_session_type: unsafe extern "C" fn(*mut IscsiContext, c_int) -> c_int,
    pub set_header_digest: unsafe extern "C" fn(*mut IscsiContext, c_int) -> c_int,
    pub set_noautoreconnect: unsafe extern "C" fn(*mut IscsiContext, c_int),
    pub full_connect_sync: unsafe extern "C" fn(*mut IscsiContext, *const c_char, c_int) -> c_int,
    pub logout_sync: unsafe extern "C" fn(*mut IscsiContext) -> c_int,
    pub get_error: unsafe extern "C" fn(*mut IscsiContext) -> *const c_char,
    pub get_fd: unsafe extern "C" fn(*mut IscsiContext) -> c_int,
    pub which_events: unsafe extern "C" fn(*mut IscsiContext) -> c_int,
    pub service: unsafe extern "C" fn(*mut IscsiContext, c_int) -> c_int,
    pub read16_iov_task: ReadIov,
    pub write16_iov_task: WriteIov,
    pub synchronizecache16_task: unsafe extern "C" fn(
        *mut IscsiContext,
        c_int,
        u64,
        u32,
        c_int,
        c_int,
        CommandCb,
        *mut c_void,
    ) -> *mut ScsiTaskHead,
    pub testunitready_sync: unsafe extern "C" fn(*mut IscsiContext, c_int) -> *mut ScsiTaskHead,
    pub readcapacity16_sync: unsafe extern "C" fn(*mut IscsiContext, c_int) -> *mut ScsiTaskHead,
    pub free_scsi_task: unsafe extern "C" fn(*mut ScsiTaskHead),
    pub datain_unmarshall: unsafe extern "C" fn(*mut ScsiTaskHead) -> *mut c_void,
}

// SAFETY: plain function pointers into a library that stays loaded.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();

/// The library, loaded once; the reason when it cannot be.
pub fn lib() -> Result<&'static Lib, String> {
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Lib, String> {
    let handle = crate::native::dlopen::open(
        &[c"libiscsi.so.7", c"libiscsi.so"],
        "libiscsi is not installed (Debian: libiscsi7; scripts/install-deps.sh installs it)",
    )?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the field's type is the symbol's C signature.
            unsafe { crate::native::dlopen::symbol(handle, concat!($name, "\0"), "libiscsi")? }
        };
    }
    Ok(Lib {
        create_context: sym!("iscsi_create_context"),
        destroy_context: sym!("iscsi_destroy_context"),
        set_targetname: sym!("iscsi_set_targetname"),
        set_session_type: sym!("iscsi_set_session_type"),
        set_header_digest: sym!("iscsi_set_header_digest"),
        set_noautoreconnect: sym!("iscsi_set_noautoreconnect"),
        full_connect_sync: sym!("iscsi_full_connect_sync"),
        logout_sync: sym!("iscsi_logout_sync"),
        get_error: sym!("iscsi_get_error"),
        get_fd: sym!("iscsi_get_fd"),
        which_events: sym!("iscsi_which_events"),
        service: sym!("iscsi_service"),
        read16_iov_task: sym!("iscsi_read16_iov_task"),
        write16_iov_task: sym!("iscsi_write16_iov_task"),
        synchronizecache16_task: sym!("iscsi_synchronizecache16_task"),
        testunitready_sync: sym!("iscsi_testunitready_sync"),
        readcapacity16_sync: sym!("iscsi_readcapacity16_sync"),
        free_scsi_task: sym!("scsi_free_scsi_task"),
        datain_unmarshall: sym!("scsi_datain_unmarshall"),
    })
}

/// The context's last error message.
pub fn error_of(lib: &Lib, ctx: *mut IscsiContext) -> String {
    // SAFETY: a live context; libiscsi returns a NUL-terminated string it owns.
    let p = unsafe { (lib.get_error)(ctx) };
    if p.is_null() {
        return "unknown error".into();
    }
    // SAFETY: non-null and NUL-terminated (above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
