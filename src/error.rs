//! Error kinds that decide the process exit code.
//!
//! `UsageError` is bad user input (exit 2, the field named); everything else
//! is a runtime failure (exit 1). Verification mismatches exit 3.
//! `WorkerError` is what a worker and an engine's setup return: its kind,
//! not its text, says whether a point cannot run here or failed.

use std::fmt;
use std::io;

/// Bad input from the user: a flag, a size, a job file field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// The field, flag or file key that is wrong (e.g. `--bs`).
    pub field: String,
    pub message: String,
}

impl UsageError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        UsageError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand to build an `anyhow::Error` carrying a `UsageError`.
pub fn usage(field: impl Into<String>, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError::new(field, message))
}

/// A usage error named by its place (a plan file's part: `FILE [[kv]]
/// NAME`) before its field; other errors as they are.
pub fn name_place(place: &str, e: anyhow::Error) -> anyhow::Error {
    match e.downcast::<UsageError>() {
        Ok(u) => usage(format!("{place} {}", u.field), u.message),
        Err(other) => other,
    }
}

/// The run finished but data verification found mismatches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyFailed {
    pub mismatches: u64,
}

impl fmt::Display for VerifyFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "data verification failed: {} mismatched block(s)",
            self.mismatches
        )
    }
}

impl std::error::Error for VerifyFailed {}

/// The run was interrupted by SIGINT/SIGTERM; results up to then were kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

/// `e`, or the interruption when a stop was asked for (a connection or
/// set-up that failed because the user pressed Ctrl-C was not refused:
/// exit 130, not the error's code).
pub fn interrupted_or(e: anyhow::Error) -> anyhow::Error {
    if crate::interrupt::stop_requested() {
        Interrupted.into()
    } else {
        e
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted; results measured so far were kept")
    }
}

impl std::error::Error for Interrupted {}

/// Why a worker (or the engine it set up) stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Bad input found only when the worker set up (exit 2).
    #[error("{0}")]
    Usage(UsageError),
    /// The engine cannot be set up on this machine or target (e.g. kernel AIO
    /// or io_uring unavailable): the point cannot run here.
    #[error("cannot set up {what}: {source}")]
    Setup {
        /// What could not be set up, e.g. "io_uring".
        what: &'static str,
        source: io::Error,
    },
    /// The worker could not prepare itself (buffers, mapping) before timing.
    #[error("{what}: {source}")]
    Prepare {
        /// e.g. "cannot map the target".
        what: &'static str,
        source: anyhow::Error,
    },
    /// A request failed in a way the loop cannot record as a completion.
    #[error("{op} at offset {offset} failed: {err}")]
    Io {
        /// The request's kind, by name ("read", "write", "fsync"): error
        /// is a leaf and names no engine type.
        op: &'static str,
        offset: u64,
        err: io::Error,
    },
    /// The engine's submission machinery failed. (Not `#[from]`: the
    /// message already holds the io::Error's, which as a source would be
    /// printed twice by `{:#}`.)
    #[error("engine error: {0}")]
    Engine(io::Error),
    /// This worker did not run because another one failed to start.
    #[error("another worker failed to start")]
    Aborted,
    /// A bug: the worker thread panicked (its message). The run ends with
    /// exit 1 instead of hanging at the start barrier.
    #[error("a worker panicked: {0}")]
    Panicked(String),
}

impl WorkerError {
    /// The error of a worker whose thread panicked with `payload`.
    pub fn panicked(payload: &(dyn std::any::Any + Send)) -> WorkerError {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        WorkerError::Panicked(msg)
    }
}

impl From<io::Error> for WorkerError {
    fn from(e: io::Error) -> Self {
        WorkerError::Engine(e)
    }
}

impl WorkerError {
    /// True when the error says the point cannot run here (bad settings for
    /// it, or an engine that cannot be set up) rather than that it failed.
    pub fn point_cannot_run(&self) -> bool {
        matches!(self, WorkerError::Usage(_) | WorkerError::Setup { .. })
    }
}

fn is_usage(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<UsageError>().is_some()
        || matches!(e.downcast_ref::<WorkerError>(), Some(WorkerError::Usage(_)))
}

/// Exit code for an error chain: 2 usage, 3 verification, 130 interrupted, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err.chain().any(is_usage) {
        2
    } else if err
        .chain()
        .any(|e| e.downcast_ref::<VerifyFailed>().is_some())
    {
        3
    } else if err
        .chain()
        .any(|e| e.downcast_ref::<Interrupted>().is_some())
    {
        130
    } else {
        1
    }
}

/// True when an error from running a point means "this point cannot run
/// here" (bad settings for it, an engine feature that is missing) rather
/// than a failure: a sweep records it as skipped and goes on.
pub fn point_cannot_run(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<WorkerError>()
                .is_some_and(WorkerError::point_cannot_run)
    })
}

/// The messages of an error chain, outermost first, without a cause that
/// only repeats the message before it (a client library's error whose
/// source is the same `io::Error`: "Connection refused" said twice).
pub fn chain_messages(err: &anyhow::Error) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.last().is_some_and(|prev| prev.ends_with(&text)) {
            continue;
        }
        out.push(text);
    }
    out
}

/// The chain in one line, as `{:#}` writes it, without repeated causes.
pub fn chain_line(err: &anyhow::Error) -> String {
    chain_messages(err).join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_repeating_its_parent_is_said_once() {
        let io = || io::Error::from_raw_os_error(libc::ECONNREFUSED);
        #[derive(Debug, thiserror::Error)]
        #[error("{0}")]
        struct Wrapper(#[source] io::Error);
        let e = anyhow::Error::new(Wrapper(io())).context("connecting to redis://h:1/0");
        let refused = io().to_string();
        assert_eq!(
            chain_line(&e),
            format!("connecting to redis://h:1/0: {refused}")
        );
        let plain = anyhow::Error::new(io()).context("a").context("b");
        assert_eq!(chain_messages(&plain), ["b", "a", refused.as_str()]);
    }

    #[test]
    fn point_cannot_run_decides_from_the_kind() {
        let setup = WorkerError::Setup {
            what: "io_uring",
            source: io::Error::from_raw_os_error(libc::ENOSYS),
        };
        let e = anyhow::Error::new(setup).context("job j failed");
        assert!(point_cannot_run(&e));
        assert_eq!(exit_code(&e), 1);
        let u = anyhow::Error::new(WorkerError::Usage(UsageError::new("--bs", "bad")));
        assert!(point_cannot_run(&u));
        assert_eq!(exit_code(&u), 2);
        let io = WorkerError::Io {
            op: "read",
            offset: 0,
            err: io::Error::from_raw_os_error(libc::EIO),
        };
        // Its text no longer matters: an I/O failure is a failure.
        let e = anyhow::Error::new(io).context("cannot set up nothing");
        assert!(!point_cannot_run(&e));
        assert!(!point_cannot_run(&anyhow::anyhow!(
            "cannot set up io_uring: x"
        )));
    }
}
