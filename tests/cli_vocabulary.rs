//! One vocabulary across verbs (issue 31, item 15): `--runtime` is the
//! time of one point everywhere (`--time` the same), `run` points to its
//! `--budget`, the seed's default is the same in every verb, YCSB's own
//! `-threads`/`-target` work on `kv`, `trace` has a dry run that says what
//! psync does at depth, `compare` writes to a file with `-o`, and dry runs
//! say their total and the batching (item 16).

mod common;
use common::{iolab, text, workdir};

#[test]
fn runtime_and_time_are_one_flag_in_every_verb() {
    for args in [
        vec!["device", "--engine", "null", "--time", "1s", "--dry-run"],
        vec!["device", "--engine", "null", "--runtime", "1s", "--dry-run"],
        vec!["oltp", "--runtime", "1s", "--dry-run"],
        vec!["oltp", "--time", "1s", "--dry-run"],
        vec![
            "kv",
            "a",
            "--engine",
            "lmdb",
            "--runtime",
            "2s",
            "--dry-run",
        ],
        vec!["trace", "--time", "1s", "--dry-run"],
    ] {
        let o = iolab(&args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    }
    let o = iolab(&[
        "kv",
        "a",
        "--engine",
        "lmdb",
        "--runtime",
        "2s",
        "--dry-run",
    ]);
    assert!(text(&o).contains("at most 2 s"), "{}", text(&o));
    let o = iolab(&[
        "kv",
        "a",
        "--engine",
        "lmdb",
        "--runtime",
        "1500ms",
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--runtime"), "{}", text(&o));
    for (verb, shown) in [("serve", "--runtime"), ("remote", "--time")] {
        let o = iolab(&[verb, "--help"]);
        assert!(text(&o).contains(shown), "{verb}: {}", text(&o));
    }
}

#[test]
fn run_points_to_its_budget() {
    let o = iolab(&["run", "--runtime", "30s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--budget 30s"), "{}", text(&o));
}

#[test]
fn the_seed_default_is_the_same_in_every_verb() {
    for verb in ["run", "device", "kv", "oltp", "trace", "remote"] {
        let o = iolab(&[verb, "--help"]);
        let help = text(&o);
        let seed = help
            .lines()
            .skip_while(|l| !l.contains("--seed"))
            .take(4)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(seed.contains("4207"), "{verb}: {seed}");
    }
}

#[test]
fn ycsbs_own_spellings_work_on_kv() {
    let o = iolab(&[
        "kv",
        "a",
        "--engine",
        "lmdb",
        "-threads",
        "3",
        "-target",
        "500",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn trace_dry_run_lists_configurations_and_says_psync_stays_at_qd1() {
    let o = iolab(&[
        "trace",
        "--engine",
        "psync,aio",
        "--qd",
        "1,16",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("aio qd16") && t.contains("psync qd1"), "{t}");
    assert!(t.contains("deeper --qd are not run"), "{t}");
    assert!(!t.contains("psync qd16"), "{t}");
}

#[test]
fn compare_writes_to_a_file_with_o() {
    let dir = workdir();
    let d = dir.path();
    for name in ["a", "b"] {
        let json = d.join(format!("{name}.json"));
        let o = iolab(&[
            "device",
            "--engine",
            "null",
            "--io-count",
            "2000",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let out = d.join("cmp.json");
    let o = iolab(&[
        "compare",
        d.join("a.json").to_str().unwrap(),
        d.join("b.json").to_str().unwrap(),
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(v.is_object() || v.is_array(), "{v}");
}

#[test]
fn dry_runs_say_the_total_and_the_batching() {
    let o = iolab(&["remote", "-t", "/var/tmp", "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("total: "), "{}", text(&o));
    let o = iolab(&["device", "--engine", "null", "--batch", "64", "--dry-run"]);
    assert!(text(&o).contains("batches of 64"), "{}", text(&o));
}

/// Issue 44 item 15: `trace` and `remote` lacked `--json`, which device,
/// kv and oltp take for the results file; it is checked like theirs.
#[test]
fn every_measuring_verb_takes_json_for_its_results_file() {
    let dir = workdir();
    let missing = dir.path().join("no/such/dir/r.json");
    let missing = missing.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    for args in [
        vec!["device", "--engine", "null", "--dry-run", "--json", missing],
        vec!["trace", "-t", d, "--dry-run", "--json", missing],
        vec!["remote", "-t", d, "--dry-run", "--json", missing],
    ] {
        let o = iolab(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains("does not exist"), "{args:?}: {t}");
        assert!(!t.contains("unexpected argument"), "{args:?}: {t}");
    }
}
