//! One device job, fully specified and validated: pattern, sizes, depth,
//! engine, stop condition. Validation here is pure (no I/O); checks against
//! the real target (bs larger than the file, alignment) happen in `target`.

use serde::{Deserialize, Serialize};

use crate::error::usage;
use crate::plan::engines::FakeScript;
use crate::plan::engines::{EngineConfig, EngineKind, NetOptions, UringOptions};
use crate::plan::parse::format_size;

/// The smallest block `--verify` can stamp: a stamp header (56 bytes,
/// `runner::verify::HEADER_LEN`) and as much payload.
pub const MIN_VERIFIED_BLOCK: u64 = 112;

/// Access pattern, fio's `rw` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Read,
    Write,
    RandRead,
    RandWrite,
    ReadWrite,
    RandRw,
}

impl Pattern {
    pub fn parse(s: &str) -> Option<Pattern> {
        Some(match s {
            "read" | "seqread" => Pattern::Read,
            "write" | "seqwrite" => Pattern::Write,
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "readwrite" | "rw" => Pattern::ReadWrite,
            "randrw" => Pattern::RandRw,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::RandRead => "randread",
            Pattern::RandWrite => "randwrite",
            Pattern::ReadWrite => "readwrite",
            Pattern::RandRw => "randrw",
        }
    }

    pub fn is_random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandRw
        )
    }

    pub fn is_mixed(self) -> bool {
        matches!(self, Pattern::ReadWrite | Pattern::RandRw)
    }

    /// Read share in percent implied by the pattern (`mix` for mixed ones).
    pub fn read_percent(self, mix: u8) -> u8 {
        match self {
            Pattern::Read | Pattern::RandRead => 100,
            Pattern::Write | Pattern::RandWrite => 0,
            Pattern::ReadWrite | Pattern::RandRw => mix,
        }
    }
}

/// How `--jobs N` workers share the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RegionMode {
    /// Every worker addresses the whole target (fio's default for one file).
    #[default]
    Shared,
    /// Worker i gets the i-th of N equal, disjoint slices.
    Split,
}

/// When a job stops (the first limit reached wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StopCondition {
    /// Measured runtime after the ramp, in ns.
    pub runtime_ns: Option<u64>,
    /// Total requests over all workers (excluding fsyncs).
    pub io_count: Option<u64>,
    /// Total bytes over all workers.
    pub io_bytes: Option<u64>,
}

/// How open-loop arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Fixed interval 1/rate.
    #[default]
    Uniform,
    /// Exponential gaps with mean 1/rate (a Poisson process).
    Poisson,
}

impl Arrival {
    pub fn parse(s: &str) -> Option<Arrival> {
        match s {
            "uniform" | "linear" => Some(Arrival::Uniform),
            "poisson" => Some(Arrival::Poisson),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Arrival::Uniform => "uniform",
            Arrival::Poisson => "poisson",
        }
    }
}

/// Open-loop issuing: requests start on a schedule, not when others complete.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OpenLoop {
    /// Target rate over all workers, requests per second.
    pub rate_iops: f64,
    pub arrival: Arrival,
}

/// A fully specified device job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    pub name: String,
    pub pattern: Pattern,
    /// Read percentage for mixed patterns (ignored otherwise).
    pub mix: u8,
    /// Block sizes with weights; one entry means a single block size.
    pub bs: Vec<(u64, u32)>,
    pub qd: u32,
    pub jobs: u32,
    pub region: RegionMode,
    pub cpus: Option<Vec<usize>>,
    pub engine: EngineKind,
    pub uring: UringOptions,
    /// The network initiators' options (`--poll`); left out of results
    /// files when they are the defaults.
    #[serde(default, skip_serializing_if = "NetOptions::is_default")]
    pub net: NetOptions,
    pub direct: bool,
    pub stop: StopCondition,
    pub ramp_ns: u64,
    pub seed: u64,
    /// fsync after every N writes per worker (0 = never).
    pub fsync_every: u32,
    /// Submit K requests at once and wait for all K before the next batch.
    pub batch: Option<u32>,
    /// Closed loop: submit as soon as this many requests are prepared (or no
    /// slot is free). 1 submits each request at once, like fio's default
    /// `iodepth_batch_submit=1`, which keeps the device busiest.
    #[serde(default = "one")]
    pub submit_batch: u32,
    pub verify: bool,
    /// Size of the region to address; `None` = the whole target.
    pub size: Option<u64>,
    /// Start of the region to address (fio's `offset`), bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: u64,
    /// Scripted device for the fake engine (tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fake: Option<FakeScript>,
    /// Open-loop issuing at a target rate (`--rate`); `None` = closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoop>,
    /// Pause after every few completions (fio's `thinktime`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<ThinkTime>,
    /// Keep a completion-latency histogram per second (for fio's
    /// histogram logs: `write_hist_log`, `--log-dir`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub hist_log: bool,
    /// Network engines: the longest a request may wait for its reply
    /// (`--io-timeout`); `None`: `peer_wait::DEFAULT_IO_TIMEOUT_NS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_timeout_ns: Option<u64>,
    /// A request that completes with an error is counted (per errno in the
    /// point's `errors`) and the job goes on, as fio's `continue_on_error`;
    /// otherwise the first error fails the job.
    #[serde(default, skip_serializing_if = "is_false")]
    pub continue_on_error: bool,
    /// Large-block writes and reads beside the workers, at fixed rates
    /// (`--profile act`; `runner::large_blocks`), recorded apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_blocks: Option<super::act::LargeBlockLoad>,
    /// Pin the workers to this NUMA node's CPUs (`--numa-node`); their
    /// buffers are bound to it too unless `mem_node` says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    /// Bind each worker's buffer memory to this node (`--mem-node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_node: Option<u32>,
    /// A placement sweep's side: on the device's node or off it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementSide>,
}

/// A `--sweep placement` point: workers and memory on the device's node,
/// or on another node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlacementSide {
    #[serde(rename = "on-node")]
    OnNode,
    #[serde(rename = "off-node")]
    OffNode,
}

impl PlacementSide {
    pub const fn name(self) -> &'static str {
        match self {
            PlacementSide::OnNode => "on-node",
            PlacementSide::OffNode => "off-node",
        }
    }
}

/// fio's `thinktime`: after every `blocks` completions the worker lets its
/// requests in flight finish, then pauses `spin_ns` busy and the rest of
/// `ns` asleep before it issues again (an application's processing time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkTime {
    pub ns: u64,
    /// The part of `ns` spent spinning (`thinktime_spin`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spin_ns: u64,
    pub blocks: u32,
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn one() -> u32 {
    1
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: String::new(),
            pattern: Pattern::RandRead,
            mix: 50,
            bs: vec![(4096, 100)],
            qd: 1,
            jobs: 1,
            region: RegionMode::Shared,
            cpus: None,
            engine: EngineKind::default_local(),
            uring: UringOptions::default(),
            net: NetOptions::default(),
            direct: true,
            stop: StopCondition {
                runtime_ns: Some(10_000_000_000),
                io_count: None,
                io_bytes: None,
            },
            ramp_ns: 0,
            seed: 0x10_1ab,
            fsync_every: 0,
            submit_batch: 1,
            batch: None,
            verify: false,
            size: None,
            offset: 0,
            fake: None,
            open_loop: None,
            think: None,
            hist_log: false,
            io_timeout_ns: None,
            continue_on_error: false,
            large_blocks: None,
            numa_node: None,
            mem_node: None,
            placement: None,
        }
    }
}

impl JobSpec {
    /// The engine with the options it owns. The serialized form (stored in
    /// results files) keeps `engine` and `uring` as flat fields; this is the
    /// typed view the runner dispatches on.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig::with_options(self.engine, self.uring, self.net, self.fake.clone())
    }

    pub fn min_bs(&self) -> u64 {
        self.bs.iter().map(|&(b, _)| b).min().unwrap_or(4096)
    }

    pub fn max_bs(&self) -> u64 {
        self.bs.iter().map(|&(b, _)| b).max().unwrap_or(4096)
    }

    pub fn read_percent(&self) -> u8 {
        self.pattern.read_percent(self.mix)
    }

    pub fn writes(&self) -> bool {
        self.read_percent() < 100 || self.large_blocks.is_some()
    }

    /// Requests in flight per worker: the batch size, or the queue depth
    /// (1 for synchronous engines).
    pub fn depth(&self) -> u32 {
        match self.batch {
            Some(k) => k,
            None if self.engine.is_sync() => 1,
            None => self.qd,
        }
    }

    /// Block size column text: "4k" or "4k:70,64k:30".
    pub fn bs_label(&self) -> String {
        if self.bs.len() == 1 {
            format_size(self.bs[0].0)
        } else {
            self.bs
                .iter()
                .map(|&(b, w)| format!("{}:{w}", format_size(b)))
                .collect::<Vec<_>>()
                .join(",")
        }
    }

    /// A short name if none was given: "randread-4k-qd32-io_uring".
    pub fn default_name(&self) -> String {
        let mut n = format!("{}-{}", self.pattern.name(), self.bs_label());
        if self.pattern.is_mixed() {
            n.push_str(&format!("-mix{}", self.mix));
        }
        match self.batch {
            Some(k) => n.push_str(&format!("-batch{k}")),
            None => n.push_str(&format!("-qd{}", self.qd)),
        }
        if self.jobs > 1 {
            n.push_str(&format!("-j{}", self.jobs));
        }
        if let Some(ol) = &self.open_loop {
            n.push_str(&format!("-rate{:.0}", ol.rate_iops));
        }
        n.push_str(&format!("-{}", self.engine_label()));
        if let Some(p) = self.placement {
            n.push_str(&format!("-{}", p.name()));
        }
        n
    }

    /// The engine as a point's default name ends: its name, with "+poll"
    /// when it busy-polls (`--poll`).
    pub fn engine_label(&self) -> String {
        let poll = if self.net.poll { "+poll" } else { "" };
        format!("{}{poll}", self.engine.name())
    }

    /// The node whose memory the workers' buffers are bound to.
    pub fn buffer_node(&self) -> Option<u32> {
        self.mem_node.or(self.numa_node)
    }

    /// Checks that need no target. Errors name the flag.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.continue_on_error && self.verify {
            return Err(usage(
                "--continue-on-error",
                "cannot be combined with --verify (a failed write leaves its block's expected content unknown)",
            ));
        }
        if self.bs.is_empty() || self.bs.iter().any(|&(b, _)| b == 0) {
            return Err(usage("--bs", "no block size given, or one of 0 bytes"));
        }
        if self.large_blocks.is_some() && self.verify {
            return Err(usage(
                "--verify",
                "--profile act's large-block writes are not stamped: they would overwrite what the reads check",
            ));
        }
        if self.qd == 0 || self.qd > 65_536 {
            return Err(usage(
                "--qd",
                format!("queue depth {} is out of range 1..65536", self.qd),
            ));
        }
        if self.jobs == 0 || self.jobs > 1024 {
            return Err(usage(
                "--jobs",
                format!("{} jobs is out of range 1..1024", self.jobs),
            ));
        }
        if self.mix > 100 {
            return Err(usage(
                "--mix",
                format!("read percentage {} is over 100", self.mix),
            ));
        }
        if self.submit_batch == 0 || self.submit_batch > 65_536 {
            return Err(usage(
                "--submit-batch",
                format!("{} is out of range 1..65536", self.submit_batch),
            ));
        }
        if let Some(k) = self.batch {
            if k == 0 || k > 65_536 {
                return Err(usage(
                    "--batch",
                    format!("batch size {k} is out of range 1..65536"),
                ));
            }
        }
        if self.direct && self.engine.needs_file() {
            if let Some(&(b, _)) = self.bs.iter().find(|&&(b, _)| b % 512 != 0) {
                return Err(usage(
                    "--bs",
                    format!(
                        "{b} bytes is not a multiple of 512, which O_DIRECT needs (use --buffered)"
                    ),
                ));
            }
        }
        if self.max_bs() > u32::MAX as u64 / 2 {
            return Err(usage("--bs", "block size over 1 GiB is not supported"));
        }
        let s = &self.stop;
        if s.runtime_ns.is_none() && s.io_count.is_none() && s.io_bytes.is_none() {
            return Err(usage(
                "--runtime",
                "give --runtime, --io-count or --io-bytes",
            ));
        }
        for (zero, field) in [
            (s.runtime_ns == Some(0), "--runtime"),
            (s.io_count == Some(0), "--io-count"),
            (s.io_bytes == Some(0), "--io-bytes"),
        ] {
            if zero {
                return Err(usage(field, "a stop limit of zero measures nothing"));
            }
        }
        if self.verify && self.bs.len() > 1 {
            return Err(usage(
                "--verify",
                "verification needs a single block size, not a split",
            ));
        }
        let min_verified = MIN_VERIFIED_BLOCK;
        if self.verify && self.min_bs() < min_verified {
            return Err(usage(
                "--bs",
                format!("--verify needs blocks of at least {min_verified} bytes"),
            ));
        }
        let caps = self.engine.caps();
        if self.verify && !caps.stores_data {
            return Err(usage(
                "--verify",
                format!("the {} engine stores no data to verify", self.engine.name()),
            ));
        }
        if self.direct && !caps.direct_io {
            return Err(usage(
                "--engine",
                format!(
                    "{} goes through the page cache; add --buffered",
                    self.engine.name()
                ),
            ));
        }
        let unsupported = |flag: &str| {
            usage(
                flag,
                format!("the {} engine does not support {flag}", self.engine.name()),
            )
        };
        if self.batch.is_some() && !caps.batch {
            return Err(unsupported("--batch"));
        }
        if self.open_loop.is_some() && !caps.open_loop {
            return Err(unsupported("--rate"));
        }
        if self.fsync_every > 0 && !caps.fsync {
            return Err(unsupported("--fsync-every"));
        }
        if let Some(ol) = &self.open_loop {
            if !(ol.rate_iops.is_finite() && ol.rate_iops > 0.0 && ol.rate_iops <= 1e9) {
                return Err(usage(
                    "--rate",
                    format!("rate {} is not in 0..1e9 requests/s", ol.rate_iops),
                ));
            }
            if self.batch.is_some() {
                return Err(usage(
                    "--rate",
                    "open-loop issuing and --batch exclude each other",
                ));
            }
            if self.verify || self.fsync_every > 0 {
                return Err(usage(
                    "--rate",
                    "open-loop issuing does not support --verify or --fsync-every",
                ));
            }
        }
        if let Some(cpus) = &self.cpus {
            if cpus.is_empty() {
                return Err(usage("--cpus", "empty CPU list"));
            }
        }
        self.validate_numa()
    }

    /// `--numa-node` and `--mem-node`: nodes that exist, not with `--cpus`.
    fn validate_numa(&self) -> anyhow::Result<()> {
        if self.cpus.is_some() && self.numa_node.is_some() {
            return Err(usage("--numa-node", "give --cpus or --numa-node, not both"));
        }
        let root = std::path::Path::new("/");
        check_node("--numa-node", self.numa_node, root)?;
        check_node("--mem-node", self.mem_node, root)?;
        Ok(())
    }
}

/// `node` (of `flag`) exists under `root`'s sysfs, or a usage error that
/// says which nodes do.
pub fn check_node(flag: &str, node: Option<u32>, root: &std::path::Path) -> anyhow::Result<()> {
    let Some(n) = node else {
        return Ok(());
    };
    let ids = crate::measure::numa::node_ids(root);
    if ids.contains(&n) {
        return Ok(());
    }
    let have = match ids.len() {
        0 => "this machine shows no NUMA nodes (no /sys/devices/system/node)".to_string(),
        1 => format!("this machine has one NUMA node, node {}", ids[0]),
        _ => format!(
            "this machine has NUMA nodes {}",
            ids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(usage(flag, format!("node {n} does not exist: {have}")))
}

/// `j` at a fixed open-loop rate, named after it.
pub fn with_rate(j: &JobSpec, rate: f64, arrival: Arrival) -> JobSpec {
    let mut r = j.clone();
    r.open_loop = Some(OpenLoop {
        rate_iops: rate,
        arrival,
    });
    r.name = if j.name == j.default_name() {
        r.default_name()
    } else {
        format!("{}-rate{rate:.0}", j.name)
    };
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::UsageError;

    fn field(spec: &JobSpec) -> String {
        spec.validate()
            .unwrap_err()
            .downcast::<UsageError>()
            .unwrap()
            .field
    }

    #[test]
    fn default_is_valid() {
        JobSpec::default().validate().unwrap();
    }

    #[test]
    fn invalid_fields_are_named() {
        let mut s = JobSpec {
            qd: 0,
            ..Default::default()
        };
        assert_eq!(field(&s), "--qd");
        s = JobSpec {
            jobs: 0,
            ..Default::default()
        };
        assert_eq!(field(&s), "--jobs");
        s = JobSpec {
            mix: 101,
            ..Default::default()
        };
        assert_eq!(field(&s), "--mix");
        s = JobSpec {
            bs: vec![(1000, 100)],
            ..Default::default()
        };
        assert_eq!(field(&s), "--bs");
        s = JobSpec {
            batch: Some(0),
            ..Default::default()
        };
        assert_eq!(field(&s), "--batch");
        s = JobSpec {
            stop: StopCondition::default(),
            ..Default::default()
        };
        assert_eq!(field(&s), "--runtime");
        s = JobSpec {
            verify: true,
            bs: vec![(4096, 50), (8192, 50)],
            ..Default::default()
        };
        assert_eq!(field(&s), "--verify");
        s = JobSpec {
            engine: EngineKind::parse("mmap").unwrap(),
            ..Default::default()
        };
        assert_eq!(field(&s), "--engine");
    }

    #[test]
    fn depth_and_names() {
        let s = JobSpec {
            qd: 32,
            ..Default::default()
        };
        assert_eq!(s.depth(), 32);
        assert_eq!(s.default_name(), "randread-4k-qd32-io_uring");
        let polled = JobSpec {
            engine: EngineKind::parse("nbd").unwrap(),
            net: NetOptions { poll: true },
            ..s.clone()
        };
        assert_eq!(polled.default_name(), "randread-4k-qd32-nbd+poll");
        let s = JobSpec {
            qd: 32,
            engine: EngineKind::parse("psync").unwrap(),
            ..Default::default()
        };
        assert_eq!(s.depth(), 1);
        let s = JobSpec {
            batch: Some(8),
            ..Default::default()
        };
        assert_eq!(s.depth(), 8);
        let s = JobSpec {
            pattern: Pattern::RandRw,
            mix: 70,
            bs: vec![(4096, 70), (65536, 30)],
            ..Default::default()
        };
        assert_eq!(s.read_percent(), 70);
        assert_eq!(s.bs_label(), "4k:70,64k:30");
        assert_eq!(Pattern::parse("randrw"), Some(Pattern::RandRw));
        assert_eq!(Pattern::parse("bogus"), None);
    }
}
