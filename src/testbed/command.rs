//! Set-up commands run with a time bound (`timeout -k`): a loop device
//! over a FUSE file, mkfs and mount can hang where a deadlock is possible
//! (nbdfuse's manual warns of one), and iolab must then fail, not hang.
//! They also end with iolab: a SIGKILLed iolab must not leave a mkfs,
//! losetup or mount finishing behind it, unrecorded, after the next start
//! swept (the kernel sends `timeout` SIGTERM when iolab's thread dies, and
//! `timeout` passes it on to the command).

use std::ffi::OsStr;
use std::process::Command;
use std::time::Duration;

/// `program`'s path on PATH, if it is there.
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// Run `program args...` for at most `limit` (then SIGTERM, SIGKILL 5 s
/// later); its standard output, or an error with its standard error.
pub fn bounded(program: &str, args: &[&OsStr], limit: Duration) -> anyhow::Result<String> {
    use std::os::unix::process::CommandExt;
    let secs = limit.as_secs().max(1).to_string();
    let parent = std::process::id() as libc::pid_t;
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", &secs, program]).args(args);
    // SAFETY: prctl, getppid and _exit are async-signal-safe and touch no
    // memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            if libc::getppid() != parent {
                libc::_exit(1); // iolab is gone already
            }
            Ok(())
        });
    }
    let out = cmd
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
