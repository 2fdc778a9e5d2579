//! Where results, reports and exports are written, and how, so no output
//! path can destroy data: checked before anything runs (`check`), and again
//! at every write (`write_atomic`).
//!
//! - A directory, a block device, a socket, or a file that is a target of
//!   the run is refused (exit 2, naming the field).
//! - A character device or a FIFO (`/dev/null`, `/dev/stdout`, a pipe) is
//!   written into, never replaced.
//! - An existing regular file is replaced only if iolab wrote it (a results
//!   file, fio-JSON export, HTML or Markdown report, CSV) or with `--force`.
//! - A symlink is followed: the rules apply to the file it points to, and
//!   the link stays.
//! - Regular files are replaced atomically through a temporary file next to
//!   the destination, removed again on every error path.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use std::sync::Mutex;

use anyhow::Context;

use crate::error::usage;
pub use crate::input::parent_dir;
use crate::input::{wait_ready, StreamEnd};

/// What the first KiB of a file iolab wrote contains: results JSON,
/// fio-JSON export, HTML reports and comparisons.
const IOLAB_MARKERS: &[&str] = &[
    "\"schema\":\"iolab-results\"",
    "\"schema\": \"iolab-results\"",
    "\"fio version\": \"iolab-",
    "<meta name=\"generator\" content=\"iolab",
    "<title>iolab",
];

/// How iolab's Markdown report and CSV export begin.
const IOLAB_PREFIXES: &[&str] = &["# iolab", "point,"];

/// What the rules allow for a destination that passed `check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A regular file (new, or iolab's own, or `--force`): atomic replace.
    File(PathBuf),
    /// A character device or FIFO: written into.
    Stream(PathBuf),
}

/// Check output `path` given as `field` before anything runs. `targets`:
/// files and devices the run reads or writes, which no output may be.
pub fn check(
    path: &Path,
    field: &str,
    force: bool,
    targets: &[&Path],
) -> anyhow::Result<Destination> {
    let resolved = resolve(path);
    let meta = match std::fs::metadata(&resolved) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = parent_dir(&resolved);
            if !dir.is_dir() {
                return Err(usage(
                    field,
                    format!(
                        "{}: directory {} does not exist",
                        path.display(),
                        dir.display()
                    ),
                ));
            }
            writable_dir(path, dir).map_err(|why| usage(field, why))?;
            return Ok(Destination::File(resolved));
        }
        Err(e) => return Err(usage(field, format!("{}: {e}", path.display()))),
    };
    if let Some(kind) = refused_kind(&meta) {
        return Err(usage(
            field,
            format!("{} is {kind}: not an output file", path.display()),
        ));
    }
    if is_stream_kind(&meta) {
        return Ok(Destination::Stream(resolved));
    }
    for t in targets {
        if std::fs::metadata(t).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino()) {
            return Err(usage(
                field,
                format!(
                    "{} is {}, an input or target of this run: the output would replace its data",
                    path.display(),
                    t.display()
                ),
            ));
        }
    }
    if !force && !written_by_iolab(&resolved) {
        return Err(usage(
            field,
            format!(
                "{} exists and was not written by iolab; pass --force to replace it",
                path.display()
            ),
        ));
    }
    writable_dir(path, parent_dir(&resolved)).map_err(|why| usage(field, why))?;
    Ok(Destination::File(resolved))
}

/// An atomic write makes a temporary file in `dir`: refuse a directory
/// this user cannot write or one on a read-only file system, before
/// anything runs (not after the measurement).
pub(crate) fn writable_dir(path: &Path, dir: &Path) -> Result<(), String> {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return Ok(());
    };
    // SAFETY: a NUL-terminated path; access only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!(
            "{}: cannot write in directory {}: {e}",
            path.display(),
            dir.display()
        ));
    }
    // SAFETY: statvfs fills the zeroed struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let read_only =
        unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 && st.f_flag & libc::ST_RDONLY != 0;
    if read_only {
        return Err(format!(
            "{}: directory {} is on a read-only file system",
            path.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// `path`, or the file its symlink chain points to (even if that does not
/// exist yet).
fn resolve(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(t) if t.is_absolute() => p = t,
            Ok(t) => p = parent_dir(&p).join(t),
            Err(_) => return p,
        }
    }
    p
}

/// What kind of file an output may never be, if `meta` is one.
fn refused_kind(meta: &Metadata) -> Option<&'static str> {
    let ft = meta.file_type();
    if ft.is_dir() {
        Some("a directory")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// A character device or FIFO: written into (once), never replaced.
fn is_stream_kind(meta: &Metadata) -> bool {
    let ft = meta.file_type();
    ft.is_char_device() || ft.is_fifo()
}

/// Whether `path` (followed through symlinks) is a character device or FIFO.
pub fn is_stream(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| is_stream_kind(&m))
}

/// Whether the file at `path` starts like something iolab writes.
pub fn written_by_iolab(path: &Path) -> bool {
    let mut head = Vec::with_capacity(1024);
    let Ok(f) = File::open(path) else {
        return false;
    };
    if f.take(1024).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    head.is_empty()
        || IOLAB_MARKERS.iter().any(|m| text.contains(m))
        || IOLAB_PREFIXES.iter().any(|m| text.starts_with(m))
}

/// Write `bytes` to `path` following the rules above: into a character
/// device or FIFO, else replacing the (resolved) file atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let resolved = resolve(path);
    if let Ok(meta) = std::fs::metadata(&resolved) {
        if let Some(kind) = refused_kind(&meta) {
            anyhow::bail!("{} is {kind}: not written", path.display());
        }
        if is_stream_kind(&meta) {
            let fifo = meta.file_type().is_fifo();
            let mut f = open_stream(&resolved, fifo)
                .with_context(|| format!("cannot open {}", path.display()))?;
            if !fifo {
                return f
                    .write_all(bytes)
                    .with_context(|| format!("cannot write {}", path.display()));
            }
            return write_fifo(&mut f, bytes).map_err(|e| match e {
                StreamEnd::Stopped => anyhow::anyhow!(
                    "cannot write {}: its reader read nothing for {} s after the stop signal",
                    path.display(),
                    FIFO_STOP_GRACE.as_secs()
                ),
                StreamEnd::Failed(e) => {
                    anyhow::Error::new(e).context(format!("cannot write {}", path.display()))
                }
            });
        }
    }
    let dir = parent_dir(&resolved);
    let name = resolved
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "results.json".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    // A temporary file of an earlier process with this pid is stale.
    let _ = std::fs::remove_file(&tmp);
    let written = (|| -> anyhow::Result<()> {
        let mut f = create_in_flight(&tmp)?;
        f.write_all(bytes)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, &resolved)
            .with_context(|| format!("cannot rename into {}", resolved.display()))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    if let Ok(mut w) = IN_FLIGHT.lock() {
        w.paths.retain(|p| p != &tmp);
    }
    written
}

/// How long a FIFO may wait for a reader before its write is given up.
const FIFO_READER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Open a character device, or a FIFO without blocking: a FIFO nobody reads
/// would block `open` for ever (and hold the run's end hostage), so it is
/// opened with O_NONBLOCK, which fails at once without a reader (ENXIO);
/// that is retried for `FIFO_READER_WAIT` (or until a stop signal), then
/// refused saying why. The descriptor stays non-blocking (`write_fifo`).
fn open_stream(path: &Path, fifo: bool) -> anyhow::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if !fifo {
        return Ok(OpenOptions::new().write(true).open(path)?);
    }
    let start = std::time::Instant::now();
    let f = loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(f) => break f,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if start.elapsed() >= FIFO_READER_WAIT || crate::interrupt::stop_requested() {
                    anyhow::bail!(
                        "it is a FIFO that nobody read within {} s (start its reader first, e.g. `cat {}`)",
                        FIFO_READER_WAIT.as_secs(),
                        path.display()
                    );
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Err(e) => return Err(e.into()),
        }
    };
    Ok(f)
}

/// How long a FIFO's reader may stall once a signal asked the run to stop.
const FIFO_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Write into a non-blocking FIFO between waits a signal ends: a reader
/// that never reads held the run (and its scratch file) past the first
/// SIGTERM.
fn write_fifo(f: &mut File, mut bytes: &[u8]) -> Result<(), StreamEnd> {
    use std::os::fd::AsRawFd;
    while !bytes.is_empty() {
        match f.write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait_ready(f.as_raw_fd(), libc::POLLOUT, FIFO_STOP_GRACE)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StreamEnd::Failed(e)),
        }
    }
    Ok(())
}

/// Temporary files being written now, which a second Ctrl-C removes; once
/// it has (`closed`), no new one is created.
struct InFlight {
    paths: Vec<PathBuf>,
    closed: bool,
}

static IN_FLIGHT: Mutex<InFlight> = Mutex::new(InFlight {
    paths: Vec::new(),
    closed: false,
});

/// Create `tmp` and register it, under the lock the teardown takes, so a
/// file is either created before the teardown (and removed by it) or not
/// at all.
fn create_in_flight(tmp: &Path) -> anyhow::Result<std::fs::File> {
    let mut w = IN_FLIGHT
        .lock()
        .map_err(|_| anyhow::anyhow!("output registry poisoned"))?;
    if w.closed {
        // A second Ctrl-C's teardown has begun: the run ends with 130.
        return Err(anyhow::Error::new(crate::error::Interrupted)
            .context(format!("iolab is exiting: {} not written", tmp.display())));
    }
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    w.paths.push(tmp.to_path_buf());
    Ok(f)
}

/// Remove the temporary files of writes still under way and refuse new
/// ones (the process is about to exit without finishing them).
pub fn remove_in_flight() {
    if let Some(mut w) = crate::lock::lock_briefly(&IN_FLIGHT) {
        w.closed = true;
        for p in w.paths.drain(..) {
            let _ = std::fs::remove_file(p);
        }
    }
}
