//! The engines as a closed set, described: which engines there are
//! (`EngineKind`), what each can do (`EngineCaps`, `Opens`), which one
//! speaks a remote transport, and the options each owns (`EngineConfig`,
//! `UringOptions`, the fake engine's `FakeScript`). Plain data, here in
//! plan/ beside the jobs that name them: the planner and the results read
//! these facts without importing engine/, which implements them.

use serde::{Deserialize, Serialize};

use crate::plan::endpoint::WireProtocol;

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
    /// iolab's NBD client (`nbd://` targets).
    Nbd,
    /// libiscsi's initiator (`iscsi://` targets).
    Iscsi,
    /// iolab's NVMe/TCP initiator (`nvme-tcp://` targets).
    #[serde(rename = "nvme-tcp", alias = "nvme_tcp")]
    NvmeTcp,
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
            EngineKind::Nbd => "nbd",
            EngineKind::Iscsi => "iscsi",
            EngineKind::NvmeTcp => "nvme-tcp",
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
            "nbd" => EngineKind::Nbd,
            "iscsi" | "libiscsi" => EngineKind::Iscsi,
            "nvme-tcp" | "nvme_tcp" | "nvmetcp" => EngineKind::NvmeTcp,
            _ => return None,
        })
    }

    /// Every engine, in CLI order.
    pub const ALL: [EngineKind; 9] = [
        EngineKind::Psync,
        EngineKind::Aio,
        EngineKind::IoUring,
        EngineKind::Mmap,
        EngineKind::Null,
        EngineKind::Fake,
        EngineKind::Nbd,
        EngineKind::Iscsi,
        EngineKind::NvmeTcp,
    ];

    /// What this engine can do; the planner and runner consult these flags
    /// instead of matching engine names.
    pub const fn caps(self) -> EngineCaps {
        const LOCAL: EngineCaps = EngineCaps {
            asynchronous: false,
            opens: Opens::LocalFd,
            direct_io: true,
            stores_data: true,
            batch: true,
            open_loop: true,
            fsync: true,
            virtual_clock: false,
            probes_features: false,
        };
        match self {
            EngineKind::Psync => LOCAL,
            EngineKind::Aio => EngineCaps {
                asynchronous: true,
                probes_features: true,
                ..LOCAL
            },
            EngineKind::IoUring => EngineCaps {
                asynchronous: true,
                probes_features: true,
                ..LOCAL
            },
            EngineKind::Mmap => EngineCaps {
                direct_io: false,
                ..LOCAL
            },
            EngineKind::Null => EngineCaps {
                asynchronous: true,
                opens: Opens::Nothing,
                stores_data: false,
                ..LOCAL
            },
            EngineKind::Fake => EngineCaps {
                asynchronous: true,
                opens: Opens::Nothing,
                stores_data: false,
                virtual_clock: true,
                ..LOCAL
            },
            // O_DIRECT is the server's business: accepted as a no-op.
            EngineKind::Nbd => EngineCaps {
                asynchronous: true,
                opens: Opens::Remote(WireProtocol::Nbd),
                ..LOCAL
            },
            EngineKind::Iscsi => EngineCaps {
                asynchronous: true,
                opens: Opens::Remote(WireProtocol::Iscsi),
                ..LOCAL
            },
            EngineKind::NvmeTcp => EngineCaps {
                asynchronous: true,
                opens: Opens::Remote(WireProtocol::NvmeTcp),
                ..LOCAL
            },
        }
    }

    /// Engines that complete each request inside `queue` (queue depth is 1;
    /// depth comes from more workers).
    pub fn is_sync(self) -> bool {
        !self.caps().asynchronous
    }

    /// Engines that open a local file or block device.
    pub fn needs_file(self) -> bool {
        self.caps().opens == Opens::LocalFd
    }

    /// Engines that run on a target (a local file or device, or a remote
    /// endpoint), not on nothing.
    pub fn needs_target(self) -> bool {
        self.caps().opens != Opens::Nothing
    }
}

/// What an engine opens to do its I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opens {
    /// Nothing (null, fake): the target is only a size.
    Nothing,
    /// A local file or block device descriptor the runner opens per worker.
    LocalFd,
    /// A remote endpoint of this transport, which the engine connects to.
    Remote(WireProtocol),
}

/// Capability flags of an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineCaps {
    /// Several requests in flight per worker; `false` means one request per
    /// worker, done inside `queue` (depth comes from `--jobs`).
    pub asynchronous: bool,
    /// What the engine opens (decides `EngineTarget` and the target kinds it runs on).
    pub opens: Opens,
    /// Can bypass the page cache (O_DIRECT); mmap cannot. Engines that open
    /// nothing accept it as a no-op.
    pub direct_io: bool,
    /// Stores what is written, so `--verify` can read it back.
    pub stores_data: bool,
    /// Supports `--batch` (submit K, wait for all K).
    pub batch: bool,
    /// Supports open-loop issuing (`--rate`).
    pub open_loop: bool,
    /// Implements `fsync` (for `--fsync-every`).
    pub fsync: bool,
    /// Runs on the virtual clock (scripted latencies; tests).
    pub virtual_clock: bool,
    /// Has optional features to probe before a run (`probe_features`).
    pub probes_features: bool,
}

/// The engine that connects to targets of `transport`, if iolab has one.
pub fn engine_for_transport(transport: WireProtocol) -> Option<EngineKind> {
    EngineKind::ALL
        .into_iter()
        .find(|k| k.caps().opens == Opens::Remote(transport))
}

/// One engine with the options it owns (fio's model: each engine has its own
/// option table). Built from a `JobSpec` by `JobSpec::engine_config`.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineConfig {
    Psync,
    Aio,
    IoUring(UringOptions),
    Mmap,
    Null,
    Fake(FakeScript),
    Nbd,
    Iscsi,
    NvmeTcp,
}

impl EngineConfig {
    pub fn kind(&self) -> EngineKind {
        match self {
            EngineConfig::Psync => EngineKind::Psync,
            EngineConfig::Aio => EngineKind::Aio,
            EngineConfig::IoUring(_) => EngineKind::IoUring,
            EngineConfig::Mmap => EngineKind::Mmap,
            EngineConfig::Null => EngineKind::Null,
            EngineConfig::Fake(_) => EngineKind::Fake,
            EngineConfig::Nbd => EngineKind::Nbd,
            EngineConfig::Iscsi => EngineKind::Iscsi,
            EngineConfig::NvmeTcp => EngineKind::NvmeTcp,
        }
    }

    pub fn caps(&self) -> EngineCaps {
        self.kind().caps()
    }

    /// The default options of `kind`.
    pub fn default_for(kind: EngineKind) -> EngineConfig {
        match kind {
            EngineKind::Psync => EngineConfig::Psync,
            EngineKind::Aio => EngineConfig::Aio,
            EngineKind::IoUring => EngineConfig::IoUring(UringOptions::default()),
            EngineKind::Mmap => EngineConfig::Mmap,
            EngineKind::Null => EngineConfig::Null,
            EngineKind::Fake => EngineConfig::Fake(FakeScript::default()),
            EngineKind::Nbd => EngineConfig::Nbd,
            EngineKind::Iscsi => EngineConfig::Iscsi,
            EngineKind::NvmeTcp => EngineConfig::NvmeTcp,
        }
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

/// What the fake device does: service times in ns, cycled, and parallelism.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FakeScript {
    pub latencies_ns: Vec<u64>,
    pub servers: u32,
    /// Virtual time one submit call takes before it returns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub submit_ns: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Default for FakeScript {
    fn default() -> Self {
        FakeScript {
            latencies_ns: vec![100_000],
            servers: 1,
            submit_ns: 0,
        }
    }
}
