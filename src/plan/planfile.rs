//! Plan files: TOML with `[defaults]` and named `[[experiment]]` tables whose
//! keys are `iolab device` flag names (`bs`, `qd`, `rate`, `steady-state` ...).
//! Values may be strings, numbers, booleans or arrays (joined into a list).
//! An experiment is its defaults overridden by its own keys; flags given on
//! the command line are the defaults of the defaults. An optional `[media]`
//! table holds the run-wide keys of a media comparison (`make`, `rounds`,
//! `baseline`); the targets are the machine's, so they stay on the command
//! line (docs/media.md).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::usage;
use crate::plan::options;

/// One named experiment: flag name -> value text.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSection {
    pub name: String,
    pub settings: BTreeMap<String, String>,
}

/// A parsed plan file.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanFile {
    pub description: Option<String>,
    pub experiments: Vec<PlanSection>,
    /// The `[media]` table: flag name -> value text.
    pub media: BTreeMap<String, String>,
    /// The `[[kv]]` tables, as written (`iolab kv --plan` reads them).
    pub kv: Vec<toml::Table>,
}

/// Keys of the `[media]` table (run-wide, not per experiment).
pub const MEDIA_KEYS: [&str; 3] = ["make", "rounds", "baseline"];

fn media_settings(file: &str, t: &toml::Table) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (k, v) in t {
        let key = k.replace('-', "_");
        let field = format!("{file}: media.{k}");
        if !MEDIA_KEYS.contains(&key.as_str()) {
            return Err(usage(
                field,
                format!(
                    "unknown key (known: {}; the targets are given with --target)",
                    MEDIA_KEYS.join(", ")
                ),
            ));
        }
        out.insert(key, value_text(&field, v)?);
    }
    Ok(out)
}

/// A TOML value as flag text (lists joined with commas).
pub(crate) fn value_text(field: &str, v: &toml::Value) -> anyhow::Result<String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Array(a) => a
            .iter()
            .map(|x| match x {
                toml::Value::Array(_) | toml::Value::Table(_) => {
                    Err(usage(field, "lists may hold only plain values"))
                }
                x => value_text(field, x),
            })
            .collect::<anyhow::Result<Vec<_>>>()?
            .join(","),
        _ => return Err(usage(field, "expected a string, number, boolean or list")),
    })
}

fn settings(file: &str, where_: &str, t: &toml::Table) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (k, v) in t {
        let key = k.replace('-', "_");
        let field = format!("{file}: {where_}.{k}");
        let known = options::plan_file_keys();
        if !known.contains(&key.as_str()) {
            return Err(usage(
                field,
                format!(
                    "unknown key (target, size and output are command-line only; known: {})",
                    known.join(", ")
                ),
            ));
        }
        out.insert(key, value_text(&field, v)?);
    }
    Ok(out)
}

/// Parse plan text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> anyhow::Result<PlanFile> {
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| usage(file, format!("not valid TOML: {e}")))?;
    let mut defaults = BTreeMap::new();
    let mut description = None;
    let mut experiments = Vec::new();
    let mut media = BTreeMap::new();
    let mut kv = Vec::new();
    for (k, v) in &doc {
        match (k.as_str(), v) {
            ("description", toml::Value::String(s)) => description = Some(s.clone()),
            ("defaults", toml::Value::Table(t)) => defaults = settings(file, "defaults", t)?,
            ("media", toml::Value::Table(t)) => media = media_settings(file, t)?,
            ("kv", toml::Value::Array(a)) => {
                for e in a {
                    let toml::Value::Table(t) = e else {
                        return Err(usage(file, "kv entries must be tables ([[kv]])"));
                    };
                    kv.push(t.clone());
                }
            }
            ("experiment", toml::Value::Array(a)) => {
                for (i, e) in a.iter().enumerate() {
                    let toml::Value::Table(t) = e else {
                        return Err(usage(
                            file,
                            "experiment entries must be tables ([[experiment]])",
                        ));
                    };
                    let mut s = defaults.clone();
                    let own = settings(file, &format!("experiment[{i}]"), t)?;
                    s.extend(own);
                    let name = s
                        .get("name")
                        .cloned()
                        .unwrap_or_else(|| format!("experiment-{}", i + 1));
                    experiments.push(PlanSection { name, settings: s });
                }
            }
            (other, _) => {
                return Err(usage(
                    file,
                    format!(
                        "unknown top-level key '{other}' (description, [defaults], [media], [[experiment]], [[kv]])"
                    ),
                ))
            }
        }
    }
    // [defaults] may come after the experiments in the file: re-apply.
    for e in &mut experiments {
        for (k, v) in &defaults {
            e.settings.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if experiments.is_empty() && kv.is_empty() {
        return Err(usage(file, "the plan has no [[experiment]] (nor [[kv]])"));
    }
    let mut seen = std::collections::HashSet::new();
    for e in &experiments {
        if !seen.insert(e.name.clone()) {
            return Err(usage(
                file,
                format!("two experiments are named '{}'", e.name),
            ));
        }
    }
    Ok(PlanFile {
        description,
        experiments,
        media,
        kv,
    })
}

pub fn read(path: &Path) -> anyhow::Result<PlanFile> {
    let text = crate::input::read_text(path, "--plan", Some(crate::input::CONFIG_MAX))?;
    parse(&path.display().to_string(), &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let p = parse(
            "t.toml",
            r#"
description = "demo"
[[experiment]]
name = "a"
bs = ["4k", "64k"]
qd = 32
[[experiment]]
rw = "randwrite"
runtime = "1s"
buffered = true
[defaults]
runtime = "5s"
steady-state = "iops"
"#,
        )
        .unwrap();
        assert_eq!(p.description.as_deref(), Some("demo"));
        assert_eq!(p.experiments.len(), 2);
        let a = &p.experiments[0].settings;
        assert_eq!(a["bs"], "4k,64k");
        assert_eq!(a["qd"], "32");
        assert_eq!(a["runtime"], "5s");
        assert_eq!(a["steady_state"], "iops");
        let b = &p.experiments[1];
        assert_eq!(b.name, "experiment-2");
        assert_eq!(b.settings["runtime"], "1s");
        assert_eq!(b.settings["buffered"], "true");
    }

    #[test]
    fn the_media_table_holds_run_wide_keys() {
        let p = parse(
            "m.toml",
            "[media]\nmake = [\"tmpfs\", \"ext4\"]\nrounds = 3\n[[experiment]]\nrw = \"read\"\n",
        )
        .unwrap();
        assert_eq!(p.media["make"], "tmpfs,ext4");
        assert_eq!(p.media["rounds"], "3");
        let e = parse("m.toml", "[media]\ntarget = \"/dev/sda\"\n[[experiment]]\n").unwrap_err();
        let u = e.downcast::<crate::error::UsageError>().unwrap();
        assert_eq!(u.field, "m.toml: media.target");
    }

    #[test]
    fn kv_tables_are_kept_for_iolab_kv() {
        let p = parse(
            "k.toml",
            "[[kv]]\nengine = \"lmdb\"\n[kv.props]\nrecordcount = 10\n[[kv]]\nengine = \"rocksdb\"\n",
        )
        .unwrap();
        assert!(p.experiments.is_empty());
        assert_eq!(p.kv.len(), 2);
        assert_eq!(p.kv[0]["props"]["recordcount"].as_integer(), Some(10));
        assert!(parse("k.toml", "kv = 1\n").is_err());
        assert!(parse("k.toml", "kv = [1]\n").is_err());
    }

    #[test]
    fn errors_name_the_place() {
        let e = parse("t.toml", "[[experiment]]\ntarget = \"/dev/sda\"\n").unwrap_err();
        let u = e.downcast::<crate::error::UsageError>().unwrap();
        assert!(u.field.contains("experiment[0].target"), "{}", u.field);
        assert!(parse("t.toml", "x = 1").is_err());
        assert!(parse("t.toml", "[defaults]\nqd = 1\n").is_err());
        assert!(parse("t.toml", "[[experiment]\n").is_err());
        assert!(parse(
            "t.toml",
            "[[experiment]]\nname='a'\n[[experiment]]\nname='a'\n"
        )
        .is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "[\\[\\]a-z=\"\\n0-9 ,.]{0,60}") {
            let _ = parse("p.toml", &s);
        }
    }
}
