//! The provenance's view of what a run measured: the target (its kind,
//! size, filesystem and disk, a remote export as its server described it)
//! and the probes of the engine's optional features. Filled by `dut/` and
//! `engine/`; kept here, in the results model, which imports neither.

use serde::{Deserialize, Serialize};

use crate::measure::sysfs::{DiskInfo, FsInfo};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// Created by iolab for this run.
    ScratchFile,
    ExistingFile,
    BlockDevice,
    /// No file at all (null and fake engines).
    NoFile,
    /// A remote endpoint (`nbd://`, `iscsi://`, `nvme-tcp://`), opened by an
    /// engine that speaks its transport.
    Remote,
    /// A directory that exists (`sysinfo --target DIR`, `kv --db DIR`).
    Directory,
}

impl TargetKind {
    /// Its name in results files ("scratch_file", "block_device" ...).
    pub fn key(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// How the provenance names it to a reader.
    pub fn describe(self) -> &'static str {
        match self {
            TargetKind::ScratchFile => "scratch file",
            TargetKind::ExistingFile => "existing file",
            TargetKind::BlockDevice => "block device",
            TargetKind::NoFile => "no file",
            TargetKind::Remote => "remote export",
            TargetKind::Directory => "directory",
        }
    }
}

/// Provenance view of a target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub path: String,
    pub kind: TargetKind,
    pub size_bytes: u64,
    pub filesystem: Option<FsInfo>,
    pub disk: Option<DiskInfo>,
    /// A remote target's export, as its server described it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<RemoteExport>,
}

/// What the server said about a remote export when iolab asked (before the
/// run), kept in provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteExport {
    pub size_bytes: u64,
    pub read_only: bool,
    /// Several connections see each other's writes (NBD's CAN_MULTI_CONN).
    pub multi_conn: bool,
    /// Requests must be multiples of this many bytes, and at most `max_block`.
    pub min_block: u32,
    pub max_block: u32,
    /// Requests in flight per connection at most (NVMe/TCP: the queue's
    /// entries, less the flush slot and the one a full queue keeps free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// The server's other facts, in words (flags, block sizes, reply style).
    pub detail: String,
}

/// Probe result for one optional engine feature, recorded in provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureProbe {
    pub feature: String,
    pub supported: bool,
    pub detail: String,
}
