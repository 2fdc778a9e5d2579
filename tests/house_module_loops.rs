//! The house's layering check (scripts/module-cycles.py --check, run by
//! `make test` and `make lint`): src/ has no loop between top-level modules
//! beyond the ones scripts/module-cycles.allowed still lists, and a new
//! loop of any length (not only a pair) fails the check, named.

use std::path::Path;
use std::process::Command;

fn check(src: &Path, allowed: &Path) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/module-cycles.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg("--check")
        .arg(src)
        .env("MODULE_CYCLES_ALLOWED", allowed)
        .output()
        .expect("python3 runs");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).to_string(),
    )
}

#[test]
fn src_has_no_module_loop_beyond_the_allowed_list() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (ok, out) = check(
        &root.join("src"),
        &root.join("scripts/module-cycles.allowed"),
    );
    assert!(ok, "{out}");
}

/// a -> b -> c -> a is a loop of three with no pair among them.
#[test]
fn a_loop_of_three_is_found_and_an_allowed_edge_out_of_loops_is_stale() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for (m, uses) in [("a", "b"), ("b", "c"), ("c", "a")] {
        std::fs::write(
            src.join(format!("{m}.rs")),
            format!("use crate::{uses}::X;\n"),
        )
        .unwrap();
    }
    let allowed = dir.path().join("allowed");
    std::fs::write(&allowed, "# none\n").unwrap();
    let (ok, out) = check(&src, &allowed);
    assert!(!ok, "{out}");
    for e in ["a->b", "b->c", "c->a"] {
        assert!(out.contains(&format!("new loop edge {e}")), "{out}");
    }
    std::fs::write(&allowed, "a->b\nb->c\nc->a\n").unwrap();
    assert!(check(&src, &allowed).0);
    std::fs::write(src.join("c.rs"), "").unwrap();
    let (ok, out) = check(&src, &allowed);
    assert!(!ok && out.contains("a->b is in no loop any more"), "{out}");
}
