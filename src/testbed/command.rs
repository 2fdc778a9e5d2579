//! Set-up commands run with a time bound (`timeout -k`): a loop device
//! over a FUSE file, mkfs and mount can hang where a deadlock is possible
//! (nbdfuse's manual warns of one), and iolab must then fail, not hang.

use std::ffi::OsStr;
use std::process::Command;
use std::time::Duration;

/// Run `program args...` for at most `limit` (then SIGTERM, SIGKILL 5 s
/// later); its standard output, or an error with its standard error.
pub fn bounded(program: &str, args: &[&OsStr], limit: Duration) -> anyhow::Result<String> {
    let secs = limit.as_secs().max(1).to_string();
    let out = Command::new("timeout")
        .args(["-k", "5", &secs, program])
        .args(args)
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {program} (through timeout): {e}"))?;
    if out.status.code() == Some(124) || out.status.code() == Some(137) {
        anyhow::bail!("{program} did not finish within {secs} s (stopped)");
    }
    if !out.status.success() {
        anyhow::bail!(
            "{program} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
