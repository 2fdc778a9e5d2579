//! Test helpers shared by the engine tests: an aligned buffer pool, scratch
//! files on the real disk (O_DIRECT needs a filesystem that supports it, not
//! tmpfs), a deterministic byte pattern, and a small driver that runs a batch
//! of requests through any `Engine` the way the runner does.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use super::{Completion, Engine, EngineSetup, IoRequest, OpKind};
use crate::runner::buffers::BufferPool;

/// Block size used by the tests (a multiple of every logical block size here).
pub const BS: usize = 4096;

/// The runner's aligned buffer pool with `BS`-byte slots, plus the views the
/// tests need.
pub struct AlignedPool {
    inner: BufferPool,
    pub slots: usize,
}

impl AlignedPool {
    pub fn new(slots: usize) -> Self {
        let mut p = AlignedPool {
            inner: BufferPool::new(slots, BS, 1).expect("buffer pool"),
            slots,
        };
        p.clear();
        p
    }

    pub fn base(&self) -> *mut u8 {
        self.inner.base()
    }

    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn slot_ptr(&self, slot: usize) -> *mut u8 {
        assert!(slot < self.slots);
        self.inner.slot_ptr(slot)
    }

    pub fn slot(&self, slot: usize) -> &[u8] {
        // SAFETY: in bounds; no request is in flight when tests look.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(slot), BS) }
    }

    pub fn slot_mut(&mut self, slot: usize) -> &mut [u8] {
        self.inner.slot(slot, BS)
    }

    pub fn clear(&mut self) {
        for s in 0..self.slots {
            self.slot_mut(s).fill(0);
        }
    }
}

/// A scratch directory on the root filesystem (ext4 here), never tmpfs.
pub fn scratch_dir() -> tempfile::TempDir {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("engine-test-tmp");
    std::fs::create_dir_all(&base).expect("create scratch base");
    tempfile::tempdir_in(base).expect("tempdir")
}

/// Create a file of `size` bytes, fully written and synced (so its blocks are
/// allocated on the device: O_DIRECT reads of holes never reach the device),
/// and open it read-write, with O_DIRECT when `direct`.
pub fn scratch_file(dir: &tempfile::TempDir, name: &str, size: u64, direct: bool) -> File {
    use std::io::Write;
    let path = dir.path().join(name);
    let mut f = File::create(&path).expect("create scratch file");
    f.write_all(&vec![0xA5; size as usize])
        .expect("fill scratch file");
    f.sync_all().expect("sync scratch file");
    drop(f);
    let mut oo = OpenOptions::new();
    oo.read(true).write(true);
    if direct {
        oo.custom_flags(libc::O_DIRECT);
    }
    oo.open(&path).expect("open scratch file")
}

/// Deterministic, per-(seed, offset) content for a block.
pub fn fill_pattern(buf: &mut [u8], seed: u64, offset: u64) {
    let mut x = seed ^ offset.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    for chunk in buf.chunks_mut(8) {
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let v = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

pub fn setup_for(file: &File, size: u64, depth: u32, pool: &AlignedPool) -> EngineSetup {
    EngineSetup::local(
        file.as_raw_fd(),
        size,
        true,
        depth,
        (pool.base(), pool.len()),
    )
}

/// Queue every request, submit once, and reap until each one completed.
/// Returns the completions in arrival order. Panics if a slot completes twice
/// or the engine stops making progress.
pub fn run_batch(engine: &mut dyn Engine, reqs: &[IoRequest], depth: usize) -> Vec<Completion> {
    for r in reqs {
        engine.queue(*r).expect("queue");
    }
    engine.submit().expect("submit");
    let mut all = Vec::new();
    let mut out = Vec::with_capacity(depth);
    let mut idle_rounds = 0;
    while all.len() < reqs.len() {
        out.clear();
        let n = engine.reap(1, &mut out).expect("reap");
        assert_eq!(n, out.len(), "reap's count matches what it appended");
        if n == 0 {
            idle_rounds += 1;
            assert!(idle_rounds < 1000, "engine made no progress");
        }
        all.extend_from_slice(&out);
    }
    let mut seen = vec![0u32; depth];
    for c in &all {
        seen[c.slot as usize] += 1;
    }
    for r in reqs {
        assert_eq!(
            seen[r.slot as usize], 1,
            "slot {} completed exactly once",
            r.slot
        );
    }
    all
}

/// A request for slot `slot` at `offset` with the slot's buffer.
pub fn req(pool: &AlignedPool, slot: usize, op: OpKind, offset: u64) -> IoRequest {
    IoRequest {
        slot: slot as u32,
        op,
        offset,
        len: BS as u32,
        buf: pool.slot_ptr(slot),
    }
}

/// Offsets used by the round trip: scattered, block aligned, not in order.
pub fn offsets(n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| (((i * 7) % n) as u64 * 3 + 1) * BS as u64)
        .collect()
}

/// Write a known pattern at several offsets with `depth` requests in flight,
/// read it back into a cleared pool, compare; then fsync (queued and direct).
pub fn roundtrip(engine: &mut dyn Engine, pool: &mut AlignedPool, depth: usize, seed: u64) {
    let offs = offsets(depth);
    for (slot, &off) in offs.iter().enumerate() {
        fill_pattern(pool.slot_mut(slot), seed, off);
    }
    let writes: Vec<IoRequest> = offs
        .iter()
        .enumerate()
        .map(|(s, &o)| req(pool, s, OpKind::Write, o))
        .collect();
    for c in run_batch(engine, &writes, depth) {
        assert_eq!(
            c.result, BS as i64,
            "write of slot {} returned {}",
            c.slot, c.result
        );
    }
    pool.clear();
    let reads: Vec<IoRequest> = offs
        .iter()
        .enumerate()
        .map(|(s, &o)| req(pool, s, OpKind::Read, o))
        .collect();
    for c in run_batch(engine, &reads, depth) {
        assert_eq!(
            c.result, BS as i64,
            "read of slot {} returned {}",
            c.slot, c.result
        );
    }
    let mut expect = vec![0u8; BS];
    for (slot, &off) in offs.iter().enumerate() {
        fill_pattern(&mut expect, seed, off);
        assert!(
            pool.slot(slot) == &expect[..],
            "slot {slot} at offset {off} read back different data"
        );
    }
    let fs = [IoRequest {
        slot: 0,
        op: OpKind::Fsync,
        offset: 0,
        len: 0,
        buf: std::ptr::null_mut(),
    }];
    let c = run_batch(engine, &fs, depth);
    assert_eq!(c[0].result, 0, "queued fsync returned {}", c[0].result);
    engine.fsync().expect("engine fsync");
}
