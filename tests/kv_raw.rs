//! LMDB on a raw block device (the Symas study's "raw" row): `kv --make
//! raw,ext4` runs LMDB on iolab's loop device beside ext4 and verifies
//! every value read; a device given as `--target` runs with
//! `--destroy-data` naming it, and is refused (exit 2, nothing written)
//! without it, naming another device, or while it is mounted; other
//! engines on raw keep the refusal; an interrupted run leaves no lock
//! directory and frees the device. Loop devices need root and the loop
//! driver: the tests check and skip with the reason where they are absent.

mod common;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::loopdev::LoopDev;
use common::{iolab, media_leftovers, text, workdir};

const BACKING: u64 = 64 << 20;

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// A loop device over a 64 MiB file of a known pattern (detached on drop,
/// also when the test fails), or why there cannot be one here.
fn device(dir: &Path) -> Option<LoopDev> {
    let backing = dir.join("backing.img");
    let f = std::fs::File::create(&backing).unwrap();
    f.write_all_at(&pattern(BACKING as usize), 0).unwrap();
    f.sync_all().unwrap();
    match LoopDev::attach(&backing, &[]) {
        Ok(lo) => Some(lo),
        Err(why) => {
            eprintln!("SKIP: {why}");
            None
        }
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

/// The device's first 64 KiB: what a refused run must leave as it was.
fn head(dev: &Path) -> Vec<u8> {
    let f = std::fs::File::open(dev).unwrap();
    let mut b = vec![0u8; 64 << 10];
    f.read_exact_at(&mut b, 0).unwrap();
    b
}

/// Run iolab, returning its output and pid (for the scratch directory
/// `iolab-kv-lmdb-PID` it must not leave in the temporary directory).
fn run(args: &[&str]) -> (std::process::Output, u32) {
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

fn scratch_left(pid: u32) -> bool {
    std::env::temp_dir()
        .join(format!("iolab-kv-lmdb-{pid}"))
        .exists()
}

/// Every point verified its reads and found no mismatch; the reads found
/// some values to check.
fn verified(r: &serde_json::Value) {
    let mut checked = 0;
    for p in r["points"].as_array().unwrap() {
        assert_eq!(p["verify"]["mismatches"], 0, "{}", p["name"]);
        checked += p["verify"]["blocks_checked"].as_u64().unwrap();
    }
    assert!(checked > 0, "readrandom checked values");
}

#[test]
fn make_raw_and_ext4_run_lmdb_on_both_and_verify_values() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !common::have("mkfs.ext4") {
        eprintln!("SKIP: --make needs root and mkfs.ext4 (scripts/install-deps.sh)");
        return;
    }
    let (d, out) = (workdir(), workdir());
    let json = out.path().join("kv.json");
    let (o, pid) = run(&[
        "kv",
        "fillrandom,readrandom",
        "--engine",
        "lmdb",
        "--num",
        "3000",
        "-t",
        &s(d.path()),
        "--make",
        "raw,ext4",
        "--rounds",
        "2",
        "-o",
        &s(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    let names: Vec<&str> = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for want in [
        "raw r1: fillrandom",
        "raw r2: readrandom",
        "ext4 r1: readrandom",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    verified(&r);
    let targets = r["extra"]["media"]["targets"].as_array().unwrap();
    assert_eq!(targets[0]["label"], "raw");
    assert_eq!(targets[0]["kind"], "block_device");
    assert!(targets[0]["filesystem"].is_null());
    assert_eq!(targets[1]["filesystem"], "ext4");
    let raw_point = &r["points"][0];
    assert_eq!(raw_point["params"]["medium"], "raw");
    assert!(
        r["analysis"]["media"].to_string().contains("raw"),
        "the raw setup is normalized like the others"
    );
    assert!(
        media_leftovers(d.path()).is_empty(),
        "{:?}",
        media_leftovers(d.path())
    );
    assert!(!scratch_left(pid), "the lock directory is removed");
}

#[test]
fn a_given_device_runs_with_destroy_data_naming_it() {
    let d = workdir();
    let Some(lo) = device(d.path()) else { return };
    let dev = s(&lo.dev);
    // Twice: the second run starts a fresh environment over the first's.
    for round in 0..2 {
        let json = d.path().join(format!("kv{round}.json"));
        let (o, pid) = run(&[
            "kv",
            "fillrandom,readrandom",
            "--engine",
            "lmdb",
            "--num",
            "2000",
            "--threads",
            "2",
            "-t",
            &dev,
            "--destroy-data",
            &dev,
            "-o",
            &s(&json),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let r = common::results(&json);
        verified(&r);
        assert_eq!(r["points"][0]["ops"]["write"]["ops"], 2000);
        assert_eq!(r["provenance"]["target"]["kind"], "block_device");
        assert_eq!(r["provenance"]["target"]["path"], dev.as_str());
        assert!(r["provenance"]["target"]["filesystem"].is_null());
        assert!(!scratch_left(pid), "the lock directory is removed");
    }
    assert_ne!(head(&lo.dev), pattern(64 << 10), "LMDB wrote on the device");
}

#[test]
fn a_device_not_named_by_destroy_data_is_refused_and_left_as_it_was() {
    let d = workdir();
    let Some(lo) = device(d.path()) else { return };
    let Some(other) = device(&{
        let o = d.path().join("other");
        std::fs::create_dir(&o).unwrap();
        o
    }) else {
        return;
    };
    let dev = s(&lo.dev);
    let before = head(&lo.dev);
    let json = d.path().join("kv.json");
    let other_dev = s(&other.dev);
    let cases: [(&[&str], &str); 3] = [
        (&[], "--destroy-data"),
        (&["--destroy-data", &other_dev], "--destroy-data"),
        (&["--destroy-data", &dev, "--mmap"], "--mmap"),
    ];
    for (flags, field) in cases {
        for dry in [false, true] {
            let mut args = vec![
                "kv",
                "fillrandom",
                "--engine",
                "lmdb",
                "--num",
                "1000",
                "-t",
                &dev,
                "-o",
            ];
            let out = s(&json);
            args.push(&out);
            args.extend_from_slice(flags);
            if dry {
                args.push("--dry-run");
            }
            let (o, pid) = run(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains(field), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{err}");
            assert!(!json.exists(), "no results file");
            assert!(!scratch_left(pid));
        }
    }
    assert_eq!(head(&lo.dev), before, "nothing written on the device");
    assert_eq!(head(&other.dev), pattern(64 << 10));
}

#[test]
fn a_mounted_device_is_refused() {
    let d = workdir();
    let Some(mut lo) = device(d.path()) else {
        return;
    };
    if !common::have("mkfs.ext4") {
        eprintln!("SKIP: needs mkfs.ext4 (scripts/install-deps.sh)");
        return;
    }
    let mnt: PathBuf = d.path().join("mnt");
    lo.mount(&mnt).unwrap();
    std::fs::write(mnt.join("keep.txt"), "the user's").unwrap();
    let dev = s(&lo.dev);
    let (o, _) = run(&[
        "kv",
        "fillrandom",
        "--engine",
        "lmdb",
        "--num",
        "1000",
        "-t",
        &dev,
        "--destroy-data",
        &dev,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--destroy-data") && err.contains("mounted"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(mnt.join("keep.txt")).unwrap(),
        "the user's"
    );
}

#[test]
fn other_engines_keep_the_refusal_on_raw() {
    let d = workdir();
    // --make raw: refused before anything is built (no root needed).
    let json = d.path().join("kv.json");
    let o = iolab(&[
        "kv",
        "fillrandom",
        "--engine",
        "rocksdb",
        "--num",
        "1000",
        "-t",
        &s(d.path()),
        "--make",
        "raw,ext4",
        "-o",
        &s(&json),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--make") && err.contains("rocksdb") && err.contains("lmdb"),
        "{err}"
    );
    assert!(common::files_in(d.path()).is_empty(), "nothing made");
    // A given device, even with --destroy-data naming it.
    let Some(lo) = device(d.path()) else { return };
    let dev = s(&lo.dev);
    let before = head(&lo.dev);
    for engine in ["rocksdb", "sqlite"] {
        let o = iolab(&[
            "kv",
            "fillrandom",
            "--engine",
            engine,
            "--num",
            "1000",
            "-t",
            &dev,
            "--destroy-data",
            &dev,
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--engine") && err.contains(engine), "{err}");
    }
    assert_eq!(head(&lo.dev), before, "nothing written on the device");
}

#[test]
fn a_plan_files_raw_runs_lmdb_parts_and_is_left_out_beside_other_engines() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !common::have("mkfs.ext4") {
        eprintln!("SKIP: --make needs root and mkfs.ext4 (scripts/install-deps.sh)");
        return;
    }
    let d = workdir();
    let part = |name: &str| {
        format!("[[kv]]\nname = \"{name}\"\nengine = \"{name}\"\nworkload = [\"fillrandom\"]\nnum = 1000\n")
    };
    let media = "[media]\nmake = [\"raw\", \"ext4\"]\n";
    for (parts, raw_runs) in [
        (part("lmdb"), true),
        (part("lmdb") + &part("rocksdb"), false),
    ] {
        let plan = d.path().join("plan.toml");
        std::fs::write(&plan, format!("{media}\n{parts}")).unwrap();
        let o = iolab(&["kv", "-t", &s(d.path()), "--plan", &s(&plan), "--dry-run"]);
        assert!(o.status.success(), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(out.contains("raw left out"), !raw_runs, "{out}");
        assert_eq!(out.contains("round 1: raw ext4"), raw_runs, "{out}");
    }
}

#[test]
fn an_interrupted_run_on_a_device_leaves_nothing_behind() {
    let d = workdir();
    let Some(lo) = device(d.path()) else { return };
    let dev = s(&lo.dev);
    for (delay_ms, twice) in [(300, false), (700, true), (1200, false)] {
        let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args([
                "kv",
                "fillrandom",
                "--engine",
                "lmdb",
                "--sync",
                "--num",
                "50000",
            ])
            .args(["-q", "-t", &dev, "--destroy-data", &dev])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let o = common::sigint_and_wait(child, twice);
        let why = common::interrupted_as_expected(
            &o,
            0,
            std::time::Duration::from_millis(delay_ms),
            twice,
        );
        assert!(!scratch_left(pid), "the lock directory is removed: {why}");
    }
    // The device is free again: O_EXCL held by none of those runs.
    let (o, _) = run(&[
        "kv",
        "fillrandom",
        "--engine",
        "lmdb",
        "--num",
        "500",
        "-q",
        "-t",
        &dev,
        "--destroy-data",
        &dev,
    ]);
    assert!(o.status.success(), "{}", text(&o));
}
