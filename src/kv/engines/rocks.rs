//! RocksDB as a kv engine: the system librocksdb through its C API
//! (`rocks_c`), opened with iolab's engine options.

use super::rocks_c::{self, Codec, Db, Iter, ReadOptions, WriteBatch, WriteOptions};
use crate::kv::chain::ChainStep;
use crate::kv::engine::{mib, yes, Compression, EngineOptions, KvEngine, KvSession};
use crate::kv::lsm::LsmState;
use anyhow::{Context, Result};
use std::path::Path;

pub struct Rocks {
    db: Db,
    opts: EngineOptions,
    /// What one new WAL or SST file preallocates (`fallocate`), if
    /// preallocation is on; `None` where the file system was too small.
    prealloc: Option<u64>,
}

/// RocksDB's target SST size (`target_file_size_base`, its default).
const SST_SIZE: u64 = 64 << 20;

/// What one new file preallocates: RocksDB asks 1.1 times the write
/// buffer for a WAL, 1.1 times the target size for an SST.
fn prealloc_block(o: &EngineOptions) -> u64 {
    o.write_buffer_size.max(SST_SIZE) / 10 * 11
}

/// The room a database needs while files are preallocated at once: a WAL
/// and one SST per background job.
fn prealloc_room(o: &EngineOptions) -> u64 {
    prealloc_block(o) * (1 + u64::from(o.background_jobs))
}

impl Rocks {
    pub fn open(dir: &Path, o: &EngineOptions) -> Result<Rocks> {
        let mut opts = rocks_c::Options::new(o.cache_size as usize);
        // A preallocation the file system cannot hold fails, and on ext4
        // keeps the blocks it got: the disk is then full, and RocksDB's
        // next write of any file (its info LOG included) meets ENOSPC,
        // which this build's assertions turn into an abort. On a file
        // system with less than twice the room of the preallocations at
        // once, files grow as written instead.
        let free = crate::dut::scratch::free_bytes(dir).unwrap_or(u64::MAX);
        let prealloc = if free < 2 * prealloc_room(o) {
            opts.no_fallocate()?;
            None
        } else {
            Some(prealloc_room(o))
        };
        opts.write_buffer_size(o.write_buffer_size as usize);
        opts.max_background_jobs(o.background_jobs as i32);
        opts.compression(match o.compression {
            Compression::None => Codec::None,
            Compression::Snappy => Codec::Snappy,
            Compression::Lz4 => Codec::Lz4,
            Compression::Zstd => Codec::Zstd,
            Compression::Zlib => Codec::Zlib,
        });
        opts.direct_io(o.direct_io, o.direct_io);
        opts.mmap_reads(o.mmap);
        opts.bytes_per_sync(o.bytes_per_sync);
        opts.pipelined_write(o.pipelined_write);
        let db =
            Db::open(opts, dir).with_context(|| format!("opening rocksdb at {}", dir.display()))?;
        Ok(Rocks {
            db,
            opts: o.clone(),
            prealloc,
        })
    }

    fn int_property(&self, name: &str) -> u64 {
        self.db.property_int(name).unwrap_or(0)
    }

    /// db_bench's `waitforcompaction`: poll until no flush or compaction is
    /// pending or running (Ctrl-C stops the wait).
    fn wait_for_compaction(&self) {
        while !self.lsm().is_quiet() && !crate::interrupt::stop_requested() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn lsm(&self) -> LsmState {
        let files_per_level: Vec<u64> = (0..7)
            .map(|l| self.int_property(&format!("rocksdb.num-files-at-level{l}")))
            .collect();
        LsmState {
            l0_files: files_per_level[0],
            files_per_level,
            pending_compaction_bytes: self
                .int_property("rocksdb.estimate-pending-compaction-bytes"),
            running_flushes: self.int_property("rocksdb.num-running-flushes"),
            running_compactions: self.int_property("rocksdb.num-running-compactions"),
            flush_pending: self.int_property("rocksdb.mem-table-flush-pending"),
            compaction_pending: self.int_property("rocksdb.compaction-pending"),
            immutable_memtables: self.int_property("rocksdb.num-immutable-mem-table"),
            memtable_bytes: self.int_property("rocksdb.cur-size-active-mem-table"),
        }
    }

    fn write_opts(&self) -> WriteOptions {
        WriteOptions::new(self.opts.sync, self.opts.wal)
    }
}

/// The librocksdb actually mapped into this process (from /proc/self/maps).
fn linked_library() -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("librocksdb"))
        .map(|p| {
            let real = std::fs::canonicalize(p).map(|r| r.display().to_string());
            real.unwrap_or_else(|_| p.to_string())
        })
        .unwrap_or_else(|| "librocksdb (statically linked)".to_string())
}

/// Options objects and the write batch are created once per session: the
/// C API allocates them.
struct RocksSession<'a> {
    db: &'a Db,
    w: WriteOptions,
    r: ReadOptions,
    /// Every insert's batch, cleared and refilled (db_bench's own way).
    batch: WriteBatch,
    /// readseq's iterator, kept across calls like db_bench's.
    seq: Option<Iter<'a>>,
}

impl<'a> RocksSession<'a> {
    fn new(db: &'a Db, w: WriteOptions) -> RocksSession<'a> {
        RocksSession {
            db,
            w,
            r: ReadOptions::new(),
            batch: WriteBatch::new(),
            seq: None,
        }
    }
}

impl KvSession for RocksSession<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.batch.set_one(key, value);
        self.db.write(&self.w, &mut self.batch)
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        match self.db.get_pinned(&self.r, key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(v.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn read_with(
        &mut self,
        key: &[u8],
        _scratch: &mut Vec<u8>,
        visit: &mut dyn FnMut(&[u8]),
    ) -> Result<bool> {
        // The value is checked where RocksDB pinned it: no copy.
        match self.db.get_pinned(&self.r, key)? {
            Some(v) => {
                visit(v.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn scan(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut it = self.db.iterator(&self.r);
        it.seek(start);
        let mut n = 0;
        // `item` is one validity check and the key and value calls; no
        // `next` after the last record wanted (db_bench's seekrandom with
        // --seek_nexts=0 does none).
        while let Some((k, v)) = it.item() {
            visit(k, v);
            n += 1;
            if n == count {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        self.db.delete(&self.w, key)?;
        Ok(true)
    }
    fn next_in_order(&mut self, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        let db = self.db;
        let it = match self.seq.as_mut() {
            Some(it) => {
                it.next();
                it
            }
            None => {
                let it = self.seq.insert(db.iterator(&self.r));
                it.seek_to_first();
                it
            }
        };
        // One validity check, then the key and the value: three calls
        // across the C API per record, with the `next` above.
        if let Some((k, v)) = it.item() {
            visit(k, v);
            return Ok(true);
        }
        let status = it.status();
        self.seq = None;
        status?;
        Ok(false)
    }
}

impl KvEngine for Rocks {
    fn name(&self) -> &'static str {
        "rocksdb"
    }
    fn version(&self) -> String {
        format!(
            "{} (C API, crate librocksdb-sys {}, Debian build with assertions)",
            linked_library(),
            crate::kv::engine::locked_version("librocksdb-sys")
        )
    }
    fn settings(&self) -> Vec<(String, String)> {
        let o = &self.opts;
        vec![
            ("sync".into(), yes(o.sync)),
            ("wal".into(), yes(o.wal)),
            ("block_cache".into(), mib(o.cache_size)),
            (
                "compression".into(),
                format!("{:?}", o.compression).to_lowercase(),
            ),
            ("direct_io".into(), yes(o.direct_io)),
            ("mmap_reads".into(), yes(o.mmap)),
            ("write_buffer_size".into(), mib(o.write_buffer_size)),
            ("max_background_jobs".into(), o.background_jobs.to_string()),
            ("bytes_per_sync".into(), o.bytes_per_sync.to_string()),
            ("pipelined_write".into(), yes(o.pipelined_write)),
            ("perf_level".into(), "disable".into()),
            (
                "allow_fallocate".into(),
                match self.prealloc {
                    Some(_) => "yes".into(),
                    None => format!(
                        "no (the file system had under {} free, twice what a WAL and {} SSTs preallocate at once)",
                        mib(2 * prealloc_room(o)),
                        o.background_jobs
                    ),
                },
            ),
        ]
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        // RocksDB's per-thread perf level defaults to kEnableCount: every key
        // comparison then bumps perf_context counters through a thread-local
        // lookup in the shared library (__tls_get_addr), ~16% more
        // instructions per fillrandom write. iolab never reads perf_context,
        // and db_bench runs its threads at kDisable (--perf_level=1), so turn
        // it off. Sessions are created on the worker thread that uses them.
        rocks_c::disable_perf_counters_on_this_thread();
        Ok(Box::new(RocksSession::new(&self.db, self.write_opts())))
    }
    fn flush(&self) -> Result<()> {
        self.db.flush()?;
        if self.opts.wal {
            self.db.flush_wal(true)?;
        }
        Ok(())
    }
    fn chain_step(&self, step: ChainStep) -> Result<()> {
        match step {
            ChainStep::WaitForCompaction => self.wait_for_compaction(),
            ChainStep::Flush => self.db.flush()?,
            ChainStep::Compact => self.db.compact_all(),
        }
        Ok(())
    }
    fn lsm_state(&self) -> Option<LsmState> {
        Some(self.lsm())
    }
    /// The memtables a flush still writes (the active one too without a
    /// WAL: closing flushes it), while compactions run the live SST files
    /// (a compaction writes at most what it reads) up to RocksDB's bound
    /// on a compaction's input each (`max_compaction_bytes`), and with
    /// preallocation what a WAL and an SST per background job preallocate
    /// at once. Any of RocksDB's files (WAL, SST, MANIFEST, info LOG)
    /// written again after a write met ENOSPC makes this Debian build
    /// abort (`sync_without_flush_called_`), so what runs in the
    /// background must never take the last room.
    fn space_reserve(&self) -> Option<u64> {
        let all = self.int_property("rocksdb.cur-size-all-mem-tables");
        let active = self.int_property("rocksdb.cur-size-active-mem-table");
        let mut r = if self.opts.wal {
            all.saturating_sub(active)
        } else {
            all
        };
        let compactions = self.int_property("rocksdb.num-running-compactions");
        if compactions > 0 {
            // max_compaction_bytes (25 target files) bounds one on a large
            // database.
            r += self
                .int_property("rocksdb.total-sst-files-size")
                .min(compactions * 25 * SST_SIZE);
        }
        Some(r + self.prealloc.unwrap_or(0))
    }
    fn stats(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for p in [
            "rocksdb.total-sst-files-size",
            "rocksdb.estimate-num-keys",
            "rocksdb.num-running-compactions",
            "rocksdb.actual-delayed-write-rate",
            "rocksdb.is-write-stopped",
        ] {
            if let Some(v) = self.db.property_int(p) {
                out.push((p.trim_start_matches("rocksdb.").to_string(), v.to_string()));
            }
        }
        if let Some(text) = self.db.property_text("rocksdb.stats") {
            for line in text.lines() {
                for prefix in [
                    "Cumulative writes:",
                    "Cumulative WAL:",
                    "Cumulative compaction:",
                    "Cumulative stall:",
                ] {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        let name = prefix
                            .trim_end_matches(':')
                            .to_lowercase()
                            .replace(' ', "_");
                        out.push((name, rest.trim().to_string()));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};

    /// Sessions run RocksDB with perf counters off (db_bench's default):
    /// with RocksDB's own default (count), every key comparison is counted.
    #[test]
    fn sessions_disable_perf_counters() {
        let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
        let engine = Rocks::open(dir.path(), &EngineOptions::default()).expect("open");
        let mut ctx = PerfContext::default();
        let put_some = |s: &mut dyn KvSession| {
            for i in 0..100u32 {
                let k = format!("{i:08}");
                s.insert(k.as_bytes(), b"value").expect("insert");
            }
        };

        set_perf_stats(PerfStatsLevel::EnableCount);
        ctx.reset();
        let mut counting = RocksSession::new(&engine.db, engine.write_opts());
        put_some(&mut counting);
        assert!(ctx.metric(PerfMetric::UserKeyComparisonCount) > 0);

        let mut s = engine.session().expect("session");
        ctx.reset();
        put_some(s.as_mut());
        let mut out = Vec::new();
        assert!(s.read(b"00000042", &mut out).expect("read"));
        assert_eq!(ctx.metric(PerfMetric::UserKeyComparisonCount), 0);
    }
}
