//! WiredTiger (MongoDB's storage engine) through Debian's libwiredtiger
//! 3.2.1: one connection per database, one WiredTiger session and cursor
//! per worker, records in one table of raw byte keys and values (a btree,
//! or an LSM tree with `--wt-table lsm`).

mod config;
mod ffi;

use crate::kv::engine::{mib, yes, EngineOptions, KvEngine, KvSession};
use anyhow::{Context, Result};
use ffi::{Cursor, Session, WtConnection, NOTFOUND};
use std::ffi::{c_void, CString};
use std::path::Path;
use std::ptr;

pub struct WiredTiger {
    conn: *mut WtConnection,
    uri: CString,
    opts: EngineOptions,
}

// SAFETY: a WT_CONNECTION is thread-safe (WiredTiger's documented contract);
// sessions, which are not, are each used by one worker (`WtSession`).
unsafe impl Send for WiredTiger {}
unsafe impl Sync for WiredTiger {}

/// WiredTiger's journal file size (`log=(file_max)`, 100 MB by default).
const JOURNAL_FILE: u64 = 100 << 20;

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).context("a NUL byte in a WiredTiger string")
}

impl WiredTiger {
    pub fn open(dir: &Path, o: &EngineOptions) -> Result<WiredTiger> {
        let home = cstring(&dir.to_string_lossy())?;
        let conf = cstring(&config::connection(o))?;
        let mut conn = ptr::null_mut();
        // SAFETY: valid NUL-terminated strings and an out pointer.
        let ret = unsafe { ffi::iolab_wt_open(home.as_ptr(), conf.as_ptr(), &mut conn) };
        ffi::check(ret, &format!("opening {}", dir.display())).map_err(|e| {
            // Its first journal file is allocated whole at open (fallocate).
            match crate::dut::scratch::free_bytes(dir) {
                Ok(free) if o.wal && free < JOURNAL_FILE => e.context(format!(
                    "WiredTiger allocates its journal in files of {} (log file_max, MongoDB's)",
                    crate::kv::report::human(JOURNAL_FILE)
                )),
                _ => e,
            }
        })?;
        let engine = WiredTiger {
            conn,
            uri: cstring(config::URI)?,
            opts: o.clone(),
        };
        let table = cstring(&config::table(o))?;
        engine.with_session(|s| {
            // SAFETY: a live session and valid strings.
            let ret = unsafe { ffi::iolab_wt_create(s, engine.uri.as_ptr(), table.as_ptr()) };
            ffi::check(ret, "creating the table")
        })?;
        Ok(engine)
    }

    /// Run `f` on a session of its own, closed afterwards.
    fn with_session<T>(&self, f: impl FnOnce(*mut Session) -> Result<T>) -> Result<T> {
        let mut s = ptr::null_mut();
        // SAFETY: the connection is open until `self` drops.
        ffi::check(
            unsafe { ffi::iolab_wt_open_session(self.conn, &mut s) },
            "opening a session",
        )?;
        let out = f(s);
        // SAFETY: `s` was opened above and is closed once.
        let closed = ffi::check(
            unsafe { ffi::iolab_wt_session_close(s) },
            "presenter a session",
        );
        let out = out?;
        closed?;
        Ok(out)
    }
}

impl Drop for WiredTiger {
    fn drop(&mut self) {
        // Presenter takes a final checkpoint; an error has nowhere to go.
        // SAFETY: every session borrowed `self` and is closed by now.
        unsafe { ffi::iolab_wt_close(self.conn) };
    }
}

/// One worker's session: a cursor for point operations and scans, and
/// readseq's cursor, kept across calls.
struct WtSession<'a> {
    _engine: &'a WiredTiger,
    session: *mut Session,
    cursor: *mut Cursor,
    seq: *mut Cursor,
}

impl WtSession<'_> {
    fn open_cursor(&self) -> Result<*mut Cursor> {
        let mut c = ptr::null_mut();
        // SAFETY: a live session and the table's URI.
        let ret =
            unsafe { ffi::iolab_wt_open_cursor(self.session, self._engine.uri.as_ptr(), &mut c) };
        ffi::check(ret, "opening a cursor")?;
        Ok(c)
    }

    /// Search `key`; on a hit show the value to `visit` in place, then
    /// release the cursor's position (and the page it pins).
    fn get(&mut self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let (mut v, mut vl) = (ptr::null(), 0usize);
        // SAFETY: the cursor is this session's; key is readable.
        let ret = unsafe {
            ffi::iolab_wt_get(self.cursor, key.as_ptr().cast(), key.len(), &mut v, &mut vl)
        };
        if ret == NOTFOUND {
            return Ok(false);
        }
        ffi::check(ret, "search")?;
        // SAFETY: the value stays valid until the cursor's next call (reset).
        visit(unsafe { ffi::bytes(v, vl) });
        ffi::check(unsafe { ffi::iolab_wt_reset(self.cursor) }, "cursor reset")?;
        Ok(true)
    }

    /// Show the record under cursor `c` to `visit`.
    fn current(c: *mut Cursor, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<()> {
        let (mut k, mut kl, mut v, mut vl) = (ptr::null(), 0usize, ptr::null(), 0usize);
        // SAFETY: `c` is positioned; the items stay valid until its next call.
        ffi::check(
            unsafe { ffi::iolab_wt_current(c, &mut k, &mut kl, &mut v, &mut vl) },
            "cursor get",
        )?;
        visit(unsafe { ffi::bytes(k, kl) }, unsafe { ffi::bytes(v, vl) });
        Ok(())
    }

    fn walk(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        // SAFETY: the cursor is this session's.
        let mut ret =
            unsafe { ffi::iolab_wt_seek(self.cursor, start.as_ptr().cast(), start.len()) };
        let mut n = 0;
        while ret == 0 && n < count {
            Self::current(self.cursor, visit)?;
            n += 1;
            if n < count {
                ret = unsafe { ffi::iolab_wt_next(self.cursor) };
            }
        }
        if ret != NOTFOUND {
            ffi::check(ret, "scan")?;
        }
        Ok(n)
    }
}

impl Drop for WtSession<'_> {
    fn drop(&mut self) {
        // Presenter the session closes its cursors.
        // SAFETY: opened by `KvEngine::session`, closed once.
        unsafe { ffi::iolab_wt_session_close(self.session) };
    }
}

impl KvSession for WtSession<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        // SAFETY: the cursor is this session's; key and value are readable.
        let ret = unsafe {
            ffi::iolab_wt_put(
                self.cursor,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast::<c_void>(),
                value.len(),
            )
        };
        ffi::check(ret, "insert")
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.get(key, &mut |v| {
            out.clear();
            out.extend_from_slice(v);
        })
    }
    fn read_with(
        &mut self,
        key: &[u8],
        _scratch: &mut Vec<u8>,
        visit: &mut dyn FnMut(&[u8]),
    ) -> Result<bool> {
        // The value is checked in WiredTiger's page: no copy.
        self.get(key, visit)
    }
    fn scan(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let n = self.walk(start, count, visit);
        // SAFETY: the cursor is this session's.
        let reset = ffi::check(unsafe { ffi::iolab_wt_reset(self.cursor) }, "cursor reset");
        let n = n?;
        reset?;
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        // SAFETY: the cursor is this session's.
        let ret = unsafe { ffi::iolab_wt_remove(self.cursor, key.as_ptr().cast(), key.len()) };
        if ret == NOTFOUND {
            return Ok(false);
        }
        // Cursors overwrite: removing a missing key succeeds too.
        ffi::check(ret, "remove")?;
        Ok(true)
    }
    fn next_in_order(&mut self, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        if self.seq.is_null() {
            self.seq = self.open_cursor()?;
        }
        // An unpositioned cursor's next is the first record.
        // SAFETY: the cursor is this session's.
        let ret = unsafe { ffi::iolab_wt_next(self.seq) };
        if ret == NOTFOUND {
            // Unpositioned again: the next call starts from the first key.
            ffi::check(unsafe { ffi::iolab_wt_reset(self.seq) }, "cursor reset")?;
            return Ok(false);
        }
        ffi::check(ret, "next")?;
        Self::current(self.seq, visit)?;
        Ok(true)
    }
}

impl KvEngine for WiredTiger {
    fn name(&self) -> &'static str {
        "wiredtiger"
    }
    fn version(&self) -> String {
        format!("{} (libwiredtiger, Debian)", ffi::version())
    }
    fn settings(&self) -> Vec<(String, String)> {
        let o = &self.opts;
        let checkpoints = match o.checkpoint_interval_s {
            0 => "off".to_string(),
            s => format!("{s} s"),
        };
        let eviction = match o.wt_eviction_threads {
            Some(n) => n.to_string(),
            None => "auto (1-8)".to_string(),
        };
        vec![
            ("table".into(), o.wt_table.name().into()),
            ("cache_size".into(), mib(o.cache_size)),
            ("journal".into(), yes(o.wal)),
            ("sync".into(), yes(o.sync)),
            ("checkpoint_interval".into(), checkpoints),
            ("eviction_threads".into(), eviction),
            ("session_max".into(), config::SESSION_MAX.to_string()),
        ]
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        let mut session = ptr::null_mut();
        // SAFETY: the connection is open until `self` drops.
        ffi::check(
            unsafe { ffi::iolab_wt_open_session(self.conn, &mut session) },
            "opening a session",
        )?;
        let mut s = WtSession {
            _engine: self,
            session,
            cursor: ptr::null_mut(),
            seq: ptr::null_mut(),
        };
        s.cursor = s.open_cursor()?;
        Ok(Box::new(s))
    }
    fn flush(&self) -> Result<()> {
        // A checkpoint writes and syncs every table (and lets the journal go).
        self.with_session(|s| {
            // SAFETY: a live session.
            ffi::check(unsafe { ffi::iolab_wt_checkpoint(s) }, "checkpoint")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::engine::WtTable;

    /// WiredTiger's own explanation ends the error, not stderr.
    #[test]
    fn errors_carry_wiredtigers_message() {
        let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
        let o = EngineOptions {
            wt_table: WtTable::Lsm,
            cache_size: 8 << 20,
            ..EngineOptions::default()
        };
        let e = WiredTiger::open(dir.path(), &o)
            .err()
            .expect("too small a cache");
        let e = format!("{e:#}");
        assert!(
            e.contains("creating the table") && e.contains("too small"),
            "{e}"
        );
    }
}
