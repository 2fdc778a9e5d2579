//! Host groups (`--hosts @FILE.toml`): named sets of hosts, each running
//! the command line's job with its own overrides (rw, bs, iodepth,
//! numjobs, rate, size, target), read from `[[group]]` tables; a plain
//! host list is one unnamed group without overrides. Errors are exit 2
//! naming the file, the group and the key.

use serde::{Deserialize, Deserializer, Serialize};

use super::hosts::{parse_host, parse_host_list, HostSpec};
use super::proto::JobTarget;
use crate::error::usage;
use crate::plan::engines::{engine_for_transport, EngineKind, Opens};
use crate::plan::job::{JobSpec, OpenLoop, Pattern};
use crate::plan::units::{BsAxis, Count, Size};

/// What a group changes in the command line's job and target; what it
/// leaves out is as given there. Values are the project's typed values,
/// written as text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupJob {
    #[serde(
        default,
        deserialize_with = "pattern_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub rw: Option<Pattern>,
    /// One block size or one weighted split (`4k`, `4k:70,64k:30`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bs: Option<BsAxis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<Count>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numjobs: Option<Count>,
    /// The group's whole open-loop rate (IOPS), shared evenly over its hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Count>,
    /// The scratch file's size on each host of the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Size>,
    /// A directory on each host of the group (absolute), or a remote export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

fn pattern_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Pattern>, D::Error> {
    let text = String::deserialize(d)?;
    crate::plan::sweep::parse_rw_axis("", &text)
        .ok()
        .filter(|p| p.len() == 1)
        .map(|p| Some(p[0]))
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "'{text}' is not one pattern (read, write, randread, randwrite, readwrite, randrw)"
            ))
        })
}

/// The group key that sets the job's `flag`, if one does.
fn group_key(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "--rw" => "rw",
        "--bs" => "bs",
        "--qd" => "iodepth",
        "--jobs" => "numjobs",
        "--rate" => "rate",
        _ => return None,
    })
}

/// The keys a `[[group]]` table may hold.
pub const GROUP_KEYS: [&str; 9] = [
    "name", "hosts", "rw", "bs", "iodepth", "numjobs", "rate", "size", "target",
];

/// Hosts that run one job: a group of the file, or every host of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct HostGroup {
    /// `None`: the one group of a plain list.
    pub name: Option<String>,
    pub hosts: Vec<HostSpec>,
    pub job: GroupJob,
}

/// The hosts of a run, in groups (a plain list: one unnamed group).
#[derive(Debug, Clone, PartialEq)]
pub struct HostGroups {
    pub groups: Vec<HostGroup>,
    /// The groups file, for errors (`None`: a plain list).
    pub file: Option<String>,
}

impl HostGroups {
    /// Every host, group after group.
    pub fn hosts(&self) -> Vec<HostSpec> {
        self.groups.iter().flat_map(|g| g.hosts.clone()).collect()
    }

    /// A plain list, or a file of one group that changes nothing: every
    /// host runs the command line's job, and no group row is kept.
    pub fn is_plain(&self) -> bool {
        self.groups.len() == 1 && self.groups[0].job == GroupJob::default()
    }

    /// The groups for the results' provenance: each one's name, hosts and
    /// overrides (as text).
    pub fn record(&self) -> serde_json::Value {
        self.groups
            .iter()
            .map(|g| {
                serde_json::json!({
                    "name": g.name,
                    "hosts": g.hosts.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "job": g.job,
                })
            })
            .collect()
    }

    /// One line per group for a dry run: its name, hosts and overrides.
    pub fn summary(&self) -> Vec<String> {
        self.groups
            .iter()
            .map(|g| {
                let hosts: Vec<String> = g.hosts.iter().map(ToString::to_string).collect();
                let changes = match serde_json::to_value(&g.job) {
                    Ok(serde_json::Value::Object(m)) => m
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(" "),
                    _ => String::new(),
                };
                format!(
                    "group {}: {} {}",
                    g.name.as_deref().unwrap_or("-"),
                    hosts.join(","),
                    if changes.is_empty() {
                        "(the command line's job)".to_string()
                    } else {
                        changes
                    }
                )
            })
            .collect()
    }

    /// Every job of the run as each group changes it is valid: an error
    /// names the file, the group and its key (`iodepth` for the job's
    /// `--qd` ...), or the flag the group left as given.
    pub fn check_jobs<'a>(
        &self,
        jobs: impl Iterator<Item = &'a JobSpec> + Clone,
    ) -> anyhow::Result<()> {
        if self.is_plain() {
            return Ok(());
        }
        let all = self.hosts().len();
        for g in &self.groups {
            let place = format!(
                "{}: group {}",
                self.file.as_deref().unwrap_or("--hosts"),
                g.name.as_deref().unwrap_or("-")
            );
            for j in jobs.clone() {
                if let Err(e) = g.job.apply(j, g.hosts.len(), all).validate() {
                    return Err(match e.downcast::<crate::error::UsageError>() {
                        Ok(u) => {
                            let key = group_key(&u.field).unwrap_or(&u.field);
                            usage(format!("{place}.{key}"), u.message)
                        }
                        Err(other) => other,
                    });
                }
            }
        }
        Ok(())
    }

    /// Each host's group, by the host's name (as `HostSpec` displays it):
    /// the index of its group in `groups`.
    pub fn index(&self) -> std::collections::HashMap<String, usize> {
        self.groups
            .iter()
            .enumerate()
            .flat_map(|(i, g)| g.hosts.iter().map(move |h| (h.to_string(), i)))
            .collect()
    }

    /// The group of the host named `host` (as `HostSpec` displays it).
    pub fn group_of(&self, host: &str) -> Option<&HostGroup> {
        self.groups
            .iter()
            .find(|g| g.hosts.iter().any(|h| h.to_string() == host))
    }
}

impl GroupJob {
    /// The job a host of a group of `group_hosts` runs, out of
    /// `all_hosts`: the overrides applied; the group's rate shared over
    /// its hosts, else the job's rate over every host (`host_share`).
    pub fn apply(&self, job: &JobSpec, group_hosts: usize, all_hosts: usize) -> JobSpec {
        let mut j = super::placement::host_share(job, all_hosts);
        if let Some(p) = self.rw {
            j.pattern = p;
        }
        if let Some(s) = self.bs.as_ref().and_then(|b| b.splits().first()) {
            j.bs = s.clone();
        }
        if let Some(q) = &self.iodepth {
            j.qd = q.get().min(u32::MAX as u64) as u32;
        }
        if let Some(n) = &self.numjobs {
            j.jobs = n.get().min(u32::MAX as u64) as u32;
        }
        if let Some(t) = &self.target {
            j.engine = engine_for_target(j.engine, t);
        }
        if let Some(r) = &self.rate {
            j.open_loop = Some(OpenLoop {
                rate_iops: r.get() as f64 / group_hosts.max(1) as f64,
                arrival: job.open_loop.map(|o| o.arrival).unwrap_or_default(),
            });
        }
        j
    }

    /// The target a host of the group uses: its directory or export (when
    /// the job opens one at all) and scratch size, else `base`'s.
    pub fn target(&self, base: &JobTarget) -> JobTarget {
        JobTarget {
            dir: base
                .dir
                .as_ref()
                .map(|d| self.target.clone().unwrap_or(d.clone())),
            size: self.size.as_ref().map(Size::bytes).or(base.size),
            overwrite: base.overwrite,
        }
    }
}

/// The engine a job of `engine` uses on a group's `target`: the engine
/// of the export's transport on an export (as `device --target URL`
/// chooses it), a local engine on a directory when the command line's
/// target was an export; as given otherwise (and for engines that open
/// nothing).
fn engine_for_target(engine: EngineKind, target: &str) -> EngineKind {
    let export = crate::plan::endpoint::endpoint_of(std::path::Path::new(target))
        .ok()
        .flatten();
    match (engine.caps().opens, export) {
        (Opens::Nothing, _) => engine,
        (Opens::Remote(t), Some(e)) if t == e.transport => engine,
        (_, Some(e)) => engine_for_transport(e.transport).unwrap_or(engine),
        (Opens::Remote(_), None) => EngineKind::default_local(),
        (Opens::LocalFd, None) => engine,
    }
}

/// Parse `--hosts`: `@FILE.toml` is a groups file; a comma list or any
/// other `@FILE` is one unnamed group.
pub fn parse_host_groups(list: &str, field: &str) -> anyhow::Result<HostGroups> {
    match list.strip_prefix('@').filter(|f| f.ends_with(".toml")) {
        Some(file) => {
            let text = crate::input::read_text(std::path::Path::new(file), field, Some(1 << 20))?;
            parse_groups_text(file, &text)
        }
        None => Ok(HostGroups {
            groups: vec![HostGroup {
                name: None,
                hosts: parse_host_list(list, field)?,
                job: GroupJob::default(),
            }],
            file: None,
        }),
    }
}

/// Parse a groups file's text; `file` names it in errors.
pub fn parse_groups_text(file: &str, text: &str) -> anyhow::Result<HostGroups> {
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| usage(file, format!("not valid TOML: {e}")))?;
    if let Some(k) = doc.keys().find(|k| *k != "group") {
        return Err(usage(
            format!("{file}: {k}"),
            "unknown key (a groups file holds [[group]] tables)",
        ));
    }
    let Some(toml::Value::Array(entries)) = doc.get("group") else {
        return Err(usage(file, "no [[group]] tables"));
    };
    let mut groups: Vec<HostGroup> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let toml::Value::Table(t) = e else {
            return Err(usage(file, "group entries must be tables ([[group]])"));
        };
        let g = parse_group(file, i, t)?;
        check_against(file, &groups, &g)?;
        groups.push(g);
    }
    Ok(HostGroups {
        groups,
        file: Some(file.to_string()),
    })
}

/// A group must not share its name or a host with an earlier one.
fn check_against(file: &str, earlier: &[HostGroup], g: &HostGroup) -> anyhow::Result<()> {
    let name = g.name.as_deref().unwrap_or("");
    if earlier.iter().any(|o| o.name == g.name) {
        return Err(usage(
            format!("{file}: group {name}"),
            format!("two groups are named {name}: name each group once"),
        ));
    }
    for o in earlier {
        if let Some(h) = g.hosts.iter().find(|h| o.hosts.contains(h)) {
            return Err(usage(
                format!("{file}: group {name}.hosts"),
                format!(
                    "{h} is in group {} and in group {name}: a host runs one group's job",
                    o.name.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    Ok(())
}

/// A name a row can carry: letters, digits, `.`, `_` and `-`.
fn plausible_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// One `[[group]]` table (the `i`-th).
fn parse_group(file: &str, i: usize, t: &toml::Table) -> anyhow::Result<HostGroup> {
    let name = match t.get("name") {
        Some(toml::Value::String(n)) if plausible_name(n) => n.clone(),
        Some(_) => {
            return Err(usage(
                format!("{file}: group[{i}].name"),
                "a group's name is letters, digits, '.', '_' or '-' (at most 64)",
            ))
        }
        None => {
            return Err(usage(
                format!("{file}: group[{i}]"),
                "a group needs a name (name = \"readers\")",
            ))
        }
    };
    let field = |k: &str| format!("{file}: group {name}.{k}");
    if let Some(k) = t.keys().find(|k| !GROUP_KEYS.contains(&k.as_str())) {
        return Err(usage(
            field(k),
            format!("unknown key (known: {})", GROUP_KEYS.join(", ")),
        ));
    }
    let hosts = group_hosts(&field("hosts"), t.get("hosts"))?;
    let mut overrides = toml::Table::new();
    for (k, v) in t
        .iter()
        .filter(|(k, _)| !["name", "hosts"].contains(&k.as_str()))
    {
        let text = crate::plan::planfile::value_text(&field(k), v)?;
        let one = toml::Table::from_iter([(k.clone(), toml::Value::String(text))]);
        one.clone()
            .try_into::<GroupJob>()
            .map_err(|e| usage(field(k), e.message().to_string()))?;
        overrides.extend(one);
    }
    let job: GroupJob = overrides
        .try_into()
        .map_err(|e: toml::de::Error| usage(field("?"), e.message().to_string()))?;
    check_job(&job, &field)?;
    Ok(HostGroup {
        name: Some(name),
        hosts,
        job,
    })
}

/// A group's `hosts`: a non-empty list of `[user@]host[:port]`, each once.
fn group_hosts(field: &str, v: Option<&toml::Value>) -> anyhow::Result<Vec<HostSpec>> {
    let Some(toml::Value::Array(list)) = v else {
        return Err(usage(
            field,
            "a group needs its hosts: hosts = [\"h0\", \"root@10.0.0.2:22\"]",
        ));
    };
    if list.is_empty() {
        return Err(usage(field, "an empty group: name at least one host"));
    }
    let mut hosts: Vec<HostSpec> = Vec::new();
    for e in list {
        let toml::Value::String(s) = e else {
            return Err(usage(field, "hosts are strings: \"[user@]host[:port]\""));
        };
        let h = parse_host(s, field)?;
        if hosts.contains(&h) {
            return Err(usage(field, format!("{h} is named twice")));
        }
        hosts.push(h);
    }
    Ok(hosts)
}

/// What the typed values cannot say alone: one block size, depths and
/// rates above 0, a target a host can reach.
fn check_job(job: &GroupJob, field: &dyn Fn(&str) -> String) -> anyhow::Result<()> {
    if job.bs.as_ref().is_some_and(|b| b.splits().len() != 1) {
        return Err(usage(
            field("bs"),
            "one block size or one split (4k, 4k:70,64k:30), not a sweep",
        ));
    }
    let zero = [
        ("iodepth", &job.iodepth),
        ("numjobs", &job.numjobs),
        ("rate", &job.rate),
    ];
    if let Some((k, _)) = zero
        .iter()
        .find(|(_, c)| c.as_ref().is_some_and(|c| c.get() == 0))
    {
        return Err(usage(field(k), "must be greater than 0"));
    }
    if job.size.as_ref().is_some_and(|s| s.bytes() == 0) {
        return Err(usage(field("size"), "size must be greater than 0"));
    }
    if let Some(t) = &job.target {
        let remote = crate::plan::endpoint::endpoint_of(std::path::Path::new(t))
            .map_err(|e| crate::error::name_place(&field("target"), e))?
            .is_some();
        if !remote && !t.starts_with('/') {
            return Err(usage(
                field("target"),
                format!("'{t}': a directory on every host of the group, given as an absolute path, or a remote export"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let e = parse_groups_text("g.toml", text).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
        format!("{e:#}")
    }

    const TWO: &str = r#"
[[group]]
name = "readers"
hosts = ["h0", "root@10.0.0.2:22"]
rw = "randread"
bs = "4k"
iodepth = 32
rate = "10k"
target = "/data"
size = "1g"
[[group]]
name = "writers"
hosts = ["h2"]
rw = "randwrite"
numjobs = 2
"#;

    #[test]
    fn a_groups_file_parses_into_typed_overrides() {
        let g = parse_groups_text("g.toml", TWO).unwrap();
        assert_eq!(g.groups.len(), 2);
        assert!(!g.is_plain());
        let r = &g.groups[0];
        assert_eq!(r.name.as_deref(), Some("readers"));
        assert_eq!(r.hosts.len(), 2);
        assert_eq!(r.hosts[1].to_string(), "root@10.0.0.2:22");
        assert_eq!(r.job.rw, Some(Pattern::RandRead));
        assert_eq!(r.job.iodepth.as_ref().unwrap().get(), 32);
        assert_eq!(r.job.rate.as_ref().unwrap().get(), 10_000);
        assert_eq!(r.job.size.as_ref().unwrap().bytes(), 1 << 30);
        assert_eq!(g.groups[1].job.numjobs.as_ref().unwrap().get(), 2);
        assert_eq!(g.hosts().len(), 3);
        assert_eq!(g.group_of("h2").unwrap().name.as_deref(), Some("writers"));
        assert!(g.group_of("h9").is_none());
        assert_eq!(g.index()["root@10.0.0.2:22"], 0);
        assert_eq!(g.index()["h2"], 1);
        // Serialized as text, read back the same.
        let json = serde_json::to_string(&r.job).unwrap();
        assert!(json.contains("\"iodepth\":\"32\""), "{json}");
        assert_eq!(serde_json::from_str::<GroupJob>(&json).unwrap(), r.job);
    }

    #[test]
    fn the_overrides_make_each_group_s_job_and_target() {
        let g = parse_groups_text("g.toml", TWO).unwrap();
        let base = JobSpec {
            qd: 4,
            open_loop: Some(OpenLoop {
                rate_iops: 3000.0,
                arrival: crate::plan::job::Arrival::Poisson,
            }),
            ..JobSpec::default()
        };
        let readers = g.groups[0].job.apply(&base, 2, 3);
        assert_eq!((readers.pattern, readers.qd), (Pattern::RandRead, 32));
        let ol = readers.open_loop.unwrap();
        assert_eq!(ol.rate_iops, 5000.0);
        assert_eq!(ol.arrival, crate::plan::job::Arrival::Poisson);
        let writers = g.groups[1].job.apply(&base, 1, 3);
        assert_eq!(
            (writers.pattern, writers.qd, writers.jobs),
            (Pattern::RandWrite, 4, 2)
        );
        // No rate of its own: the command line's, shared over every host.
        assert_eq!(writers.open_loop.unwrap().rate_iops, 1000.0);
        let base_t = JobTarget {
            dir: Some("/var/tmp".into()),
            size: Some(1 << 20),
            overwrite: false,
        };
        let t = g.groups[0].job.target(&base_t);
        assert_eq!((t.dir.as_deref(), t.size), (Some("/data"), Some(1 << 30)));
        assert_eq!(g.groups[1].job.target(&base_t), base_t);
        // A group's export is reached by its transport's engine, a
        // group's directory (after an export on the command line) by a
        // local one; an engine that opens nothing stays.
        assert_eq!(
            engine_for_target(EngineKind::Psync, "nbd://10.0.0.9:10809/"),
            EngineKind::Nbd
        );
        assert_eq!(
            engine_for_target(EngineKind::Nbd, "/data"),
            EngineKind::default_local()
        );
        assert_eq!(
            engine_for_target(EngineKind::Psync, "/data"),
            EngineKind::Psync
        );
        assert_eq!(
            engine_for_target(EngineKind::Null, "nbd://h/"),
            EngineKind::Null
        );
        let none = JobTarget {
            dir: None,
            ..base_t
        };
        assert_eq!(g.groups[0].job.target(&none).dir, None);
    }

    #[test]
    fn bad_groups_files_are_exit_2_naming_the_file_the_group_and_the_key() {
        let one =
            |extra: &str| format!("[[group]]\nname = \"readers\"\nhosts = [\"h0\"]\n{extra}\n");
        for (extra, want) in [
            ("colour = \"red\"", "g.toml: group readers.colour"),
            ("rw = \"sideways\"", "g.toml: group readers.rw"),
            ("rw = \"randread,randwrite\"", "g.toml: group readers.rw"),
            ("bs = \"4x\"", "g.toml: group readers.bs"),
            ("bs = \"4k,8k\"", "g.toml: group readers.bs"),
            ("iodepth = \"lots\"", "g.toml: group readers.iodepth"),
            ("iodepth = 0", "g.toml: group readers.iodepth"),
            ("rate = \"fast\"", "g.toml: group readers.rate"),
            ("size = \"1q\"", "g.toml: group readers.size"),
            ("target = \"data\"", "g.toml: group readers.target"),
        ] {
            let e = err(&one(extra));
            assert!(e.contains(want), "{extra}: {e}");
        }
        let e = err("[[group]]\nname = \"r\"\nhosts = []\n");
        assert!(e.contains("group r.hosts") && e.contains("empty"), "{e}");
        let e = err("[[group]]\nname = \"r\"\nhosts = [\"-oProxy=x\"]\n");
        assert!(e.contains("group r.hosts"), "{e}");
        let e = err("[[group]]\nhosts = [\"h0\"]\n");
        assert!(e.contains("g.toml: group[0]") && e.contains("name"), "{e}");
        let e = err("[[group]]\nname = \"a\"\nhosts = [\"h0\", \"h1\"]\n[[group]]\nname = \"b\"\nhosts = [\"h1\"]\n");
        assert!(
            e.contains("group b.hosts") && e.contains("group a") && e.contains("h1"),
            "{e}"
        );
        let e = err("[[group]]\nname = \"a\"\nhosts = [\"h0\"]\n[[group]]\nname = \"a\"\nhosts = [\"h1\"]\n");
        assert!(
            e.contains("g.toml: group a") && e.contains("two groups"),
            "{e}"
        );
        let e = err("hosts = [\"h0\"]\n");
        assert!(e.contains("g.toml: hosts"), "{e}");
        assert!(err("[[group]\n").contains("not valid TOML"));
    }

    #[test]
    fn a_group_s_job_is_checked_as_the_command_line_s_naming_its_key() {
        let g =
            parse_groups_text("g.toml", &TWO.replace("iodepth = 32", "iodepth = 100000")).unwrap();
        let job = JobSpec::default();
        let e = g.check_jobs([&job].into_iter()).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(
            format!("{e:#}").contains("g.toml: group readers.iodepth"),
            "{e:#}"
        );
        assert!(parse_groups_text("g.toml", TWO)
            .unwrap()
            .check_jobs([&job].into_iter())
            .is_ok());
    }

    #[test]
    fn a_plain_list_is_one_unnamed_group() {
        let g = parse_host_groups("a,b", "--hosts").unwrap();
        assert!(g.is_plain());
        assert_eq!(g.groups[0].name, None);
        assert_eq!(g.hosts().len(), 2);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("hosts.txt");
        std::fs::write(&f, "a\nb\n").unwrap();
        assert!(parse_host_groups(&format!("@{}", f.display()), "--hosts")
            .unwrap()
            .is_plain());
        let t = dir.path().join("g.toml");
        std::fs::write(&t, TWO).unwrap();
        let g = parse_host_groups(&format!("@{}", t.display()), "--hosts").unwrap();
        assert_eq!(g.groups.len(), 2);
    }
}
