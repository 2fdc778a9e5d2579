//! Results files written before the redesign (schema v1, kept in
//! tests/fixtures/report) must keep loading and rendering exactly as they
//! did: every format of every fixture is compared with the output the
//! earlier main produced (tests/fixtures/report/v1-golden). Regenerate on
//! purpose with `IOLAB_BLESS=1 cargo test --test report_v1_golden`.

use std::path::Path;
use std::process::Command;

const FORMATS: [&str; 4] = ["text", "markdown", "csv", "html"];

#[test]
fn v1_fixtures_render_as_before() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let golden = root.join("v1-golden");
    let out = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bless = std::env::var_os("IOLAB_BLESS").is_some();
    let mut fixtures: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 13, "fixtures present");
    let mut differ = Vec::new();
    for f in &fixtures {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        for fmt in FORMATS {
            let file = format!("{name}.{fmt}");
            let dest = out.path().join(&file);
            let st = Command::new(env!("CARGO_BIN_EXE_iolab"))
                .args(["report", f.to_str().unwrap(), "--format", fmt, "-o"])
                .arg(&dest)
                .output()
                .unwrap();
            assert!(st.status.success(), "{file}: {st:?}");
            let got = std::fs::read(&dest).unwrap();
            let want = std::fs::read(golden.join(&file)).ok();
            if bless {
                std::fs::write(golden.join(&file), &got).unwrap();
            } else if want.map(|w| mask_build(&w)) != Some(mask_build(&got)) {
                differ.push(file);
            }
        }
    }
    assert!(
        differ.is_empty(),
        "rendered differently from v1: {differ:?}"
    );
}

/// HTML output names the build ("0.1.0 (1a2b3c4d5e6f-dirty)", in the
/// environment table and the footer), which changes with every commit:
/// compare everything else.
fn mask_build(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let marker = concat!(env!("CARGO_PKG_VERSION"), " (");
    let mut out = String::with_capacity(text.len());
    let mut rest = &text[..];
    while let Some(at) = rest.find(marker) {
        let from = at + marker.len();
        let to = rest[from..].find(')').map_or(rest.len(), |i| from + i);
        out.push_str(&rest[..from]);
        out.push_str("<build>");
        rest = &rest[to..];
    }
    out.push_str(rest);
    out
}

#[test]
fn mask_build_hides_only_the_revision() {
    let v = env!("CARGO_PKG_VERSION");
    let a = mask_build(format!("x {v} (e7d9e37fcea7) iolab {v} (e7d9e37fcea7). y").as_bytes());
    let b = mask_build(format!("x {v} (df10b06aaaaa-dirty) iolab {v} (1). y").as_bytes());
    assert_eq!(a, b);
    assert_ne!(
        a,
        mask_build(format!("x {v} (e7d9e37fcea7) iolab {v} (e). z").as_bytes())
    );
}
