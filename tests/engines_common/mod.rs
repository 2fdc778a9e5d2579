//! Helpers shared by the engine integration tests: open a path with or
//! without O_DIRECT, build an `EngineSetup`, and drive a group of requests
//! through an engine the way the runner does, checking every result.

#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use iolab::engine::{Completion, Engine, EngineSetup, IoRequest, OpKind};
use iolab::runner::buffers::BufferPool;

pub const BS: usize = 4096;

pub fn open(path: &Path, direct: bool) -> File {
    let mut oo = OpenOptions::new();
    oo.read(true).write(true);
    if direct {
        oo.custom_flags(libc::O_DIRECT);
    }
    oo.open(path).expect("open")
}

pub fn setup(file: &File, size: u64, depth: usize, pool: &BufferPool) -> EngineSetup {
    EngineSetup::local(
        file.as_raw_fd(),
        size,
        true,
        depth as u32,
        (pool.base(), pool.len()),
    )
}

/// Run `op` for slots 0..offs.len() at `offs`, `chunk` requests per submit,
/// and assert each completes once with a full transfer.
pub fn run(engine: &mut dyn Engine, pool: &BufferPool, op: OpKind, offs: &[u64], chunk: usize) {
    let mut out: Vec<Completion> = Vec::with_capacity(chunk);
    let mut seen = vec![0u32; offs.len()];
    for (c, group) in offs.chunks(chunk).enumerate() {
        for (i, &off) in group.iter().enumerate() {
            let slot = c * chunk + i;
            let req = IoRequest {
                slot: slot as u32,
                op,
                offset: off,
                len: BS as u32,
                buf: pool.slot_ptr(slot),
            };
            engine.queue(req).expect("queue");
        }
        engine.submit().expect("submit");
        let mut got = 0;
        while got < group.len() {
            out.clear();
            got += engine.reap(1, &mut out).expect("reap");
            for x in &out {
                assert_eq!(x.result, BS as i64, "{op:?} slot {} failed", x.slot);
                seen[x.slot as usize] += 1;
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n == 1),
        "every slot completes exactly once: {seen:?}"
    );
}
