//! `iolab kv` from parsed arguments to results: the database directory
//! (scratch or `--db`), the memory cgroup, the engine, the list of phases
//! (YCSB load/run, db_bench benchmarks, reader sweeps), printing, and the
//! results file written after every phase.

use super::cgroup::MemoryCgroup;
use super::dbbench::{Bench, DbBench, DbBenchConfig};
use super::engine::{self, EngineOptions, KvEngineKind};
use super::phase::{self, PhaseSpec, Work};
use super::props::Props;
use super::ycsb::{YcsbConfig, YcsbLoad, YcsbRun};
use super::{loadstats, point, report};
use crate::cli::kv::{KvArgs, PhaseSel};
use crate::dut::{sysfs, TargetInfo, TargetKind};
use crate::error::{usage, VerifyFailed};
use crate::interrupt;
use crate::plan::parse::parse_size;
use crate::results::provenance::Provenance;
use crate::results::Results;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One step of the plan.
#[derive(Debug, Clone)]
enum Step {
    YcsbLoad(String, YcsbConfig),
    YcsbRun(String, YcsbConfig),
    Bench(Bench, Option<usize>),
}

/// The database directory; removed on drop unless kept.
struct DbDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for DbDir {
    fn drop(&mut self) {
        interrupt::unregister_cleanup(&self.path);
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

pub fn engine_options(a: &KvArgs) -> Result<EngineOptions> {
    let a = &a.eng;
    Ok(EngineOptions {
        sync: a.sync,
        wal: !a.disable_wal,
        cache_size: parse_size("--cache-size", &a.cache_size)?,
        compression: a.compression,
        direct_io: a.direct_io,
        mmap: a.mmap,
        page_size: match &a.page_size {
            Some(s) => {
                let v = parse_size("--page-size", s)?;
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
        map_size: parse_size("--map-size", &a.map_size)?,
        write_buffer_size: parse_size("--write-buffer-size", &a.write_buffer_size)?,
        background_jobs: a.background_jobs.max(1),
        readahead: !a.no_readahead,
        bytes_per_sync: parse_size("--bytes-per-sync", &a.bytes_per_sync)?,
        pipelined_write: a.pipelined_write,
    })
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

fn ycsb_props(a: &KvArgs, letter: Option<&str>) -> Result<Props> {
    let mut p = match letter {
        Some(l) => {
            Props::builtin(l).ok_or_else(|| usage("WORKLOAD", format!("unknown workload '{l}'")))?
        }
        None => Props::default(),
    };
    for f in &a.property_files {
        p.load_file(f)?;
    }
    for kv in &a.props {
        p.set_arg(kv)?;
    }
    Ok(p)
}

fn plan(a: &KvArgs) -> Result<Vec<Step>> {
    let spec = match (&a.workload, a.property_files.is_empty()) {
        (Some(w), _) => w.clone(),
        (None, false) => "P".to_string(),
        (None, true) => "a".to_string(),
    };
    let readers = parse_readers(&a.bench.readers)?;
    let mut steps = Vec::new();
    for tok in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if let Some(b) = Bench::parse(tok) {
            if b == Bench::ReadWhileWriting {
                steps.extend(readers.iter().map(|&r| Step::Bench(b, Some(r))));
            } else {
                steps.push(Step::Bench(b, None));
            }
            continue;
        }
        let (name, props) = if tok == "P" {
            let n = a.property_files[0]
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            (n, ycsb_props(a, None)?)
        } else {
            let letter = tok.to_ascii_lowercase();
            let letter = letter
                .strip_prefix("workload")
                .unwrap_or(&letter)
                .to_string();
            if Props::builtin(&letter).is_none() {
                return Err(usage(
                    "WORKLOAD",
                    format!("unknown workload '{tok}' (YCSB a-f, or fillseq, fillrandom, overwrite, readrandom, readseq, seekrandom, readwhilewriting)"),
                ));
            }
            (format!("ycsb-{letter}"), ycsb_props(a, Some(&letter))?)
        };
        let cfg = YcsbConfig::from_props(&props)?;
        if matches!(a.phase, PhaseSel::Load | PhaseSel::Both) {
            steps.push(Step::YcsbLoad(name.clone(), cfg.clone()));
        }
        if matches!(a.phase, PhaseSel::Run | PhaseSel::Both) {
            steps.push(Step::YcsbRun(name, cfg));
        }
    }
    if steps.is_empty() {
        return Err(usage("WORKLOAD", "nothing to run"));
    }
    Ok(steps)
}

fn db_dir(a: &KvArgs, kind: KvEngineKind) -> Result<DbDir> {
    if let Some(p) = &a.place.db {
        std::fs::create_dir_all(p).with_context(|| format!("creating --db {}", p.display()))?;
        return Ok(DbDir {
            path: p.clone(),
            keep: true,
        });
    }
    let meta = std::fs::metadata(&a.place.dir)
        .map_err(|e| usage("--dir", format!("{}: {e}", a.place.dir.display())))?;
    if !meta.is_dir() {
        return Err(usage(
            "--dir",
            format!("{} is not a directory", a.place.dir.display()),
        ));
    }
    let path = a
        .place
        .dir
        .join(format!("iolab-kv-{}-{}", kind.name(), std::process::id()));
    std::fs::create_dir(&path)
        .with_context(|| format!("creating scratch database directory {}", path.display()))?;
    interrupt::register_cleanup(path.clone());
    Ok(DbDir {
        path,
        keep: a.place.keep,
    })
}

fn target_info(dir: &Path, kind: TargetKind) -> TargetInfo {
    let dev = sysfs::devnum_of_path(dir);
    TargetInfo {
        path: dir.display().to_string(),
        kind,
        size_bytes: 0,
        filesystem: sysfs::fs_of_path(dir),
        disk: dev.and_then(sysfs::disk_info),
    }
}

fn needs_data(step: &Step) -> bool {
    match step {
        Step::YcsbRun(..) => true,
        Step::Bench(b, _) => b.needs_data(),
        Step::YcsbLoad(..) => false,
    }
}

fn loads_data(step: &Step) -> bool {
    matches!(
        step,
        Step::YcsbLoad(..) | Step::Bench(Bench::FillSeq | Bench::FillRandom, _)
    )
}

fn check_order(steps: &[Step], mut loaded: bool) -> Result<()> {
    for s in steps {
        if needs_data(s) && !loaded {
            return Err(usage(
                "WORKLOAD",
                "this phase needs a loaded database: run a load first (--phase both, or fillrandom/fillseq before it), or pass --db PATH of a kept one",
            ));
        }
        loaded |= loads_data(s);
    }
    Ok(())
}

/// Entry point of `iolab kv`.
pub fn run(a: KvArgs) -> Result<()> {
    if a.threads == 0 || a.threads > 1024 {
        return Err(usage("--threads", "must be 1..1024"));
    }
    if let Some(t) = a.target_ops {
        if !(t > 0.0 && t.is_finite()) {
            return Err(usage(
                "--target-ops",
                "must be a positive number of operations per second",
            ));
        }
    }
    let opts = engine_options(&a)?;
    let dbc = DbBenchConfig {
        num: a.bench.num,
        key_size: a.bench.key_size,
        value_size: a.bench.value_size,
    };
    let steps = plan(&a)?;
    if steps.iter().any(|s| matches!(s, Step::Bench(..))) {
        dbc.validate()?;
    }
    let mem_limit = a
        .place
        .memory_limit
        .as_deref()
        .map(|s| parse_size("--memory-limit", s))
        .transpose()?;
    if a.dry_run {
        println!(
            "engine: {} (defaults below are applied when it opens)",
            a.engine.name()
        );
        println!("{opts:#?}");
        for s in &steps {
            println!("step: {s:?}");
        }
        return Ok(());
    }
    // Refuse a plan that reads before anything was loaded, before creating anything.
    let had_data = a
        .place
        .db
        .as_ref()
        .and_then(|p| std::fs::read_dir(p).ok())
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    check_order(&steps, had_data || a.engine == KvEngineKind::Null)?;
    interrupt::install();
    let dir = db_dir(&a, a.engine)?;
    if let Some(l) = mem_limit {
        warn_memory_limit(l, a.engine, &opts);
    }
    let cgroup = match mem_limit {
        Some(l) => Some(MemoryCgroup::enter(l)?),
        None => None,
    };
    let eng = engine::open(a.engine, &dir.path, &opts)?;
    print_header(eng.as_ref(), &dir, cgroup.as_ref());
    let prov = provenance(&a, eng.as_ref(), &dir, &steps, mem_limit);
    let mut results = Results::new("kv", prov);
    if let Some(cg) = &cgroup {
        results.extra.insert("memory_cgroup".into(), serde_json::json!({"path": cg.path.display().to_string(), "version": cg.version, "limit": cg.limit}));
    }
    let mut mismatches = 0u64;
    let outcome = (|| -> Result<()> {
        for step in &steps {
            if interrupt::stop_requested() {
                results.interrupted = true;
                break;
            }
            if a.place.drop_caches {
                loadstats::drop_caches()?;
            }
            let (name, work, spec, mut params) = step_job(step, &a, dbc);
            params.insert("engine".into(), eng.name().into());
            params.insert("threads".into(), spec.threads.to_string());
            if let Some(t) = a.target_ops {
                params.insert("target".into(), t.to_string());
            }
            if let Some(l) = mem_limit {
                params.insert("memory_limit".into(), l.to_string());
            }
            let started = crate::results::time::now_rfc3339();
            println!(
                "\n== {name} ({} thread{})",
                spec.threads,
                if spec.threads == 1 { "" } else { "s" }
            );
            let o = phase::run(eng.as_ref(), work.as_ref(), &spec, &dir.path)?;
            let p = point::build(&name, params, &o, eng.as_ref(), started);
            print_phase(&o, &p, eng.name(), &name);
            mismatches += o.rec.mismatches;
            for w in &p.warnings {
                println!("  warning: {w}");
            }
            results.points.push(p);
            if o.interrupted {
                results.interrupted = true;
            }
            if let Some(out) = &a.output {
                results.write_atomic(out)?;
            }
        }
        Ok(())
    })();
    results.complete = outcome.is_ok() && !results.interrupted;
    if let Some(cg) = &cgroup {
        if let Some(peak) = cg.peak_bytes() {
            results
                .extra
                .insert("memory_cgroup_peak_bytes".into(), serde_json::json!(peak));
        }
    }
    if let Some(out) = &a.output {
        results.write_atomic(out)?;
        println!("\nresults: {}", out.display());
    }
    drop(eng);
    drop(cgroup);
    drop(dir);
    outcome?;
    if mismatches > 0 {
        return Err(VerifyFailed { mismatches }.into());
    }
    if results.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}

/// One step's workload: its point name, work, thread split and parameters.
fn step_job(
    step: &Step,
    a: &KvArgs,
    dbc: DbBenchConfig,
) -> (String, Box<dyn Work>, PhaseSpec, BTreeMap<String, String>) {
    match step {
        Step::YcsbLoad(n, cfg) => (
            format!("{n}.load"),
            Box::new(YcsbLoad::new(cfg, a.seed)),
            PhaseSpec::split(cfg.insertcount as u64, a.threads, a.target_ops, a.seed),
            BTreeMap::from([
                ("workload".into(), n.clone()),
                ("phase".into(), "load".into()),
                ("records".into(), cfg.recordcount.to_string()),
            ]),
        ),
        Step::YcsbRun(n, cfg) => (
            format!("{n}.run"),
            Box::new(YcsbRun::new(cfg, a.seed)),
            PhaseSpec::split(
                cfg.operationcount.max(0) as u64,
                a.threads,
                a.target_ops,
                a.seed ^ 1,
            ),
            BTreeMap::from([
                ("workload".into(), n.clone()),
                ("phase".into(), "run".into()),
                ("records".into(), cfg.recordcount.to_string()),
                ("operations".into(), cfg.operationcount.to_string()),
            ]),
        ),
        Step::Bench(b, readers) => {
            let reads = a.bench.reads.unwrap_or(a.bench.num);
            let spec = match (b, readers) {
                (Bench::ReadWhileWriting, Some(r)) => PhaseSpec {
                    threads: r + 1,
                    ops: std::iter::once(None)
                        .chain((0..*r).map(|_| Some(reads)))
                        .collect(),
                    rate: std::iter::once(a.bench.writer_rate)
                        .chain((0..*r).map(|_| None))
                        .collect(),
                    seed: a.seed ^ 7,
                },
                (Bench::FillSeq | Bench::FillRandom | Bench::Overwrite, _) => {
                    PhaseSpec::split(a.bench.num, a.threads, a.target_ops, a.seed ^ 3)
                }
                (Bench::ReadSeq, _) => PhaseSpec::split(
                    reads.div_ceil(super::recorder::READSEQ_BATCH as u64),
                    a.threads,
                    a.target_ops,
                    a.seed ^ 5,
                ),
                _ => PhaseSpec::split(
                    reads * a.threads as u64,
                    a.threads,
                    a.target_ops,
                    a.seed ^ 5,
                ),
            };
            let name = match readers {
                Some(r) => format!("{}.readers{r}", b.name()),
                None => b.name().to_string(),
            };
            let mut params = BTreeMap::from([
                ("workload".into(), b.name().to_string()),
                ("num".into(), a.bench.num.to_string()),
                ("key_size".into(), a.bench.key_size.to_string()),
                ("value_size".into(), a.bench.value_size.to_string()),
            ]);
            if let Some(r) = readers {
                params.insert("readers".into(), r.to_string());
            }
            (name, Box::new(DbBench::new(*b, dbc, a.seed)), spec, params)
        }
    }
}

/// The terminal lines of one finished phase.
fn print_phase(o: &phase::PhaseOutcome, p: &crate::results::Point, engine: &str, name: &str) {
    print!("{}", report::ycsb_lines(o));
    println!("{}", report::latency_table(p));
    println!("{}", report::load_table(o));
    if let Some(stats) = p
        .extra
        .other
        .get("kv")
        .and_then(|k| k.get("engine_stats"))
        .and_then(|s| s.as_object())
    {
        for (k, v) in stats {
            println!("  {}: {k} = {}", engine, v.as_str().unwrap_or_default());
        }
    }
    if o.rec.mismatches > 0 {
        eprintln!(
            "iolab: {} verification failure(s) in {name}:",
            o.rec.mismatches
        );
        for m in o.rec.first_mismatches.iter().take(8) {
            eprintln!("  {m}");
        }
    }
    if o.rec.not_found > 0 {
        println!(
            "  ({} of {} reads found)",
            o.rec.ops[super::recorder::KvOp::Read.idx()] - o.rec.not_found,
            o.rec.ops[super::recorder::KvOp::Read.idx()]
        );
    }
}

/// Warn when `--memory-limit` is below what the engine keeps in memory.
fn warn_memory_limit(l: u64, kind: KvEngineKind, opts: &EngineOptions) {
    let needs = match kind {
        KvEngineKind::Rocksdb => opts.cache_size + 2 * opts.write_buffer_size,
        KvEngineKind::Fjall => opts.cache_size + opts.write_buffer_size,
        KvEngineKind::Sqlite | KvEngineKind::Redb => opts.cache_size,
        KvEngineKind::Lmdb | KvEngineKind::Null => 0,
    };
    if needs + (16 << 20) > l {
        eprintln!(
            "iolab: warning: --memory-limit {} is below what {} keeps in memory ({} of cache and memtables + ~16 MiB); \
             the kernel may kill iolab (OOM). Lower --cache-size / --write-buffer-size.",
            report::human(l),
            kind.name(),
            report::human(needs)
        );
    }
}

/// What runs where: engine, database directory, settings, memory limit.
fn print_header(eng: &dyn super::engine::KvEngine, dir: &DbDir, cgroup: Option<&MemoryCgroup>) {
    println!("iolab kv: engine {} {}", eng.name(), eng.version());
    println!(
        "  database: {}{}",
        dir.path.display(),
        if dir.keep {
            " (kept)"
        } else {
            " (scratch, removed at exit)"
        }
    );
    let settings: Vec<String> = eng
        .settings()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    println!("  settings: {}", settings.join(" "));
    if let Some(cg) = cgroup {
        println!(
            "  memory limit: {} (cgroup v{} {})",
            report::human(cg.limit),
            cg.version,
            cg.path.display()
        );
    }
}

/// Provenance of a kv run: the machine, the engine and the plan.
fn provenance(
    a: &KvArgs,
    eng: &dyn super::engine::KvEngine,
    dir: &DbDir,
    steps: &[Step],
    mem_limit: Option<u64>,
) -> Provenance {
    let mut prov = Provenance::collect(a.seed);
    prov.tools.insert(eng.name().to_string(), eng.version());
    prov.target = Some(target_info(
        &dir.path,
        if a.place.db.is_some() {
            TargetKind::ExistingFile
        } else {
            TargetKind::ScratchFile
        },
    ));
    prov.plan = serde_json::json!({
        "verb": "kv",
        "engine": eng.name(),
        "engine_settings": eng.settings().into_iter().collect::<BTreeMap<_, _>>(),
        "steps": steps.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>(),
        "threads": a.threads,
        "target": a.target_ops,
        "memory_limit": mem_limit,
        "seed": a.seed,
    });
    prov
}
