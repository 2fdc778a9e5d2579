//! Safety refusals on real block devices (loop devices over scratch files,
//! root only; skipped with a message elsewhere): writes need --destroy-data
//! naming the same device, a mounted device is refused even with it, and
//! read-only jobs run without it and leave the data alone.

use std::path::{Path, PathBuf};

mod common;
use common::loopdev::LoopDev;
use common::{iolab, text};

fn backing(dir: &Path, name: &str, byte: u8) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, vec![byte; 16 << 20]).unwrap();
    p
}

#[test]
fn block_device_writes_need_destroy_data_naming_it() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let a_file = backing(dir.path(), "a.img", 0xa5);
    let b_file = backing(dir.path(), "b.img", 0x5a);
    let (a, b) = match (LoopDev::attach(&a_file, &[]), LoopDev::attach(&b_file, &[])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("SKIP block_device_writes_need_destroy_data_naming_it: {e}");
            return;
        }
    };
    let dev = a.dev.to_str().unwrap();
    let write = [
        "device",
        "--target",
        dev,
        "--rw",
        "randwrite",
        "--engine",
        "psync",
        "--io-count",
        "100",
        "--quiet",
    ];

    let o = iolab(&write);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("--destroy-data {dev}")),
        "tells the user the exact flag: {}",
        text(&o)
    );

    let mut wrong = write.to_vec();
    wrong.extend_from_slice(&["--destroy-data", b.dev.to_str().unwrap()]);
    let o = iolab(&wrong);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("must be the same device"), "{}", text(&o));

    // Reads need no flag, and the data is unchanged afterwards.
    let o = iolab(&[
        "device",
        "--target",
        dev,
        "--rw",
        "randread",
        "--engine",
        "io_uring",
        "--qd",
        "4",
        "--io-count",
        "200",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        std::fs::read(&a_file).unwrap().iter().all(|&x| x == 0xa5),
        "a read-only job changed nothing"
    );

    let mut right = write.to_vec();
    right.extend_from_slice(&["--destroy-data", dev]);
    let o = iolab(&right);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !std::fs::read(&a_file).unwrap().iter().all(|&x| x == 0xa5),
        "the named device was written"
    );
    assert!(
        std::fs::read(&b_file).unwrap().iter().all(|&x| x == 0x5a),
        "the other device was not"
    );
}

#[test]
fn mounted_block_device_is_refused_even_with_destroy_data() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let img = backing(dir.path(), "m.img", 0);
    let mut lo = match LoopDev::attach(&img, &[]) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("SKIP mounted_block_device_is_refused_even_with_destroy_data: {e}");
            return;
        }
    };
    if let Err(e) = lo.mount(&dir.path().join("mnt")) {
        eprintln!("SKIP mounted_block_device_is_refused_even_with_destroy_data: {e}");
        return;
    }
    let before = std::fs::read(&img).unwrap();
    let dev = lo.dev.to_str().unwrap();
    let o = iolab(&[
        "device",
        "--target",
        dev,
        "--rw",
        "write",
        "--engine",
        "psync",
        "--io-count",
        "10",
        "--destroy-data",
        dev,
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("mounted"), "{}", text(&o));
    assert_eq!(std::fs::read(&img).unwrap(), before, "nothing written");
}
