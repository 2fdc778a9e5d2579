//! Bad input exits 2 and names the field at fault, quickly (issue 10,
//! item 8): device nodes given as input files, zero or malformed sizes.

mod common;

use common::{iolab, text};

#[test]
fn bad_inputs_exit_2_naming_the_field() {
    let dir = common::workdir();
    let d = dir.path().to_str().unwrap();
    let fixture = |name: &str| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report")
            .join(name)
    };
    // Results files this iolab did not write: version 0, an unknown kind.
    let good = std::fs::read_to_string(fixture("kv-ycsb-rocksdb.json")).unwrap();
    let v0 = dir.path().join("v0.json");
    let odd = dir.path().join("odd.json");
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["schema_version"] = 0.into();
    std::fs::write(&v0, v.to_string()).unwrap();
    v["schema_version"] = 1.into();
    v["kind"] = "nosuch".into();
    std::fs::write(&odd, v.to_string()).unwrap();
    let (v0, odd) = (v0.to_str().unwrap(), odd.to_str().unwrap());
    // fio job files: a zero size, a job section with no option.
    let fio_size0 = dir.path().join("size0.fio");
    std::fs::write(&fio_size0, "[j]\nrw=randread\nsize=0\n").unwrap();
    let fio_empty = dir.path().join("empty.fio");
    std::fs::write(&fio_empty, "[j]\n").unwrap();
    let (fio_size0, fio_empty) = (fio_size0.to_str().unwrap(), fio_empty.to_str().unwrap());
    let good_file = fixture("kv-ycsb-rocksdb.json");
    let good_path = good_file.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["report", v0, "--format", "text"], "RESULTS"),
        (vec!["report", odd, "--format", "text"], "RESULTS"),
        (vec!["device", "--fio-job", "/dev/zero"], "--fio-job"),
        (
            vec!["device", "--plan", "/dev/zero", "--target", d],
            "--plan",
        ),
        (vec!["kv", "-P", "/dev/zero", "--dir", d], "-P"),
        // "P" names the -P files' workload; without one it was a panic.
        (vec!["kv", "P", "--dir", d], "WORKLOAD"),
        (vec!["kv", "a,P", "--dir", d], "WORKLOAD"),
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
        (
            vec!["device", "--engine", "null", "--io-count", "0"],
            "--io-count",
        ),
        (
            vec!["device", "--engine", "null", "--io-bytes", "0"],
            "--io-bytes",
        ),
        (vec!["device", "--engine", "null", "--bs", "4k:0"], "--bs"),
        (vec!["trace", "--max-ops", "0", "--dir", d], "--max-ops"),
        (vec!["trace", "--size", "0", "--dir", d], "--size"),
        (
            vec!["compare", good_path, good_path, "--by", "nosuch"],
            "--by",
        ),
        (vec!["device", "--engine", "null", "--qd", "-1"], "--qd"),
        (
            vec!["device", "--engine", "null", "--runtime", "-5s"],
            "--runtime",
        ),
        (
            vec!["kv", "a", "-p", "threadcount=0", "--dir", d],
            "threadcount",
        ),
        (
            vec![
                "kv",
                "a",
                "-p",
                "threadcount=2",
                "--threads",
                "3",
                "--dir",
                d,
            ],
            "threadcount",
        ),
        (vec!["kv", "a,,b", "--dir", d], "WORKLOAD"),
        (
            vec![
                "kv",
                "a",
                "--engine",
                "lmdb",
                "--compression",
                "snappy",
                "--dir",
                d,
            ],
            "--compression",
        ),
        (
            vec![
                "kv",
                "a",
                "--engine",
                "wiredtiger",
                "--wt-table",
                "lsm",
                "--cache-size",
                "16m",
                "--dir",
                d,
            ],
            "--cache-size",
        ),
        (
            vec![
                "kv",
                "a",
                "--engine",
                "wiredtiger",
                "--sync",
                "--disable-wal",
                "--dir",
                d,
            ],
            "--sync",
        ),
        (
            vec![
                "kv",
                "a",
                "--engine",
                "wiredtiger",
                "--checkpoint-interval",
                "0.5s",
                "--dir",
                d,
            ],
            "--checkpoint-interval",
        ),
        (
            vec![
                "kv",
                "a",
                "--engine",
                "wiredtiger",
                "--wt-eviction-threads",
                "21",
                "--dir",
                d,
            ],
            "--wt-eviction-threads",
        ),
        (vec!["device", "--fio-job", fio_size0], "size"),
        (vec!["device", "--fio-job", fio_empty], "--fio-job"),
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
    let made: Vec<_> = common::files_in(dir.path())
        .into_iter()
        .filter(|p| {
            !["v0.json", "odd.json", "size0.fio", "empty.fio"]
                .iter()
                .any(|f| p.ends_with(f))
        })
        .collect();
    assert!(made.is_empty(), "bad input created files: {made:?}");
}

/// `-t =DIR` and `-t a=` name the empty side of `LABEL=PATH` (they said
/// "does not exist" of the whole value).
#[test]
fn an_empty_target_label_or_path_is_named() {
    let dir = common::workdir();
    let d = dir.path().to_str().unwrap();
    let empty_label = format!("={d}");
    for verb in [
        vec!["device", "--dry-run"],
        vec!["kv", "a", "--dry-run"],
        vec!["oltp", "--dry-run"],
    ] {
        for (value, says) in [
            (empty_label.as_str(), "the label before '=' is empty"),
            ("a=", "the path after '=' is empty"),
        ] {
            let mut args = verb.clone();
            args.extend(["-t", value, "-t", d]);
            let o = iolab(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("--target") && err.contains(says),
                "{args:?}: {err}"
            );
        }
    }
    assert!(common::files_in(dir.path()).is_empty());
}
