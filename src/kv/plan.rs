//! What `iolab kv` runs, as a validated, typed plan: the engine and its
//! options, the database place and limits, and the list of phases (YCSB
//! load/run, db_bench benchmarks, reader sweeps). Built by `commands/kv`
//! from the command line, or directly by library callers (`iolab run`'s
//! database step); `kv::run::run` executes it.

use std::path::PathBuf;

use super::chain::ChainStep;
use super::dbbench::{Bench, DbBenchConfig};
use super::engine::{Compression, EngineOptions, KvEngineKind};
use super::ycsb::YcsbConfig;
use crate::error::usage;
use crate::servers::ServerSettings;
use anyhow::Result;

/// One phase of the plan.
#[derive(Debug, Clone)]
pub enum Step {
    /// YCSB load phase of the named workload.
    YcsbLoad(String, YcsbConfig),
    /// YCSB transaction phase of the named workload.
    YcsbRun(String, YcsbConfig),
    /// A db_bench benchmark; `Some(readers)` for a readwhilewriting point.
    Bench(Bench, Option<usize>),
    /// A db_bench chain step between benchmarks (no point of its own: its
    /// duration goes in the next phase's `lsm.after_steps`).
    Chain(ChainStep),
}

impl Step {
    /// Whether the phase reads data an earlier phase must have loaded.
    fn needs_data(&self) -> bool {
        match self {
            Step::YcsbRun(..) => true,
            Step::Bench(b, _) => b.needs_data(),
            Step::YcsbLoad(..) | Step::Chain(_) => false,
        }
    }

    /// Whether the phase fills the database.
    fn loads_data(&self) -> bool {
        matches!(
            self,
            Step::YcsbLoad(..) | Step::Bench(Bench::FillSeq | Bench::FillRandom, _)
        )
    }
}

/// Where the database lives and the limits it runs under.
#[derive(Debug, Clone)]
pub struct KvPlace {
    /// The filesystem under test: a scratch database directory is made in it.
    pub dir: PathBuf,
    /// Use (and keep) this database directory instead of a scratch one.
    pub db: Option<PathBuf>,
    /// Keep the scratch database directory.
    pub keep: bool,
    /// Memory cgroup limit in bytes (root).
    pub memory_limit: Option<u64>,
    /// Drop the page cache before each phase (root).
    pub drop_caches: bool,
    /// Make everything written durable at the end of each phase.
    pub flush_between: bool,
    /// The database is written on this block device directly, with no
    /// file system (LMDB only; `kv::raw`).
    pub raw: Option<RawDevice>,
}

/// A block device a database is written on as its data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDevice {
    pub device: PathBuf,
    /// `--destroy-data` as given; it must name `device` (for `--make raw`
    /// iolab names the loop device it built).
    pub destroy_data: Option<PathBuf>,
}

impl KvPlace {
    /// A scratch database in `dir`, removed at the end, no limits.
    pub fn scratch(dir: PathBuf) -> KvPlace {
        KvPlace {
            dir,
            db: None,
            keep: false,
            memory_limit: None,
            drop_caches: false,
            flush_between: false,
            raw: None,
        }
    }
}

/// The server of a server engine: an existing one (`url`) or a private
/// one iolab starts under the target with `settings`.
#[derive(Debug, Clone, Default)]
pub struct KvServer {
    pub url: Option<String>,
    pub settings: ServerSettings,
    /// Cassandra's consistency levels (YCSB's cassandra.* properties).
    pub cql: super::engines::cassandra::CqlOptions,
}

/// db_bench reader settings beyond the key and value shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct BenchReads {
    /// Reads per reader thread (default: the number of keys).
    pub reads: Option<u64>,
    /// readwhilewriting: the writer's rate limit (operations per second).
    pub writer_rate: Option<f64>,
}

/// A whole `iolab kv` run.
#[derive(Debug, Clone)]
pub struct KvPlan {
    pub engine: KvEngineKind,
    pub options: EngineOptions,
    pub steps: Vec<Step>,
    /// Client threads (YCSB threadcount; db_bench threads).
    pub threads: usize,
    /// Target total operations per second (open loop), if any.
    pub target_ops: Option<f64>,
    pub bench: DbBenchConfig,
    pub reads: BenchReads,
    pub place: KvPlace,
    /// Server engines: which server.
    pub server: KvServer,
    /// The latency threshold of the share-under figure (`--under`).
    pub under_ns: u64,
    pub seed: u64,
    /// The results file, rewritten after every phase.
    pub output: Option<PathBuf>,
    /// Print a status line this often while a phase runs (seconds).
    pub status_interval_s: Option<f64>,
    /// Warnings found while planning (YCSB properties iolab does not use),
    /// kept in the results and shown when the run starts.
    pub notices: Vec<String>,
}

impl KvPlan {
    /// Check what does not depend on the machine: counts, rates, the
    /// db_bench shape.
    pub fn validate(&self) -> Result<()> {
        crate::session::checked_status_interval(self.status_interval_s)?;
        if self.threads == 0 || self.threads > 1024 {
            return Err(usage("--threads", "must be 1..1024"));
        }
        if let Some(t) = self.target_ops {
            if !(t > 0.0 && t.is_finite()) {
                return Err(usage(
                    "--target-ops",
                    "must be a positive number of operations per second",
                ));
            }
        }
        if self.steps.is_empty() {
            return Err(usage("WORKLOAD", "nothing to run"));
        }
        if self.steps.iter().any(|s| matches!(s, Step::Bench(..))) {
            self.bench.validate()?;
        }
        let ycsb = self
            .steps
            .iter()
            .any(|s| matches!(s, Step::YcsbLoad(..) | Step::YcsbRun(..)));
        if ycsb && !self.bench.check_values.fits_ycsb() {
            return Err(usage(
                "--check-values",
                "applies to the db_bench-style benchmarks; YCSB workloads check every value",
            ));
        }
        self.validate_server()?;
        if self.place.raw.is_some() {
            self.validate_raw("--engine")?;
        }
        if self.engine.facts().wiredtiger_options {
            self.validate_wiredtiger()?;
        }
        let compresses = self.engine.facts().compresses;
        if self.options.compression != Compression::None && !compresses {
            return Err(usage(
                "--compression",
                format!(
                    "{} does not compress: --compression applies to rocksdb and fjall",
                    self.engine.name()
                ),
            ));
        }
        Ok(())
    }

    /// What a database on a raw block device rules out; `field` is the
    /// flag an engine that cannot go there is refused under (`--engine`
    /// for a device given as `--target`, `--make` for `--make raw`).
    pub fn validate_raw(&self, field: &str) -> Result<()> {
        if !self.engine.facts().raw_device {
            return Err(usage(
                field,
                format!(
                    "a raw block device has no file system, and {} needs one: of iolab's engines only lmdb opens a block device as its data file",
                    self.engine.name()
                ),
            ));
        }
        if self.place.db.is_some() {
            return Err(usage(
                "--db",
                "names a database directory; on a raw block device the device is the database",
            ));
        }
        if self.place.keep {
            return Err(usage(
                "--keep",
                "keeps a scratch database directory; on a raw block device the data stays on the device anyway",
            ));
        }
        if self.options.mmap {
            return Err(usage(
                "--mmap",
                "LMDB's WRITEMAP grows its data file to the map size with ftruncate, which a block device refuses",
            ));
        }
        Ok(())
    }

    /// WiredTiger's limits: a cache of at least 1 MiB (32 MiB for LSM
    /// trees, three of its default 10 MB chunks and more), and a journal to sync.
    fn validate_wiredtiger(&self) -> Result<()> {
        let lsm = self.options.wt_table == super::engine::WtTable::Lsm;
        let min: u64 = if lsm { 32 << 20 } else { 1 << 20 };
        if self.options.cache_size < min {
            return Err(usage(
                "--cache-size",
                format!(
                    "WiredTiger's cache is at least {} MiB{}",
                    min >> 20,
                    if lsm { " with --wt-table lsm" } else { "" }
                ),
            ));
        }
        if self.options.sync && !self.options.wal {
            return Err(usage(
                "--sync",
                "WiredTiger syncs its journal on commit; with --disable-wal there is none to sync (checkpoints make data durable)",
            ));
        }
        Ok(())
    }

    /// What a server engine cannot do, and server flags without one.
    fn validate_server(&self) -> Result<()> {
        let Some(kind) = self.engine.server() else {
            if self.server.url.is_some() {
                return Err(usage(
                    "--server-url",
                    format!(
                        "{} is embedded: --server-url applies to postgres, mariadb, redis and mongodb",
                        self.engine.name()
                    ),
                ));
            }
            return Ok(());
        };
        let name = kind.name();
        if self
            .steps
            .iter()
            .any(|s| matches!(s, Step::Bench(..) | Step::Chain(_)))
        {
            return Err(usage(
                "WORKLOAD",
                format!("db_bench-style benchmarks run on embedded engines; {name} runs YCSB workloads (a..f or -P FILE)"),
            ));
        }
        if self.place.db.is_some() {
            return Err(usage(
                "--db",
                format!("{name} keeps its data in its server: give --target DIR (a private server) or --server-url"),
            ));
        }
        if self.place.memory_limit.is_some() && self.server.url.is_some() {
            return Err(usage(
                "--memory-limit",
                format!("the {name} server at --server-url is not iolab's: it is not in iolab's memory cgroup (size its cache with its own settings)"),
            ));
        }
        if self.place.keep {
            return Err(usage(
                "--keep",
                format!("a private {name} server is removed at the end of the run"),
            ));
        }
        self.field_count()?;
        Ok(())
    }

    /// The number of fields of the YCSB steps, which a server's table has
    /// once for the whole run.
    pub fn field_count(&self) -> Result<usize> {
        let mut counts = self.steps.iter().filter_map(|s| match s {
            Step::YcsbLoad(_, c) | Step::YcsbRun(_, c) => Some(c.fieldcount),
            Step::Bench(..) | Step::Chain(_) => None,
        });
        let first = counts.next().unwrap_or(10);
        if counts.any(|c| c != first) {
            return Err(usage(
                "fieldcount",
                "the workloads of one run on a server must have the same fieldcount (its table has one set of columns)",
            ));
        }
        Ok(first.max(1) as usize)
    }

    /// The phases the plan measures (its steps but db_bench's chain steps).
    pub fn phases(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| !matches!(s, Step::Chain(_)))
            .count()
    }

    /// The most data one phase loads (keys and values, before any engine
    /// overhead), and the flag that sets its size.
    pub fn load_bytes(&self) -> (u64, &'static str) {
        let mut most = (0u64, "recordcount");
        for s in &self.steps {
            let bytes = match s {
                Step::YcsbLoad(_, c) => {
                    // "user" + up to 19 digits, and fieldcount fields.
                    let record = 24 + c.fieldcount.max(0) as u64 * c.fieldlength.max(0) as u64;
                    (c.insertcount.max(0) as u64).saturating_mul(record)
                }
                Step::Bench(b, _) if b.loads() => self
                    .bench
                    .num
                    .saturating_mul((self.bench.key_size + self.bench.value_size) as u64),
                _ => 0,
            };
            if bytes > most.0 {
                most = (
                    bytes,
                    if matches!(s, Step::Bench(..)) {
                        "--num"
                    } else {
                        "recordcount"
                    },
                );
            }
        }
        most
    }

    /// Refuse a plan that reads before anything was loaded (`loaded`: the
    /// database already holds data), before anything is created.
    pub fn check_order(&self, mut loaded: bool) -> Result<()> {
        for s in &self.steps {
            if s.needs_data() && !loaded {
                return Err(usage(
                    "WORKLOAD",
                    "this phase needs a loaded database: run a load first (--phase both, or fillrandom/fillseq before it), or pass --db PATH of a kept one",
                ));
            }
            loaded |= s.loads_data();
        }
        Ok(())
    }
}
