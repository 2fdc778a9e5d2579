//! `iolab kv --plan FILE`: the `[[kv]]` tables of a plan file, each a kv
//! part (an engine and its workload) applied onto the command line's
//! settings. A table's keys are `iolab kv`'s flag names (`engine`, `num`,
//! `value-size`, `readers`, `memory-limit` ...) applied with the flags'
//! own definitions (as device plan files are: `device_flags::apply_flags`),
//! plus `workload` (the positional WORKLOAD), `props` (YCSB properties, a
//! table or a list of `key=value`), `name` and `description`. Flags given
//! on the command line win over the file; `-p` given there is applied
//! over the table's `props`. Where the database goes (`target`, `db`,
//! `keep`, `output` ...) is the command line's; `make`, `rounds` and
//! `baseline` belong in `[media]`.

use std::path::Path;

use crate::cli::kv::KvArgs;
use crate::error::{name_place, usage};
use crate::plan::planfile::{value_text, PlanFile};

/// Keys a `[[kv]]` table may not hold, and where they belong.
const COMMAND_LINE_ONLY: [&str; 11] = [
    "target", "dir", "db", "keep", "output", "json", "force", "quiet", "dry_run", "plan", "size",
];
const MEDIA_ONLY: [&str; 4] = ["make", "make_in", "rounds", "baseline"];

/// One `[[kv]]` table: its name and the settings it runs with.
pub struct KvPart {
    pub name: String,
    pub args: KvArgs,
}

/// Characters a part's name may hold: it names workloads (`NAME/PHASE`).
fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
}

/// Every `[[kv]]` table of `plan` applied onto `a` (the command line).
pub fn parts(a: &KvArgs, path: &Path, plan: &PlanFile) -> anyhow::Result<Vec<KvPart>> {
    if plan.kv.is_empty() {
        return Err(usage(
            "--plan",
            format!(
                "{} has no [[kv]] table for iolab kv (its [[experiment]]s run with iolab device --plan)",
                path.display()
            ),
        ));
    }
    let mut out: Vec<KvPart> = Vec::new();
    for (i, table) in plan.kv.iter().enumerate() {
        let place = format!("{} [[kv]] #{}", path.display(), i + 1);
        let part = part(a, &place, table)?;
        if out.iter().any(|p| p.name == part.name) {
            return Err(usage(
                format!("{place} name"),
                format!(
                    "two parts are named '{}': give each [[kv]] its own name = \"...\"",
                    part.name
                ),
            ));
        }
        out.push(part);
    }
    Ok(out)
}

/// One table onto a copy of `a`; errors name `place` and the key.
fn part(a: &KvArgs, place: &str, table: &toml::Table) -> anyhow::Result<KvPart> {
    let given = |k: &str| a.given.iter().any(|g| g == k);
    let mut args = a.clone();
    let mut argv = Vec::new();
    let mut name = None;
    let mut props = Vec::new();
    for (k, v) in table {
        let key = k.replace('-', "_");
        let field = format!("{place} {k}");
        match key.as_str() {
            "description" => {}
            "name" => {
                let n = value_text(&field, v)?;
                if !name_ok(&n) {
                    return Err(usage(
                        field,
                        format!("'{n}' is not a name (letters, digits and . _ + -)"),
                    ));
                }
                name = Some(n);
            }
            "workload" if !given("workload") => args.workload = Some(value_text(&field, v)?),
            "workload" => {}
            "props" | "p" => props = table_props(&field, v)?,
            k if COMMAND_LINE_ONLY.contains(&k) => {
                return Err(usage(
                    field,
                    "where the database goes is the command line's (--target, --db, --output ...)",
                ))
            }
            k if MEDIA_ONLY.contains(&k) => {
                return Err(usage(field, "belongs in the [media] table"));
            }
            k if given(k) => {}
            _ => argv.push(format!(
                "--{}={}",
                key.replace('_', "-"),
                value_text(&field, v)?
            )),
        }
    }
    // The command line's -p last: it overrides the table's.
    props.append(&mut args.props);
    args.props = props;
    super::device_flags::apply_flags(&mut args, argv).map_err(|e| name_place(place, e))?;
    let name = name.unwrap_or_else(|| args.engine.name().to_string());
    Ok(KvPart { name, args })
}

/// `props`: a table (`recordcount = 1000`) or a list of `key=value`.
fn table_props(field: &str, v: &toml::Value) -> anyhow::Result<Vec<String>> {
    match v {
        toml::Value::Table(t) => t
            .iter()
            .map(|(k, v)| Ok(format!("{k}={}", value_text(field, v)?)))
            .collect(),
        toml::Value::Array(a) => a.iter().map(|x| value_text(field, x)).collect(),
        _ => Err(usage(
            field,
            "a table of YCSB properties (props = { recordcount = 1000 }) or a list of \"key=value\"",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::UsageError;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: KvArgs,
    }

    fn args(argv: &[&str], given: &[&str]) -> KvArgs {
        let mut a = Cli::try_parse_from(std::iter::once("kv").chain(argv.iter().copied()))
            .unwrap()
            .args;
        a.given = given.iter().map(|s| s.to_string()).collect();
        a
    }

    fn plan(text: &str) -> PlanFile {
        crate::plan::planfile::parse("p.toml", text).unwrap()
    }

    #[test]
    fn tables_apply_onto_the_command_line_which_wins() {
        let p = plan(
            r#"
[[kv]]
engine = "lmdb"
workload = ["fillrandom", "readwhilewriting"]
value-size = 4000
readers = [1, 2]
sync = true
props = { recordcount = 100 }
[[kv]]
name = "rocks"
engine = "rocksdb"
num = 50
"#,
        );
        let a = args(&["--num", "7", "-p", "recordcount=5"], &["num", "props"]);
        let parts = parts(&a, Path::new("p.toml"), &p).unwrap();
        assert_eq!(parts[0].name, "lmdb");
        let l = &parts[0].args;
        assert_eq!(l.workload.as_deref(), Some("fillrandom,readwhilewriting"));
        assert_eq!((l.bench.value_size, l.bench.num), (4000, 7));
        assert_eq!(l.bench.readers, "1,2");
        assert!(l.eng.sync);
        assert_eq!(l.props, ["recordcount=100", "recordcount=5"]);
        assert_eq!(parts[1].name, "rocks");
        assert_eq!(
            parts[1].args.bench.num, 7,
            "--num given on the command line"
        );
    }

    #[test]
    fn bad_tables_name_the_place_and_key() {
        let field = |text: &str| {
            let e = parts(&args(&[], &[]), Path::new("p.toml"), &plan(text))
                .err()
                .unwrap();
            e.downcast::<UsageError>().unwrap().field
        };
        assert_eq!(
            field("[[kv]]\ntarget = \"/x\"\n"),
            "p.toml [[kv]] #1 target"
        );
        assert_eq!(field("[[kv]]\nrounds = 2\n"), "p.toml [[kv]] #1 rounds");
        assert_eq!(
            field("[[kv]]\nengine = \"nosuch\"\n"),
            "p.toml [[kv]] #1 --engine"
        );
        assert_eq!(field("[[kv]]\nnosuch = 1\n"), "p.toml [[kv]] #1 --nosuch");
        assert_eq!(
            field("[[kv]]\nengine = \"lmdb\"\n[[kv]]\nengine = \"lmdb\"\n"),
            "p.toml [[kv]] #2 name"
        );
        assert_eq!(field("[[kv]]\nname = \"a b\"\n"), "p.toml [[kv]] #1 name");
        assert_eq!(field("[[kv]]\nprops = 3\n"), "p.toml [[kv]] #1 props");
        assert_eq!(field("[[experiment]]\nrw = \"read\"\n"), "--plan");
    }
}
