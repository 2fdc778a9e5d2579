//! RocksDB's C API (librocksdb-sys) behind small owners that free what
//! they hold: options, the database, write and read options, a reusable
//! write batch, pinned values and iterators. iolab opens RocksDB through
//! these rather than the `rocksdb` crate so that a session writes every
//! record through one write batch it clears and refills, as db_bench does:
//! the crate takes a batch by value, and its `put` goes through
//! `rocksdb_put`, which builds and frees a batch per record (~440
//! instructions, 2.6% of a fillseq's, measured with callgrind).

use anyhow::{anyhow, Result};
use librocksdb_sys as ffi;
use std::ffi::{c_char, CStr, CString};
use std::marker::PhantomData;
use std::path::Path;

/// Turn the C API's error out-parameter into a result, freeing the message.
fn check(err: *mut c_char) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null errptr is a NUL-terminated string RocksDB
    // allocated with malloc; it is read once and freed once.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    unsafe { ffi::rocksdb_free(err.cast()) };
    Err(anyhow!("rocksdb: {msg}"))
}

/// Compression of every level (`rocksdb_*_compression`).
#[derive(Clone, Copy)]
pub enum Codec {
    None,
    Snappy,
    Zlib,
    Lz4,
    Zstd,
}

/// Database options with a block-based table and its LRU block cache; kept
/// alive as long as the database opened with them.
pub struct Options {
    opts: *mut ffi::rocksdb_options_t,
    table: *mut ffi::rocksdb_block_based_table_options_t,
    cache: *mut ffi::rocksdb_cache_t,
}

impl Options {
    /// Options that create the database if missing, with a block cache of
    /// `cache_bytes`.
    pub fn new(cache_bytes: usize) -> Options {
        // SAFETY: the constructors return fresh objects this value owns;
        // the table factory copies the table options and the cache handle.
        unsafe {
            let opts = ffi::rocksdb_options_create();
            ffi::rocksdb_options_set_create_if_missing(opts, 1);
            let table = ffi::rocksdb_block_based_options_create();
            let cache = ffi::rocksdb_cache_create_lru(cache_bytes);
            ffi::rocksdb_block_based_options_set_block_cache(table, cache);
            ffi::rocksdb_options_set_block_based_table_factory(opts, table);
            Options { opts, table, cache }
        }
    }

    pub fn write_buffer_size(&mut self, bytes: usize) {
        // SAFETY (here and in the setters below): `opts` is live and owned.
        unsafe { ffi::rocksdb_options_set_write_buffer_size(self.opts, bytes) }
    }
    pub fn max_background_jobs(&mut self, jobs: i32) {
        unsafe { ffi::rocksdb_options_set_max_background_jobs(self.opts, jobs) }
    }
    pub fn compression(&mut self, codec: Codec) {
        let c = match codec {
            Codec::None => ffi::rocksdb_no_compression,
            Codec::Snappy => ffi::rocksdb_snappy_compression,
            Codec::Zlib => ffi::rocksdb_zlib_compression,
            Codec::Lz4 => ffi::rocksdb_lz4_compression,
            Codec::Zstd => ffi::rocksdb_zstd_compression,
        };
        unsafe { ffi::rocksdb_options_set_compression(self.opts, c as i32) }
    }
    /// O_DIRECT for reads, and for flushes and compactions.
    pub fn direct_io(&mut self, reads: bool, flush_and_compaction: bool) {
        unsafe {
            ffi::rocksdb_options_set_use_direct_reads(self.opts, reads.into());
            ffi::rocksdb_options_set_use_direct_io_for_flush_and_compaction(
                self.opts,
                flush_and_compaction.into(),
            );
        }
    }
    pub fn mmap_reads(&mut self, on: bool) {
        unsafe { ffi::rocksdb_options_set_allow_mmap_reads(self.opts, on.into()) }
    }
    /// sync_file_range every `bytes` written, for SST files and the WAL.
    pub fn bytes_per_sync(&mut self, bytes: u64) {
        unsafe {
            ffi::rocksdb_options_set_bytes_per_sync(self.opts, bytes);
            ffi::rocksdb_options_set_wal_bytes_per_sync(self.opts, bytes);
        }
    }
    pub fn pipelined_write(&mut self, on: bool) {
        unsafe { ffi::rocksdb_options_set_enable_pipelined_write(self.opts, on.into()) }
    }
    /// `allow_fallocate=false`: files grow as they are written, none is
    /// preallocated. The C API has no setter: the options are copied
    /// through RocksDB's option string (table factory and cache included).
    pub fn no_fallocate(&mut self) -> Result<()> {
        // SAFETY: live base options, a NUL-terminated string, fresh
        // options that replace the base on success (the old ones freed).
        unsafe {
            let fresh = ffi::rocksdb_options_create();
            let mut err = std::ptr::null_mut();
            ffi::rocksdb_get_options_from_string(
                self.opts,
                c"allow_fallocate=false".as_ptr(),
                fresh,
                &mut err,
            );
            if let Err(e) = check(err) {
                ffi::rocksdb_options_destroy(fresh);
                return Err(e);
            }
            ffi::rocksdb_options_destroy(self.opts);
            self.opts = fresh;
        }
        Ok(())
    }
}

impl Drop for Options {
    fn drop(&mut self) {
        // SAFETY: each pointer was created in `new` and is destroyed once.
        unsafe {
            ffi::rocksdb_cache_destroy(self.cache);
            ffi::rocksdb_block_based_options_destroy(self.table);
            ffi::rocksdb_options_destroy(self.opts);
        }
    }
}

/// An open database; closed on drop (after every iterator and pinned value
/// borrowed from it, which the borrows enforce).
pub struct Db {
    db: *mut ffi::rocksdb_t,
    _options: Options,
}

// SAFETY: a RocksDB handle may be used from any thread concurrently; the
// options it keeps are only read.
unsafe impl Send for Db {}
unsafe impl Sync for Db {}

impl Db {
    pub fn open(options: Options, dir: &Path) -> Result<Db> {
        use std::os::unix::ffi::OsStrExt;
        let name = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| anyhow!("rocksdb: {} contains a NUL byte", dir.display()))?;
        let mut err = std::ptr::null_mut();
        // SAFETY: live options, a NUL-terminated path, an error slot.
        let db = unsafe { ffi::rocksdb_open(options.opts, name.as_ptr(), &mut err) };
        check(err)?;
        if db.is_null() {
            return Err(anyhow!("rocksdb: open returned no database"));
        }
        Ok(Db {
            db,
            _options: options,
        })
    }

    /// Write `batch` (all of it, atomically).
    pub fn write(&self, w: &WriteOptions, batch: &mut WriteBatch) -> Result<()> {
        let mut err = std::ptr::null_mut();
        // SAFETY: live handles; RocksDB only reads the batch.
        unsafe { ffi::rocksdb_write(self.db, w.0, batch.0, &mut err) };
        check(err)
    }

    pub fn delete(&self, w: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut err = std::ptr::null_mut();
        // SAFETY: live handles and a key slice RocksDB copies.
        unsafe { ffi::rocksdb_delete(self.db, w.0, key.as_ptr().cast(), key.len(), &mut err) };
        check(err)
    }

    /// The value of `key`, pinned where RocksDB holds it (no copy).
    pub fn get_pinned(&self, r: &ReadOptions, key: &[u8]) -> Result<Option<Pinned<'_>>> {
        let mut err = std::ptr::null_mut();
        // SAFETY: live handles and a key slice read during the call.
        let p = unsafe {
            ffi::rocksdb_get_pinned(self.db, r.0, key.as_ptr().cast(), key.len(), &mut err)
        };
        check(err)?;
        Ok((!p.is_null()).then_some(Pinned(p, PhantomData)))
    }

    /// An iterator reading with `r`. RocksDB copies the read options into
    /// the iterator (only iterate bounds, which iolab sets none of, must
    /// outlive it), so a session's options serve all its iterators.
    pub fn iterator(&self, r: &ReadOptions) -> Iter<'_> {
        // SAFETY: live handles; the iterator borrows the database.
        let it = unsafe { ffi::rocksdb_create_iterator(self.db, r.0) };
        Iter {
            it,
            _db: PhantomData,
        }
    }

    /// An integer property (`rocksdb.num-files-at-level0`, ...), read as
    /// text: some (the per-level file counts) have no integer form.
    pub fn property_int(&self, name: &str) -> Option<u64> {
        self.property_text(name)?.trim().parse().ok()
    }

    /// A text property (`rocksdb.stats`).
    pub fn property_text(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        // SAFETY: a live handle and a NUL-terminated name; the result is a
        // malloc'd string (or null), freed here.
        unsafe {
            let p = ffi::rocksdb_property_value(self.db, name.as_ptr());
            if p.is_null() {
                return None;
            }
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            ffi::rocksdb_free(p.cast());
            Some(s)
        }
    }

    /// Flush the memtables to SST files and wait for it.
    pub fn flush(&self) -> Result<()> {
        let mut err = std::ptr::null_mut();
        // SAFETY: flush options created, used and destroyed here.
        unsafe {
            let fo = ffi::rocksdb_flushoptions_create();
            ffi::rocksdb_flushoptions_set_wait(fo, 1);
            ffi::rocksdb_flush(self.db, fo, &mut err);
            ffi::rocksdb_flushoptions_destroy(fo);
        }
        check(err)
    }

    /// Write the WAL's buffer out (and fsync it if `sync`).
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        let mut err = std::ptr::null_mut();
        // SAFETY: a live handle and an error slot.
        unsafe { ffi::rocksdb_flush_wal(self.db, sync.into(), &mut err) };
        check(err)
    }

    /// Compact the whole key range, the bottom level too (db_bench's
    /// `compact`: kForceOptimized).
    pub fn compact_all(&self) {
        /// BottommostLevelCompaction::kForceOptimized in rocksdb/options.h.
        const FORCE_OPTIMIZED: u8 = 3;
        // SAFETY: compact options created, used and destroyed here; null
        // bounds mean the whole range.
        unsafe {
            let o = ffi::rocksdb_compactoptions_create();
            ffi::rocksdb_compactoptions_set_bottommost_level_compaction(o, FORCE_OPTIMIZED);
            ffi::rocksdb_compact_range_opt(self.db, o, std::ptr::null(), 0, std::ptr::null(), 0);
            ffi::rocksdb_compactoptions_destroy(o);
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: opened in `open`, closed once; borrows have ended.
        unsafe { ffi::rocksdb_close(self.db) }
    }
}

/// Per-write options (sync, WAL).
pub struct WriteOptions(*mut ffi::rocksdb_writeoptions_t);

impl WriteOptions {
    pub fn new(sync: bool, wal: bool) -> WriteOptions {
        // SAFETY: a fresh object owned here.
        unsafe {
            let w = ffi::rocksdb_writeoptions_create();
            ffi::rocksdb_writeoptions_set_sync(w, sync.into());
            ffi::rocksdb_writeoptions_disable_WAL(w, (!wal).into());
            WriteOptions(w)
        }
    }
}

impl Drop for WriteOptions {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { ffi::rocksdb_writeoptions_destroy(self.0) }
    }
}

/// Per-read options (defaults).
pub struct ReadOptions(*mut ffi::rocksdb_readoptions_t);

impl ReadOptions {
    pub fn new() -> ReadOptions {
        // SAFETY: a fresh object owned here.
        ReadOptions(unsafe { ffi::rocksdb_readoptions_create() })
    }
}

impl Drop for ReadOptions {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { ffi::rocksdb_readoptions_destroy(self.0) }
    }
}

/// A write batch cleared and refilled for every write: its buffer stays
/// allocated between records.
pub struct WriteBatch(*mut ffi::rocksdb_writebatch_t);

impl WriteBatch {
    pub fn new() -> WriteBatch {
        // SAFETY: a fresh object owned here.
        WriteBatch(unsafe { ffi::rocksdb_writebatch_create() })
    }

    /// Empty the batch, then put one record in it.
    pub fn set_one(&mut self, key: &[u8], value: &[u8]) {
        // SAFETY: a live batch; RocksDB copies both slices into it.
        unsafe {
            ffi::rocksdb_writebatch_clear(self.0);
            ffi::rocksdb_writebatch_put(
                self.0,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            );
        }
    }
}

impl Drop for WriteBatch {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { ffi::rocksdb_writebatch_destroy(self.0) }
    }
}

/// A value RocksDB pinned in its block cache or memtable for a read.
pub struct Pinned<'db>(*mut ffi::rocksdb_pinnableslice_t, PhantomData<&'db Db>);

impl Pinned<'_> {
    pub fn value(&self) -> &[u8] {
        let mut len = 0;
        // SAFETY: a live pinnable slice; its bytes stay valid until drop.
        unsafe {
            let p = ffi::rocksdb_pinnableslice_value(self.0, &mut len);
            if p.is_null() {
                return &[];
            }
            std::slice::from_raw_parts(p.cast(), len)
        }
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        // SAFETY: returned by rocksdb_get_pinned, destroyed once.
        unsafe { ffi::rocksdb_pinnableslice_destroy(self.0) }
    }
}

/// A raw iterator: position it, then read the record under it.
pub struct Iter<'db> {
    it: *mut ffi::rocksdb_iterator_t,
    _db: PhantomData<&'db Db>,
}

impl Iter<'_> {
    pub fn seek(&mut self, key: &[u8]) {
        // SAFETY: a live iterator; the key is read during the call.
        unsafe { ffi::rocksdb_iter_seek(self.it, key.as_ptr().cast(), key.len()) }
    }
    pub fn seek_to_first(&mut self) {
        // SAFETY: a live iterator.
        unsafe { ffi::rocksdb_iter_seek_to_first(self.it) }
    }
    pub fn next(&mut self) {
        // SAFETY: a live iterator; only called while positioned (`item`
        // returned a record), as RocksDB requires.
        unsafe { ffi::rocksdb_iter_next(self.it) }
    }

    /// The key and value under the iterator, or None past the end (or on an
    /// error: see `status`). Valid until the iterator moves.
    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        // SAFETY: a live iterator; key and value are read only while it is
        // valid, and the slices borrow `self`, so they end before it moves.
        unsafe {
            if ffi::rocksdb_iter_valid(self.it) == 0 {
                return None;
            }
            let (mut kl, mut vl) = (0, 0);
            let k = ffi::rocksdb_iter_key(self.it, &mut kl);
            let v = ffi::rocksdb_iter_value(self.it, &mut vl);
            Some((
                std::slice::from_raw_parts(k.cast(), kl),
                std::slice::from_raw_parts(v.cast(), vl),
            ))
        }
    }

    /// The error that ended the iteration, if one did.
    pub fn status(&self) -> Result<()> {
        let mut err = std::ptr::null_mut();
        // SAFETY: a live iterator and an error slot.
        unsafe { ffi::rocksdb_iter_get_error(self.it, &mut err) };
        check(err)
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: created in `Db::iterator`, destroyed once, before the
        // database (the borrow).
        unsafe { ffi::rocksdb_iter_destroy(self.it) }
    }
}

/// Turn RocksDB's per-thread perf counters off on the calling thread
/// (db_bench's default, --perf_level=1).
pub fn disable_perf_counters_on_this_thread() {
    // SAFETY: sets a thread-local level; no pointers involved.
    unsafe { ffi::rocksdb_set_perf_level(ffi::rocksdb_disable as i32) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path) -> Db {
        let mut o = Options::new(1 << 20);
        o.write_buffer_size(64 << 10);
        Db::open(o, dir).expect("open")
    }

    /// One batch refilled per record writes every record, and reads,
    /// iteration, deletes, flushes and properties see them.
    #[test]
    fn a_reused_batch_writes_every_record() {
        let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
        let db = open(dir.path());
        let (w, r) = (WriteOptions::new(false, true), ReadOptions::new());
        let mut batch = WriteBatch::new();
        for i in 0..1000u32 {
            batch.set_one(format!("k{i:05}").as_bytes(), &i.to_le_bytes());
            db.write(&w, &mut batch).expect("write");
        }
        db.delete(&w, b"k00007").expect("delete");
        // Cleared each time: one key per write, not the batch growing.
        let stats = db.property_text("rocksdb.stats").expect("stats");
        assert!(stats.contains("1001 writes, 1001 keys"), "{stats}");
        db.flush().expect("flush");
        let got = db.get_pinned(&r, b"k00042").expect("get").expect("present");
        assert_eq!(got.value(), 42u32.to_le_bytes());
        drop(got);
        assert!(db.get_pinned(&r, b"k00007").expect("get").is_none());
        let mut it = db.iterator(&r);
        it.seek(b"k00006");
        let mut keys = Vec::new();
        while let Some((k, _)) = it.item() {
            keys.push(String::from_utf8_lossy(k).into_owned());
            if keys.len() == 3 {
                break;
            }
            it.next();
        }
        it.status().expect("status");
        assert_eq!(keys, ["k00006", "k00008", "k00009"]);
        drop(it);
        let files: u64 = (0..7)
            .filter_map(|l| db.property_int(&format!("rocksdb.num-files-at-level{l}")))
            .sum();
        assert!(files >= 1, "a flush leaves SST files");
        assert_eq!(db.property_int("rocksdb.no-such-property"), None);
    }

    /// RocksDB's own error comes back as an error, not a panic.
    #[test]
    fn opening_a_file_as_a_database_is_an_error() {
        let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
        let file = dir.path().join("plain");
        std::fs::write(&file, b"x").expect("write");
        let err = Db::open(Options::new(1 << 20), &file)
            .err()
            .expect("an error");
        assert!(err.to_string().starts_with("rocksdb: "), "{err}");
    }
}
