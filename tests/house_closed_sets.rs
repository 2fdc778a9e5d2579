//! The house's closed-set check (issue 45): each of the four closed sets
//! (`EngineKind`, `KvEngineKind`, `ServerKind`, `Transport`) keeps its
//! per-variant facts in one home, so src/ names a set's variants
//! (`Set::Variant`) in at most three files (the home, the one factory that
//! constructs implementations, one more), and never imports them by a glob
//! or a brace list (`use Set::*`, `use Set::{A, B}`), which would dodge
//! the count.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SETS: [&str; 4] = ["EngineKind", "KvEngineKind", "ServerKind", "Transport"];
const MAX_FILES: usize = 3;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ reads")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `text` names a variant of `set`: `Set::` followed by an
/// upper-case letter, with `Set` not the tail of a longer identifier.
fn names_variant(text: &str, set: &str) -> bool {
    let pat = format!("{set}::");
    text.match_indices(&pat).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + pat.len()..].chars().next();
        !before.is_some_and(is_ident) && after.is_some_and(|c| c.is_ascii_uppercase())
    })
}

/// Whether `text` imports `set`'s variants wholesale or by a brace list
/// (`use ...Set::*`, `use ...Set::{...}`), or renames the set (`Set as X`).
fn dodges(text: &str, set: &str) -> bool {
    let squashed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    ["::*", "::{"].iter().any(|tail| {
        let pat = format!("{set}{tail}");
        squashed
            .match_indices(&pat)
            .any(|(i, _)| !squashed[..i].chars().next_back().is_some_and(is_ident))
    }) || squashed
        .match_indices(&format!("{set} as "))
        .any(|(i, _)| !squashed[..i].chars().next_back().is_some_and(is_ident))
}

/// The violations found under `src`, one line each, naming the files.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(src).unwrap_or(p).display().to_string();
            (rel, std::fs::read_to_string(p).expect("source reads"))
        })
        .collect();
    let mut out = Vec::new();
    for set in SETS {
        let mut naming: BTreeMap<&str, ()> = BTreeMap::new();
        for (rel, text) in &texts {
            if names_variant(text, set) {
                naming.insert(rel, ());
            }
            if dodges(text, set) {
                out.push(format!(
                    "{set}: {rel} imports its variants by a glob, a brace list or an alias"
                ));
            }
        }
        if naming.len() > MAX_FILES {
            let names: Vec<&str> = naming.keys().copied().collect();
            out.push(format!(
                "{set} is named by variant in {} files (at most {MAX_FILES}; ask its home instead): {}",
                naming.len(),
                names.join(", ")
            ));
        }
    }
    out
}

#[test]
fn each_closed_set_is_named_by_variant_in_at_most_three_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let v = violations(&src);
    assert!(v.is_empty(), "closed sets leak:\n{}", v.join("\n"));
}

/// The check itself: a fourth file, a glob and a brace list are each found.
#[test]
fn a_fourth_file_a_glob_and_a_brace_list_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    for f in ["a.rs", "b.rs", "c.rs"] {
        std::fs::write(src.join(f), "fn f() { let _ = EngineKind::Psync; }\n").unwrap();
    }
    std::fs::write(
        src.join("d.rs"),
        "fn g() { let _ = MyEngineKind::Psync; }\n",
    )
    .unwrap();
    assert!(violations(src).is_empty());
    std::fs::create_dir(src.join("sub")).unwrap();
    std::fs::write(src.join("sub/e.rs"), "fn h() { EngineKind::Aio; }\n").unwrap();
    let v = violations(src);
    assert!(v.len() == 1 && v[0].contains("sub/e.rs"), "{v:?}");
    std::fs::remove_file(src.join("sub/e.rs")).unwrap();
    std::fs::write(src.join("g.rs"), "use crate::x::Transport::*;\n").unwrap();
    std::fs::write(
        src.join("h.rs"),
        "use crate::x::ServerKind::{\n  Redis };\n",
    )
    .unwrap();
    let v = violations(src);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v.iter().any(|l| l.contains("g.rs")) && v.iter().any(|l| l.contains("h.rs")));
}
