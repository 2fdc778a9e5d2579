//! Reading the files a user names (fio job files, plan files, YCSB property
//! files, results and fio JSON) with a bound: a device or pipe given by
//! mistake (`/dev/zero`) ends in an error naming the flag, not in memory
//! exhaustion. Also `parent_dir`, the directory a named path is in (the
//! scratch file's and every output's checks share it).

use std::io::Read;
use std::path::Path;

use crate::error::usage;

/// The directory `p` is in (`.` for a bare file name).
pub fn parent_dir(p: &Path) -> &Path {
    p.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Job, plan and property files: far below this.
pub const CONFIG_MAX: u64 = 4 << 20;
/// What a stream (not a regular file) may hold when results are read from it.
pub const STREAM_MAX: u64 = 256 << 20;

/// The text of `path`, given as `field`, at most `max` bytes (a regular
/// file's own size when `max` is `None`, else `STREAM_MAX` for streams).
///
/// A FIFO or other stream is opened without blocking and read between
/// waits that a signal ends (exit 130): a FIFO nobody writes held `open`
/// past the first Ctrl-C.
pub fn read_text(path: &Path, field: &str, max: Option<u64>) -> anyhow::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |why: String| usage(field, format!("cannot read {}: {why}", path.display()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| fail(e.to_string()))?;
    let meta = f.metadata().map_err(|e| fail(e.to_string()))?;
    if meta.is_dir() {
        return Err(fail("it is a directory".into()));
    }
    let cap = match (max, meta.is_file()) {
        (Some(m), _) => m,
        (None, true) => meta.len(),
        (None, false) => STREAM_MAX,
    };
    let mut bytes = Vec::new();
    if meta.is_file() {
        f.take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(e.to_string()))?;
    } else {
        read_stream(f, cap + 1, &mut bytes).map_err(|e| match e {
            StreamEnd::Stopped => crate::error::Interrupted.into(),
            StreamEnd::Failed(e) => fail(e.to_string()),
        })?;
    }
    if bytes.len() as u64 > cap {
        return Err(fail(format!(
            "more than {} MiB: not a file of this kind",
            (cap >> 20).max(1)
        )));
    }
    String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text".into()))
}

/// Why reading or writing a stream ended early.
#[derive(Debug)]
pub(crate) enum StreamEnd {
    /// A signal asked the run to stop while the stream made no progress.
    Stopped,
    Failed(std::io::Error),
}

/// How long one wait on a stream sleeps before the stop flag is checked.
const STREAM_WAKE_MS: i32 = 100;

/// Wait until `fd` is ready for `events` (POLLIN or POLLOUT), checking the
/// stop flag every `STREAM_WAKE_MS`; once a stop is seen, give the stream
/// `stop_grace` more before giving up. The returned revents may hold
/// POLLHUP or POLLERR.
pub(crate) fn wait_ready(
    fd: std::os::fd::RawFd,
    events: i16,
    stop_grace: std::time::Duration,
) -> Result<i16, StreamEnd> {
    let mut stop_seen: Option<std::time::Instant> = None;
    loop {
        if crate::interrupt::stop_requested() {
            let seen = *stop_seen.get_or_insert_with(std::time::Instant::now);
            if seen.elapsed() >= stop_grace {
                return Err(StreamEnd::Stopped);
            }
        }
        let mut p = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, STREAM_WAKE_MS) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(StreamEnd::Failed(e));
            }
        } else if n > 0 {
            return Ok(p.revents);
        }
    }
}

/// Read a non-blocking stream to its end (at most `limit` bytes). A FIFO
/// without a writer yet reads as empty, so only a read after poll said
/// ready (data, or the writer gone) counts as the end.
fn read_stream(mut f: std::fs::File, limit: u64, out: &mut Vec<u8>) -> Result<(), StreamEnd> {
    use std::os::fd::AsRawFd;
    let mut buf = vec![0u8; 64 << 10];
    while (out.len() as u64) < limit {
        wait_ready(f.as_raw_fd(), libc::POLLIN, std::time::Duration::ZERO)?;
        match f.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => out.extend_from_slice(&buf[..n.min((limit - out.len() as u64) as usize)]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(StreamEnd::Failed(e)),
        }
    }
    Ok(())
}
