//! The storage configurations iolab builds for side-by-side comparisons
//! (`testbed::media`): each one built on a scratch directory, written to,
//! and taken down with nothing left (no mount, no loop device, no file).
//! Needs root and the mkfs tools (scripts/install-deps.sh); what cannot be
//! built here is skipped with the reason.

mod common;

use std::io::Write;
use std::path::Path;

use iolab::testbed::media::{MediaKind, Medium};

/// Loop devices whose backing file lies under `dir`.
fn loops_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let back = e.path().join("loop/backing_file");
        if let Ok(f) = std::fs::read_to_string(&back) {
            if f.trim().starts_with(dir.to_str().unwrap()) {
                out.push(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    out
}

fn mounts_under(dir: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| {
            l.split(' ')
                .nth(1)
                .is_some_and(|m| m.starts_with(dir.to_str().unwrap()))
        })
        .map(String::from)
        .collect()
}

#[test]
fn every_configuration_is_built_used_and_taken_down() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mut built = 0;
    for name in [
        "tmpfs",
        "ext4",
        "ext4-nojournal",
        "xfs",
        "btrfs",
        "raw",
        "stripe:2",
    ] {
        let kind = MediaKind::parse(name).unwrap();
        if let Some(why) = kind.unavailable() {
            eprintln!("SKIP {name}: {why}");
            continue;
        }
        let m =
            Medium::build(kind, dir.path(), 64 << 20).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        if kind == MediaKind::Raw {
            assert!(
                m.target.to_str().unwrap().starts_with("/dev/loop"),
                "{name}: {}",
                m.target.display()
            );
            assert!(!m.mounted());
        } else {
            assert!(m.mounted(), "{name}");
            assert_eq!(mounts_under(dir.path()).len(), 1, "{name}");
            let fs = mounts_under(dir.path())[0]
                .split(' ')
                .nth(2)
                .unwrap()
                .to_string();
            let want = if name.starts_with("ext4") {
                "ext4"
            } else if name == "stripe:2" {
                "btrfs"
            } else {
                name
            };
            assert_eq!(fs, want, "{name}");
            let mut f = std::fs::File::create(m.target.join("data")).unwrap();
            f.write_all(&vec![7u8; 16 << 20]).unwrap();
            f.sync_all().unwrap();
        }
        let loops = if kind == MediaKind::Tmpfs {
            0
        } else if name == "stripe:2" {
            2
        } else {
            1
        };
        assert_eq!(
            loops_under(dir.path()).len(),
            loops,
            "{name}: {}",
            m.describe
        );
        assert_eq!(m.devices().len(), loops);
        drop(m);
        assert!(
            mounts_under(dir.path()).is_empty(),
            "{name}: a mount is left"
        );
        assert!(
            loops_under(dir.path()).is_empty(),
            "{name}: a loop device is left"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "{name}: {left:?} left");
        built += 1;
    }
    // On this machine (root, CI) every one of them must build.
    if common::have("mkfs.xfs") && common::have("mkfs.btrfs") && unsafe { libc::geteuid() } == 0 {
        assert_eq!(built, 7);
    }
}
