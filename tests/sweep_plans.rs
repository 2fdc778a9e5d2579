//! Every shipped plan file under examples/ and bench/ parses and expands into valid
//! experiments (checked through `iolab device --plan FILE --dry-run`, or
//! `iolab remote --plan FILE --dry-run` for `iolab remote`'s plans, whose
//! top-level keys are its flags; `iolab kv --plan FILE --dry-run` for
//! plans of `[[kv]]` tables only, scaled down). Plans whose `[media]` table makes
//! configurations need root (the dry run checks they can be built).

use std::process::Command;

#[test]
fn every_example_plan_expands() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    // The plans of bench/ scripts' measurements too.
    let entries = ["examples", "bench"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap());
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        n += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: toml::Table = text.parse().unwrap();
        if doc.contains_key("transports") {
            let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
                .args(["remote", "-t", env!("CARGO_TARGET_TMPDIR"), "--plan"])
                .arg(&path)
                .arg("--dry-run")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("das"),
                "{}: {text}",
                path.display()
            );
            continue;
        }
        let plan = iolab::plan::planfile::parse(&path.display().to_string(), &text)
            .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        // SAFETY: geteuid has no preconditions.
        if plan.media.contains_key("make") && unsafe { libc::geteuid() } != 0 {
            eprintln!(
                "SKIP {}: building its configurations needs root",
                path.display()
            );
            continue;
        }
        if plan.experiments.is_empty() {
            kv_plan_expands(&path);
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["device", "--plan"])
            .arg(&path)
            .arg("--dry-run")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("estimated duration"), "{text}");
    }
    assert!(n >= 6, "expected the shipped examples, found {n}");
}

#[test]
fn bad_plan_exits_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, "[[experiment]]\nname = \"x\"\nqd = \"many\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["device", "--plan"])
        .arg(&p)
        .arg("--dry-run")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[x]") && err.contains("--qd"), "{err}");
}

/// A plan of `[[kv]]` parts only (a server study): its parts and phases
/// expand, with few records so the room check passes anywhere.
fn kv_plan_expands(path: &std::path::Path) {
    let plan = iolab::plan::planfile::parse(
        &path.display().to_string(),
        &std::fs::read_to_string(path).unwrap(),
    )
    .unwrap();
    assert!(!plan.kv.is_empty(), "{}: no experiment", path.display());
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["kv", "-t", env!("CARGO_TARGET_TMPDIR"), "--plan"])
        .arg(path)
        .args(["--dry-run", "-p", "recordcount=1000"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains(" run: ") && !text.contains("YcsbRun"),
        "{}: {text}{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
