//! LMDB through `heed` (which builds LMDB from its mdb.master sources).

use crate::kv::engine::{yes, EngineOptions, KvEngine, KvSession};
use anyhow::{Context, Result};
use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, RoIter, RoTxn, WithTls};
use std::ops::Bound;
use std::path::Path;

pub struct Lmdb {
    env: Env,
    db: Database<Bytes, Bytes>,
    opts: EngineOptions,
}

impl Lmdb {
    pub fn open(dir: &Path, o: &EngineOptions) -> Result<Lmdb> {
        let mut flags = EnvFlags::empty();
        if !o.sync {
            flags |= EnvFlags::NO_SYNC;
        }
        if o.mmap {
            flags |= EnvFlags::WRITE_MAP;
        }
        if !o.readahead {
            flags |= EnvFlags::NO_READ_AHEAD;
        }
        let mut eo = EnvOpenOptions::new();
        eo.map_size(o.map_size as usize).max_dbs(1).max_readers(512);
        // SAFETY: heed's contract: the directory is not opened twice in this
        // process, and with NO_SYNC/WRITE_MAP a crash may lose the last
        // transactions, which is what the options ask for.
        let env = unsafe {
            eo.flags(flags);
            eo.open(dir)
        }
        .with_context(|| format!("opening lmdb at {}", dir.display()))?;
        if o.mmap {
            // Writes through the map into a hole of a full file system are
            // a SIGBUS: the map's blocks are allocated before any write.
            crate::kv::space::reserve_file(&dir.join("data.mdb"), o.map_size)?;
        }
        let mut wtxn = env.write_txn()?;
        let db: Database<Bytes, Bytes> = env.create_database(&mut wtxn, None)?;
        wtxn.commit()?;
        Ok(Lmdb {
            env,
            db,
            opts: o.clone(),
        })
    }
}

/// The data file of a new, empty environment as this LMDB writes it (its
/// two meta pages), made in `scratch` (created here, removed after): what
/// `kv::raw` puts on a block device's first pages, so LMDB opens the
/// device as an environment of its own format.
pub fn fresh_environment(scratch: &Path) -> Result<Vec<u8>> {
    std::fs::create_dir(scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let made = (|| -> Result<Vec<u8>> {
        let mut eo = EnvOpenOptions::new();
        eo.map_size(1 << 20).max_dbs(1);
        // SAFETY: a directory of its own, opened once and closed below.
        let env = unsafe { eo.open(scratch) }?;
        env.prepare_for_closing().wait();
        Ok(std::fs::read(scratch.join("data.mdb"))?)
    })();
    let _ = std::fs::remove_dir_all(scratch);
    made.context("making an empty LMDB environment")
}

/// The map size in the largest whole unit (GiB as before; a raw device's
/// map is the device's size, often not whole GiB).
fn map_size(b: u64) -> String {
    match b {
        b if b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b >> 10),
    }
}

struct LmdbSession<'a> {
    e: &'a Lmdb,
    /// readseq's cursor, kept across calls in one read transaction.
    seq: Option<SeqCursor>,
}

type SeqIter<'txn> = RoIter<'txn, Bytes, Bytes>;

self_cell::self_cell!(
    /// A read transaction and the cursor that walks it.
    struct SeqCursor {
        owner: RoTxn<'static, WithTls>,
        #[not_covariant]
        dependent: SeqIter,
    }
);

impl Lmdb {
    /// A write's error, saying which bound a full map is.
    fn write_error(&self, e: heed::Error) -> anyhow::Error {
        match e {
            heed::Error::Mdb(heed::MdbError::MapFull) => anyhow::Error::new(e).context(format!(
                "LMDB's map is full (--map-size {}{})",
                map_size(self.opts.map_size),
                if self.opts.mmap {
                    ", reserved on disk with --mmap"
                } else {
                    ""
                }
            )),
            e => e.into(),
        }
    }

    fn write(&self, f: impl FnOnce(&mut heed::RwTxn<'_>) -> heed::Result<bool>) -> Result<bool> {
        let mut w = self.env.write_txn().map_err(|e| self.write_error(e))?;
        let out = f(&mut w).map_err(|e| self.write_error(e))?;
        w.commit().map_err(|e| self.write_error(e))?;
        Ok(out)
    }
}

impl KvSession for LmdbSession<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let db = self.e.db;
        self.e.write(|w| db.put(w, key, value).map(|()| true))?;
        Ok(())
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let r = self.e.env.read_txn()?;
        match self.e.db.get(&r, key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(v);
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
        let r = self.e.env.read_txn()?;
        let range: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Included(start), Bound::Unbounded);
        let mut n = 0;
        for item in self.e.db.range(&r, &range)? {
            if n >= count {
                break;
            }
            let (k, v) = item?;
            visit(k, v);
            n += 1;
        }
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let db = self.e.db;
        self.e.write(|w| db.delete(w, key))
    }
    fn next_in_order(&mut self, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        if self.seq.is_none() {
            let db = self.e.db;
            let txn = self.e.env.clone().static_read_txn()?;
            self.seq = Some(SeqCursor::try_new(txn, |t| db.iter(t))?);
        }
        let cursor = self.seq.as_mut().expect("opened above");
        let more = cursor.with_dependent_mut(|_, it| match it.next() {
            Some(Ok((k, v))) => {
                visit(k, v);
                Ok(true)
            }
            Some(Err(e)) => Err(e),
            None => Ok(false),
        });
        if !matches!(more, Ok(true)) {
            self.seq = None;
        }
        Ok(more?)
    }
}

impl KvEngine for Lmdb {
    fn name(&self) -> &'static str {
        "lmdb"
    }
    fn version(&self) -> String {
        format!(
            "{} (bundled by heed {})",
            heed::lmdb_version().string,
            crate::kv::engine::locked_version("heed")
        )
    }
    fn settings(&self) -> Vec<(String, String)> {
        let o = &self.opts;
        vec![
            ("sync".into(), yes(o.sync)),
            ("writemap".into(), yes(o.mmap)),
            ("readahead".into(), yes(o.readahead)),
            ("map_size".into(), map_size(o.map_size)),
            ("page_size".into(), "OS page (LMDB fixed)".into()),
        ]
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(LmdbSession { e: self, seq: None }))
    }
    fn flush(&self) -> Result<()> {
        Ok(self.env.force_sync()?)
    }
    /// Nothing once the map is reserved (`--mmap`): LMDB writes inside it.
    fn space_reserve(&self) -> Option<u64> {
        (!self.opts.mmap).then_some(0)
    }
    fn stats(&self) -> Vec<(String, String)> {
        let info = self.env.info();
        let mut v = vec![("last_page".into(), info.last_page_number.to_string())];
        // A block device's file size is 0: only a file's says anything.
        if let Ok(sz @ 1..) = self.env.real_disk_size() {
            v.push(("real_disk_size".into(), sz.to_string()));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_sizes_in_whole_units() {
        assert_eq!(map_size(64 << 30), "64 GiB");
        assert_eq!(map_size(256 << 20), "256 MiB");
        assert_eq!(map_size((1 << 20) + 4096), "1028 KiB");
    }

    /// What `kv::raw` writes on a device: two meta pages LMDB accepts as
    /// an environment, so an environment opened over them is empty.
    #[test]
    fn a_fresh_environment_is_two_meta_pages_lmdb_opens() {
        let d = tempfile::tempdir().unwrap();
        let fresh = fresh_environment(&d.path().join("fresh")).unwrap();
        assert!(!d.path().join("fresh").exists(), "its scratch removed");
        let page = fresh.len() / 2;
        assert!(
            page >= 4096 && page.is_power_of_two(),
            "{} bytes",
            fresh.len()
        );
        // Over a data file of garbage beyond the meta pages, as a used
        // device has: LMDB reads the meta pages and nothing past them.
        let env_dir = d.path().join("env");
        std::fs::create_dir(&env_dir).unwrap();
        let mut data = fresh.clone();
        data.extend(std::iter::repeat_n(0xA5u8, 16 * page));
        std::fs::write(env_dir.join("data.mdb"), &data).unwrap();
        let o = EngineOptions {
            map_size: 1 << 20,
            ..EngineOptions::default()
        };
        let db = Lmdb::open(&env_dir, &o).unwrap();
        let mut s = db.session().unwrap();
        let mut out = Vec::new();
        assert!(!s.read(b"k", &mut out).unwrap(), "empty");
        s.insert(b"k", b"v").unwrap();
        assert!(s.read(b"k", &mut out).unwrap() && out == b"v");
    }
}
