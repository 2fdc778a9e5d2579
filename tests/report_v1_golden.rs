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
            if bless {
                std::fs::write(golden.join(&file), &got).unwrap();
            } else if std::fs::read(golden.join(&file)).ok().as_deref() != Some(&got[..]) {
                differ.push(file);
            }
        }
    }
    assert!(
        differ.is_empty(),
        "rendered differently from v1: {differ:?}"
    );
}
