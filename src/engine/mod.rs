//! I/O engines: the one trait the runner drives, and the engines behind it.
//!
//! An engine owns the file descriptor(s) and the submission machinery of one
//! worker. The runner hands it requests (`queue`), asks it to start them
//! (`submit`) and collects completions (`reap`). Engines never allocate, lock or
//! read the clock on these calls: timing is the runner's job.
//!
//! Synchronous engines (psync, mmap) do the I/O inside `queue` and report the
//! completion on the next `reap`; the runner times them around `queue`.

pub mod aio;
pub mod fake;
pub mod mmap;
pub mod null;
pub mod psync;
pub mod uring;

use std::io;
use std::os::fd::RawFd;

use serde::{Deserialize, Serialize};

/// What a request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Read,
    Write,
    Fsync,
}

impl OpKind {
    pub const ALL: [OpKind; 3] = [OpKind::Read, OpKind::Write, OpKind::Fsync];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Fsync => "fsync",
        }
    }
}

/// One request handed to an engine. `buf` points into the worker's aligned
/// buffer pool and stays valid until the request completes.
#[derive(Debug, Clone, Copy)]
pub struct IoRequest {
    /// Index of the in-flight slot (and of its buffer); echoed in the completion.
    pub slot: u32,
    pub op: OpKind,
    pub offset: u64,
    pub len: u32,
    pub buf: *mut u8,
}

/// A finished request: `result` is the byte count, or a negative errno.
#[derive(Debug, Clone, Copy, Default)]
pub struct Completion {
    pub slot: u32,
    pub result: i64,
}

/// Which engine a job uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    Psync,
    Aio,
    IoUring,
    Mmap,
    Null,
    /// Scripted latencies on a virtual clock; for tests only (hidden in the CLI).
    Fake,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Psync => "psync",
            EngineKind::Aio => "aio",
            EngineKind::IoUring => "io_uring",
            EngineKind::Mmap => "mmap",
            EngineKind::Null => "null",
            EngineKind::Fake => "fake",
        }
    }

    pub fn parse(s: &str) -> Option<EngineKind> {
        Some(match s {
            "psync" | "sync" | "pvsync" => EngineKind::Psync,
            "aio" | "libaio" => EngineKind::Aio,
            "io_uring" | "uring" | "io-uring" => EngineKind::IoUring,
            "mmap" => EngineKind::Mmap,
            "null" => EngineKind::Null,
            "fake" => EngineKind::Fake,
            _ => return None,
        })
    }

    /// Engines that complete each request inside `queue` (queue depth is 1).
    pub fn is_sync(self) -> bool {
        matches!(self, EngineKind::Psync | EngineKind::Mmap)
    }

    /// Engines that touch no file at all.
    pub fn needs_file(self) -> bool {
        !matches!(self, EngineKind::Null | EngineKind::Fake)
    }
}

/// io_uring options (ignored by other engines).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UringOptions {
    /// Register the buffer pool and use READ_FIXED / WRITE_FIXED.
    pub fixed_buffers: bool,
    /// Register the file and use a fixed-file index.
    pub fixed_files: bool,
    /// Kernel submission-queue polling thread.
    pub sqpoll: bool,
    /// Completion polling (needs O_DIRECT and a device with poll queues).
    pub iopoll: bool,
}

/// Everything an engine needs to start: the open file, the buffer pool, the depth.
#[derive(Debug, Clone, Copy)]
pub struct EngineSetup {
    /// Open file or block device (-1 for engines that need none).
    pub fd: RawFd,
    /// Size of the mapped/used region in bytes (for mmap).
    pub file_size: u64,
    /// Requests in flight at most.
    pub depth: u32,
    /// Start and length of the buffer pool (for buffer registration).
    pub pool_base: *mut u8,
    pub pool_len: usize,
    pub uring: UringOptions,
    /// Whether the file was opened writable (mmap maps it shared + writable).
    pub writable: bool,
}

/// The interface the runner drives. See the module comment for the contract.
pub trait Engine {
    /// Accept a request. Async engines stage it for `submit`; sync engines do it now.
    fn queue(&mut self, req: IoRequest) -> io::Result<()>;
    /// Start every staged request; returns how many were started.
    fn submit(&mut self) -> io::Result<usize>;
    /// Wait until at least `min` requests completed (0 = do not wait) and
    /// append their completions to `out` (whose capacity is the depth, so no
    /// allocation happens). Returns how many were appended.
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize>;
    /// Flush written data to stable storage, synchronously, with nothing in flight.
    fn fsync(&mut self) -> io::Result<()>;
}

/// Probe result for one optional engine feature, recorded in provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureProbe {
    pub feature: String,
    pub supported: bool,
    pub detail: String,
}

/// Probe the optional features of `kind` on the open target `fd`, for
/// provenance and warnings: io_uring (base and each option in `uring`) and
/// aio (works; asynchronous, i.e. O_DIRECT). Other engines have nothing to
/// probe. Use `uring::check_uring_features` to refuse a run instead.
pub fn probe_engine(kind: EngineKind, fd: RawFd, uring: &UringOptions) -> Vec<FeatureProbe> {
    match kind {
        EngineKind::IoUring => uring::probe_uring(fd, uring),
        EngineKind::Aio => aio::probe_aio(fd),
        _ => Vec::new(),
    }
}

/// Turn a negative-errno completion result into an error.
pub fn completion_error(res: i64) -> io::Error {
    io::Error::from_raw_os_error((-res) as i32)
}

/// Check, before anything is timed, that the optional features a job asks
/// for work on this target (an unsupported one is an error that names it);
/// returns what was probed, for provenance.
pub fn probe_features(
    kind: EngineKind,
    fd: RawFd,
    uring: &UringOptions,
) -> anyhow::Result<Vec<FeatureProbe>> {
    match kind {
        EngineKind::IoUring => {
            let probes = uring::probe_uring(fd, uring);
            let flag = |feature: &str| match feature {
                "io_uring fixed buffers" => "--uring-fixed-buffers",
                "io_uring fixed files" => "--uring-fixed-files",
                "io_uring SQPOLL" => "--uring-sqpoll",
                "io_uring IOPOLL" => "--uring-iopoll",
                _ => "--engine",
            };
            match probes.iter().find(|p| !p.supported) {
                Some(bad) => Err(crate::error::usage(flag(&bad.feature), bad.detail.clone())),
                None => Ok(probes),
            }
        }
        _ => Ok(probe_engine(kind, fd, uring)),
    }
}

#[cfg(test)]
pub(crate) mod test_support;
