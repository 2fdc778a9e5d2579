//! Bad input exits 2 and names the field at fault, quickly (issue 10,
//! item 8): device nodes given as input files, zero or malformed sizes.

mod common;

use common::{iolab, text};

#[test]
fn bad_inputs_exit_2_naming_the_field() {
    let dir = common::workdir();
    let d = dir.path().to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["device", "--fio-job", "/dev/zero"], "--fio-job"),
        (
            vec!["device", "--plan", "/dev/zero", "--target", d],
            "--plan",
        ),
        (vec!["kv", "-P", "/dev/zero", "--dir", d], "-P"),
        (vec!["report", "/dev/zero"], "RESULTS"),
        (vec!["report", d], "RESULTS"),
        (
            vec![
                "kv",
                "a",
                "--engine",
                "lmdb",
                "--map-size",
                "1k",
                "--dir",
                d,
            ],
            "--map-size",
        ),
        (vec!["trace", "--buffer-kb", "0", "--dir", d], "--buffer-kb"),
        (
            vec!["device", "--engine", "null", "--breakdown-buffer-kb", "0"],
            "--breakdown-buffer-kb",
        ),
        (
            vec!["kv", "a", "-p", "recordcount=-5", "--dir", d],
            "recordcount",
        ),
    ];
    for (args, field) in cases {
        let o = iolab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("error: {field}:")),
            "{args:?} should name {field}: {err}"
        );
    }
    assert!(
        common::files_in(dir.path()).is_empty(),
        "bad input created files"
    );
}
