//! Helpers shared by the integration tests that run the iolab binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the built binary with `args`.
pub fn iolab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .output()
        .expect("run iolab")
}

/// stdout and stderr together, for assertions and failure messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A directory on the real disk (not tmpfs), so O_DIRECT works.
pub fn workdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

pub fn results(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Run `iolab device ARGS --json FILE --quiet`, assert success, return the first point.
pub fn device_point(args: &[&str], json: &Path) -> serde_json::Value {
    let mut all = vec!["device"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", json.to_str().unwrap(), "--quiet"]);
    let o = iolab(&all);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    results(json)["points"][0].clone()
}
