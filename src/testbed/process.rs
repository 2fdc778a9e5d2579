//! Servers iolab starts (its own NBD target, nbdkit, qemu-nbd, tgtd): each
//! in its own process group, registered with the testbed under its pid,
//! start time and program, stopped with SIGTERM (SIGKILL after a grace
//! period) on drop, on a second Ctrl-C, and by the next start after a
//! SIGKILL of iolab.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::records::start_time as process_start_time;
use super::Resource;

/// The programs iolab starts as servers (a record naming anything else is not trusted).
pub const SERVERS: &[&str] = &[
    "iolab",
    "nbdkit",
    "qemu-nbd",
    "tgtd",
    "nbdfuse",
    "postgres",
    "mariadbd",
    "redis-server",
    // A JVM running CassandraDaemon (the process is named java).
    "cassandra",
    "ferretdb",
];

/// A server iolab started.
pub struct ServerProcess {
    pub child: Child,
    pub pid: u32,
    resource: Resource,
}

impl ServerProcess {
    /// Spawn `cmd` (running `program`) in a process group of its own and
    /// register it in one step with respect to a second Ctrl-C.
    pub fn spawn(mut cmd: Command, program: &str) -> anyhow::Result<ServerProcess> {
        use std::os::unix::process::CommandExt;
        anyhow::ensure!(
            SERVERS.contains(&program),
            "{program} is not a known server"
        );
        cmd.process_group(0);
        let mut resource = None;
        let child = super::create_with(|| {
            let child = cmd
                .spawn()
                .map_err(|e| anyhow::anyhow!("cannot start {program}: {e}"))?;
            let pid = child.id();
            let res = Resource::Process {
                pid,
                start_time: process_start_time(pid).unwrap_or(0),
                program: program.to_string(),
            };
            resource = Some(res.clone());
            Ok((child, res))
        })?;
        let pid = child.id();
        Ok(ServerProcess {
            child,
            pid,
            resource: resource.expect("registered"),
        })
    }

    /// Whether it has exited (and how), without waiting.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Resource::Process {
            pid,
            start_time,
            program,
        } = &self.resource
        {
            stop(*pid, *start_time, program);
        }
        let _ = self.child.wait();
        super::release(&self.resource);
    }
}

/// Stop the process group of `pid` if `pid` is still the process iolab
/// started (same start time): SIGTERM, then SIGKILL after two seconds.
pub fn stop(pid: u32, start_time: u64, program: &str) {
    let ours =
        || pid > 1 && process_start_time(pid) == Some(start_time) && is_zombie(pid) != Some(true);
    if !SERVERS.contains(&program) || !ours() {
        return;
    }
    // SAFETY: signalling a process group iolab created.
    unsafe { libc::kill(-(pid as i32), libc::SIGTERM) };
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if !ours() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
    // Gone before what it held (a mount, a loop device) is taken down.
    let until = Instant::now() + Duration::from_secs(2);
    while ours() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn is_zombie(pid: u32) -> Option<bool> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    Some(rest.split_whitespace().next()? == "Z")
}
