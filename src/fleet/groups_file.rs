//! The groups file of `--hosts @FILE.toml` (`fleet::groups`): its
//! `[[group]]` tables read into host groups, each key parsed as the
//! project's typed value; unknown keys, an empty group, a host in two
//! groups and two groups of one name are exit 2 naming the file, the
//! group and the key. A comma list or another `@FILE` is one unnamed group
//! (`parse_hosts` takes only that, and a file that changes nothing, for
//! the verbs that run no groups).

use super::groups::{GroupJob, HostGroup, HostGroups};
use super::hosts::{parse_host, parse_host_list, HostSpec};
use crate::error::usage;

/// The keys a `[[group]]` table may hold.
pub const GROUP_KEYS: [&str; 9] = [
    "name", "hosts", "rw", "bs", "iodepth", "numjobs", "rate", "size", "target",
];

/// Parse a host list: `a,b,c` or `@FILE`. Duplicates and an empty list are
/// errors naming `field`. A groups file (`@FILE.toml`) of one group that
/// changes nothing is its hosts; host groups with their own jobs are
/// refused (the verbs that run them read `parse_host_groups`).
pub fn parse_hosts(list: &str, field: &str) -> anyhow::Result<Vec<HostSpec>> {
    let groups = parse_host_groups(list, field)?;
    if !groups.is_plain() {
        return Err(usage(
            field,
            format!(
                "host groups are for device runs yet: {} names {} group(s) or a group's own job; give one group without rw, bs, iodepth, numjobs, rate, size or target",
                list.trim_start_matches('@'),
                groups.groups.len()
            ),
        ));
    }
    Ok(groups.hosts())
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
pub(crate) mod tests {
    use super::*;
    use crate::plan::job::Pattern;

    fn err(text: &str) -> String {
        let e = parse_groups_text("g.toml", text).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
        format!("{e:#}")
    }

    /// Two groups with every override between them (also groups.rs's).
    pub(crate) const TWO: &str = r#"
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

    #[test]
    fn a_groups_file_is_its_hosts_only_when_it_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("g.toml");
        std::fs::write(&f, "[[group]]\nname = \"all\"\nhosts = [\"a\", \"b\"]\n").unwrap();
        let list = format!("@{}", f.display());
        assert_eq!(parse_hosts(&list, "--hosts").unwrap().len(), 2);
        assert_eq!(parse_hosts("a,b", "--hosts").unwrap().len(), 2);
        std::fs::write(
            &f,
            "[[group]]\nname = \"all\"\nhosts = [\"a\"]\nrw = \"read\"\n",
        )
        .unwrap();
        let e = parse_hosts(&list, "--hosts").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let e = format!("{e:#}");
        assert!(
            e.contains("--hosts") && e.contains("host groups are for device runs yet"),
            "{e}"
        );
    }
}
