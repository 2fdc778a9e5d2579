//! No output path can destroy data: results, reports and exports never
//! replace a target file, a device node, a FIFO or a directory; they write
//! into character devices and FIFOs; they replace an existing file only if
//! iolab wrote it or with --force; symlinks are followed; temporary files
//! never stay behind (issue 10, item 4).

mod common;

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::Command;

use common::{iolab, text, workdir};

/// A short null-engine device run writing its results to `json`.
fn null_run(json: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "device",
        "--engine",
        "null",
        "--rw",
        "randread",
        "--runtime",
        "100ms",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    iolab(&args)
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn the_target_file_is_never_the_output() {
    let dir = workdir();
    let data = dir.path().join("data.bin");
    std::fs::write(&data, vec![7u8; 1 << 20]).unwrap();
    let o = iolab(&[
        "device",
        "--target",
        data.to_str().unwrap(),
        "--rw",
        "randread",
        "--runtime",
        "100ms",
        "--json",
        data.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--json"), "{}", text(&o));
    assert_eq!(std::fs::read(&data).unwrap(), vec![7u8; 1 << 20]);
}

#[test]
fn a_directory_is_refused_and_nothing_is_left() {
    let dir = workdir();
    let o = null_run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is a directory"), "{}", text(&o));
    assert!(leftovers(dir.path()).is_empty());
    // What an atomic write "into" the directory would leave beside it.
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let beside: Vec<String> = leftovers(dir.path().parent().unwrap())
        .into_iter()
        .filter(|n| n.starts_with(&format!(".{name}.")))
        .collect();
    assert!(beside.is_empty(), "left beside the directory: {beside:?}");
}

#[test]
fn a_foreign_file_needs_force_and_iolab_files_do_not() {
    let dir = workdir();
    let mine = dir.path().join("notes.json");
    std::fs::write(&mine, "my notes").unwrap();
    let o = null_run(&mine, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--force"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my notes");
    let o = null_run(&mine, &["--force"]);
    assert!(o.status.success(), "{}", text(&o));
    // Now iolab's own results: replaced without --force.
    let o = null_run(&mine, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(common::results(&mine)["schema"] == "iolab-results");
    // Its HTML report is iolab's too; the input is never an output.
    let html = dir.path().join("r.html");
    for _ in 0..2 {
        let o = iolab(&[
            "report",
            mine.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = iolab(&[
        "report",
        mine.to_str().unwrap(),
        "--format",
        "csv",
        "-o",
        mine.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(common::results(&mine)["schema"] == "iolab-results");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_symlink_is_followed_and_stays() {
    let dir = workdir();
    let real = dir.path().join("real.json");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = null_run(&link, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(common::results(&real)["schema"] == "iolab-results");
}

#[test]
fn a_fifo_is_written_into_once() {
    let dir = workdir();
    let fifo = dir.path().join("results.fifo");
    common::mkfifo(&fifo);
    // A reader process, killed if it still waits 10 s after iolab ended
    // (it would, were the FIFO replaced by a file).
    let mut reader = Command::new("cat")
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let o = null_run(&fifo, &["--qd", "1,2"]);
    let start = std::time::Instant::now();
    while reader.try_wait().unwrap().is_none() && start.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = reader.kill();
    let got = String::from_utf8(reader.wait_with_output().unwrap().stdout).unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(got.matches("\"schema\"").count(), 1, "one document: {got}");
    let v: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["points"].as_array().unwrap().len(), 2);
}

#[test]
fn a_character_device_is_written_into_not_replaced() {
    // SAFETY: plain getter.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP char device output: mknod needs root");
        return;
    }
    let dir = workdir();
    let null = dir.path().join("null");
    let c = std::ffi::CString::new(null.to_str().unwrap()).unwrap();
    // A private /dev/null (char 1:3), so a regression cannot break the real one.
    // SAFETY: a NUL-terminated path.
    let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    if made != 0 {
        eprintln!("SKIP char device output: mknod failed here");
        return;
    }
    let o = null_run(&null, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let ft = std::fs::metadata(&null).unwrap().file_type();
    assert!(ft.is_char_device(), "the device node was replaced");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn kv_checks_its_output_before_it_runs() {
    let dir = workdir();
    let foreign = dir.path().join("keep.txt");
    std::fs::write(&foreign, "keep").unwrap();
    let o = iolab(&[
        "kv",
        "a",
        "--engine",
        "null",
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=100",
        "--dir",
        dir.path().to_str().unwrap(),
        "-o",
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!text(&o).contains("[OVERALL]"), "it ran: {}", text(&o));
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "keep");
}

#[test]
fn a_full_filesystem_leaves_no_temporary_file() {
    // SAFETY: plain getter.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP full filesystem: mounting a tmpfs needs root");
        return;
    }
    let dir = workdir();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let m = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8k", "tmpfs"])
        .arg(&small)
        .status()
        .unwrap();
    if !m.success() {
        eprintln!("SKIP full filesystem: cannot mount a tmpfs");
        return;
    }
    let out = small.join("results.json");
    let o = null_run(&out, &["--qd", "1,2,4,8"]);
    let left = leftovers(&small);
    let _ = Command::new("umount").arg(&small).status();
    assert!(!o.status.success(), "8 KiB cannot hold the results");
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// Typos must not do something (issue 10, item 7).
#[test]
fn a_mistyped_trace_directory_creates_nothing() {
    let dir = workdir();
    let missing = dir.path().join("nonexistent");
    let o = iolab(&["trace", "--dir", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--dir"), "{}", text(&o));
    assert!(
        !missing.exists(),
        "a file was created at {}",
        missing.display()
    );
}

#[test]
fn a_dry_run_makes_the_target_checks_of_the_real_run() {
    let dir = workdir();
    let data = dir.path().join("data.bin");
    std::fs::write(&data, vec![1u8; 1 << 20]).unwrap();
    for dry in [true, false] {
        let mut args = vec![
            "device",
            "--target",
            data.to_str().unwrap(),
            "--rw",
            "randwrite",
            "--runtime",
            "100ms",
        ];
        if dry {
            args.push("--dry-run");
        }
        let o = iolab(&args);
        assert_eq!(o.status.code(), Some(2), "dry {dry}: {}", text(&o));
        assert!(text(&o).contains("--overwrite"), "dry {dry}: {}", text(&o));
    }
    assert_eq!(std::fs::read(&data).unwrap(), vec![1u8; 1 << 20]);
}

#[test]
fn a_bare_relative_new_file_is_a_scratch_target() {
    let dir = workdir();
    let json = dir.path().join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .current_dir(dir.path())
        .args([
            "device", "--target", "data.bin", "--size", "4m", "--rw", "randread",
        ])
        .args([
            "--io-count",
            "100",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !dir.path().join("data.bin").exists(),
        "scratch file removed"
    );
}

#[test]
fn a_fifo_nobody_reads_is_given_up_on_saying_why() {
    let dir = workdir();
    let fifo = dir.path().join("unread.fifo");
    common::mkfifo(&fifo);
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["device", "--engine", "null", "--rw", "randread"])
        .args(["--runtime", "100ms", "--quiet", "--json"])
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Without a reader, opening the FIFO blocked for ever; a generous ceiling.
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let ended = child.try_wait().unwrap().is_some();
    if !ended {
        let _ = child.kill();
    }
    let o = child.wait_with_output().unwrap();
    assert!(ended, "still waiting for a reader: {}", text(&o));
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("unread.fifo") && text(&o).contains("nobody read"),
        "{}",
        text(&o)
    );
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

/// An output in a directory iolab cannot write (no permission, a
/// read-only file system) is bad input, refused before the run (exit 2
/// naming the flag), not a failure after the measurement (exit 1).
#[test]
fn an_unwritable_output_directory_is_refused_before_the_run() {
    use std::os::unix::process::CommandExt;
    // SAFETY: plain getter.
    let root = unsafe { libc::geteuid() } == 0;
    let dir = workdir();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let mut unwritable = vec![locked.clone()];
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mounted = root
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"])
            .arg(&ro)
            .status()
            .is_ok_and(|s| s.success());
    if mounted {
        unwritable.push(ro.clone());
    } else {
        eprintln!("SKIP read-only file system: cannot mount a tmpfs");
    }
    let mut failures = Vec::new();
    for d in &unwritable {
        for (verb, flag, named) in [("device", "--json", "--json"), ("kv", "-o", "--output")] {
            let out = d.join("r.json");
            let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
            match verb {
                "device" => c.args(["device", "--engine", "null", "--runtime", "100ms"]),
                _ => c.args(["kv", "a", "--engine", "null", "-p", "recordcount=10"]),
            };
            c.args([flag, out.to_str().unwrap(), "--quiet"]);
            c.env("IOLAB_STATE_DIR", dir.path().join("state"));
            if root && d == &locked {
                // Root may write anywhere: the permission is tested as nobody.
                c.uid(65534).env("TMPDIR", "/tmp");
                c.current_dir("/tmp");
            }
            let o = c.output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            if o.status.code() != Some(2) || !err.contains(&format!("error: {named}:")) {
                failures.push(format!(
                    "{verb} {flag} {}: {:?} {err}",
                    out.display(),
                    o.status
                ));
            }
        }
    }
    if mounted {
        let _ = Command::new("umount").arg(&ro).status();
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
