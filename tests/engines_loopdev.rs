//! The engines on a raw block device: a loop device over a scratch file
//! (root only; skipped with a message elsewhere). Covers what a regular file
//! does not: mmap sizing a device through BLKGETSIZE64, aio and io_uring on a
//! block device with O_DIRECT, and the IOPOLL probe on a disk without poll
//! queues. The loop device is detached even when an assertion fails.

use std::fs::File;
use std::os::fd::AsRawFd;

use iolab::engine::aio::AioEngine;
use iolab::engine::mmap::MmapEngine;
use iolab::engine::uring::{probe_uring, UringEngine};
use iolab::engine::{Engine, OpKind};
use iolab::plan::engines::UringOptions;
use iolab::runner::buffers::BufferPool;

mod common;
mod engines_common;
use common::loopdev::LoopDev;
use engines_common::{open, run, setup, BS};

const SIZE: u64 = 8 << 20;
const DEPTH: usize = 8;

#[test]
fn engines_on_a_loop_device() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let backing = dir.path().join("loop.img");
    File::create(&backing).unwrap().set_len(SIZE).unwrap();
    let lo = match LoopDev::attach(&backing, &["--direct-io=on"]) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipping engines_on_a_loop_device: {why}");
            return;
        }
    };
    let offs: Vec<u64> = (0..DEPTH as u64)
        .map(|i| (i * 37 % 2048) * BS as u64)
        .collect();
    let wpool = BufferPool::new(DEPTH, BS, 5).unwrap();
    let dev = open(&lo.dev, true);

    // Write with aio, read back with io_uring (fixed buffers and files).
    {
        let mut w = AioEngine::new(&setup(&dev, SIZE, DEPTH, &wpool)).unwrap();
        run(&mut w, &wpool, OpKind::Write, &offs, DEPTH);
        w.fsync().unwrap();
    }
    let rpool = BufferPool::new(DEPTH, BS, 6).unwrap();
    {
        let o = UringOptions {
            fixed_buffers: true,
            fixed_files: true,
            sqpoll: false,
            iopoll: false,
        };
        let mut r = UringEngine::new(&setup(&dev, SIZE, DEPTH, &rpool), o).unwrap();
        run(&mut r, &rpool, OpKind::Read, &offs, DEPTH);
    }
    let mut rpool = rpool;
    let mut wpool = wpool;
    for s in 0..DEPTH {
        assert!(
            rpool.slot(s, BS) == wpool.slot(s, BS),
            "io_uring read of slot {s} differs"
        );
    }

    // mmap of the device (sized with BLKGETSIZE64) sees the same bytes.
    let mpool = BufferPool::new(DEPTH, BS, 7).unwrap();
    {
        let buffered = open(&lo.dev, false);
        let mut m = MmapEngine::new(&setup(&buffered, SIZE, DEPTH, &mpool)).unwrap();
        run(&mut m, &mpool, OpKind::Read, &offs, DEPTH);
        m.fsync().unwrap();
        let too_big = setup(&buffered, SIZE + 4096, DEPTH, &mpool);
        assert!(
            MmapEngine::new(&too_big).is_err(),
            "mapping past the end of the device is refused"
        );
    }
    let mut mpool = mpool;
    for s in 0..DEPTH {
        assert!(
            mpool.slot(s, BS) == wpool.slot(s, BS),
            "mmap read of slot {s} differs"
        );
    }

    // The probe on the device itself.
    let opts = UringOptions {
        fixed_buffers: true,
        fixed_files: true,
        sqpoll: true,
        iopoll: true,
    };
    let probes = probe_uring(dev.as_raw_fd(), &opts);
    for p in &probes[..4] {
        assert!(p.supported, "{}", p.detail);
    }
    let name = lo.dev.file_name().unwrap().to_string_lossy().to_string();
    let io_poll =
        std::fs::read_to_string(format!("/sys/block/{name}/queue/io_poll")).unwrap_or_default();
    if io_poll.trim() == "0" {
        assert!(!probes[4].supported, "{}", probes[4].detail);
        assert!(
            probes[4]
                .detail
                .contains(&format!("/sys/block/{name}/queue/io_poll = 0")),
            "{}",
            probes[4].detail
        );
    }
    eprintln!("{}", probes[4].detail);
}
