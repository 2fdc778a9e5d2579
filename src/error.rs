//! Error kinds that decide the process exit code.
//!
//! `UsageError` is bad user input (exit 2, the field named); everything else
//! is a runtime failure (exit 1). Verification mismatches exit 3.

use std::fmt;

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

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted; results measured so far were kept")
    }
}

impl std::error::Error for Interrupted {}

/// Exit code for an error chain: 2 usage, 3 verification, 130 interrupted, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err
        .chain()
        .any(|e| e.downcast_ref::<UsageError>().is_some())
    {
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
    e.chain().any(|c| c.downcast_ref::<UsageError>().is_some())
        || format!("{e:#}").contains("cannot set up")
}
