//! `--verify` through the real binary on scratch files and on `iolab
//! serve`'s NBD export (issue 28 item 9): data never stamped is counted as
//! never written, not as corruption (exit 0); a smaller read inside a
//! larger stamped write verifies; each corrupted 4 KiB unit of one read is
//! its own mismatch at its own offset; a real corruption still exits 3.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{iolab, results, text, workdir};

/// `iolab device ARGS --quiet --json JSON`: its output and, when it wrote
/// one, its first point's `verify` section.
fn verified_run(args: &[&str], json: &Path) -> (std::process::Output, serde_json::Value) {
    let _ = std::fs::remove_file(json);
    let mut all = vec!["device", "--quiet", "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = iolab(&all);
    let v = match json.exists() {
        true => results(json)["points"][0]["verify"].clone(),
        false => serde_json::Value::Null,
    };
    (o, v)
}

fn count(v: &serde_json::Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// Not-quite-random bytes nothing in iolab stamped.
fn foreign_data(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 131 + 7) % 251) as u8 ^ salt)
        .collect()
}

#[test]
fn randrw_verify_on_data_never_stamped_is_no_mismatch() {
    let dir = workdir();
    let json = dir.path().join("v.json");
    for (name, data) in [
        ("zeroes.dat", vec![0u8; 8 << 20]),
        ("foreign.dat", foreign_data(8 << 20, 0x5a)),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, &data).unwrap();
        let (o, v) = verified_run(
            &[
                "--target",
                file.to_str().unwrap(),
                "--overwrite",
                "--rw",
                "randrw",
                "--bs",
                "4k",
                "--qd",
                "8",
                "--verify",
                "--io-count",
                "6000",
            ],
            &json,
        );
        assert!(o.status.success(), "{name}: {}", text(&o));
        assert_eq!(count(&v, "mismatches"), 0, "{name}: {v}");
        assert!(count(&v, "never_written") > 100, "{name}: {v}");
        // Reads of blocks this run wrote earlier are checked.
        assert!(count(&v, "blocks_checked") > 100, "{name}: {v}");
        let shown = iolab(&["report", json.to_str().unwrap(), "--format", "text"]);
        assert!(text(&shown).contains("never written"), "{}", text(&shown));
    }
}

/// Write FILE with 64 KiB stamped blocks (kept).
fn write_64k_stamped(file: &Path, json: &Path) {
    let (o, v) = verified_run(
        &[
            "--target",
            file.to_str().unwrap(),
            "--size",
            "4m",
            "--rw",
            "write",
            "--bs",
            "64k",
            "--verify",
            "--io-count",
            "64",
            "--keep",
        ],
        json,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(count(&v, "mismatches"), 0);
}

fn read_back(
    file: &Path,
    json: &Path,
    bs: &str,
    ios: &str,
) -> (std::process::Output, serde_json::Value) {
    verified_run(
        &[
            "--target",
            file.to_str().unwrap(),
            "--rw",
            "read",
            "--bs",
            bs,
            "--verify",
            "--io-count",
            ios,
        ],
        json,
    )
}

#[test]
fn a_64k_verified_write_reads_back_at_4k() {
    let dir = workdir();
    let file = dir.path().join("v.dat");
    let json = dir.path().join("v.json");
    write_64k_stamped(&file, &json);
    let (o, v) = read_back(&file, &json, "4k", "1024");
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(count(&v, "mismatches"), 0, "{v}");
    assert_eq!(count(&v, "blocks_checked"), 1024, "{v}");
    assert_eq!(count(&v, "never_written"), 0, "{v}");
    // One flipped byte in the payload is still caught, at its 4 KiB unit.
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    let at = (2 << 20) + 12 * 4096;
    f.write_all_at(&[0xee; 1], at + 1000).unwrap();
    drop(f);
    let (o, v) = read_back(&file, &json, "4k", "1024");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(count(&v, "mismatches"), 1, "{v}");
    assert_eq!(v["first_mismatches"][0]["offset"], at);
}

#[test]
fn two_corrupted_units_of_one_64k_read_are_located() {
    let dir = workdir();
    let file = dir.path().join("v.dat");
    let json = dir.path().join("v.json");
    write_64k_stamped(&file, &json);
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    let bad = [(1 << 20) + 2 * 4096, (1 << 20) + 10 * 4096];
    for (i, &at) in bad.iter().enumerate() {
        f.write_all_at(&foreign_data(4096, i as u8), at).unwrap();
    }
    drop(f);
    let (o, v) = read_back(&file, &json, "64k", "64");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(count(&v, "mismatches"), 2, "{v}");
    let offsets: Vec<u64> = v["first_mismatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(offsets, bad);
    assert_eq!(count(&v, "blocks_checked"), 1024, "{v}");
}

/// `iolab serve --protocol nbd` on a free loopback port, stopped on drop.
struct Served {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

fn serve_nbd() -> Served {
    let dir = workdir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["serve", "--protocol", "nbd", "--size", "16m", "-t"])
        .arg(dir.path())
        .args(["--listen", "127.0.0.1:0", "--time-limit", "120s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("nbd://"))
        .unwrap_or_else(|| panic!("iolab serve said {line:?}"))
        .to_string();
    Served {
        child,
        url,
        _dir: dir,
    }
}

/// The NBD case: randrw --verify on an export never written with
/// --verify (2,766 of 4,529 reads were mismatches, exit 3).
#[test]
fn randrw_verify_on_a_fresh_nbd_export_is_no_mismatch() {
    let served = serve_nbd();
    let dir = workdir();
    let json = dir.path().join("n.json");
    let (o, v) = verified_run(
        &[
            "--target",
            &served.url,
            "--size",
            "8m",
            "--overwrite",
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--qd",
            "8",
            "--verify",
            "--io-count",
            "3000",
        ],
        &json,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(count(&v, "mismatches"), 0, "{v}");
    assert!(count(&v, "never_written") > 100, "{v}");
}

/// A block too small for a stamp and its payload verifies nothing: refused
/// before the run (exit 2 naming --bs), no file created.
#[test]
fn verify_refuses_blocks_too_small_for_a_stamp() {
    let dir = workdir();
    let o = iolab(&[
        "device",
        "--target",
        dir.path().to_str().unwrap(),
        "--size",
        "1m",
        "--buffered",
        "--bs",
        "64",
        "--verify",
        "--io-count",
        "10",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--bs"), "{}", text(&o));
    assert!(common::files_in(dir.path()).is_empty());
}
