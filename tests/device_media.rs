//! `iolab device --make`: the same jobs on configurations iolab builds,
//! interleaved by rounds in alternating order, one results file with the
//! configuration and round on every point and the ratios to the baseline;
//! bad input refused with exit 2 naming the field; nothing left after the
//! run or after SIGINT (no mount, loop device or scratch directory).
//! Needs root and the mkfs tools; skipped with the reason otherwise.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

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
    let d = dir.to_str().unwrap();
    let mut out: Vec<String> = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains(d))
        .map(String::from)
        .collect();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let back = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        if back.starts_with(d) {
            out.push(back);
        }
    }
    out.extend(
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path().display().to_string()),
    );
    out
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
