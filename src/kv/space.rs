//! Full disks: the file system under a database and how full it is, the
//! watch that stops a phase's writers while the engine still has room for
//! what it may write after them (RocksDB aborts on a WAL that met ENOSPC),
//! and the sentence that names a full file system in an engine's error.

use crate::kv::report::human;
use crate::measure::sysfs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Logical bytes a worker writes between two looks at the free space.
pub const STRIDE_BYTES: u64 = 1 << 20;
/// Operations a worker does between two looks (small records, or an engine
/// that writes pages, not records: LMDB's copy-on-write tree).
pub const STRIDE_OPS: u64 = 1024;
/// What a worker may write between two looks: its 1 MiB of records and
/// what the engine adds to them (WAL headers, LMDB's copied pages), with
/// room to spare.
const PER_WORKER: u64 = 4 << 20;
/// Room kept for everyone else: WAL blocks, a journal record, the engine's
/// small files, another run's writers between their looks.
const BASE: u64 = 4 << 20;

/// The file system a path is on: its size and room (statvfs), where it is
/// mounted and what it is (mountinfo).
#[derive(Debug, Clone)]
pub struct FsUsage {
    pub total: u64,
    /// Free for an unprivileged writer (`f_bavail`): what root's reserved
    /// blocks aside a database can still have.
    pub avail: u64,
    pub place: String,
}

impl FsUsage {
    /// `statvfs` of `dir` and its mount, or `None` when it cannot be read.
    pub fn of(dir: &Path) -> Option<FsUsage> {
        let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: zeroed statvfs is a valid out-parameter; c is NUL-terminated.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return None;
        }
        Some(FsUsage::from_statvfs(&st, place(dir)))
    }

    fn from_statvfs(st: &libc::statvfs, place: String) -> FsUsage {
        let unit = st.f_frsize;
        FsUsage {
            total: st.f_blocks.saturating_mul(unit),
            avail: st.f_bavail.saturating_mul(unit),
            place,
        }
    }

    pub fn used(&self) -> u64 {
        self.total.saturating_sub(self.avail)
    }

    /// Nearly full: less than `room` free, or less than 1/32 of it.
    pub fn nearly_full(&self, room: u64) -> bool {
        self.avail < room.max(self.total / 32)
    }

    /// "the file system of /mnt/x (ext4 on /dev/loop3) is full: 63.9 of
    /// 64.0 MiB used".
    pub fn sentence(&self) -> String {
        format!(
            "the file system of {} is full: {} of {} used",
            self.place,
            human(self.used()),
            human(self.total)
        )
    }
}

/// "/mnt/x (ext4 on /dev/loop3)": the mount point of `dir`, its type and
/// source; the directory itself where mountinfo says nothing.
fn place(dir: &Path) -> String {
    match sysfs::fs_of_path(dir) {
        Some(fs) => format!("{} ({} on {})", fs.mountpoint, fs.fstype, fs.source),
        None => dir.display().to_string(),
    }
}

/// A phase stopped, or an engine failed, on a full file system: exit 1
/// with the file system named.
#[derive(Debug)]
pub struct DiskFull(pub String);

impl std::fmt::Display for DiskFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DiskFull {}

/// The free-space watch of one phase: workers look every `STRIDE_BYTES`
/// written or `STRIDE_OPS` operations (`fstatvfs` of the database
/// directory, no path walk) and stop the phase once the room left is below
/// the reserve: `BASE` + `PER_WORKER` per worker that writes (one that
/// only reads never looks) + what the engine may still write
/// (`KvEngine::space_reserve`, asked at each look).
pub struct SpaceWatch {
    dir: PathBuf,
    fd: OwnedFd,
    writers: AtomicU64,
}

impl SpaceWatch {
    /// The watch of `dir`; `None` if it cannot be opened (the phase then
    /// runs unwatched, as before).
    pub fn new(dir: &Path) -> Option<SpaceWatch> {
        let f = std::fs::File::open(dir).ok()?;
        Some(SpaceWatch {
            dir: dir.to_path_buf(),
            fd: f.into(),
            writers: AtomicU64::new(0),
        })
    }

    /// A worker's first look: its share of the reserve from now on.
    pub fn join(&self) {
        self.writers.fetch_add(1, Ordering::Relaxed);
    }

    /// The reserve for an engine that may still write `engine` bytes.
    pub fn reserve(&self, engine: u64) -> u64 {
        let writers = self.writers.load(Ordering::Relaxed).max(1);
        (BASE + PER_WORKER * writers).saturating_add(engine)
    }

    /// Ok while the file system has room for the reserve; `DiskFull`
    /// naming it otherwise. `engine`: what the engine may still write.
    pub fn check(&self, engine_name: &str, engine: u64) -> Result<(), DiskFull> {
        // SAFETY: zeroed statvfs is a valid out-parameter; the fd is open.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatvfs(self.fd.as_raw_fd(), &mut st) } != 0 {
            return Ok(()); // unreadable: nothing to say, the engine's error will
        }
        let reserve = self.reserve(engine);
        if st.f_bavail.saturating_mul(st.f_frsize) >= reserve {
            return Ok(());
        }
        let u = FsUsage::from_statvfs(&st, place(&self.dir));
        Err(DiskFull(format!(
            "the file system of {} is full for {engine_name}: {} of {} used; the phase was stopped \
             with {} free, under the {} kept for what {engine_name} may still write once its writers stop",
            u.place,
            human(u.used()),
            human(u.total),
            human(u.avail),
            human(reserve)
        )))
    }
}

/// `err`, an engine's error on the database in `dir`, with the sentence
/// naming its file system when that is (nearly) full; a `DiskFull` as it is.
pub fn explain(err: anyhow::Error, dir: &Path) -> anyhow::Error {
    if err.downcast_ref::<DiskFull>().is_some() {
        return err;
    }
    match FsUsage::of(dir) {
        Some(u) if u.nearly_full(BASE) => {
            let words = u.sentence();
            anyhow::Error::new(DiskFull(format!("{words}: {err:#}")))
        }
        _ => err,
    }
}

/// Refuse (exit 2 naming `--map-size`) an LMDB map written through
/// (`--mmap`, MDB_WRITEMAP) that the file system under `dir` cannot hold
/// `copies` times: the map is reserved before anything is written, so a
/// full disk cannot become a SIGBUS.
pub fn check_map_fits(dir: &Path, map_size: u64, copies: usize) -> anyhow::Result<()> {
    let Some(u) = FsUsage::of(dir) else {
        return Ok(());
    };
    let want = map_size.saturating_mul(copies as u64).saturating_add(BASE);
    if want <= u.avail {
        return Ok(());
    }
    Err(crate::error::usage(
        "--map-size",
        format!(
            "with --mmap (MDB_WRITEMAP) LMDB writes through its map, so iolab reserves the map on disk \
             ({}{}, plus {} kept free), and the file system of {} has {} free of {}: give a smaller --map-size",
            human(map_size),
            if copies > 1 {
                format!(" for each of {copies} instances")
            } else {
                String::new()
            },
            human(BASE),
            u.place,
            human(u.avail),
            human(u.total)
        ),
    ))
}

/// Reserve `len` bytes of `file` (`fallocate`, mode 0: the blocks are the
/// file's, its size becomes at least `len`), naming the file system when
/// it cannot.
pub fn reserve_file(file: &Path, len: u64) -> anyhow::Result<()> {
    use anyhow::Context;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .with_context(|| format!("opening {} to reserve its space", file.display()))?;
    // SAFETY: an open descriptor; offset 0 and a length in range.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, len as libc::off_t) };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    let what = format!(
        "reserving {} for {} (LMDB's map, written through with --mmap)",
        human(len),
        file.display()
    );
    match FsUsage::of(file.parent().unwrap_or(file)) {
        Some(u) if e.raw_os_error() == Some(libc::ENOSPC) => {
            Err(DiskFull(format!("{what}: {}: {e}", u.sentence())).into())
        }
        _ => Err(anyhow::Error::new(e).context(what)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(total_mib: u64, avail_mib: u64) -> FsUsage {
        FsUsage {
            total: total_mib << 20,
            avail: avail_mib << 20,
            place: "/mnt/x (tmpfs on tmpfs)".into(),
        }
    }

    #[test]
    fn the_sentence_names_the_file_system_and_how_full_it_is() {
        let u = FsUsage {
            total: 64 << 20,
            avail: 100 << 10,
            place: "/mnt/x (ext4 on /dev/loop3)".into(),
        };
        let s = u.sentence();
        assert!(
            s.starts_with("the file system of /mnt/x (ext4 on /dev/loop3) is full: "),
            "{s}"
        );
        assert!(s.ends_with(" used"), "{s}");
    }

    #[test]
    fn nearly_full_is_under_the_room_or_a_thirty_second() {
        assert!(usage(64, 1).nearly_full(8 << 20));
        assert!(!usage(64, 30).nearly_full(8 << 20));
        assert!(usage(1 << 20, 20 << 10).nearly_full(8 << 20));
        assert!(!usage(1 << 20, 40 << 10).nearly_full(8 << 20));
    }

    #[test]
    fn an_error_on_a_roomy_file_system_is_left_as_it_is() {
        let d = tempfile::tempdir().unwrap();
        let roomy = FsUsage::of(d.path()).unwrap();
        let e = explain(anyhow::anyhow!("boom"), d.path());
        if !roomy.nearly_full(BASE) {
            assert_eq!(format!("{e:#}"), "boom");
        }
        let full = anyhow::Error::new(DiskFull("already said".into()));
        assert_eq!(format!("{:#}", explain(full, d.path())), "already said");
    }

    #[test]
    fn the_reserve_grows_with_writers_and_the_engine() {
        let d = tempfile::tempdir().unwrap();
        let w = SpaceWatch::new(d.path()).unwrap();
        assert_eq!(w.reserve(0), BASE + PER_WORKER);
        for _ in 0..4 {
            w.join();
        }
        assert_eq!(w.reserve(5), BASE + 4 * PER_WORKER + 5);
        // A reserve no file system has: the watch says full, naming it.
        let e = w.check("rocksdb", u64::MAX / 2).unwrap_err().to_string();
        assert!(
            e.contains("the file system of ") && e.contains("is full for rocksdb"),
            "{e}"
        );
    }
}
