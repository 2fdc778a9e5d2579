//! Engines against each other on one real file: data written by any engine
//! (psync, aio, io_uring with and without its options, mmap) reads back the
//! same through every other; plus the io_uring probe on the raw disk under the
//! test directory, opened read-only.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use iolab::engine::aio::AioEngine;
use iolab::engine::mmap::MmapEngine;
use iolab::engine::psync::PsyncEngine;
use iolab::engine::uring::{probe_uring, UringEngine};
use iolab::engine::{Engine, OpKind};
use iolab::measure::sysfs;
use iolab::plan::engines::UringOptions;
use iolab::runner::buffers::BufferPool;

const DEPTH: usize = 8;
const SIZE: u64 = 256 * BS as u64;

mod engines_common;
use engines_common::{open, run, setup, BS};

/// psync completes inside `queue`, one request at a time.
fn chunk(engine: &str) -> usize {
    if engine == "psync" {
        1
    } else {
        DEPTH
    }
}

fn assert_send<T: Send>() {}

#[test]
fn engines_are_send() {
    assert_send::<AioEngine>();
    assert_send::<UringEngine>();
    assert_send::<MmapEngine>();
}

fn make(name: &str, file: &File, pool: &BufferPool) -> Box<dyn Engine> {
    let setup = setup(file, SIZE, DEPTH, pool);
    match name {
        "psync" => Box::new(PsyncEngine::new(file.as_raw_fd())),
        "aio" => Box::new(AioEngine::new(&setup).expect("aio")),
        "io_uring" => Box::new(UringEngine::new(&setup, UringOptions::default()).expect("uring")),
        "io_uring+fixed+sqpoll" => {
            let opts = UringOptions {
                fixed_buffers: true,
                fixed_files: true,
                sqpoll: true,
                iopoll: false,
            };
            Box::new(UringEngine::new(&setup, opts).expect("uring fixed"))
        }
        "mmap" => Box::new(MmapEngine::new(&setup).expect("mmap")),
        _ => unreachable!(),
    }
}

#[test]
fn every_engine_reads_what_every_other_wrote() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let path = dir.path().join("cross");
    File::create(&path).unwrap().set_len(SIZE).unwrap();
    let engines = ["psync", "aio", "io_uring", "io_uring+fixed+sqpoll", "mmap"];
    let offs: Vec<u64> = (0..DEPTH as u64)
        .map(|i| (i * 29 % 256) * BS as u64)
        .collect();
    for (wi, writer) in engines.iter().enumerate() {
        for direct in [true, false] {
            // A fresh pattern per writer, in the pool's slots 0..DEPTH.
            let mut wpool = BufferPool::new(DEPTH, BS, 100 + wi as u64).unwrap();
            let f = open(&path, direct);
            {
                let mut w = make(writer, &f, &wpool);
                run(w.as_mut(), &wpool, OpKind::Write, &offs, chunk(writer));
                w.fsync().expect("fsync");
            }
            for reader in engines {
                let mut rpool = BufferPool::new(DEPTH, BS, 999).unwrap();
                let rf = open(&path, direct);
                let mut r = make(reader, &rf, &rpool);
                run(r.as_mut(), &rpool, OpKind::Read, &offs, chunk(reader));
                drop(r);
                for s in 0..DEPTH {
                    assert!(
                        rpool.slot(s, BS) == wpool.slot(s, BS),
                        "{reader} read (direct={direct}) differs from what {writer} wrote, slot {s}"
                    );
                }
            }
        }
    }
}

#[test]
fn uring_probe_on_the_raw_disk() {
    // SAFETY: plain getter.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: opening the raw disk needs root");
        return;
    }
    let Some(dev) = sysfs::devnum_of_path(std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))) else {
        eprintln!("skipping: no block device under the test directory");
        return;
    };
    let Some((_, disk)) = sysfs::device_names(dev) else {
        eprintln!("skipping: cannot name the disk {}", dev.text());
        return;
    };
    let node = format!("/dev/{disk}");
    // Read-only: the probe only reads 4 KiB at offset 0.
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&node)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("skipping: cannot open {node} read-only with O_DIRECT: {e}");
            return;
        }
    };
    let opts = UringOptions {
        fixed_buffers: true,
        fixed_files: true,
        sqpoll: true,
        iopoll: true,
    };
    let probes = probe_uring(f.as_raw_fd(), &opts);
    for p in &probes {
        eprintln!("{node}: {p:?}");
    }
    assert_eq!(probes.len(), 5);
    for p in &probes[..4] {
        assert!(p.supported, "{}", p.detail);
    }
    let io_poll =
        std::fs::read_to_string(format!("/sys/block/{disk}/queue/io_poll")).unwrap_or_default();
    if io_poll.trim() == "0" {
        assert!(
            !probes[4].supported && probes[4].detail.contains("no poll queues"),
            "{}",
            probes[4].detail
        );
    } else {
        eprintln!(
            "not asserting IOPOLL: {disk} has io_poll = {}",
            io_poll.trim()
        );
    }
}
