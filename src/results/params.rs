//! The names of a point's parameters (`Point.params`, the flat strings
//! `compare` matches points by): each key spelled once, so report/ and
//! analysis/ ask for `Param::Transport`, never for "transport".

use std::str::FromStr;

use super::Point;

/// A parameter key of `Point.params`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// The access pattern: read, randread, write, randwrite, randrw ...
    Rw,
    /// The block size ("4k"), or a split ("4k:70,64k:30").
    Bs,
    Qd,
    Jobs,
    /// Requests per batched submission (`--batch K`).
    Batch,
    /// Read percentage of a mixed pattern.
    Mix,
    Engine,
    /// `iolab remote`: the transport ("das", "nbd-iolab" ...).
    Transport,
    /// kv: "load" or "run".
    Phase,
    /// Open loop: the target rate (IOPS).
    Rate,
    /// fio's `rate_iops` in files of older versions.
    RateIops,
    Arrival,
    /// A media run: the baseline setup's label.
    Baseline,
    /// `iolab run`: the step a point belongs to.
    Step,
    Round,
    Role,
    /// A media run: the setup (target or configuration) measured.
    Medium,
    /// A kv media run: the part (a record count of a size sweep).
    Part,
    Records,
    RecordBytes,
    ValueSize,
    /// kv: reader threads beside a writer.
    Readers,
    /// kv: worker threads of a phase.
    Threads,
    /// kv: the YCSB workload or db_bench benchmark (kv points only).
    Workload,
    /// `--sweep placement`: "on-node" or "off-node".
    Placement,
}

impl Param {
    pub const fn key(self) -> &'static str {
        match self {
            Param::Rw => "rw",
            Param::Bs => "bs",
            Param::Qd => "qd",
            Param::Jobs => "jobs",
            Param::Batch => "batch",
            Param::Mix => "mix",
            Param::Engine => "engine",
            Param::Transport => "transport",
            Param::Phase => "phase",
            Param::Rate => "rate",
            Param::RateIops => "rate_iops",
            Param::Arrival => "arrival",
            Param::Baseline => "baseline",
            Param::Step => "step",
            Param::Round => "round",
            Param::Role => "role",
            Param::Medium => "medium",
            Param::Part => "part",
            Param::Records => "records",
            Param::RecordBytes => "record_bytes",
            Param::ValueSize => "value_size",
            Param::Readers => "readers",
            Param::Threads => "threads",
            Param::Workload => "workload",
            Param::Placement => "placement",
        }
    }
}

impl Point {
    /// The value of parameter `k`, if the point has it.
    pub fn param(&self, k: Param) -> Option<&str> {
        self.params.get(k.key()).map(String::as_str)
    }

    /// Parameter `k` parsed as a number (surrounding blanks ignored).
    pub fn param_num<T: FromStr>(&self, k: Param) -> Option<T> {
        self.param(k).and_then(|v| v.trim().parse().ok())
    }

    /// Parameter `k`, a size iolab recorded ("4k", "4096"), in bytes.
    pub fn param_bytes(&self, k: Param) -> Option<u64> {
        self.param(k)
            .and_then(|v| crate::plan::parse::parse_size("", v).ok())
    }

    pub fn has_param(&self, k: Param) -> bool {
        self.params.contains_key(k.key())
    }
}
