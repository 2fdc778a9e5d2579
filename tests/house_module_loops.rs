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

/// The code block of docs/ARCHITECTURE.md that follows `after`.
fn drawing(doc: &str, after: &str) -> Vec<String> {
    let start = doc.find(after).expect(after);
    let block = &doc[start..];
    let open = block.find("```\n").unwrap() + 4;
    let close = open + block[open..].find("```").unwrap();
    block[open..close].lines().map(str::to_string).collect()
}

/// The module names in a drawing line's left column (`kv/   oltp/`,
/// `error -> interrupt`: the names before `->`).
fn names(line: &str) -> Vec<String> {
    let left: String = line.chars().take(31).collect();
    let left = left.split("->").next().unwrap_or_default();
    left.split_whitespace()
        .filter(|w| *w != "core:")
        .map(|w| w.trim_end_matches('/').to_string())
        .collect()
}

/// The modules a line of the drawing seen from the top names: its words
/// of the form `name/` (descriptions write `runner/,` or `x.rs`).
fn dirs(line: &str) -> Vec<String> {
    line.split_whitespace()
        .filter_map(|w| w.strip_suffix('/'))
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_string)
        .collect()
}

/// Every top-level import `a -> b` outside tests (the script's `--edges`).
fn edges() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new("python3")
        .arg(root.join("scripts/module-cycles.py"))
        .arg("--edges")
        .arg(root.join("src"))
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (edge, _) = l.split_once(':')?;
            let (a, b) = edge.split_once(" -> ")?;
            Some((a.trim().to_string(), b.trim().to_string()))
        })
        .collect()
}

/// docs/ARCHITECTURE.md places every top-level module, and its drawings
/// are what the imports are: seen from the top, a module imports only its
/// own row or below; in the core's drawing from the bottom, only lines
/// below its own.
#[test]
fn the_architecture_drawings_are_the_imports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let mut row = std::collections::BTreeMap::new();
    let mut r = 0;
    for line in drawing(&doc, "Seen from the top") {
        let found = dirs(&line);
        if !line.starts_with(' ') && !found.is_empty() {
            r += 1;
        }
        for n in found {
            row.insert(n, r);
        }
    }
    let mut rank = std::collections::BTreeMap::new();
    for (i, line) in drawing(&doc, "From the bottom:").iter().enumerate() {
        if !line.starts_with(' ') {
            for n in names(line) {
                rank.insert(n, i);
            }
        }
    }
    let modules: Vec<String> = std::fs::read_dir(root.join("src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let n = p.file_stem()?.to_str()?.to_string();
            (p.is_dir() || p.extension().is_some_and(|x| x == "rs")).then_some(n)
        })
        .filter(|n| !["main", "lib", "bin"].contains(&n.as_str()))
        .collect();
    for m in &modules {
        assert!(
            row.contains_key(m),
            "{m} is not in the drawing seen from the top"
        );
    }
    let mut wrong = Vec::new();
    for (a, b) in edges() {
        let (Some(ra), Some(rb)) = (row.get(&a), row.get(&b)) else {
            continue;
        };
        if rb < ra {
            wrong.push(format!("{a} -> {b} points up (rows {ra} -> {rb})"));
        }
        if let (Some(ka), Some(kb)) = (rank.get(&a), rank.get(&b)) {
            if kb >= ka {
                wrong.push(format!(
                    "{a} -> {b}: {b} is not drawn below {a} in the core"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
