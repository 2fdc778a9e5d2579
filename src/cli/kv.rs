//! Arguments of `iolab kv` (issue: database workloads).

use crate::kv::engine::{Compression, KvEngineKind, WtTable};
use crate::kv::keys::KeyFormat;
use crate::kv::value::CheckValues;
use crate::plan::units::{Size, Span};
use clap::builder::TypedValueParser as _;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `--engine`: the kv engine names, listed in help and errors.
fn engine_kind() -> impl clap::builder::TypedValueParser<Value = KvEngineKind> {
    clap::builder::PossibleValuesParser::new(KvEngineKind::all().map(KvEngineKind::name))
        .map(|s| KvEngineKind::parse(&s).expect("a possible value"))
}

/// `--compression`: the compression names.
fn compression() -> impl clap::builder::TypedValueParser<Value = Compression> {
    clap::builder::PossibleValuesParser::new(Compression::ALL.map(Compression::name))
        .map(|s| Compression::parse(&s).expect("a possible value"))
}

/// `--wt-table`: WiredTiger's table types.
fn wt_table() -> impl clap::builder::TypedValueParser<Value = WtTable> {
    clap::builder::PossibleValuesParser::new(WtTable::ALL.map(WtTable::name))
        .map(|s| WtTable::parse(&s).expect("a possible value"))
}

/// `--key-format`: how db_bench-style keys spell a record number.
fn key_format() -> impl clap::builder::TypedValueParser<Value = KeyFormat> {
    clap::builder::PossibleValuesParser::new(KeyFormat::ALL.map(KeyFormat::name))
        .map(|s| KeyFormat::parse(&s).expect("a possible value"))
}

/// `--check-values`: the value check modes.
fn check_values() -> impl clap::builder::TypedValueParser<Value = CheckValues> {
    clap::builder::PossibleValuesParser::new(CheckValues::ALL.map(CheckValues::name))
        .map(|s| CheckValues::parse(&s).expect("a possible value"))
}

/// Which YCSB phases to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PhaseArg {
    Load,
    Run,
    Both,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  iolab kv a --engine rocksdb -p recordcount=100000 -p operationcount=100000
  iolab kv -P examples/ycsb/workloadd --engine lmdb --threads 4 --target-ops 5000
  iolab kv fillrandom,readrandom --engine rocksdb --num 1000000 --key-size 16 --value-size 100
  iolab kv fillrandom,readwhilewriting --readers 1,2,4,8 --memory-limit 256m --engine lmdb
  iolab kv fillrandom,readrandomwriterandom --readwritepercent 80 --value-size 800 --num 20000
  iolab kv a -t ssd=/mnt/ssd -t nvme=/mnt/nvme --rounds 3 -p recordcount=20000 -p operationcount=20000
  iolab kv fillrandom,readrandom --engine lmdb --num 20000 -t /var/tmp --make ext4,ext4-nojournal,xfs --rounds 2
  iolab kv fillrandom,readrandom --engine lmdb --num 20000 -t /var/tmp --make raw,ext4
  iolab kv fillrandom,readrandom --engine lmdb -t /dev/loop7 --destroy-data /dev/loop7
  iolab kv -t /var/tmp --plan examples/symas-fs.toml --json symas-kv.json
  iolab kv fillrandom,readrandomwriterandom --readwritepercent 80 --value-size 800 --instances 3
  iolab kv a --engine rocksdb --hosts h1,h2,h3 --dir /data --instances 3 -p recordcount=100000")]
pub struct KvArgs {
    /// Workloads, comma-separated: YCSB a..f, or db_bench fillseq, fillrandom,
    /// overwrite, readrandom, readseq, seekrandom, readwhilewriting,
    /// readrandomwriterandom; between them db_bench's chain steps
    /// waitforcompaction, flush, compact (RocksDB: wait for a quiet LSM,
    /// flush the memtable, compact everything).
    /// Default: a (or the -P file's workload).
    pub workload: Option<String>,

    /// The workload as a flag, for those who type it so: the same as
    /// WORKLOAD (hidden; without a value it lists the workloads).
    #[arg(long = "workload", id = "workload_flag", hide = true, value_name = "WORKLOAD",
          num_args = 0..=1, default_missing_value = "", conflicts_with = "workload")]
    pub workload_flag: Option<String>,

    /// Not a kv flag (`iolab run` and `device` have one): refused, exit 2,
    /// naming what bounds a kv run (hidden).
    #[arg(long, hide = true, value_name = "DURATION", num_args = 0..=1, default_missing_value = "")]
    pub budget: Option<String>,

    /// YCSB property file (key=value lines); may be given several times.
    #[arg(short = 'P', value_name = "FILE")]
    pub property_files: Vec<PathBuf>,

    /// YCSB property override key=value (e.g. -p recordcount=100000).
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub props: Vec<String>,

    /// Database engine.
    #[arg(long, default_value = "rocksdb", value_parser = engine_kind())]
    pub engine: KvEngineKind,

    /// YCSB phases to run.
    #[arg(long, value_enum, default_value = "both")]
    pub phase: PhaseArg,

    /// Stop each YCSB phase after this long even with operations left
    /// (YCSB's -p maxexecutiontime, in whole seconds; --time is the same)
    #[arg(long, value_name = "DURATION", visible_alias = "time")]
    pub runtime: Option<Span>,

    /// Client threads (YCSB threadcount; db_bench threads for fill/read benchmarks).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,

    /// Independent databases run at once, each with --threads, in its own
    /// directory (inst-1..N); every phase starts on all of them together
    /// and their points are merged exactly (docs/kv.md)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub instances: usize,

    /// Several hosts at once (docs/fleet.md).
    #[command(flatten)]
    pub hosts: crate::cli::hosts::HostsArgs,

    /// Target total operations per second (YCSB's -target; open loop:
    /// latency is also measured from each operation's intended start).
    #[arg(long = "target-ops", visible_alias = "rate", value_name = "OPS")]
    pub target_ops: Option<f64>,

    /// db_bench options.
    #[command(flatten)]
    pub bench: Box<BenchArgs>,

    /// Engine options (boxed: they make the argument struct large).
    #[command(flatten)]
    pub eng: Box<EngineArgs>,

    /// Where the database lives and the limits it runs under.
    #[command(flatten)]
    pub place: Box<PlaceArgs>,

    /// Server engines (postgres, mariadb, redis, mongodb): the server.
    #[command(
        flatten,
        next_help_heading = "Database server (postgres, mariadb, redis, mongodb)"
    )]
    pub server: Box<crate::cli::server::ServerArgs>,

    /// Report the share of each operation kind at or under this latency
    /// (Intel's figure), next to the latency standard deviation
    #[arg(long, value_name = "DUR", default_value = "1ms")]
    pub under: Span,

    /// Seed of the key, operation and value generators (the same default in every verb)
    #[arg(long, default_value_t = 4207)]
    pub seed: u64,

    /// Print a status line to stdout every SECS seconds while a phase runs
    /// (YCSB's -s with status.interval; db_bench's --stats_interval_seconds)
    #[arg(long, value_name = "SECS")]
    pub status_interval: Option<f64>,

    /// Write results (iolab results model, JSON) to this file.
    #[arg(short = 'o', long, visible_alias = "json")]
    pub output: Option<PathBuf>,

    /// Replace an existing output file iolab did not write (iolab's own
    /// results and reports are replaced without it)
    #[arg(long)]
    pub force: bool,
    /// Also write the results as FORMAT into FILE at the end (html, text,
    /// markdown, csv, fio-json; repeat for several), Ctrl-C too
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"], action = clap::ArgAction::Append)]
    pub export: Option<Vec<String>>,
    /// No progress, header or tables (warnings and errors still go to stderr)
    #[arg(short, long)]
    pub quiet: bool,

    /// Print only the plan (engine settings, phases) and exit.
    #[arg(long)]
    pub dry_run: bool,

    /// Run the [[kv]] tables of a TOML plan file (keys: these flags, plus
    /// workload, props and name), with its [media] table; flags given too
    /// override the file (docs/media.md)
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// The configurations to build, rounds and baseline of a media run.
    #[command(flatten)]
    pub media: crate::cli::media::MediaArgs,

    /// The flags given on the command line (their ids), filled by
    /// `Cli::try_parse_args`: they override the plan file's keys.
    #[arg(skip)]
    pub given: Vec<String>,
}

/// Engine options of `iolab kv`; each engine applies what it has and prints
/// the effective values.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Durable writes: fsync on every commit (WiredTiger: of its journal).
    #[arg(long)]
    pub sync: bool,

    /// Disable the write-ahead log (RocksDB), the journal (WiredTiger) /
    /// use a rollback journal (SQLite).
    #[arg(long)]
    pub disable_wal: bool,

    /// Block/page cache size.
    #[arg(long, default_value = "64m")]
    pub cache_size: Size,

    /// Block compression (RocksDB: all; fjall: none, lz4).
    #[arg(long, default_value = "none", value_parser = compression())]
    pub compression: Compression,

    /// O_DIRECT reads and flush/compaction writes (RocksDB).
    #[arg(long)]
    pub direct_io: bool,

    /// Memory-mapped I/O (RocksDB mmap reads, LMDB WRITEMAP, SQLite mmap).
    #[arg(long)]
    pub mmap: bool,

    /// Page size (SQLite).
    #[arg(long)]
    pub page_size: Option<Size>,

    /// No OS readahead on the database file (LMDB MDB_NORDAHEAD).
    #[arg(long)]
    pub no_readahead: bool,

    /// LMDB map size (maximum database size).
    #[arg(long, default_value = "64g")]
    pub map_size: Size,

    /// RocksDB write buffer (memtable) / fjall memtable size.
    #[arg(long, default_value = "64m")]
    pub write_buffer_size: Size,

    /// RocksDB bytes_per_sync and wal_bytes_per_sync (0 = off).
    #[arg(long, default_value = "0")]
    pub bytes_per_sync: Size,

    /// RocksDB enable_pipelined_write (db_bench turns it on by default).
    #[arg(long)]
    pub pipelined_write: bool,

    /// RocksDB max background jobs.
    #[arg(long, default_value_t = 2)]
    pub background_jobs: u32,

    /// WiredTiger table: btree (MongoDB's) or lsm.
    #[arg(long, default_value = "btree", value_parser = wt_table())]
    pub wt_table: WtTable,

    /// WiredTiger: time between checkpoints, in whole seconds (0: only at
    /// flushes and close; MongoDB checkpoints every 60s).
    #[arg(long, value_name = "DUR", default_value = "60s")]
    pub checkpoint_interval: Span,

    /// WiredTiger: eviction threads, a fixed count 1-20 (4: MongoDB opens
    /// WiredTiger with threads_min=4,threads_max=4) or auto (WiredTiger's
    /// own default: 1 to 8, added and removed as it measures progress).
    #[arg(long, value_name = "N|auto", default_value = "4")]
    pub wt_eviction_threads: String,

    /// Cassandra: the table's compaction strategy, in its CREATE TABLE
    /// (`WITH compaction = {'class': ...}`): SizeTiered (Cassandra's
    /// default), Leveled, Unified or TimeWindow, or stcs, lcs, ucs, twcs
    #[arg(long, value_name = "STRATEGY")]
    pub cassandra_compaction: Option<String>,
}

/// db_bench-style options of `iolab kv`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// db_bench: number of keys.
    #[arg(long, default_value_t = 100_000)]
    pub num: u64,

    /// db_bench: key size in bytes.
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,

    /// db_bench-style keys: the record number as decimal digits (decimal,
    /// readable) or as db_bench's own keys (binary: 8 bytes big-endian, then
    /// '0'), the same key bytes and so the same files as db_bench makes.
    #[arg(long, default_value = "decimal", value_parser = key_format())]
    pub key_format: KeyFormat,

    /// db_bench: value size in bytes (>= 12: values carry a checksum header).
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,

    /// db_bench: reads per reader thread (default: --num).
    #[arg(long)]
    pub reads: Option<u64>,

    /// readwhilewriting: reader thread counts, a sweep (e.g. 1,2,4,8,16,32,64).
    #[arg(long, default_value = "1")]
    pub readers: String,

    /// readwhilewriting: writer rate limit in operations per second.
    #[arg(long, value_name = "OPS")]
    pub writer_rate: Option<f64>,

    /// readrandomwriterandom: reads per 100 operations of each thread (the
    /// rest are writes of random keys), as db_bench's --readwritepercent.
    #[arg(long, default_value_t = 90)]
    pub readwritepercent: u8,

    /// db_bench-style reads: check every value of point reads and seeks and
    /// one in 64 of readseq's walk (auto), every value read (all), one in 64
    /// per thread (sample) or none (db_bench's own cost; corruption unseen).
    /// YCSB workloads always check every value.
    #[arg(long, default_value = "auto", value_parser = check_values())]
    pub check_values: CheckValues,
}

/// The database location and the environment of `iolab kv`.
#[derive(Debug, Clone, Args)]
pub struct PlaceArgs {
    /// Directory on the filesystem under test, as in every verb; the
    /// database is a scratch directory inside it, removed at exit unless
    /// --keep (default: the current directory; --dir is the same). Given
    /// several times, as [LABEL=]DIR: the same workload on each, a fresh
    /// database every round, interleaved and normalized to the baseline
    #[arg(short = 't', long, value_name = "DIR", action = clap::ArgAction::Append)]
    pub target: Vec<String>,
    /// With --make: room for the database in each configuration iolab
    /// builds (default: three times the keys and values the loads write,
    /// at least 256 MiB)
    #[arg(long, value_name = "SIZE")]
    pub size: Option<Size>,
    /// The same as --target (its older name)
    #[arg(long, default_value = ".", hide = true)]
    pub dir: PathBuf,

    /// Use (and keep) this database directory instead of a scratch one.
    #[arg(long)]
    pub db: Option<PathBuf>,

    /// LMDB on a raw block device: allow writing to the block device
    /// given as --target, destroying its data (must name that device;
    /// refused while it is mounted or in use)
    #[arg(long, value_name = "DEVICE")]
    pub destroy_data: Option<PathBuf>,

    /// Keep the scratch database directory.
    #[arg(long)]
    pub keep: bool,

    /// Run in a memory cgroup limited to SIZE (root), so a larger database
    /// exercises the device.
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<Size>,

    /// Drop the page cache before each phase (root).
    #[arg(long)]
    pub drop_caches: bool,

    /// Make everything written durable at the end of each phase (RocksDB:
    /// flush the memtable to an SST file). Off by default, as in db_bench
    /// and YCSB: a phase may then read what the previous one left in memory.
    #[arg(long)]
    pub flush_between: bool,
}

/// YCSB's own single-dash options on `iolab kv`'s command line
/// (`-threads 4`, `-target 1000`), as its users type them: rewritten to
/// iolab's flags before parsing (clap would read `-threads` as `-t hreads`).
pub fn ycsb_spellings(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).and_then(|a| a.to_str()) != Some("kv") {
        return args;
    }
    for a in args.iter_mut().skip(2) {
        let long = match a.to_str() {
            Some("-threads") => "--threads",
            Some("-target") => "--target-ops",
            _ => continue,
        };
        *a = long.into();
    }
    args
}

#[cfg(test)]
mod ycsb_tests {
    use super::*;

    #[test]
    fn ycsbs_single_dash_options_become_iolabs_flags() {
        let args = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            ycsb_spellings(args(&[
                "iolab", "kv", "-P", "w", "-threads", "4", "-target", "9"
            ])),
            args(&[
                "iolab",
                "kv",
                "-P",
                "w",
                "--threads",
                "4",
                "--target-ops",
                "9"
            ])
        );
        // Other verbs are left alone.
        let d = args(&["iolab", "device", "-threads"]);
        assert_eq!(ycsb_spellings(d.clone()), d);
    }
}
