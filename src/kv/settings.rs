//! `iolab kv`'s settings (`KvSettings`, its flags as given, copied from
//! `cli::kv::KvArgs` by commands/kv_flags.rs) -> a validated `KvPlan`:
//! engine options with their sizes parsed, YCSB property files and
//! overrides applied, workload names resolved to phases, reader sweeps
//! expanded (moved from commands/kv_flags.rs). The settings are also what
//! a fleet's control side sends its hosts (`fleet::proto::KvWork`): each
//! host builds and checks the plan from them.

use crate::error::usage;
use crate::kv::chain::ChainStep;
use crate::kv::dbbench::{Bench, DbBenchConfig};
use crate::kv::engine::EngineOptions;
use crate::kv::engine::{Compression, KvEngineKind, WtTable};
use crate::kv::keys::KeyFormat;
use crate::kv::plan::{BenchReads, KvPlace, KvPlan, KvServer, RawDevice, Step};
use crate::kv::props::Props;
use crate::kv::value::CheckValues;
use crate::kv::ycsb::YcsbConfig;
use crate::plan::units::{Size, Span};
use crate::servers::flags::{self as server_flags, ServerFlags};
use anyhow::Result;
use std::path::PathBuf;

/// Which YCSB phases to run (`--phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseSel {
    Load,
    Run,
    Both,
}

/// `iolab kv`'s flags the plan is built from, as given (`cli::kv::KvArgs`
/// documents each); the groups keep the flags' groups.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvSettings {
    pub workload: Option<String>,
    pub property_files: Vec<PathBuf>,
    /// `-P` files read on the control side of `--hosts`, sent in place of
    /// their paths (`inline_property_files`); loaded after `property_files`.
    #[serde(default)]
    pub property_texts: Vec<PropertyText>,
    pub props: Vec<String>,
    pub engine: KvEngineKind,
    pub phase: PhaseSel,
    pub runtime: Option<Span>,
    pub threads: usize,
    pub target_ops: Option<f64>,
    pub bench: BenchSettings,
    pub eng: EngineSettings,
    pub place: PlaceSettings,
    pub server: ServerFlags,
    pub under: Span,
    pub seed: u64,
    pub status_interval: Option<f64>,
    pub output: Option<PathBuf>,
}

/// A `-P` file's text, as the control side of `--hosts` read it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PropertyText {
    /// The file's path as given on the control side (names the workload).
    pub path: PathBuf,
    pub text: String,
}

/// All `-P` files together, sent to hosts: a control message holds at
/// most 256 KiB, and YCSB's own workload files are about 3 KiB each.
pub const INLINE_PROPERTIES_MAX: usize = 64 << 10;

impl KvSettings {
    /// Read the `-P` files here and carry their texts instead of their
    /// paths (a host has none of this machine's files).
    pub fn inline_property_files(&mut self) -> Result<()> {
        let mut total = 0;
        for path in std::mem::take(&mut self.property_files) {
            let text = crate::input::read_text(&path, "-P", Some(crate::input::CONFIG_MAX))?;
            total += text.len();
            if total > INLINE_PROPERTIES_MAX {
                return Err(usage(
                    "-P",
                    format!(
                        "the property files sent to the hosts come to over {} KiB (at {}); pass fewer or smaller files, or -p",
                        INLINE_PROPERTIES_MAX >> 10,
                        path.display()
                    ),
                ));
            }
            self.property_texts.push(PropertyText { path, text });
        }
        Ok(())
    }

    /// The first `-P` file, read here or inlined: it names a workload
    /// given by files alone.
    fn first_property_file(&self) -> Option<&std::path::Path> {
        self.property_files
            .first()
            .map(PathBuf::as_path)
            .or_else(|| self.property_texts.first().map(|t| t.path.as_path()))
    }
}

/// The engine flags (`cli::kv::EngineArgs`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSettings {
    pub sync: bool,
    pub disable_wal: bool,
    pub cache_size: Size,
    pub compression: Compression,
    pub direct_io: bool,
    pub mmap: bool,
    pub page_size: Option<Size>,
    pub no_readahead: bool,
    pub map_size: Size,
    pub write_buffer_size: Size,
    pub bytes_per_sync: Size,
    pub pipelined_write: bool,
    pub background_jobs: u32,
    pub wt_table: WtTable,
    pub checkpoint_interval: Span,
    pub wt_eviction_threads: String,
    #[serde(default)]
    pub cassandra_compaction: Option<String>,
}

/// The db_bench-style flags (`cli::kv::BenchArgs`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchSettings {
    pub num: u64,
    pub key_size: usize,
    pub key_format: KeyFormat,
    pub value_size: usize,
    pub reads: Option<u64>,
    pub readers: String,
    pub writer_rate: Option<f64>,
    pub readwritepercent: u8,
    pub check_values: CheckValues,
}

/// Where the database goes (`cli::kv::PlaceArgs`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaceSettings {
    pub target: Vec<String>,
    pub size: Option<Size>,
    pub dir: PathBuf,
    pub db: Option<PathBuf>,
    pub destroy_data: Option<PathBuf>,
    pub keep: bool,
    pub memory_limit: Option<Size>,
    pub drop_caches: bool,
    pub flush_between: bool,
}

/// The plan the arguments describe, validated.
pub fn plan(a: &KvSettings) -> Result<KvPlan> {
    // Property files are read once; every workload overlays them.
    let user = user_props(a)?;
    let mut plan = KvPlan {
        engine: a.engine,
        options: engine_options(a)?,
        steps: steps(a, &user)?,
        threads: threads(a, &user)?,
        target_ops: a.target_ops,
        bench: DbBenchConfig {
            num: a.bench.num,
            key_size: a.bench.key_size,
            value_size: a.bench.value_size,
            read_percent: a.bench.readwritepercent,
            check_values: a.bench.check_values,
            key_format: a.bench.key_format,
        },
        reads: BenchReads {
            reads: a.bench.reads,
            writer_rate: a.bench.writer_rate,
        },
        place: KvPlace {
            raw: raw_device(a)?,
            dir: target_dir(a)?,
            db: a.place.db.clone(),
            keep: a.place.keep,
            memory_limit: a.place.memory_limit.as_ref().map(Size::bytes),
            drop_caches: a.place.drop_caches,
            flush_between: a.place.flush_between,
        },
        server: server(a, &user)?,
        under_ns: under(&a.under)?,
        seed: a.seed,
        output: a.output.clone(),
        status_interval_s: a.status_interval,
        notices: Vec::new(),
    };
    plan.notices = crate::kv::props::unused_notices(&user);
    let props = a.engine.facts().ycsb_props;
    if !props.is_empty() {
        // The YCSB binding's properties this engine reads.
        plan.notices.retain(|n| {
            !props
                .iter()
                .any(|p| n.starts_with(&format!("YCSB property {p}=")))
        });
    }
    if plan.status_interval_s.is_none() {
        plan.status_interval_s = user
            .get("status.interval")
            .map(|v| {
                v.trim().parse::<f64>().map_err(|_| {
                    usage(
                        "status.interval",
                        format!("'{v}' is not a number of seconds"),
                    )
                })
            })
            .transpose()?;
    }
    plan.validate()?;
    Ok(plan)
}

/// `--under`: a positive latency.
fn under(s: &Span) -> Result<u64> {
    let ns = s.ns();
    if ns == 0 {
        return Err(usage(
            "--under",
            "must be a latency above 0 (for example 1ms, 500us)",
        ));
    }
    Ok(ns)
}

/// The server of a server engine, its settings checked.
fn server(a: &KvSettings, user: &Props) -> Result<KvServer> {
    if a.server.server_url.is_some() {
        if let Some(flag) = server_flags::private_only(&a.server) {
            return Err(usage(
                flag,
                "sets up the private server iolab starts; with --server-url the server is yours to configure",
            ));
        }
    } else if !a.engine.facts().private_flags {
        if let Some(flag) = server_flags::private_only(&a.server) {
            return Err(usage(
                flag,
                "sets up a private PostgreSQL, MariaDB or Redis; mongodb's private server is a FerretDB \
                 (the protocol's test double), which takes none",
            ));
        }
    }
    Ok(KvServer {
        url: a.server.server_url.clone(),
        settings: server_flags::settings(&a.server)?,
        cql: crate::kv::engines::cassandra::CqlOptions {
            compaction: cassandra_compaction(a)?,
            ..crate::kv::engines::cassandra::CqlOptions::from_props(user)?
        },
    })
}

/// `--cassandra-compaction`: a strategy Cassandra has, for its engine only.
fn cassandra_compaction(a: &KvSettings) -> Result<Option<&'static str>> {
    const FIELD: &str = "--cassandra-compaction";
    let Some(s) = &a.eng.cassandra_compaction else {
        return Ok(None);
    };
    if !a.engine.facts().compaction {
        return Err(usage(FIELD, "applies to --engine cassandra"));
    }
    crate::kv::engines::cassandra::parse_compaction(s)
        .map(Some)
        .ok_or_else(|| {
            usage(
                FIELD,
                format!(
                    "'{s}' is not a compaction strategy (SizeTiered, Leveled, Unified, TimeWindow; \
                     stcs, lcs, ucs, twcs)"
                ),
            )
        })
}

/// Engine options from the flags (sizes parsed, the SQLite page size checked).
pub fn engine_options(a: &KvSettings) -> Result<EngineOptions> {
    let a = &a.eng;
    Ok(EngineOptions {
        sync: a.sync,
        wal: !a.disable_wal,
        cache_size: a.cache_size.bytes(),
        compression: a.compression,
        direct_io: a.direct_io,
        mmap: a.mmap,
        page_size: match &a.page_size {
            Some(s) => {
                let v = s.bytes();
                if !(512..=65536).contains(&v) || !v.is_power_of_two() {
                    return Err(usage(
                        "--page-size",
                        "must be a power of two from 512 to 64k",
                    ));
                }
                Some(v as u32)
            }
            None => None,
        },
        map_size: {
            let v = a.map_size.bytes();
            if v < (1 << 20) || !v.is_multiple_of(4096) {
                return Err(usage(
                    "--map-size",
                    "must be a multiple of 4 KiB and at least 1 MiB (LMDB's map is in pages)",
                ));
            }
            v
        },
        write_buffer_size: a.write_buffer_size.bytes(),
        background_jobs: a.background_jobs.max(1),
        readahead: !a.no_readahead,
        bytes_per_sync: a.bytes_per_sync.bytes(),
        pipelined_write: a.pipelined_write,
        wt_table: a.wt_table,
        checkpoint_interval_s: checkpoint_interval(&a.checkpoint_interval)?,
        wt_eviction_threads: eviction_threads(&a.wt_eviction_threads)?,
    })
}

/// `--wt-eviction-threads`: `auto` (None) or a fixed count within
/// WiredTiger's bounds for `eviction=(threads_min,threads_max)`.
fn eviction_threads(s: &str) -> Result<Option<u32>> {
    const FIELD: &str = "--wt-eviction-threads";
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=20).contains(&n) => Ok(Some(n)),
        _ => Err(usage(
            FIELD,
            format!(
                "'{s}' is neither auto nor a count of threads from 1 to 20 (WiredTiger's bounds)"
            ),
        )),
    }
}

/// `--checkpoint-interval`: whole seconds, as WiredTiger takes them.
fn checkpoint_interval(s: &Span) -> Result<u32> {
    const FIELD: &str = "--checkpoint-interval";
    let ns = s.ns();
    if !ns.is_multiple_of(1_000_000_000) || ns > 100_000 * 1_000_000_000 {
        return Err(usage(
            FIELD,
            format!("'{s}' is not whole seconds from 0 to 100000 (WiredTiger's checkpoint wait)"),
        ));
    }
    Ok((ns / 1_000_000_000) as u32)
}

/// Client threads: `--threads`, or YCSB's `threadcount` property (from -P
/// files or -p), which must agree with `--threads` when both are given.
fn threads(a: &KvSettings, user: &Props) -> Result<usize> {
    let Some(t) = user.get("threadcount").map(str::to_string) else {
        return Ok(a.threads);
    };
    let n = match t.trim().parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => n,
        _ => {
            return Err(usage(
                "threadcount",
                format!("'{t}' is not a thread count (1..1024)"),
            ))
        }
    };
    if a.threads != 1 && a.threads != n {
        return Err(usage(
            "threadcount",
            format!("threadcount={n} and --threads {} disagree", a.threads),
        ));
    }
    Ok(n)
}

fn parse_readers(s: &str) -> Result<Vec<usize>> {
    s.split(',')
        .map(|t| match t.trim().parse::<usize>() {
            Ok(n) if (1..=1024).contains(&n) => Ok(n),
            _ => Err(usage(
                "--readers",
                format!("'{t}' is not a reader count (1..1024)"),
            )),
        })
        .collect()
}

/// `--target DIR` (or its older name `--dir`); in a media run (several
/// `--target`s) the first, which `campaign::kv_plan` replaces with each target's
/// directory. A number is the old meaning of kv's --target (a rate):
/// refused with a pointer to --target-ops.
fn target_dir(a: &KvSettings) -> Result<PathBuf> {
    for t in &a.place.target {
        if t.parse::<f64>().is_ok() && !std::path::Path::new(t).exists() {
            return Err(usage(
                "--target",
                format!("kv's --target is the storage under test now (a directory, as in device); for a rate use --target-ops {t} (or --rate {t})"),
            ));
        }
    }
    let Some(t) = a.place.target.first() else {
        return Ok(a.place.dir.clone());
    };
    if a.place.dir != std::path::Path::new(".") {
        return Err(usage("--target", "give --target or --dir, not both"));
    }
    Ok(PathBuf::from(t))
}

/// The block device a single `--target` names, if it is one: LMDB writes
/// its database on it (`--destroy-data` is checked against it by `dut`'s
/// rule when the run starts). `--destroy-data` without a device target is
/// refused.
fn raw_device(a: &KvSettings) -> Result<Option<RawDevice>> {
    use std::os::unix::fs::FileTypeExt;
    let dir = target_dir(a)?;
    let is_device = a.place.target.len() == 1
        && std::fs::metadata(&dir).is_ok_and(|m| m.file_type().is_block_device());
    if !is_device {
        if let Some(d) = &a.place.destroy_data {
            return Err(usage(
                "--destroy-data",
                format!(
                    "names {}, but --target is not a block device: --destroy-data applies to LMDB on a raw device given as the one --target",
                    d.display()
                ),
            ));
        }
        return Ok(None);
    }
    Ok(Some(RawDevice {
        device: dir,
        destroy_data: a.place.destroy_data.clone(),
    }))
}

/// The properties the user gave: files in order, then -p.
fn user_props(a: &KvSettings) -> Result<Props> {
    let mut p = Props::default();
    for f in &a.property_files {
        p.load_file(f)?;
    }
    for t in &a.property_texts {
        p.load_str(&t.text, &t.path.display().to_string())?;
    }
    for kv in &a.props {
        p.set_arg(kv)?;
    }
    if let Some(r) = &a.runtime {
        let ns = r.ns();
        if ns < 1_000_000_000 || !ns.is_multiple_of(1_000_000_000) {
            return Err(crate::error::usage(
                "--runtime",
                format!("'{r}': whole seconds, at least 1s (YCSB's maxexecutiontime)"),
            ));
        }
        p.set("maxexecutiontime", ns / 1_000_000_000);
    }
    Ok(p)
}

/// The workloads `iolab kv` knows, for the errors that name them.
pub const WORKLOADS: &str = "YCSB a-f, or fillseq, fillrandom, overwrite, readrandom, readseq, \
     seekrandom, readwhilewriting, readrandomwriterandom; between them waitforcompaction, \
     flush, compact";

/// A workload's properties: the built-in letter's (if any) with the user's
/// on top.
fn ycsb_props(letter: Option<&str>, user: &Props) -> Result<Props> {
    let mut p = match letter {
        Some(l) => {
            Props::builtin(l).ok_or_else(|| usage("WORKLOAD", format!("unknown workload '{l}'")))?
        }
        None => Props::default(),
    };
    p.overlay(user);
    Ok(p)
}

/// The phases, in order: each workload name becomes a YCSB load and/or run
/// phase or a db_bench benchmark (readwhilewriting: one per reader count).
fn steps(a: &KvSettings, user: &Props) -> Result<Vec<Step>> {
    let first_file = a.first_property_file();
    let spec = match (&a.workload, first_file) {
        (Some(w), _) => w.clone(),
        (None, Some(_)) => "P".to_string(),
        (None, None) => "a".to_string(),
    };
    let readers = parse_readers(&a.bench.readers)?;
    let mut steps = Vec::new();
    for tok in spec.split(',').map(str::trim) {
        if tok.is_empty() {
            return Err(usage(
                "WORKLOAD",
                format!("empty item in '{spec}' (a comma-separated list of workloads)"),
            ));
        }
        if let Some(c) = ChainStep::parse(tok) {
            steps.push(Step::Chain(c));
            continue;
        }
        if let Some(b) = Bench::parse(tok) {
            if b == Bench::ReadWhileWriting {
                steps.extend(readers.iter().map(|&r| Step::Bench(b, Some(r))));
            } else {
                steps.push(Step::Bench(b, None));
            }
            continue;
        }
        let (name, props) = if let (true, Some(file)) = (tok == "P", first_file) {
            let n = file
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let props = ycsb_props(None, user)?;
            if props.get("recordcount").is_none() {
                return Err(usage(
                    "recordcount",
                    format!(
                        "{} sets no recordcount: YCSB would load its default of 2,147,483,647 records; \
                         set recordcount in the file or pass -p recordcount=N",
                        file.display()
                    ),
                ));
            }
            (n, props)
        } else {
            let letter = tok.to_ascii_lowercase();
            let letter = letter
                .strip_prefix("workload")
                .unwrap_or(&letter)
                .to_string();
            if Props::builtin(&letter).is_none() {
                return Err(usage(
                    "WORKLOAD",
                    format!("unknown workload '{tok}' ({WORKLOADS})"),
                ));
            }
            (format!("ycsb-{letter}"), ycsb_props(Some(&letter), user)?)
        };
        for (name, props) in record_sizes(&name, props)? {
            let cfg = YcsbConfig::from_props(&props)?;
            if matches!(a.phase, PhaseSel::Load | PhaseSel::Both) {
                steps.push(Step::YcsbLoad(name.clone(), cfg.clone()));
            }
            if matches!(a.phase, PhaseSel::Run | PhaseSel::Both) {
                steps.push(Step::YcsbRun(name, cfg));
            }
        }
    }
    Ok(steps)
}

/// A record-size sweep: `fieldlength` given as a list (`-p
/// fieldlength=1024,2048,4096`) makes one workload per length, named
/// `NAME@LENGTHB`; a single length keeps the workload as it is.
fn record_sizes(name: &str, props: Props) -> Result<Vec<(String, Props)>> {
    let Some(list) = props.get("fieldlength").filter(|v| v.contains(',')) else {
        return Ok(vec![(name.to_string(), props)]);
    };
    let list = list.to_string();
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim) {
        let len: i64 = item.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
            usage(
                "fieldlength",
                format!("'{item}' in '{list}' is not a field length in bytes (>= 1)"),
            )
        })?;
        let mut p = props.clone();
        p.set("fieldlength", len);
        out.push((format!("{name}@{len}B"), p));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_threads_are_auto_or_within_wiredtigers_bounds() {
        assert_eq!(eviction_threads("auto").unwrap(), None);
        assert_eq!(eviction_threads("AUTO").unwrap(), None);
        assert_eq!(eviction_threads("1").unwrap(), Some(1));
        assert_eq!(eviction_threads("20").unwrap(), Some(20));
        for bad in ["0", "21", "x", "", "-1", "4.5"] {
            let e = format!("{:#}", eviction_threads(bad).unwrap_err());
            assert!(e.contains("--wt-eviction-threads"), "{bad}: {e}");
        }
    }
}
