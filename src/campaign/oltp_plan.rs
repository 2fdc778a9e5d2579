//! Media runs of `iolab oltp`: the same TPC-C-derived run (load, then a
//! point per user count) on several directories of the user's own
//! (`--target` given several times, `[LABEL=]DIR`) and on configurations
//! iolab builds (`--make`, `--make-in`), interleaved by rounds in
//! alternating order, one results file normalized to the baseline. The
//! media flags mean what they mean for `device` and `kv` (`campaign::setups`);
//! oltp adds its own rules: a target is a writable directory (`raw` has no
//! file system and is refused), every pass loads a fresh database (SQLite
//! in the target, or a private server with its data there), so `--db`,
//! `--keep` and `--server-url` do not apply, and `--size` is the room of
//! each configuration. Everything is checked here, before anything is
//! built (moved from commands/oltp_media.rs); `campaign::oltp` runs it,
//! here or on every host of `--hosts` (each target a directory on every
//! host, SQLite only).

use std::path::PathBuf;

use crate::campaign::setups::MediaFlags;
use crate::campaign::setups::{self as media_set, MediaSet, Subject};
use crate::error::usage;
use crate::fleet::{Fleet, OnHostLoss};
use crate::oltp::plan::OltpPlan;
use crate::oltp::run::OltpObserver;
use crate::oltp::settings::OltpSettings;
use crate::oltp::sql::connect::SqlEngine;
use crate::plan::units::Size;
use crate::session::Presenter;
use crate::testbed::media::MediaKind;

/// Room for one warehouse with its indexes and the run's growth.
const PER_WAREHOUSE: u64 = 256 << 20;
/// The smallest room of a configuration.
const MIN_ROOM: u64 = 1 << 30;

pub use crate::campaign::oltp::OltpMediaPlan;

/// The flags of `iolab oltp` a media run reads besides the media flags and
/// the oltp plan, as given (commands/oltp.rs copies them).
#[derive(Debug, Clone)]
pub struct OltpMediaSettings {
    pub target: Vec<PathBuf>,
    pub size: Option<Size>,
    pub keep: bool,
    pub db: Option<PathBuf>,
    /// `--server-url`.
    pub server_url: Option<String>,
    pub output: Option<PathBuf>,
    pub force: bool,
    pub quiet: bool,
    pub dry_run: bool,
}

/// A media run's hosts (`--hosts`), connected once everything is checked
/// (`--dry-run` contacts none); every pass runs on all of them.
pub struct OltpHostsConnect<'c> {
    pub connect: Box<dyn FnOnce() -> anyhow::Result<Fleet> + 'c>,
    /// What every host builds its plan from.
    pub settings: OltpSettings,
    pub on_loss: OnHostLoss,
}

/// The flags that have no meaning when every pass loads its own database.
fn refuse_unsupported(a: &OltpMediaSettings) -> anyhow::Result<()> {
    media_set::refuse_one_database(a.db.is_some(), "one file", a.keep)?;
    if a.server_url.is_some() {
        return Err(usage(
            "--server-url",
            "an existing server keeps its data where it is; a media run starts a private server with its data on each target (leave --server-url out)",
        ));
    }
    Ok(())
}

/// The room of each configuration: `--size`, else 256 MiB per warehouse
/// plus what the engine's log may take (PostgreSQL's `max_wal_size`, 1 GiB
/// by default), at least 1 GiB.
fn room(a: &OltpMediaSettings, media: &MediaFlags, plan: &OltpPlan) -> anyhow::Result<u64> {
    let given = crate::campaign::setups::room_flag(
        a.size.as_ref(),
        media.make.is_some(),
        256 << 20,
        "a configuration needs at least 256m for a loaded warehouse",
    )?;
    if let Some(v) = given {
        return Ok(v);
    }
    let log = match plan.engine {
        SqlEngine::Postgres => plan.settings.max_wal_size.unwrap_or(1 << 30) * 3 / 2,
        SqlEngine::Mariadb => 512 << 20,
        SqlEngine::Sqlite => 0,
    };
    Ok((plan.warehouses as u64 * PER_WAREHOUSE + log).max(MIN_ROOM))
}

/// Check everything an oltp media run needs that does not touch the
/// machine; `oltp_plan` builds the oltp plan after the media checks.
pub fn plan(
    a: &OltpMediaSettings,
    media: &MediaFlags,
    oltp_plan: impl FnOnce() -> anyhow::Result<OltpPlan>,
) -> anyhow::Result<OltpMediaPlan> {
    refuse_unsupported(a)?;
    let set = MediaSet::parse(media, &a.target)?;
    if set.made().any(|k| k == MediaKind::Raw) {
        return Err(usage(
            "--make",
            "raw has no file system, and a database needs one (tmpfs, ext4, ext4-nojournal, xfs, btrfs, stripe:N)",
        ));
    }
    let mut plan = oltp_plan()?;
    plan.output = None;
    Ok(OltpMediaPlan {
        room: room(a, media, &plan)?,
        set,
        plan,
        output: a.output.clone(),
        quiet: a.quiet,
    })
}

/// On hosts: every target a directory on each of them (an absolute path;
/// the configurations are built there), no database server (a private
/// server per host is not supported yet).
fn check_on_hosts(m: &OltpMediaPlan) -> anyhow::Result<()> {
    if let Some((_, t)) = m.set.given().find(|(_, t)| !t.path.is_absolute()) {
        return Err(usage(
            "--target",
            format!(
                "with --hosts a target is a directory on every host, given as an absolute path (not {})",
                t.path.display()
            ),
        ));
    }
    if m.plan.engine != SqlEngine::Sqlite {
        return Err(usage(
            "--engine",
            format!(
                "not with --hosts and several targets: {} would be a private server on every host (not supported yet); use sqlite",
                m.plan.engine.name()
            ),
        ));
    }
    Ok(())
}

/// Every check on the machine, nothing created: the configurations can be
/// built, every given target is a writable directory, the results file is
/// not inside a target. On hosts (`on_hosts`) the targets are theirs:
/// `check_on_hosts`.
fn check(m: &OltpMediaPlan, force: bool, on_hosts: bool) -> anyhow::Result<()> {
    if on_hosts {
        check_on_hosts(m)?;
    }
    if !on_hosts {
        m.set.check_made()?;
    }
    for (_, t) in m.set.given().filter(|_| !on_hosts) {
        media_set::check_writable_dir(t, "a database")?;
    }
    if let Some(out) = &m.output {
        let paths: Vec<&std::path::Path> = m.set.given().map(|(_, t)| t.path.as_path()).collect();
        crate::results::output::check(out, "--output", force, &paths)?;
    }
    Ok(())
}

/// A media run of `iolab oltp`: planned, checked, listed (`--dry-run`) or
/// run (`campaign::oltp::run`), here or on every host of `hosts`.
pub fn run(
    args: &OltpMediaSettings,
    media: &MediaFlags,
    oltp_plan: impl FnOnce() -> anyhow::Result<OltpPlan>,
    presenter: &Presenter<dyn OltpObserver>,
    hosts: Option<OltpHostsConnect>,
) -> anyhow::Result<()> {
    let m = plan(args, media, oltp_plan)?;
    check(&m, args.force, hosts.is_some())?;
    if args.dry_run {
        print_plan(&m);
        return Ok(());
    }
    let hosts = match hosts {
        Some(h) => Some(crate::campaign::oltp::OltpHosts {
            fleet: (h.connect)()?,
            settings: h.settings,
            on_loss: h.on_loss,
            halted: None,
        }),
        None => None,
    };
    crate::campaign::oltp::run(&m, presenter, hosts)
}

fn print_plan(m: &OltpMediaPlan) {
    let what = match m.plan.engine {
        SqlEngine::Sqlite => "a fresh SQLite database",
        _ => "a fresh private server",
    };
    m.set.print("oltp", |s| match s {
        Subject::Made(_) => format!(
            "built in {} (room for {} MiB), {what} in it every round",
            m.set.make_in.display(),
            m.room >> 20
        ),
        Subject::Given(t) => format!("{} ({what} in it every round)", t.path.display()),
    });
    let users: Vec<String> = m.plan.users.iter().map(|u| u.to_string()).collect();
    println!(
        "  TPC-C-derived on {}: {} warehouse(s), users {}, ramp {} s, measured {} s per point",
        m.plan.engine.name(),
        m.plan.warehouses,
        users.join(","),
        m.plan.ramp_s,
        m.plan.time_s
    );
    println!(
        "{} load(s) and {} point(s)",
        m.set.subjects.len() * m.set.rounds as usize,
        m.set.subjects.len() * m.set.rounds as usize * m.plan.users.len()
    );
}
