//! Media runs of `iolab device`: the same jobs on configurations iolab
//! builds (`--make`) and on several targets of the user's own (`--target`
//! given several times), interleaved by rounds in alternating order, one
//! results file with the target and round on every point and the ratios
//! to the baseline; bad input refused with exit 2 naming the field before
//! anything runs; nothing left after the run or after SIGINT (no mount,
//! loop device, scratch directory or scratch file). The `--make` tests
//! need root and the mkfs tools, the block-device test root and the loop
//! driver; they are skipped with the reason otherwise.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::loopdev::LoopDev;
use common::{iolab, text, workdir};

fn usable() -> bool {
    let ok = unsafe { libc::geteuid() } == 0 && common::have("mkfs.xfs");
    if !ok {
        eprintln!("SKIP: needs root and mkfs.xfs (scripts/install-deps.sh)");
    }
    ok
}

/// Mounts and loop devices under `dir`, and what is left in it.
fn leftovers(dir: &Path) -> Vec<String> {
    common::media_leftovers(dir)
}

#[test]
fn configurations_side_by_side_interleaved_by_rounds() {
    if !usable() {
        return;
    }
    let data = tempfile::tempdir_in("/var/tmp").unwrap();
    let out = workdir();
    let json = out.path().join("m.json");
    let o = iolab(&[
        "device",
        "-t",
        data.path().to_str().unwrap(),
        "--make",
        "ext4,xfs,raw",
        "--rounds",
        "2",
        "--baseline",
        "xfs",
        "--size",
        "64m",
        "--rw",
        "randread",
        "--qd",
        "1,4",
        "--runtime",
        "200ms",
        "--ramp",
        "0",
        "--quiet",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    let order: Vec<(String, String)> = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["params"]["round"].as_str().unwrap().into(),
                p["params"]["medium"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("1", "ext4"),
        ("1", "ext4"),
        ("1", "xfs"),
        ("1", "xfs"),
        ("1", "raw"),
        ("1", "raw"),
        ("2", "raw"),
        ("2", "raw"),
        ("2", "xfs"),
        ("2", "xfs"),
        ("2", "ext4"),
        ("2", "ext4"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(order, want, "A B C, then C B A");
    let media = &r["extra"]["media"];
    assert_eq!(media["baseline"], "xfs");
    assert_eq!(media["configurations"].as_array().unwrap().len(), 3);
    let rows = media["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "two jobs x three configurations: {rows:?}");
    for row in rows {
        let v = row["vs_baseline"].as_f64().unwrap();
        assert!(v > 0.0, "{row}");
        if row["medium"] == "xfs" {
            assert_eq!(v, 1.0);
        }
        assert!(row["vs_min"].as_f64().unwrap() <= v && v <= row["vs_max"].as_f64().unwrap());
    }
    assert!(
        leftovers(data.path()).is_empty(),
        "{:?}",
        leftovers(data.path())
    );
}

#[test]
fn bad_make_input_is_refused_naming_the_field() {
    let d = workdir();
    let t = d.path().to_str().unwrap();
    for (args, field) in [
        (vec!["--make", "ext4,zfs"], "--make"),
        (vec!["--make", "ext4,ext4"], "--make"),
        (vec!["--make", "ext4", "--baseline", "xfs"], "--baseline"),
        (vec!["--make", "ext4", "--rounds", "0"], "--rounds"),
        (vec!["--rounds", "3"], "--rounds"),
        (vec!["--make", "ext4", "--rate", "1000"], "--make"),
    ] {
        let mut all = vec!["device", "-t", t, "--dry-run"];
        all.extend_from_slice(&args);
        let o = iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(field), "{args:?}: {}", text(&o));
    }
}

#[test]
fn sigint_while_measuring_leaves_nothing() {
    if !usable() {
        return;
    }
    let data = tempfile::tempdir_in("/var/tmp").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "device",
            "-t",
            data.path().to_str().unwrap(),
            "--make",
            "ext4,btrfs,tmpfs",
        ])
        .args([
            "--size",
            "64m",
            "--rw",
            "randread",
            "--runtime",
            "2s",
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(matches!(status.code(), Some(130) | Some(0)), "{status:?}");
    assert!(
        leftovers(data.path()).is_empty(),
        "{:?}",
        leftovers(data.path())
    );
}

#[test]
fn two_directories_and_a_file_in_one_run() {
    let (d, a, b) = common::two_dirs();
    let file = d.path().join("img");
    std::fs::write(&file, vec![7u8; 8 << 20]).unwrap();
    let json = d.path().join("m.json");
    let fast = format!("fast={}", b.display());
    let o = iolab(&[
        "device",
        "-t",
        a.to_str().unwrap(),
        "-t",
        &fast,
        "-t",
        file.to_str().unwrap(),
        "--rounds",
        "3",
        "--baseline",
        "fast",
        "--size",
        "8m",
        "--rw",
        "randread,read",
        "--runtime",
        "100ms",
        "--quiet",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    let (order, names) = common::media_order_and_names(&r);
    let mut want = Vec::new();
    for (round, labels) in [
        ("1", ["a", "fast", "img"]),
        ("2", ["img", "fast", "a"]),
        ("3", ["a", "fast", "img"]),
    ] {
        for l in labels {
            for _ in 0..2 {
                want.push((round.to_string(), l.to_string()));
            }
        }
    }
    assert_eq!(order, want, "A B C, C B A, A B C; two jobs per target");
    assert_eq!(names[0], "a r1: randread-4k-qd1-io_uring");
    assert_eq!(names[7], "img r2: read-4k-qd1-io_uring");
    let m = &r["analysis"]["media"];
    assert_eq!(m["baseline"], "fast");
    assert_eq!(m["rounds"], 3);
    assert_eq!(m["targets"], serde_json::json!(["a", "fast", "img"]));
    let rows = m["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "{rows:?}");
    for row in rows {
        assert_eq!(row["paired_rounds"], 3, "{row}");
        let v = row["vs_baseline"].as_f64().unwrap();
        if row["target"] == "fast" {
            assert_eq!(v, 1.0);
        }
        assert!(row["vs_min"].as_f64().unwrap() <= v && v <= row["vs_max"].as_f64().unwrap());
    }
    let targets = r["extra"]["media"]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 3);
    assert_eq!(targets[2]["kind"], "existing_file");
    assert_eq!(r["extra"]["media"]["rows"].as_array().unwrap().len(), 6);
    let overhead = &r["extra"]["media"]["overhead"];
    let measured = overhead["measured_s"].as_f64().unwrap();
    assert!(
        measured >= 0.9 * 18.0 * 0.1,
        "18 points of 100 ms: {overhead}"
    );
    assert!(
        overhead["wall_s"].as_f64().unwrap() >= measured,
        "{overhead}"
    );
    assert!(
        overhead["share_of_measured"].as_f64().is_some(),
        "{overhead}"
    );
    // The scratch files are gone; the file is untouched.
    assert!(common::files_in(&a).is_empty() && common::files_in(&b).is_empty());
    assert_eq!(std::fs::read(&file).unwrap(), vec![7u8; 8 << 20]);
}

#[test]
fn a_bad_target_among_several_is_refused_before_anything_runs() {
    let d = workdir();
    let a = d.path().join("a");
    std::fs::create_dir_all(&a).unwrap();
    let file = d.path().join("img");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    let at = |p: &Path| p.to_str().unwrap().to_string();
    let missing = at(&d.path().join("missing"));
    let json = d.path().join("r.json");
    for (args, field, value) in [
        (vec![at(&a), missing.clone()], "--target", missing.clone()),
        // Writes to a file iolab did not create need --overwrite.
        (vec![at(&a), at(&file)], "--target", at(&file)),
        (
            vec![at(&a), "x y=/tmp".into()],
            "--target",
            "x y=/tmp".into(),
        ),
        (vec![at(&a), format!("s={}", at(&a))], "--target", at(&a)),
    ] {
        let mut all: Vec<String> = [
            "device",
            "--rw",
            "randwrite",
            "--size",
            "1m",
            "--runtime",
            "100ms",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for t in &args {
            all.extend(["-t".to_string(), t.clone()]);
        }
        all.extend(["-o".into(), at(&json)]);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let o = iolab(&refs);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains(field) && text(&o).contains(&value),
            "{args:?}: {}",
            text(&o)
        );
        assert!(common::files_in(&a).is_empty(), "nothing was created");
        assert!(!json.exists(), "no results file");
    }
    let t = at(&a);
    for (args, field) in [
        (vec!["-t", &t, "-t", "/tmp", "--make", "ext4"], "--make-in"),
        (
            vec!["-t", &t, "-t", "/tmp", "--baseline", "zz"],
            "--baseline",
        ),
        (vec!["-t", &t, "-t", "/tmp", "--rate", "100"], "--target"),
        (vec!["-t", &t, "-t", "/tmp", "--breakdown"], "--breakdown"),
        (vec!["-t", &t, "--make-in", "/tmp"], "--make-in"),
        (
            vec!["-t", &t, "-t", "/tmp", "--destroy-data", "/dev/null"],
            "--destroy-data",
        ),
    ] {
        let mut all = vec!["device", "--dry-run"];
        all.extend_from_slice(&args);
        let o = iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(field), "{args:?}: {}", text(&o));
    }
}

#[test]
fn dry_run_prints_the_targets_and_the_round_order() {
    let d = workdir();
    let t = d.path().to_str().unwrap();
    let o = iolab(&[
        "device",
        "-t",
        t,
        "-t",
        "tmp=/tmp",
        "--rounds",
        "2",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let label = d.path().file_name().unwrap().to_str().unwrap();
    assert!(out.contains(&format!("round 1: {label} tmp")), "{out}");
    assert!(out.contains(&format!("round 2: tmp {label}")), "{out}");
    assert!(out.contains("baseline "), "{out}");
    assert!(common::files_in(d.path()).is_empty());
}

#[test]
fn a_block_device_among_the_targets_needs_destroy_data_for_writes() {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let backing = d.path().join("backing.img");
    std::fs::write(&backing, vec![0u8; 16 << 20]).unwrap();
    let lo = match LoopDev::attach(&backing, &[]) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("SKIP: {why}");
            return;
        }
    };
    let dir = d.path().join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    let dev = lo.dev.to_str().unwrap();
    let base = [
        "device",
        "--rw",
        "randwrite",
        "--size",
        "8m",
        "--runtime",
        "100ms",
        "--quiet",
    ];
    let targets = ["-t", dir.to_str().unwrap(), "-t", dev];
    let mut args: Vec<&str> = base.iter().chain(&targets).copied().collect();
    let o = iolab(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--target")
            && text(&o).contains("--destroy-data")
            && text(&o).contains(dev),
        "{}",
        text(&o)
    );
    assert!(common::files_in(&dir).is_empty());
    // Reads need nothing; writes run with --destroy-data naming it.
    let reads: Vec<&str> = args
        .iter()
        .map(|a| if *a == "randwrite" { "randread" } else { a })
        .collect();
    let o = iolab(&reads);
    assert!(o.status.success(), "{}", text(&o));
    let json = d.path().join("r.json");
    args.extend(["--destroy-data", dev, "-o", json.to_str().unwrap()]);
    let o = iolab(&args);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    let label = lo.name();
    assert!(r["points"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["params"]["medium"] == label.as_str()));
    assert!(common::files_in(&dir).is_empty(), "scratch file removed");
    // A mounted device is refused, --destroy-data or not, before anything runs.
    let backing2 = d.path().join("backing2.img");
    std::fs::write(&backing2, vec![0u8; 32 << 20]).unwrap();
    let mut mounted = LoopDev::attach(&backing2, &[]).unwrap();
    if let Err(why) = mounted.mount(&d.path().join("mnt")) {
        eprintln!("SKIP the mounted case: {why}");
        return;
    }
    let dev2 = mounted.dev.to_str().unwrap();
    let mut args: Vec<&str> = base.iter().chain(&targets).copied().collect();
    args.extend(["-t", dev2, "--destroy-data", dev, "--destroy-data", dev2]);
    let o = iolab(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--target") && text(&o).contains(dev2),
        "{}",
        text(&o)
    );
    assert!(common::files_in(&dir).is_empty());
}

/// One SIGINT (the run stops after its point, exit 130) or two 5 ms
/// apart (the teardown at once; the exit code is then whatever the
/// interrupted step returns) at a random moment of a run over three
/// targets: no scratch file, temporary results file or crash record left.
#[test]
fn sigint_at_random_moments_of_a_multi_target_run_leaves_nothing() {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let state = workdir();
    let dirs: Vec<_> = ["a", "b", "c"].iter().map(|n| d.path().join(n)).collect();
    for x in &dirs {
        std::fs::create_dir_all(x).unwrap();
    }
    let mut rng = common::Rng::from_env_or_clock();
    let seed = rng.seed;
    for attempt in 0..4 {
        let delay = Duration::from_millis(rng.below(2500));
        let twice = attempt % 2 == 1;
        let json = d.path().join(format!("r{attempt}.json"));
        let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .arg("device")
            .args(
                dirs.iter()
                    .flat_map(|p| ["-t".to_string(), p.display().to_string()]),
            )
            .args([
                "--rw",
                "randwrite",
                "--size",
                "32m",
                "--runtime",
                "300ms",
                "--rounds",
                "2",
            ])
            .args(["--quiet", "-o", json.to_str().unwrap()])
            .env("IOLAB_STATE_DIR", state.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let out = common::sigint_and_wait(child, twice);
        let why = common::interrupted_as_expected(&out, seed, delay, twice);
        for x in &dirs {
            assert!(
                common::files_in(x).is_empty(),
                "{why}: {:?}",
                common::files_in(x)
            );
        }
        let left = common::stray_files(d.path(), state.path());
        assert!(left.is_empty(), "{why}: {left:?}");
    }
}
