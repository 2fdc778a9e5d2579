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
//! (commands/kv_planfile.rs) with its `[media]` table. Everything is
//! checked here, before anything is built (moved from
//! commands/kv_media.rs; the parts and the media flags come from
//! commands/kv.rs); `campaign::kv` runs it.

use std::path::{Path, PathBuf};

pub use crate::campaign::kv::{KvMediaPlan, PlannedPart};
use crate::campaign::setups::MediaFlags;
use crate::campaign::setups::{self as media_set, MediaSet, Subject};
use crate::error::{name_place, usage};
use crate::fleet::{Fleet, OnHostLoss};
use crate::kv::plan::KvPlan;
use crate::kv::run::KvObserver;
use crate::kv::settings::KvSettings;
use crate::plan::units::Size;
use crate::session::Presenter;
use crate::testbed::media::MediaKind;

/// The flags of `iolab kv` a media run reads besides the media flags and
/// the parts' plans, as given (commands/kv.rs copies them).
#[derive(Debug, Clone)]
pub struct KvMediaSettings {
    /// The targets the command line names (`--target`s, else `--dir`).
    pub targets: Vec<PathBuf>,
    pub size: Option<Size>,
    pub db: Option<PathBuf>,
    pub destroy_data: Option<PathBuf>,
    pub keep: bool,
    /// `--plan`.
    pub plan: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub force: bool,
    pub quiet: bool,
    pub seed: u64,
    pub dry_run: bool,
}

/// One part of a media run: its name and how its plan is built (after
/// the media checks, so their errors come first).
pub struct Part<F: FnOnce() -> anyhow::Result<KvPlan>> {
    pub name: String,
    pub plan: F,
    /// With `--hosts`: the settings the hosts build the part's plan from.
    pub on_hosts: Option<KvSettings>,
}

/// A media run's hosts (`--hosts`), connected once everything is checked
/// (`--dry-run` contacts none); every pass runs on all of them.
pub struct KvHostsConnect<'c> {
    pub connect: Box<dyn FnOnce() -> anyhow::Result<Fleet> + 'c>,
    pub on_loss: OnHostLoss,
}

/// The smallest room of a configuration (`--size` default's floor).
const MIN_ROOM: u64 = 256 << 20;

/// A plan file's `[media]` table serves its device part too, where `raw`
/// (the bare loop device) has a meaning; a database of another engine than
/// LMDB has none there, so kv leaves it out of the file's list, saying so
/// (`--make raw` on the command line is refused instead).
pub fn without_raw(make: &mut Option<String>, path: &Path) -> Vec<String> {
    let Some(list) = make.as_deref() else {
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
    *make = (!kept.is_empty()).then(|| kept.join(","));
    vec![format!(
        "{} [media] make: raw left out of the kv parts (their engines need a file system; only lmdb runs on a raw device)",
        path.display()
    )]
}

/// Every kv flag that has no meaning when each pass makes its own database.
fn refuse_unsupported(a: &KvMediaSettings) -> anyhow::Result<()> {
    media_set::refuse_one_database(a.db.is_some(), "one directory", a.keep)?;
    if a.destroy_data.is_some() {
        return Err(usage(
            "--destroy-data",
            "applies to LMDB on a block device given as the one --target; a media run's raw is the loop device --make raw builds",
        ));
    }
    Ok(())
}

/// The room of each configuration: `--size`, else three times the keys
/// and values the largest part loads, at least 256 MiB.
fn room(a: &KvMediaSettings, media: &MediaFlags, parts: &[PlannedPart]) -> anyhow::Result<u64> {
    let given = media_set::room_flag(
        a.size.as_ref(),
        media.make.is_some(),
        64 << 20,
        "a configuration needs at least 64m for its file system",
    )?;
    if let Some(v) = given {
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

/// Check everything a kv media run needs that does not touch the machine;
/// `notices`: what reading the parts changed.
pub fn plan<F: FnOnce() -> anyhow::Result<KvPlan>>(
    a: &KvMediaSettings,
    media: &MediaFlags,
    notices: Vec<String>,
    parts: Vec<Part<F>>,
) -> anyhow::Result<KvMediaPlan> {
    refuse_unsupported(a)?;
    let set = MediaSet::parse(media, &a.targets)?;
    let raw = set.made().any(|k| k == MediaKind::Raw);
    let several = parts.len() > 1;
    let mut planned = Vec::new();
    for p in parts {
        let mut plan = (p.plan)().map_err(|e| match &a.plan {
            Some(f) => name_place(&format!("{} [[kv]] {}", f.display(), p.name), e),
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
                Some(f) => name_place(&format!("{} [[kv]] {} on raw", f.display(), p.name), e),
                None => e,
            })?;
        }
        plan.output = None;
        planned.push(PlannedPart {
            name: several.then_some(p.name),
            plan,
            on_hosts: p.on_hosts,
        });
    }
    Ok(KvMediaPlan {
        notices,
        room: room(a, media, &planned)?,
        set,
        parts: planned,
        output: a.output.clone(),
        quiet: a.quiet,
        seed: a.seed,
    })
}

/// On hosts: every target a directory on each of them (an absolute path;
/// the configurations are built there), no database server (a private
/// server per host is not supported yet).
fn check_on_hosts(plan: &KvMediaPlan) -> anyhow::Result<()> {
    if let Some((_, t)) = plan.set.given().find(|(_, t)| !t.path.is_absolute()) {
        return Err(usage(
            "--target",
            format!(
                "with --hosts a target is a directory on every host, given as an absolute path (not {})",
                t.path.display()
            ),
        ));
    }
    if let Some(p) = plan.parts.iter().find(|p| p.plan.engine.server().is_some()) {
        return Err(usage(
            "--engine",
            format!(
                "not with --hosts: {} is a database server (a private server on every host is not supported yet); use an embedded engine",
                p.plan.engine.name()
            ),
        ));
    }
    Ok(())
}

/// Every check on the machine, nothing created: the configurations can
/// be built, every given target is a writable directory with room for
/// the load, the results file is not inside a target's database. On
/// hosts (`on_hosts`) the targets are theirs: `check_on_hosts`.
fn check(plan: &KvMediaPlan, force: bool, on_hosts: bool) -> anyhow::Result<()> {
    if on_hosts {
        check_on_hosts(plan)?;
    }
    if !on_hosts {
        plan.set.check_made()?;
    }
    for (_, t) in plan.set.given().filter(|_| !on_hosts) {
        media_set::check_writable_dir(t, "a database")?;
        for part in &plan.parts {
            let mut p = part.plan.clone();
            p.place.dir = t.path.clone();
            if p.engine.facts().stores_data {
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

/// A media run of `iolab kv`: planned, checked, listed (`--dry-run`) or
/// run (`campaign::kv::run`), here or on every host of `hosts`.
pub fn run<F: FnOnce() -> anyhow::Result<KvPlan>>(
    args: &KvMediaSettings,
    media: &MediaFlags,
    (notices, parts): (Vec<String>, Vec<Part<F>>),
    presenter: &Presenter<dyn KvObserver>,
    hosts: Option<KvHostsConnect>,
) -> anyhow::Result<()> {
    let plan = plan(args, media, notices, parts)?;
    check(&plan, args.force, hosts.is_some())?;
    if args.dry_run {
        print_plan(&plan);
        return Ok(());
    }
    let hosts = match hosts {
        Some(h) => Some(crate::campaign::kv::KvHosts {
            fleet: (h.connect)()?,
            on_loss: h.on_loss,
            halted: None,
        }),
        None => None,
    };
    crate::campaign::kv::run(&plan, presenter, hosts)
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
            println!("      {}", crate::kv::describe::step(s));
        }
    }
    println!(
        "{} database(s) loaded, one per part, target and round",
        plan.parts.len() * plan.set.subjects.len() * plan.set.rounds as usize
    );
}
