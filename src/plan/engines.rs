//! The engines as a closed set, described: which engines there are
//! (`EngineKind`), each one's facts in one row of `FACTS` (names, aliases,
//! fio names, what it can do: `EngineCaps`, `Opens`), which one speaks a
//! remote transport, and the options each owns (`EngineConfig`,
//! `UringOptions`, the fake engine's `FakeScript`). Callers ask these,
//! never match variants (tests/house_closed_sets.rs). Plain data, here in
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
    /// iolab's NVMe over RDMA initiator (`nvme-rdma://` targets).
    #[serde(rename = "nvme-rdma", alias = "nvme_rdma")]
    NvmeRdma,
}

impl EngineKind {
    /// Everything iolab knows about this engine, from its row of `FACTS`.
    pub fn facts(self) -> &'static EngineFacts {
        &ROWS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// The engine called `s`: its name or one of its aliases.
    pub fn parse(s: &str) -> Option<EngineKind> {
        FACTS
            .iter()
            .find(|f| f.name == s || f.aliases.contains(&s))
            .map(|f| f.kind)
    }

    /// The engine a fio job file's `ioengine=` names, if iolab has it.
    pub fn from_fio(s: &str) -> Option<EngineKind> {
        FACTS
            .iter()
            .find(|f| f.fio_names.contains(&s))
            .map(|f| f.kind)
    }

    /// Every engine, in CLI order.
    pub const ALL: [EngineKind; 10] = {
        let mut all = [EngineKind::Psync; FACTS.len()];
        let mut i = 0;
        while i < FACTS.len() {
            all[i] = FACTS[i].kind;
            i += 1;
        }
        all
    };

    /// The engine a local target runs on unless told otherwise.
    pub const fn default_local() -> EngineKind {
        EngineKind::IoUring
    }

    /// The local engines doing direct I/O on a descriptor, in order of
    /// preference: the first that works on a target is the one a run uses.
    pub const fn fallbacks() -> [EngineKind; 3] {
        [EngineKind::IoUring, EngineKind::Aio, EngineKind::Psync]
    }

    /// The engine of a fio job file that names no `ioengine=` (fio's own
    /// default, psync).
    pub const fn fio_default() -> EngineKind {
        EngineKind::Psync
    }

    /// The engine that reads iolab's own served target (`iolab serve`'s
    /// NBD export) in the remote steps of a run.
    pub const fn served() -> EngineKind {
        EngineKind::Nbd
    }

    /// What this engine can do; the planner and runner consult these flags
    /// instead of matching engine names.
    pub const fn caps(self) -> EngineCaps {
        FACTS[self as usize].caps
    }

    /// How a point's requests were cached on this side, as reports say it:
    /// a remote engine's requests reach no page cache here, whatever
    /// `direct` says; an unknown engine goes by `direct`.
    pub fn caching_label(engine: Option<EngineKind>, direct: bool) -> &'static str {
        if engine.is_some_and(|e| matches!(e.caps().opens, Opens::Remote(_))) {
            "user-space initiator, no page cache"
        } else if direct {
            "O_DIRECT"
        } else {
            "buffered"
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

/// The engines the CLI offers (`device --engine`, `run --engine`), in
/// CLI order: every engine but the hidden ones.
pub const CLI_NAMES: [&str; shown_count()] = {
    let mut names = [""; shown_count()];
    let (mut i, mut n) = (0, 0);
    while i < FACTS.len() {
        if !FACTS[i].hidden {
            names[n] = FACTS[i].name;
            n += 1;
        }
        i += 1;
    }
    names
};

/// `trace --engine`: the traced engines, in CLI order, and io_uring
/// with its kernel polling thread.
pub const TRACE_NAMES: [&str; traced_count() + 1] = {
    let mut names = ["io_uring+sqpoll"; traced_count() + 1];
    let (mut i, mut n) = (0, 0);
    while i < FACTS.len() {
        if FACTS[i].caps.traced {
            names[n] = FACTS[i].name;
            n += 1;
        }
        i += 1;
    }
    names
};

/// One engine's row of `FACTS`: every per-engine fact outside its
/// implementation (engine/ opens it from `EngineConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineFacts {
    pub kind: EngineKind,
    /// Its name in flags, results files and reports.
    pub name: &'static str,
    /// Other names `--engine` accepts for it.
    pub aliases: &'static [&'static str],
    /// The `ioengine=` values of a fio job file that mean it.
    pub fio_names: &'static [&'static str],
    /// Left out of the CLI's lists (the fake engine, for tests).
    pub hidden: bool,
    pub caps: EngineCaps,
}

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
    traced: false,
    uring_options: false,
    net_options: false,
};

/// An engine that connects to a remote endpoint of `wire`. O_DIRECT is the
/// server's business: accepted as a no-op.
const fn remote(wire: WireProtocol) -> EngineCaps {
    EngineCaps {
        asynchronous: true,
        opens: Opens::Remote(wire),
        ..LOCAL
    }
}

/// A remote engine of iolab's own on a `SocketPump` (nbd, nvme-tcp): it
/// takes the network options (`NetOptions`: `--poll`).
const fn pumped(wire: WireProtocol) -> EngineCaps {
    EngineCaps {
        net_options: true,
        ..remote(wire)
    }
}

/// An engine with no aliases, no fio name, shown in the CLI.
const fn plain(kind: EngineKind, name: &'static str, caps: EngineCaps) -> EngineFacts {
    EngineFacts {
        kind,
        name,
        aliases: &[],
        fio_names: &[],
        hidden: false,
        caps,
    }
}

/// The engines' facts, one row per engine in declaration (and CLI) order.
pub const FACTS: [EngineFacts; 10] = [
    EngineFacts {
        aliases: &["sync", "pvsync"],
        fio_names: &["psync", "sync", "pvsync"],
        ..plain(
            EngineKind::Psync,
            "psync",
            EngineCaps {
                traced: true,
                ..LOCAL
            },
        )
    },
    EngineFacts {
        aliases: &["libaio"],
        fio_names: &["libaio"],
        ..plain(
            EngineKind::Aio,
            "aio",
            EngineCaps {
                asynchronous: true,
                probes_features: true,
                traced: true,
                ..LOCAL
            },
        )
    },
    EngineFacts {
        aliases: &["uring", "io-uring"],
        fio_names: &["io_uring"],
        ..plain(
            EngineKind::IoUring,
            "io_uring",
            EngineCaps {
                asynchronous: true,
                probes_features: true,
                traced: true,
                uring_options: true,
                ..LOCAL
            },
        )
    },
    EngineFacts {
        fio_names: &["mmap"],
        ..plain(
            EngineKind::Mmap,
            "mmap",
            EngineCaps {
                direct_io: false,
                ..LOCAL
            },
        )
    },
    EngineFacts {
        fio_names: &["null"],
        ..plain(
            EngineKind::Null,
            "null",
            EngineCaps {
                asynchronous: true,
                opens: Opens::Nothing,
                stores_data: false,
                ..LOCAL
            },
        )
    },
    EngineFacts {
        hidden: true,
        ..plain(
            EngineKind::Fake,
            "fake",
            EngineCaps {
                asynchronous: true,
                opens: Opens::Nothing,
                stores_data: false,
                virtual_clock: true,
                ..LOCAL
            },
        )
    },
    plain(EngineKind::Nbd, "nbd", pumped(WireProtocol::Nbd)),
    EngineFacts {
        aliases: &["libiscsi"],
        ..plain(EngineKind::Iscsi, "iscsi", remote(WireProtocol::Iscsi))
    },
    EngineFacts {
        aliases: &["nvme_tcp", "nvmetcp"],
        ..plain(
            EngineKind::NvmeTcp,
            "nvme-tcp",
            pumped(WireProtocol::NvmeTcp),
        )
    },
    EngineFacts {
        aliases: &["nvme_rdma", "nvmerdma"],
        ..plain(
            EngineKind::NvmeRdma,
            "nvme-rdma",
            remote(WireProtocol::NvmeRdma),
        )
    },
];

/// `FACTS` in a static, for `EngineKind::facts`'s `'static` borrow.
static ROWS: [EngineFacts; 10] = FACTS;

const fn shown_count() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < FACTS.len() {
        if !FACTS[i].hidden {
            n += 1;
        }
        i += 1;
    }
    n
}

const fn traced_count() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < FACTS.len() {
        if FACTS[i].caps.traced {
            n += 1;
        }
        i += 1;
    }
    n
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
    /// Traced by `iolab trace` (block-layer events match its requests).
    pub traced: bool,
    /// Takes the `--uring-*` options (`UringOptions`).
    pub uring_options: bool,
    /// Takes the network options (`NetOptions`: `--poll`).
    pub net_options: bool,
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
    Nbd(NetOptions),
    Iscsi,
    NvmeTcp(NetOptions),
    NvmeRdma,
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
            EngineConfig::Nbd(_) => EngineKind::Nbd,
            EngineConfig::Iscsi => EngineKind::Iscsi,
            EngineConfig::NvmeTcp(_) => EngineKind::NvmeTcp,
            EngineConfig::NvmeRdma => EngineKind::NvmeRdma,
        }
    }

    pub fn caps(&self) -> EngineCaps {
        self.kind().caps()
    }

    /// The network options it runs with (the defaults for an engine
    /// that takes none).
    pub fn net(&self) -> NetOptions {
        match self {
            EngineConfig::Nbd(n) | EngineConfig::NvmeTcp(n) => *n,
            _ => NetOptions::default(),
        }
    }

    /// The default options of `kind`.
    pub fn default_for(kind: EngineKind) -> EngineConfig {
        EngineConfig::with_options(kind, UringOptions::default(), NetOptions::default(), None)
    }

    /// `kind` with the options it owns out of a job's flat fields: io_uring
    /// takes `uring`, nbd and nvme-tcp `net`, the fake engine `fake` (or
    /// the default script).
    pub fn with_options(
        kind: EngineKind,
        uring: UringOptions,
        net: NetOptions,
        fake: Option<FakeScript>,
    ) -> EngineConfig {
        match kind {
            EngineKind::Psync => EngineConfig::Psync,
            EngineKind::Aio => EngineConfig::Aio,
            EngineKind::IoUring => EngineConfig::IoUring(uring),
            EngineKind::Mmap => EngineConfig::Mmap,
            EngineKind::Null => EngineConfig::Null,
            EngineKind::Fake => EngineConfig::Fake(fake.unwrap_or_default()),
            EngineKind::Nbd => EngineConfig::Nbd(net),
            EngineKind::Iscsi => EngineConfig::Iscsi,
            EngineKind::NvmeTcp => EngineConfig::NvmeTcp(net),
            EngineKind::NvmeRdma => EngineConfig::NvmeRdma,
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

/// The options of iolab's network initiators (nbd, nvme-tcp; ignored by
/// other engines).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetOptions {
    /// Busy-poll the socket for replies (non-blocking receives in a spin)
    /// instead of sleeping in poll(2) or a blocking receive, with
    /// SO_BUSY_POLL on the socket where the kernel allows it (`--poll`;
    /// fio's `hipri` on its io_uring engine, SPDK's polled initiator).
    #[serde(default)]
    pub poll: bool,
}

impl NetOptions {
    /// The defaults (what a results file leaves out).
    pub fn is_default(&self) -> bool {
        *self == NetOptions::default()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `facts` indexes `FACTS` by discriminant: row i is variant i.
    #[test]
    fn each_row_of_facts_is_its_variants() {
        for (i, f) in FACTS.iter().enumerate() {
            assert_eq!(f.kind as usize, i, "{}", f.name);
            assert_eq!(EngineKind::parse(f.name), Some(f.kind));
            for a in f.aliases {
                assert_eq!(EngineKind::parse(a), Some(f.kind), "{a}");
            }
        }
        assert_eq!(EngineKind::ALL.len(), FACTS.len());
        assert_eq!(
            CLI_NAMES,
            [
                "psync",
                "aio",
                "io_uring",
                "mmap",
                "null",
                "nbd",
                "iscsi",
                "nvme-tcp",
                "nvme-rdma"
            ]
        );
        assert_eq!(TRACE_NAMES, ["psync", "aio", "io_uring", "io_uring+sqpoll"]);
    }
}
