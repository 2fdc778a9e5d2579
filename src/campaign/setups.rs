//! The setups of a campaign, whatever runs on them (`device` jobs, `kv`
//! plans, `oltp`, `run`'s steps): the configurations iolab builds
//! (`--make`, `testbed::media`), the targets of the user's own
//! (`--target`, parsed and labelled by `given`), where the configurations
//! are built (`--make-in`), the rounds and the baseline. Each workload
//! adds the rules of what it runs (which target kinds it takes, how a
//! target is prepared) and keeps the same meaning and refusals for these
//! flags.

use std::path::{Path, PathBuf};

use super::given::{self as media_targets, GivenTarget};
use super::pass::round_order;
use crate::dut::Target;
use crate::error::usage;
use crate::plan::units::Size;
use crate::results::sections::media::{
    DirectoryTarget, MediaConfig, MediaRecord, MediaTarget, PreparedTarget,
};
use crate::testbed::media::{MediaKind, Medium, MEDIA_NAMES};

/// One target of a media run.
#[derive(Debug, Clone)]
pub enum Subject {
    /// A configuration iolab builds (`--make`).
    Made(MediaKind),
    /// A `--target` of the user's own.
    Given(GivenTarget),
}

impl Subject {
    pub fn label(&self) -> String {
        match self {
            Subject::Made(k) => k.name(),
            Subject::Given(t) => t.label.clone(),
        }
    }
}

/// The media flags as given (`cli::media::MediaFlags` documents each; the
/// commands copy them): the configurations to build, where, the rounds and
/// the baseline.
#[derive(Debug, Clone)]
pub struct MediaFlags {
    pub make: Option<String>,
    pub make_in: Option<PathBuf>,
    pub rounds: u32,
    pub baseline: Option<String>,
    /// The run is on `--hosts`: the configurations are built on every host,
    /// `--make-in` (an absolute path, /var/tmp by default) is a directory
    /// there, and `raw` is not built.
    pub on_hosts: bool,
}

/// The checked targets of a media run.
#[derive(Debug, Clone)]
pub struct MediaSet {
    /// In run order: the given targets, then the configurations.
    pub subjects: Vec<Subject>,
    /// Where the configurations are built.
    pub make_in: PathBuf,
    pub baseline: String,
    pub rounds: u32,
}

/// `--make`, or several targets: a media run.
pub fn is_media_run(m: &MediaFlags, targets: usize) -> bool {
    m.make.is_some() || targets > 1
}

/// A database campaign loads a fresh database on every setup in every
/// round: `--db` (which names `one`, a directory or a file) and `--keep`
/// have no meaning there.
pub fn refuse_one_database(db: bool, one: &str, keep: bool) -> anyhow::Result<()> {
    if db {
        return Err(usage(
            "--db",
            format!("a media run loads a fresh database on every target in every round; --db names {one}"),
        ));
    }
    if keep {
        return Err(usage(
            "--keep",
            "a media run removes every target's database after its round",
        ));
    }
    Ok(())
}

/// `--size` is the room of each configuration `--make` builds: refused
/// without `--make`.
pub fn refuse_size_without_make(size: Option<&Size>, make: bool) -> anyhow::Result<()> {
    if size.is_some() && !make {
        return Err(usage(
            "--size",
            "applies to --make only (the room of each configuration)",
        ));
    }
    Ok(())
}

/// `--size` of a database media run: refused without `--make`, at least
/// `min` bytes (`why` says what needs them); `None` when not given.
pub fn room_flag(
    size: Option<&Size>,
    make: bool,
    min: u64,
    why: &str,
) -> anyhow::Result<Option<u64>> {
    refuse_size_without_make(size, make)?;
    let Some(s) = size else {
        return Ok(None);
    };
    let v = s.bytes();
    if v < min {
        return Err(usage("--size", why));
    }
    Ok(Some(v))
}

/// The flags of media runs mean nothing in a single-target run.
pub fn refuse_without_media(m: &MediaFlags) -> anyhow::Result<()> {
    if m.rounds != 1 || m.baseline.is_some() {
        let field = if m.rounds != 1 {
            "--rounds"
        } else {
            "--baseline"
        };
        return Err(usage(field, "applies to --make or several --target only"));
    }
    if m.make_in.is_some() {
        return Err(usage("--make-in", "applies to --make only"));
    }
    Ok(())
}

/// The `--target` field, for messages about the media flags.
fn media_field(m: &MediaFlags) -> &'static str {
    if m.make.is_some() {
        "--make"
    } else {
        "--target"
    }
}

/// `--make LIST`, parsed.
fn made_kinds(m: &MediaFlags) -> anyhow::Result<Vec<MediaKind>> {
    let Some(list) = m.make.as_deref() else {
        return Ok(Vec::new());
    };
    let mut kinds = Vec::new();
    for name in list.split(',').map(str::trim) {
        let k = MediaKind::parse(name)
            .ok_or_else(|| usage("--make", format!("'{name}' is not one of {MEDIA_NAMES}")))?;
        if kinds.contains(&k) {
            return Err(usage("--make", format!("{name} is named twice")));
        }
        kinds.push(k);
    }
    Ok(kinds)
}

/// Where the configurations are built, and which `--target`s are targets
/// of their own. One `--target` with `--make` is where they are built (as
/// before `--make-in` existed); several are ambiguous without `--make-in`.
fn split_targets(m: &MediaFlags, targets: &[PathBuf]) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    if m.make.is_none() {
        if m.make_in.is_some() {
            return Err(usage("--make-in", "applies to --make only"));
        }
        return Ok((PathBuf::new(), targets.to_vec()));
    }
    if m.on_hosts {
        return on_hosts_make_in(m, targets);
    }
    let (dir, field, own) = match (&m.make_in, targets) {
        (Some(d), ts) => (d.clone(), "--make-in", ts.to_vec()),
        (None, []) => (PathBuf::from("."), "--target", Vec::new()),
        (None, [t]) if !t.to_string_lossy().contains('=') => (t.clone(), "--target", Vec::new()),
        (None, _) => {
            return Err(usage(
                "--make-in",
                "with --make, a labelled or a second --target is a target of its own: say where the configurations are built with --make-in DIR",
            ))
        }
    };
    if !dir.is_dir() {
        return Err(usage(
            field,
            format!(
                "with --make, {field} is the directory the configurations are built in; {} is not one",
                dir.display()
            ),
        ));
    }
    Ok((dir, own))
}

/// Where the hosts build the configurations: `--make-in`, an absolute
/// path on every host (/var/tmp by default; not checked here, each host
/// checks its own); every target given is one of its own.
fn on_hosts_make_in(
    m: &MediaFlags,
    targets: &[PathBuf],
) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    let dir = m
        .make_in
        .clone()
        .unwrap_or_else(|| PathBuf::from("/var/tmp"));
    if !dir.is_absolute() {
        return Err(usage(
            "--make-in",
            format!(
                "with --hosts, the directory on every host the configurations are built in, given as an absolute path (not {})",
                dir.display()
            ),
        ));
    }
    if made_kinds(m)?.contains(&MediaKind::Raw) {
        return Err(usage(
            "--make",
            "raw is not built on hosts (its jobs run on the bare loop device, not in a directory)",
        ));
    }
    Ok((dir, targets.to_vec()))
}

impl MediaSet {
    /// What every host builds (`--make` on hosts): each configuration by
    /// its label, in `make_in`, with room for `room` bytes.
    pub fn make_requests(&self, room: u64) -> Vec<crate::fleet::proto::MakeRequest> {
        self.made()
            .map(|k| crate::fleet::proto::MakeRequest {
                label: k.name(),
                kind: k.name(),
                make_in: self.make_in.display().to_string(),
                room,
            })
            .collect()
    }

    /// Parse the media flags and the targets given, label every target,
    /// check the rounds and the baseline. Nothing is created or checked
    /// on the machine yet (`check_made`, and each verb's target rules).
    pub fn parse(m: &MediaFlags, targets: &[PathBuf]) -> anyhow::Result<MediaSet> {
        let kinds = made_kinds(m)?;
        if !(1..=100).contains(&m.rounds) {
            return Err(usage("--rounds", "must be 1 to 100"));
        }
        let (make_in, own) = split_targets(m, targets)?;
        let reserved: Vec<String> = kinds.iter().map(|k| k.name()).collect();
        let given = media_targets::parse(&own, &reserved)?;
        let mut subjects: Vec<Subject> = given.into_iter().map(Subject::Given).collect();
        subjects.extend(kinds.into_iter().map(Subject::Made));
        if subjects.is_empty() {
            return Err(usage(media_field(m), "no target to run on"));
        }
        let labels: Vec<String> = subjects.iter().map(Subject::label).collect();
        let baseline = m.baseline.clone().unwrap_or_else(|| labels[0].clone());
        if !labels.contains(&baseline) {
            return Err(usage(
                "--baseline",
                format!(
                    "'{baseline}' is not one of the targets: {}",
                    labels.join(", ")
                ),
            ));
        }
        Ok(MediaSet {
            subjects,
            make_in,
            baseline,
            rounds: m.rounds,
        })
    }

    pub fn labels(&self) -> Vec<String> {
        self.subjects.iter().map(Subject::label).collect()
    }

    /// The given targets, with their index among the subjects.
    pub fn given(&self) -> impl Iterator<Item = (usize, &GivenTarget)> {
        self.subjects
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Subject::Given(t) => Some((i, t)),
                Subject::Made(_) => None,
            })
    }

    pub fn made(&self) -> impl Iterator<Item = MediaKind> + '_ {
        self.subjects.iter().filter_map(|s| match s {
            Subject::Made(k) => Some(*k),
            Subject::Given(_) => None,
        })
    }

    /// Every configuration can be built here (root, tools, the kernel).
    pub fn check_made(&self) -> anyhow::Result<()> {
        for k in self.made() {
            if let Some(why) = k.unavailable() {
                return Err(usage(
                    "--make",
                    format!("{} cannot be built here: {why}", k.name()),
                ));
            }
        }
        Ok(())
    }

    /// Build every configuration with room for `room` bytes of data, in
    /// `--make` order (one `Medium` per `Subject::Made`).
    pub fn build(&self, room: u64, quiet: bool) -> anyhow::Result<Vec<Medium>> {
        let kinds: Vec<MediaKind> = self.made().collect();
        if !quiet && !kinds.is_empty() {
            let names: Vec<String> = kinds.iter().map(|k| k.name()).collect();
            eprintln!("iolab: building {} ...", names.join(", "));
        }
        kinds
            .iter()
            .map(|&k| Medium::build(k, &self.make_in, room))
            .collect()
    }

    /// What `--dry-run` prints first: the rounds, every target (`what`
    /// says what runs on it) and the order of every round.
    pub fn print(&self, verb: &str, what: impl Fn(&Subject) -> String) {
        let labels = self.labels();
        println!(
            "iolab {verb}: {} round(s) over {} target(s), baseline {}",
            self.rounds,
            labels.len(),
            self.baseline
        );
        let width = labels.iter().map(|l| l.len()).max().unwrap_or(0);
        for s in &self.subjects {
            println!("  {:<width$}  {}", s.label(), what(s));
        }
        for line in self.order_lines() {
            println!("  {line}");
        }
    }

    /// The rounds and the order of each, as `dry-run` prints them.
    pub fn order_lines(&self) -> Vec<String> {
        let labels = self.labels();
        (0..self.rounds)
            .map(|r| {
                let order: Vec<&str> = round_order(labels.len(), r)
                    .into_iter()
                    .map(|i| labels[i].as_str())
                    .collect();
                format!("round {}: {}", r + 1, order.join(" "))
            })
            .collect()
    }

    /// Each subject's directory, in subject order: a given target's path,
    /// or a configuration's mount (`media`: one per `Subject::Made`).
    pub fn directories(&self, media: &[Medium]) -> Vec<PathBuf> {
        let mut made = media.iter();
        self.subjects
            .iter()
            .map(|s| match s {
                Subject::Given(t) => t.path.clone(),
                Subject::Made(_) => made
                    .next()
                    .expect("one medium per configuration")
                    .target
                    .clone(),
            })
            .collect()
    }

    /// Each subject's directory as a run on hosts names it: a given one's
    /// path, a configuration's `make_in/NAME` (each host's own file system
    /// is where its agent built it: `agent_media`).
    pub fn host_directories(&self) -> Vec<PathBuf> {
        self.subjects
            .iter()
            .map(|s| match s {
                Subject::Given(t) => t.path.clone(),
                Subject::Made(k) => self.make_in.join(k.name()),
            })
            .collect()
    }

    /// `extra.media` of a run on directories (`directories`): each
    /// target's label, path, file system and its mount options (none for
    /// `raw`'s block device, a kv run's LMDB data file; none but the label
    /// and path unless the directories are `here`, on this machine).
    pub fn record_directories(
        &self,
        dirs: &[PathBuf],
        media: &[Medium],
        here: bool,
    ) -> MediaRecord {
        let targets = self
            .subjects
            .iter()
            .zip(dirs)
            .map(|(s, d)| {
                let raw = matches!(s, Subject::Made(MediaKind::Raw));
                let fs = (!raw && here)
                    .then(|| crate::measure::sysfs::fs_of_path(d))
                    .flatten();
                MediaTarget::Directory(DirectoryTarget {
                    label: s.label(),
                    path: d.display().to_string(),
                    kind: if raw { "block_device" } else { "directory" }.into(),
                    filesystem: fs.as_ref().map(|f| f.fstype.clone()),
                    mount_options: fs.as_ref().map(|f| f.options.clone()),
                    made: matches!(s, Subject::Made(_)),
                })
            })
            .collect();
        self.record(targets, media)
    }

    /// `extra.media` of a run on prepared targets (one per subject, in
    /// subject order): each target's label, path, kind and size.
    pub fn record_targets(&self, targets: &[Target], media: &[Medium]) -> MediaRecord {
        let described = self.subjects.iter().zip(targets).map(|(s, t)| {
            MediaTarget::Prepared(PreparedTarget {
                label: s.label(),
                path: t.path.display().to_string(),
                kind: t.kind.key(),
                size_bytes: t.size,
                made: matches!(s, Subject::Made(_)),
            })
        });
        self.record(described.collect(), media)
    }

    /// `extra.media` before the run: the baseline, the rounds, every
    /// target (each verb describes its own: `targets`) and how each
    /// configuration was made.
    pub fn record(&self, targets: Vec<MediaTarget>, media: &[Medium]) -> MediaRecord {
        MediaRecord {
            baseline: Some(self.baseline.clone()),
            rounds: Some(self.rounds),
            targets: Some(targets),
            configurations: Some(
                media
                    .iter()
                    .map(|m| MediaConfig {
                        name: m.kind.name().to_string(),
                        made: m.describe.clone(),
                    })
                    .collect(),
            ),
            ..MediaRecord::default()
        }
    }
}

/// A directory a database (or a scratch file) goes into must exist, be a
/// directory and be writable (not on a read-only file system): checked
/// before anything runs, the error naming `--target` and the value.
pub fn check_writable_dir(t: &GivenTarget, what: &str) -> anyhow::Result<()> {
    if t.remote().is_some() {
        return Err(media_targets::name_target_text(
            &t.value,
            &format!("is a remote export; {what} needs a directory"),
        ));
    }
    let meta = std::fs::metadata(&t.path).map_err(|e| {
        media_targets::name_target_text(&t.value, &format!("{e} (give a directory)"))
    })?;
    if !meta.is_dir() {
        return Err(media_targets::name_target_text(
            &t.value,
            &format!("is not a directory; {what} needs one (device takes files and block devices)"),
        ));
    }
    if let Err(e) = writable(&t.path) {
        return Err(media_targets::name_target_text(
            &t.value,
            &format!("is not writable: {e}"),
        ));
    }
    Ok(())
}

/// access(2) with W_OK: also refuses a directory on a read-only mount
/// (EROFS), which permission bits alone do not show to root.
fn writable(p: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid NUL-terminated path; access only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media(make: Option<&str>, rounds: u32, baseline: Option<&str>) -> MediaFlags {
        MediaFlags {
            make: make.map(str::to_string),
            make_in: None,
            rounds,
            baseline: baseline.map(str::to_string),
            on_hosts: false,
        }
    }

    #[test]
    fn on_hosts_the_configurations_are_built_in_a_directory_of_theirs() {
        let on_hosts = |make: &str, make_in: Option<&str>| MediaFlags {
            on_hosts: true,
            make_in: make_in.map(PathBuf::from),
            ..media(Some(make), 1, None)
        };
        // Not a directory here: each host checks its own.
        let set = MediaSet::parse(&on_hosts("tmpfs", Some("/no/such/dir/here")), &[]).unwrap();
        assert_eq!(set.make_in, PathBuf::from("/no/such/dir/here"));
        let set = MediaSet::parse(&on_hosts("tmpfs,ext4", None), &[]).unwrap();
        assert_eq!(set.make_in, PathBuf::from("/var/tmp"));
        let reqs = set.make_requests(1 << 30);
        assert_eq!(reqs.len(), 2);
        assert_eq!((reqs[1].label.as_str(), reqs[1].room), ("ext4", 1 << 30));
        assert_eq!(set.host_directories()[0], PathBuf::from("/var/tmp/tmpfs"));
        for (make, make_in, flag) in [("raw", None, "--make"), ("tmpfs", Some("rel"), "--make-in")]
        {
            let e = MediaSet::parse(&on_hosts(make, make_in), &[]).unwrap_err();
            assert!(format!("{e:#}").contains(flag), "{make}: {e:#}");
        }
    }

    #[test]
    fn targets_then_configurations_and_the_baseline_checked() {
        let d = tempfile::tempdir().unwrap();
        let t = |s: &str| PathBuf::from(s);
        let mut m = media(Some("tmpfs,ext4"), 2, Some("ext4"));
        m.make_in = Some(d.path().to_path_buf());
        let set = MediaSet::parse(&m, &[t("a=/x/a"), t("/x/b")]).unwrap();
        assert_eq!(set.labels(), ["a", "b", "tmpfs", "ext4"]);
        assert_eq!(set.baseline, "ext4");
        assert_eq!(set.order_lines()[1], "round 2: ext4 tmpfs b a");
        let field = |m: &MediaFlags, ts: &[PathBuf]| {
            let e = MediaSet::parse(m, ts).unwrap_err();
            e.downcast::<crate::error::UsageError>().unwrap().field
        };
        assert_eq!(
            field(&media(None, 0, None), &[t("/a"), t("/b")]),
            "--rounds"
        );
        assert_eq!(
            field(&media(None, 1, Some("c")), &[t("/a"), t("/b")]),
            "--baseline"
        );
        assert_eq!(field(&media(Some("zfs"), 1, None), &[]), "--make");
        assert_eq!(
            field(&media(Some("ext4"), 1, None), &[t("/a"), t("/b")]),
            "--make-in"
        );
    }
}
