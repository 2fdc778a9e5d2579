//! Full disks: `iolab kv` filling a 64 MiB tmpfs (or ext4) ends with exit
//! 1 and an error naming the file system and how full it is, keeps the
//! phases measured before in the results file and leaves nothing on it;
//! never RocksDB's abort (exit 134) or LMDB's SIGBUS through its map
//! (exit 135). Root only: each test mounts its own file system.

mod common;

use common::{results, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A small file system of its own (tmpfs, or ext4 on a loop device),
/// unmounted on drop (also when a test panics).
struct SmallFs {
    dir: tempfile::TempDir,
    mnt: PathBuf,
    fstype: &'static str,
}

impl SmallFs {
    /// A 64 MiB tmpfs, or `None` (said as SKIP) where this cannot run.
    fn tmpfs(test: &str) -> Option<SmallFs> {
        SmallFs::mount(test, "tmpfs", |_, mnt| {
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"])
                .arg(mnt)
                .status()
        })
    }

    /// ext4 on a 64 MiB file through a loop device (`mount -o loop`
    /// detaches it at the unmount), or `None` (SKIP).
    fn ext4(test: &str) -> Option<SmallFs> {
        SmallFs::mount(test, "ext4", |dir, mnt| {
            let img = dir.join("ext4.img");
            std::fs::File::create(&img)?.set_len(64 << 20)?;
            let made = Command::new("mkfs.ext4")
                .args(["-q", "-F"])
                .arg(&img)
                .status()?;
            if !made.success() {
                return Ok(made);
            }
            Command::new("mount")
                .args(["-o", "loop"])
                .arg(&img)
                .arg(mnt)
                .status()
        })
    }

    fn mount(
        test: &str,
        fstype: &'static str,
        mount: impl FnOnce(&Path, &Path) -> std::io::Result<std::process::ExitStatus>,
    ) -> Option<SmallFs> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("SKIP {test}: not root (mounts a {fstype})");
            return None;
        }
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        if !mount(dir.path(), &mnt).is_ok_and(|s| s.success()) {
            eprintln!("SKIP {test}: mounting a {fstype} failed here");
            return None;
        }
        Some(SmallFs { dir, mnt, fstype })
    }

    fn out(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// What is left on the file system (ext4's lost+found aside).
    fn left(&self) -> Vec<PathBuf> {
        let mut left = common::files_in(&self.mnt);
        left.retain(|p| !p.ends_with("lost+found"));
        left
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
    }
}

/// YCSB workload D as a fill: a load of 4000 records of 4000 bytes
/// (16 MB, which fits), then a run of nothing but inserts, 30,000 more
/// records (120 MB), which cannot.
fn fill(engine: &str, target: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.args(["kv", "d", "--engine", engine, "--threads", "1"]);
    for p in [
        "recordcount=4000",
        "operationcount=30000",
        "readproportion=0",
        "insertproportion=1",
        "fieldcount=1",
        "fieldlength=4000",
    ] {
        c.args(["-p", p]);
    }
    c.arg("--target").arg(target).arg("-o").arg(out).args(extra);
    c
}

/// Exit 1 (no signal), the error naming the tmpfs as full, the load's
/// point kept, nothing left.
fn assert_full_disk(fs: &SmallFs, o: &Output, out: &Path, what: &str) {
    let all = text(o);
    assert_eq!(o.status.code(), Some(1), "{what}: {:?}\n{all}", o.status);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let named = format!("the file system of {} ({} on ", fs.mnt.display(), fs.fstype);
    assert!(
        stderr.contains(&named) && stderr.contains(" is full") && stderr.contains(" MiB used"),
        "{what}: no '{named} ... is full ... MiB used' in:\n{stderr}"
    );
    assert_eq!(point_names(out), ["ycsb-d.load"], "{what}");
    assert_eq!(results(out)["complete"], false, "{what}");
    assert!(fs.left().is_empty(), "{what}: left {:?}", fs.left());
}

/// The names of the points in the results file `out`.
fn point_names(out: &Path) -> Vec<String> {
    results(out)["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect()
}

fn full_disk(test: &str, engine: &str, extra: &[&str]) {
    if let Some(fs) = SmallFs::tmpfs(test) {
        fill_to_the_end(&fs, test, engine, extra);
    }
}

fn fill_to_the_end(fs: &SmallFs, test: &str, engine: &str, extra: &[&str]) {
    let out = fs.out("r.json");
    let o = fill(engine, &fs.mnt, &out, extra).output().unwrap();
    assert_full_disk(fs, &o, &out, test);
}

#[test]
fn rocksdb_stops_before_its_wal_meets_a_full_disk() {
    full_disk("rocksdb_full_disk", "rocksdb", &[]);
}

/// On ext4 a preallocation (fallocate) RocksDB cannot have keeps the
/// blocks it got: the disk is full at once, and RocksDB's next write of
/// its info LOG aborted the process.
#[test]
fn rocksdb_on_a_small_ext4_stops_cleanly() {
    if let Some(fs) = SmallFs::ext4("rocksdb_ext4_full_disk") {
        fill_to_the_end(&fs, "rocksdb_ext4_full_disk", "rocksdb", &[]);
    }
}

#[test]
fn lmdb_says_which_file_system_is_full() {
    full_disk("lmdb_full_disk", "lmdb", &[]);
}

/// The map reserved on disk: LMDB's map fills, not the disk under it.
#[test]
fn lmdb_writing_through_a_reserved_map_ends_without_sigbus() {
    full_disk(
        "lmdb_mmap_full_disk",
        "lmdb",
        &["--mmap", "--map-size", "60m"],
    );
}

/// A map the file system cannot hold is refused before anything is made.
#[test]
fn lmdb_mmap_with_a_map_larger_than_the_disk_is_refused() {
    let Some(fs) = SmallFs::tmpfs("lmdb_mmap_refused") else {
        return;
    };
    let out = fs.out("r.json");
    let o = fill("lmdb", &fs.mnt, &out, &["--mmap"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("--map-size") && stderr.contains(&fs.mnt.display().to_string()),
        "{stderr}"
    );
    assert!(fs.left().is_empty(), "left {:?}", fs.left());
}

#[test]
fn wiredtiger_says_which_file_system_is_full() {
    full_disk("wiredtiger_full_disk", "wiredtiger", &[]);
}

/// Three RocksDB fills at once on one tmpfs: each succeeds or ends with
/// the clear error; none aborts.
#[test]
fn three_rocksdb_fills_at_once_end_cleanly() {
    let Some(fs) = SmallFs::tmpfs("three_fills") else {
        return;
    };
    let children: Vec<_> = (0..3)
        .map(|i| {
            let out = fs.out(&format!("r{i}.json"));
            let child = fill("rocksdb", &fs.mnt, &out, &[])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    for (i, (child, out)) in children.into_iter().enumerate() {
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        let full = format!("the file system of {}", fs.mnt.display());
        eprintln!("fill {i}: {:?}: {}", o.status, stderr.trim_end());
        match o.status.code() {
            Some(0) => {}
            Some(1) => {
                assert!(
                    stderr.contains(&full) && stderr.contains("is full"),
                    "fill {i}: {stderr}"
                );
                // Stopped in its run phase (its load saved), or in its load
                // when the other two took the room first (the three race).
                let names = point_names(&out);
                assert!(
                    names.is_empty() || names == ["ycsb-d.load"],
                    "fill {i}: {names:?}"
                );
            }
            // Started after the others took the room: its load is refused.
            Some(2) => assert!(stderr.contains(" free"), "fill {i}: {stderr}"),
            _ => panic!("fill {i}: {:?}\n{}", o.status, text(&o)),
        }
    }
    assert!(fs.left().is_empty(), "left {:?}", fs.left());
}
