//! Media runs of `iolab kv`: the same kv workload (YCSB or db_bench-style
//! phases, on whatever engine) on several directories of the user's own
//! (`--target` given several times, `[LABEL=]DIR`) and on configurations
//! iolab builds (`--make`, `--make-in`), interleaved by rounds in
//! alternating order, one results file normalized to the baseline. The
//! flags mean what they mean for `device` (`campaign::setups`); kv adds its own
//! rules: a target is a writable directory, `raw` (the bare loop device)
//! takes LMDB only (the one engine that opens a block device as its data
//! file: `kv::raw`), `--db`, `--keep` and `--destroy-data` do not apply (every
//! pass loads a fresh database and removes it), and `--size` is the room
//! of each configuration. `--plan FILE` runs the file's `[[kv]]` parts
//! (`kv_planfile`) with its `[media]` table. Everything is checked here,
//! before anything is built; `campaign::kv` runs it.

use std::path::{Path, PathBuf};

use super::kv_planfile::{self, KvPart};
pub use crate::campaign::kv::{KvMediaPlan, PlannedPart};
use crate::campaign::setups::{self as media_set, MediaSet, Subject};
use crate::cli::kv::KvArgs;
use crate::error::usage;
use crate::kv::engine::KvEngineKind;
use crate::kv::plan::KvPlan;
use crate::plan::parse::parse_size;
use crate::plan::planfile;
use crate::testbed::media::MediaKind;

/// The smallest room of a configuration (`--size` default's floor).
const MIN_ROOM: u64 = 256 << 20;

/// The targets the command line names: `--target`s, else `--dir` (the
/// older name), which with `--make` and no target is where the
/// configurations are built (`.` by default).
fn target_values(a: &KvArgs) -> Vec<PathBuf> {
    if !a.place.target.is_empty() {
        return a.place.target.iter().map(PathBuf::from).collect();
    }
    if a.media.make.is_some() && a.place.dir == std::path::Path::new(".") {
        return Vec::new();
    }
    vec![a.place.dir.clone()]
}

/// The parts to run: the `[[kv]]` tables of `--plan`, or the command line.
fn kv_parts(a: &mut KvArgs, notices: &mut Vec<String>) -> anyhow::Result<Vec<KvPart>> {
    let Some(path) = a.plan.clone() else {
        return Ok(vec![KvPart {
            name: a.engine.name().to_string(),
            args: a.clone(),
        }]);
    };
    let file = planfile::read(&path)?;
    let several = a.media.make.is_some() || a.place.target.len() > 1;
    if several || file.media.contains_key("make") {
        super::device_args::apply_media_table(&mut a.media, &path, &file, &a.given)?;
    }
    let parts = kv_planfile::parts(a, &path, &file)?;
    let all_lmdb = parts.iter().all(|p| p.args.engine == KvEngineKind::Lmdb);
    if !all_lmdb && !a.given.iter().any(|g| g == "make") {
        *notices = without_raw(&mut a.media, &path);
    }
    Ok(parts)
}

/// A plan file's `[media]` table serves its device part too, where `raw`
/// (the bare loop device) has a meaning; a database of another engine than
/// LMDB has none there, so kv leaves it out of the file's list, saying so
/// (`--make raw` on the command line is refused instead).
fn without_raw(m: &mut crate::cli::media::MediaArgs, path: &Path) -> Vec<String> {
    let Some(list) = &m.make else {
        return Vec::new();
    };
    let kept: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|k| *k != "raw")
        .collect();
    if kept.len() == list.split(',').count() {
        return Vec::new();
    }
    m.make = (!kept.is_empty()).then(|| kept.join(","));
    vec![format!(
        "{} [media] make: raw left out of the kv parts (their engines need a file system; only lmdb runs on a raw device)",
        path.display()
    )]
}

/// Every kv flag that has no meaning when each pass makes its own database.
fn refuse_unsupported(a: &KvArgs) -> anyhow::Result<()> {
    if a.place.db.is_some() {
        return Err(usage(
            "--db",
            "a media run loads a fresh database on every target in every round; --db names one directory",
        ));
    }
    if a.place.keep {
        return Err(usage(
            "--keep",
            "a media run removes every target's database after its round",
        ));
    }
    if a.place.destroy_data.is_some() {
        return Err(usage(
            "--destroy-data",
            "applies to LMDB on a block device given as the one --target; a media run's raw is the loop device --make raw builds",
        ));
    }
    Ok(())
}

/// The room of each configuration: `--size`, else three times the keys
/// and values the largest part loads, at least 256 MiB.
fn room(a: &KvArgs, parts: &[PlannedPart]) -> anyhow::Result<u64> {
    if let Some(s) = &a.place.size {
        if a.media.make.is_none() {
            return Err(usage(
                "--size",
                "applies to --make only (the room of each configuration)",
            ));
        }
        let v = parse_size("--size", s)?;
        if v < (64 << 20) {
            return Err(usage(
                "--size",
                "a configuration needs at least 64m for its file system",
            ));
        }
        return Ok(v);
    }
    let most = parts.iter().map(|p| loads(&p.plan)).max().unwrap_or(0);
    Ok(most.saturating_mul(3).max(MIN_ROOM))
}

/// The keys and values every load of a plan writes, together (YCSB
/// workloads loaded one after another share the database).
fn loads(plan: &KvPlan) -> u64 {
    plan.steps
        .iter()
        .map(|s| {
            let one = KvPlan {
                steps: vec![s.clone()],
                ..plan.clone()
            };
            one.load_bytes().0
        })
        .fold(0u64, u64::saturating_add)
}

/// Check everything a kv media run needs that does not touch the machine.
pub fn plan(args: &KvArgs) -> anyhow::Result<KvMediaPlan> {
    let mut a = args.clone();
    let mut notices = Vec::new();
    let parts = kv_parts(&mut a, &mut notices)?;
    refuse_unsupported(&a)?;
    let set = MediaSet::parse(&a.media, &target_values(&a))?;
    let raw = set.made().any(|k| k == MediaKind::Raw);
    let several = parts.len() > 1;
    let mut planned = Vec::new();
    for p in parts {
        let mut plan = super::kv_args::plan(&p.args).map_err(|e| match &a.plan {
            Some(f) => kv_planfile::name_place(&format!("{} [[kv]] {}", f.display(), p.name), e),
            None => e,
        })?;
        if plan.server.url.is_some() {
            return Err(usage(
                "--server-url",
                "an existing server keeps its data where it is; a media run starts a private server with its data on each target (leave --server-url out)",
            ));
        }
        if raw {
            plan.validate_raw("--make").map_err(|e| match &a.plan {
                Some(f) => {
                    kv_planfile::name_place(&format!("{} [[kv]] {} on raw", f.display(), p.name), e)
                }
                None => e,
            })?;
        }
        plan.output = None;
        planned.push(PlannedPart {
            name: several.then_some(p.name),
            plan,
        });
    }
    Ok(KvMediaPlan {
        notices,
        room: room(&a, &planned)?,
        set,
        parts: planned,
        output: a.output.clone(),
        quiet: a.quiet,
        seed: a.seed,
    })
}

/// Every check on the machine, nothing created: the configurations can
/// be built, every given target is a writable directory with room for
/// the load, the results file is not inside a target's database.
fn check(plan: &KvMediaPlan, force: bool) -> anyhow::Result<()> {
    plan.set.check_made()?;
    for (_, t) in plan.set.given() {
        media_set::check_writable_dir(t, "a database")?;
        for part in &plan.parts {
            let mut p = part.plan.clone();
            p.place.dir = t.path.clone();
            if p.engine != crate::kv::engine::KvEngineKind::Null {
                crate::kv::run::check_space(&p)
                    .map_err(|e| crate::campaign::given::name_target(t, e))?;
            }
        }
    }
    if let Some(out) = &plan.output {
        let paths: Vec<&std::path::Path> =
            plan.set.given().map(|(_, t)| t.path.as_path()).collect();
        crate::results::output::check(out, "--output", force, &paths)?;
    }
    Ok(())
}

pub fn run(args: KvArgs) -> anyhow::Result<()> {
    let plan = plan(&args)?;
    check(&plan, args.force)?;
    if args.dry_run {
        print_plan(&plan);
        return Ok(());
    }
    crate::campaign::kv::run(&plan)
}

fn print_plan(plan: &KvMediaPlan) {
    for n in &plan.notices {
        println!("note: {n}");
    }
    plan.set.print("kv", |s| match s {
        Subject::Made(MediaKind::Raw) => format!(
            "built in {} (a loop device of {} MiB, LMDB's data file)",
            plan.set.make_in.display(),
            plan.room >> 20
        ),
        Subject::Made(_) => format!(
            "built in {} (room for {} MiB)",
            plan.set.make_in.display(),
            plan.room >> 20
        ),
        Subject::Given(t) => format!("{} (a fresh database in it every round)", t.path.display()),
    });
    for part in &plan.parts {
        println!(
            "  engine {}{}, {} thread(s):",
            part.plan.engine.name(),
            part.name
                .as_deref()
                .map(|n| format!(" (part {n})"))
                .unwrap_or_default(),
            part.plan.threads
        );
        for s in &part.plan.steps {
            println!("      {s:?}");
        }
    }
    println!(
        "{} database(s) loaded, one per part, target and round",
        plan.parts.len() * plan.set.subjects.len() * plan.set.rounds as usize
    );
}
