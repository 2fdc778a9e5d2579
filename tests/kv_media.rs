//! Media runs of `iolab kv`: the same kv workload on several directories
//! (`--target` given several times) and on configurations iolab builds
//! (`--make`), interleaved by rounds in alternating order, a fresh
//! database per target per round, one results file whose points carry
//! the target and round and whose `analysis.media` normalizes them to the
//! baseline; `kv --plan` parts; bad input refused with exit 2 naming the
//! field before anything runs; nothing mounted, attached or left under
//! the targets after the run and after SIGINT at random moments. The
//! `--make` tests need root and mkfs.ext4, and are skipped with the
//! reason otherwise.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{iolab, media_leftovers, text, workdir};

fn can_make() -> bool {
    // SAFETY: geteuid has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0 && common::have("mkfs.ext4");
    if !ok {
        eprintln!("SKIP: needs root and mkfs.ext4 (scripts/install-deps.sh)");
    }
    ok
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// (round, label) of every point when each round runs its labels in the
/// order given, `phases` points each.
fn expected_order(rounds: &[[&str; 2]], phases: usize) -> Vec<(String, String)> {
    let mut want = Vec::new();
    for (r, labels) in rounds.iter().enumerate() {
        for l in labels {
            want.extend(std::iter::repeat_n(
                ((r + 1).to_string(), l.to_string()),
                phases,
            ));
        }
    }
    want
}

#[test]
fn two_directories_interleaved_by_rounds_in_one_results_file() {
    let (d, a, b) = common::two_dirs();
    let json = d.path().join("kv.json");
    let fast = format!("fast={}", s(&b));
    let o = iolab(&[
        "kv",
        "a",
        "-t",
        &s(&a),
        "-t",
        &fast,
        "--rounds",
        "3",
        "--baseline",
        "fast",
        "-p",
        "recordcount=500",
        "-p",
        "operationcount=500",
        "-o",
        &s(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("vs fast")
            && out.contains("per-round ratios: median (range)")
            && out.contains("outside the measured intervals"),
        "the media table and the overhead at the end: {out}"
    );
    let r = common::results(&json);
    assert_eq!(r["kind"], "kv");
    assert_eq!(r["complete"], true);
    let (order, names) = common::media_order_and_names(&r);
    let want = expected_order(&[["a", "fast"], ["fast", "a"], ["a", "fast"]], 2);
    assert_eq!(order, want, "A B, B A, A B; load and run per target");
    assert_eq!(names[0], "a r1: ycsb-a.load");
    assert_eq!(names[5], "fast r2: ycsb-a.run");
    let m = &r["analysis"]["media"];
    assert_eq!(m["targets"], serde_json::json!(["a", "fast"]));
    assert_eq!(
        m["workloads"],
        serde_json::json!(["ycsb-a.load", "ycsb-a.run"])
    );
    assert_eq!(m["rows"].as_array().unwrap().len(), 4);
    common::check_media_ratios(m, "fast", 3, "ops/s");
    let extra = &r["extra"]["media"];
    assert_eq!(extra["targets"].as_array().unwrap().len(), 2);
    assert!(extra["overhead"]["measured_s"].as_f64().unwrap() > 0.0);
    assert!(extra["overhead"]["between_s"].as_f64().is_some());
    // Every database was removed after its round.
    assert!(common::files_in(&a).is_empty() && common::files_in(&b).is_empty());
}

#[test]
fn configurations_tmpfs_and_ext4_built_and_removed() {
    if !can_make() {
        return;
    }
    let data = tempfile::tempdir_in("/var/tmp").unwrap();
    let out = workdir();
    let json = out.path().join("m.json");
    let o = iolab(&[
        "kv",
        "fillrandom,readrandom",
        "--engine",
        "lmdb",
        "-t",
        &s(data.path()),
        "--make",
        "tmpfs,ext4",
        "--rounds",
        "2",
        "--baseline",
        "ext4",
        "--num",
        "2000",
        "--quiet",
        "-o",
        &s(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    let (order, names) = common::media_order_and_names(&r);
    assert_eq!(
        order,
        expected_order(&[["tmpfs", "ext4"], ["ext4", "tmpfs"]], 2)
    );
    assert_eq!(names[1], "tmpfs r1: readrandom");
    common::check_media_ratios(&r["analysis"]["media"], "ext4", 2, "ops/s");
    let media = &r["extra"]["media"];
    assert_eq!(media["configurations"].as_array().unwrap().len(), 2);
    assert_eq!(media["targets"][1]["filesystem"], "ext4");
    assert!(
        media_leftovers(data.path()).is_empty(),
        "{:?}",
        media_leftovers(data.path())
    );
}

#[test]
fn plan_file_parts_run_on_every_target() {
    let (d, a, b) = common::two_dirs();
    let plan = d.path().join("p.toml");
    std::fs::write(
        &plan,
        r#"
[media]
rounds = 2
baseline = "b"

[[experiment]]
rw = "randread"

[[kv]]
engine = "lmdb"
workload = "fillrandom,readrandom"
num = 1000

[[kv]]
name = "rocks"
engine = "rocksdb"
workload = "c"
props = { recordcount = 300, operationcount = 300 }
"#,
    )
    .unwrap();
    let json = d.path().join("p.json");
    let o = iolab(&[
        "kv",
        "-t",
        &s(&a),
        "-t",
        &s(&b),
        "--plan",
        &s(&plan),
        "--quiet",
        "-o",
        &s(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    let (order, names) = common::media_order_and_names(&r);
    assert_eq!(order.len(), 2 * 2 * 4, "2 rounds x 2 targets x 4 phases");
    assert_eq!(
        &names[..4],
        [
            "a r1: lmdb/fillrandom",
            "a r1: lmdb/readrandom",
            "a r1: rocks/ycsb-c.load",
            "a r1: rocks/ycsb-c.run"
        ]
    );
    assert_eq!(r["points"][2]["params"]["part"], "rocks");
    assert_eq!(r["points"][2]["params"]["engine"], "rocksdb");
    let m = &r["analysis"]["media"];
    assert_eq!(m["rows"].as_array().unwrap().len(), 8);
    common::check_media_ratios(m, "b", 2, "ops/s");
    assert!(common::files_in(&a).is_empty() && common::files_in(&b).is_empty());
}

/// Parts that differ in record count (and threads) are drawn as
/// throughput against database size, one line per thread count.
#[test]
fn a_database_size_sweep_is_drawn_per_thread_count() {
    let (d, a, _) = common::two_dirs();
    let plan = d.path().join("p.toml");
    let part = |name: &str, records: u32, threads: u32| {
        format!(
            "[[kv]]\nname = \"{name}\"\nengine = \"rocksdb\"\nworkload = \"c\"\nthreads = {threads}\nprops = {{ recordcount = {records}, operationcount = 600 }}\n"
        )
    };
    let parts = [
        part("small", 300, 1),
        part("large", 1200, 1),
        part("small2", 300, 2),
    ]
    .concat();
    // The file's [media] rounds count on one target, as --rounds does.
    std::fs::write(&plan, format!("[media]\nrounds = 2\n{parts}")).unwrap();
    let json = d.path().join("p.json");
    let o = iolab(&[
        "kv",
        "-t",
        &s(&a),
        "--plan",
        &s(&plan),
        "--quiet",
        "-o",
        &s(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = d.path().join("r.html");
    let o = iolab(&["report", &s(&json), "-o", &s(&html)]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page.find("id=\"kv-size\"").expect("a size chart");
    let section = &page[at..at + page[at..].find("</section>").unwrap()];
    // threads=1 at 300 and 1200 records, threads=2 at 300; two rounds each.
    for (line, records) in [("threads=1", 300), ("threads=1", 1200), ("threads=2", 300)] {
        assert!(
            section.contains(&format!("<td>{line}</td><td>{records}</td>")),
            "{line} {records}: {section}"
        );
    }
    assert_eq!(
        section.matches("<td>2</td></tr>").count(),
        3,
        "2 rounds each: {}",
        &section[section.find("<tbody>").unwrap_or(0)..]
    );
    assert!(section.contains("<title>threads=2</title>"));
}

#[test]
fn bad_input_is_refused_naming_the_field_before_anything_runs() {
    let (d, a, b) = common::two_dirs();
    let file = d.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let missing = s(&d.path().join("missing"));
    let plan = d.path().join("bad.toml");
    std::fs::write(&plan, "[[kv]]\nengine = \"lmdb\"\ntarget = \"/x\"\n").unwrap();
    let json = d.path().join("r.json");
    let two = vec![s(&a), s(&b)];
    let cases: Vec<(Vec<String>, Vec<&str>, &str, String)> = vec![
        (two.clone(), vec!["--db", "/tmp/db"], "--db", String::new()),
        (
            vec![s(&a), missing.clone()],
            vec![],
            "--target",
            missing.clone(),
        ),
        (vec![s(&a), s(&file)], vec![], "--target", s(&file)),
        (
            two.clone(),
            vec!["--rounds", "0"],
            "--rounds",
            String::new(),
        ),
        (
            two.clone(),
            vec!["--baseline", "zz"],
            "--baseline",
            "zz".into(),
        ),
        (two.clone(), vec!["--keep"], "--keep", String::new()),
        (
            two.clone(),
            vec!["--engine", "redis", "--server-url", "redis://127.0.0.1:1/"],
            "--server-url",
            String::new(),
        ),
        (
            two.clone(),
            vec!["--make-in", "/tmp"],
            "--make-in",
            String::new(),
        ),
        (vec![s(&a)], vec!["--make", "raw"], "--make", "raw".into()),
        (
            vec![s(&a)],
            vec!["--rounds", "2"],
            "--rounds",
            String::new(),
        ),
        (vec![s(&a)], vec!["--size", "1g"], "--size", String::new()),
        (
            two.clone(),
            vec!["--plan", plan.to_str().unwrap()],
            "[[kv]] #1 target",
            String::new(),
        ),
        (
            two.clone(),
            vec!["-p", "recordcount=100000000000"],
            "recordcount",
            String::new(),
        ),
    ];
    for (targets, flags, field, value) in cases {
        let mut all: Vec<String> = vec!["kv".into(), "a".into()];
        for t in &targets {
            all.extend(["-t".into(), t.clone()]);
        }
        all.extend(flags.iter().map(|f| f.to_string()));
        all.extend(["-o".into(), s(&json)]);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let o = iolab(&refs);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", text(&o));
        assert!(
            text(&o).contains(field) && text(&o).contains(&value),
            "{all:?}: {}",
            text(&o)
        );
        assert!(common::files_in(&a).is_empty() && common::files_in(&b).is_empty());
        assert!(!json.exists(), "no results file");
    }
}

#[test]
fn a_read_only_target_is_refused_naming_it() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP: mounting a read-only file system needs root");
        return;
    }
    let d = workdir();
    let (a, ro) = (d.path().join("a"), d.path().join("ro"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&ro).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
        .arg(&ro)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("SKIP: cannot mount a tmpfs here");
        return;
    }
    let o = iolab(&["kv", "a", "-t", &s(&a), "-t", &s(&ro), "--dry-run"]);
    let _ = Command::new("umount").arg(&ro).status();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--target")
            && text(&o).contains(&s(&ro))
            && text(&o).contains("writable"),
        "{}",
        text(&o)
    );
}

/// One SIGINT (the run stops after the phase, exit 130) or two 5 ms
/// apart (the teardown at once) at a random moment of a kv run over two
/// configurations (root) or two directories: nothing mounted or attached,
/// no database, scratch directory, temporary file or crash record left.
#[test]
fn sigint_at_random_moments_leaves_nothing() {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let state = workdir();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let targets: Vec<String> = if can_make() {
        vec!["-t".into(), s(&a), "--make".into(), "tmpfs,ext4".into()]
    } else {
        vec!["-t".into(), s(&a), "-t".into(), s(&b)]
    };
    let mut rng = common::Rng::from_env_or_clock();
    let seed = rng.seed;
    for attempt in 0..4 {
        let delay = Duration::from_millis(rng.below(3000));
        let twice = attempt % 2 == 1;
        let json = d.path().join(format!("r{attempt}.json"));
        let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["kv", "a", "--rounds", "2"])
            .args(&targets)
            .args(["-p", "recordcount=20000", "-p", "operationcount=20000"])
            .args(["--quiet", "-o", json.to_str().unwrap()])
            .env("IOLAB_STATE_DIR", state.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let out = common::sigint_and_wait(child, twice);
        let why = common::interrupted_as_expected(&out, seed, delay, twice);
        for x in [&a, &b] {
            assert!(
                media_leftovers(x).is_empty(),
                "{why}: {:?}",
                media_leftovers(x)
            );
        }
        let left = common::stray_files(d.path(), state.path());
        assert!(left.is_empty(), "{why}: {left:?}");
        if json.exists() && !twice {
            let r = common::results(&json);
            assert!(r["points"].as_array().is_some(), "{why}: a readable file");
        }
    }
}

/// The dry run of a kv run over several targets says each step as YCSB
/// and db_bench users name it, never in Rust's debug form (issue 31 item
/// 16: it printed `YcsbLoad("ycsb-a", YcsbConfig { ... })`).
#[test]
fn a_media_dry_run_says_its_steps_in_words() {
    let d = workdir();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let o = iolab(&[
        "kv",
        "a,fillrandom",
        "--engine",
        "rocksdb",
        "-t",
        &s(&a),
        "-t",
        &s(&b),
        "--dry-run",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("ycsb-a load:")
            && out.contains("ycsb-a run:")
            && out.contains("db_bench fillrandom"),
        "{out}"
    );
    for debug in ["YcsbLoad(", "YcsbConfig {", "Bench(", "Some("] {
        assert!(!out.contains(debug), "{debug} in {out}");
    }
}

/// A kv run over several targets with `--memory-limit` keeps each pass's
/// memory cgroup in the merged results (it was dropped with the pass's
/// own results), and the plan's steps in words.
#[test]
fn a_media_run_keeps_each_passs_memory_cgroup() {
    if let Err(why) = iolab::testbed::cgroup::available() {
        eprintln!("SKIP memory cgroups per pass: {why}");
        return;
    }
    let d = workdir();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let json = d.path().join("r.json");
    let o = iolab(&[
        "kv",
        "fillrandom",
        "--engine",
        "lmdb",
        "--num",
        "2000",
        "--memory-limit",
        "256m",
        "--quiet",
        "-t",
        &format!("a={}", s(&a)),
        "-t",
        &format!("b={}", s(&b)),
        "-o",
        &s(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let cgs = r["extra"]["memory_cgroups"]
        .as_array()
        .expect("memory_cgroups");
    let targets: Vec<&str> = cgs.iter().map(|c| c["target"].as_str().unwrap()).collect();
    assert_eq!(targets, ["a", "b"], "{cgs:?}");
    for c in cgs {
        assert_eq!(c["cgroup"]["limit"], 256u64 << 20, "{c}");
    }
    let steps = &r["provenance"]["plan"]["parts"][0]["steps"];
    assert_eq!(steps[0], "db_bench fillrandom", "{steps}");
}
