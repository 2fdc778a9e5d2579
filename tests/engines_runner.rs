//! The real engines under the runner's worker loop with verification on: a
//! sequential pass stamps every block, then a random read/write mix and a
//! random read pass check every block read (header, offset, checksum,
//! sequence). Catches slot mix-ups, lost or duplicated completions and torn
//! transfers that a single round trip would miss.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use iolab::engine::aio::AioEngine;
use iolab::engine::mmap::MmapEngine;
use iolab::engine::uring::UringEngine;
use iolab::engine::{Engine, EngineSetup};
use iolab::measure::clock::MonoClock;
use iolab::plan::engines::UringOptions;
use iolab::runner::buffers::BufferPool;
use iolab::runner::pattern::{PatternSpec, RequestGen};
use iolab::runner::recorder::Recorder;
use iolab::runner::worker::{self, LoopSpec};

const BS: u64 = 4096;
const REGION: u64 = 2 << 20;
const BLOCKS: u64 = REGION / BS;

fn pass<E: Engine>(
    engine: &mut E,
    pool: &mut BufferPool,
    depth: u32,
    sync: bool,
    read_pct: u8,
    random: bool,
    ops: u64,
) -> Recorder {
    let clock = MonoClock;
    // Measured from now: from 0 (boot) the recorder would first fill a
    // per-second interval for every second of the machine's uptime.
    let start = iolab::measure::clock::mono_now_ns();
    let spec = LoopSpec {
        depth,
        batch: false,
        sync_engine: sync,
        measure_start: start,
        deadline: u64::MAX,
        max_ops: ops,
        max_bytes: u64::MAX,
        fsync_every: 0,
        submit_batch: 1,
        verify_bs: Some(BS),
        region_start: 0,
        region_len: REGION,
        think: None,
        continue_on_error: false,
    };
    let mut gen = RequestGen::new(&PatternSpec {
        read_pct,
        random,
        bs: vec![(BS, 1)],
        align: BS,
        region_start: 0,
        region_len: REGION,
        seed: 7 + read_pct as u64,
        cover: false,
    })
    .expect("pattern");
    let mut rec = Recorder::new(start, 4);
    let stop = std::sync::atomic::AtomicBool::new(false);
    worker::run(engine, &clock, &spec, &mut gen, pool, &mut rec, None, &stop).expect("worker run");
    rec
}

/// Stamp all blocks, then a random 50/50 mix, then random reads; all verified.
fn exercise<E: Engine>(name: &str, engine: &mut E, pool: &mut BufferPool, depth: u32, sync: bool) {
    pass(engine, pool, depth, sync, 0, false, BLOCKS);
    let mixed = pass(engine, pool, depth, sync, 50, true, 4 * BLOCKS);
    let reads = pass(engine, pool, depth, sync, 100, true, 2 * BLOCKS);
    for (what, rec) in [("mixed", &mixed), ("reads", &reads)] {
        assert_eq!(
            rec.verify.mismatches, 0,
            "{name} {what}: {:?}",
            rec.verify.first_mismatches
        );
        assert!(
            rec.verify.blocks_checked > 0,
            "{name} {what}: nothing was checked"
        );
        assert!(rec.errors.is_empty(), "{name} {what}: {:?}", rec.errors);
    }
    assert_eq!(
        reads.verify.blocks_checked,
        2 * BLOCKS,
        "{name}: every read checked"
    );
    engine.fsync().expect("fsync");
}

fn file(dir: &tempfile::TempDir, name: &str, direct: bool) -> File {
    let path = dir.path().join(name);
    File::create(&path).unwrap().set_len(REGION).unwrap();
    let mut oo = OpenOptions::new();
    oo.read(true).write(true);
    if direct {
        oo.custom_flags(libc::O_DIRECT);
    }
    oo.open(path).unwrap()
}

fn setup(f: &File, pool: &BufferPool, depth: u32) -> EngineSetup {
    EngineSetup::local(
        f.as_raw_fd(),
        REGION,
        true,
        depth,
        (pool.base(), pool.len()),
    )
}

#[test]
fn runner_verifies_aio_and_uring_at_depth_16() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let depth = 16;
    for direct in [true, false] {
        let f = file(&dir, &format!("aio-{direct}"), direct);
        let mut pool = BufferPool::new(depth as usize, BS as usize, 1).unwrap();
        let mut e = AioEngine::new(&setup(&f, &pool, depth)).unwrap();
        exercise(
            &format!("aio direct={direct}"),
            &mut e,
            &mut pool,
            depth,
            false,
        );

        let options = [
            UringOptions::default(),
            UringOptions {
                fixed_buffers: true,
                fixed_files: true,
                sqpoll: false,
                iopoll: false,
            },
            UringOptions {
                fixed_buffers: true,
                fixed_files: true,
                sqpoll: true,
                iopoll: false,
            },
        ];
        for (i, o) in options.into_iter().enumerate() {
            let f = file(&dir, &format!("uring-{direct}-{i}"), direct);
            let mut pool = BufferPool::new(depth as usize, BS as usize, 2).unwrap();
            let mut e = UringEngine::new(&setup(&f, &pool, depth), o).unwrap();
            exercise(
                &format!("io_uring {o:?} direct={direct}"),
                &mut e,
                &mut pool,
                depth,
                false,
            );
        }
    }
}

#[test]
fn runner_verifies_mmap() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = file(&dir, "mmap", false);
    let mut pool = BufferPool::new(1, BS as usize, 3).unwrap();
    let mut e = MmapEngine::new(&setup(&f, &pool, 1)).unwrap();
    exercise("mmap", &mut e, &mut pool, 1, true);
}
