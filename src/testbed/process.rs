//! Servers iolab starts (its own NBD target, nbdkit, qemu-nbd, tgtd): each
//! in its own process group, registered with the testbed under its pid,
//! start time and program, stopped with SIGTERM (SIGKILL after a grace
//! period) on drop, on a second Ctrl-C, and by the next start after a
//! SIGKILL of iolab. Before its spawn a server is recorded by a tag it
//! carries in its environment, so one started just before a SIGKILL of
//! iolab (pid not yet recorded) is found and stopped too.

use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::records::{runs, start_time as process_start_time};
use super::{Resource, Undone};

/// The environment variable that tags a server iolab starts:
/// `IOLAB_PID-SEQ`, unique per spawn on this machine while iolab runs.
pub const SPAWN_TAG_VAR: &str = "IOLAB_SPAWN_TAG";

static SPAWNS: AtomicU64 = AtomicU64::new(0);

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
        let tag = format!(
            "{}-{}",
            std::process::id(),
            SPAWNS.fetch_add(1, Ordering::Relaxed)
        );
        cmd.env(SPAWN_TAG_VAR, &tag);
        let pending = Resource::SpawningProcess {
            tag,
            program: program.to_string(),
        };
        let mut resource = None;
        let child = super::create_pending_with(Some(&pending), || {
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

/// How long a server has after SIGTERM before SIGKILL: a JVM (Cassandra)
/// takes several seconds to drain and flush, the others well under two.
pub fn grace(program: &str) -> Duration {
    match program {
        "cassandra" => Duration::from_secs(15),
        _ => Duration::from_secs(2),
    }
}

/// Stop the process group of `pid` if `pid` is still the process iolab
/// started (same start time): SIGTERM, then SIGKILL after its `grace`.
pub fn stop(pid: u32, start_time: u64, program: &str) {
    let ours = || pid > 1 && process_start_time(pid) == Some(start_time) && runs(pid);
    if !SERVERS.contains(&program) || !ours() {
        return;
    }
    // SAFETY: signalling a process group iolab created.
    unsafe { libc::kill(-(pid as i32), libc::SIGTERM) };
    let until = Instant::now() + grace(program);
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

/// Whether `tag` has the form iolab gives it (`PID-SEQ`).
pub fn plausible_tag(tag: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    tag.split_once('-')
        .is_some_and(|(pid, seq)| digits(pid) && digits(seq))
}

/// Stop the server started with `tag` in its environment (the leader of
/// its own process group), if one runs: what a SIGKILL of iolab between
/// the spawn and the record of its pid left.
pub fn stop_tagged(tag: &str, program: &str) -> Undone {
    let Some(pid) = find_tagged(tag) else {
        return Undone::AlreadyGone;
    };
    match process_start_time(pid) {
        Some(start) => {
            stop(pid, start, program);
            Undone::Removed
        }
        None => Undone::AlreadyGone,
    }
}

/// The process group leader whose environment holds `SPAWN_TAG_VAR=tag`.
fn find_tagged(tag: &str) -> Option<u32> {
    if !plausible_tag(tag) {
        return None;
    }
    let want = format!("{SPAWN_TAG_VAR}={tag}");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| {
            // SAFETY: getpgid only reads another process's group id.
            let leader = unsafe { libc::getpgid(pid as i32) } == pid as i32;
            leader
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == want.as_bytes()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jvm_gets_a_longer_but_bounded_grace_before_sigkill() {
        assert_eq!(grace("cassandra"), Duration::from_secs(15));
        assert_eq!(grace("postgres"), Duration::from_secs(2));
    }

    fn tagged_sleeper(tag: &str) -> Child {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new("sleep");
        cmd.arg("30").process_group(0).env(SPAWN_TAG_VAR, tag);
        cmd.spawn().expect("sleep runs")
    }

    /// A server whose spawn was recorded but not its pid (iolab killed in
    /// between) is found by its tag and stopped; another tag is left alone.
    #[test]
    fn a_server_recorded_only_by_its_tag_is_stopped() {
        let me = std::process::id();
        let (mine, other) = (format!("{me}-900001"), format!("{me}-900002"));
        let mut child = tagged_sleeper(&mine);
        let mut bystander = tagged_sleeper(&other);
        let pending = Resource::SpawningProcess {
            tag: mine.clone(),
            program: "iolab".into(),
        };
        assert!(super::super::records::plausible(&pending));
        assert_eq!(pending.undo(), Ok(Undone::Removed));
        assert!(
            child.try_wait().unwrap().is_some(),
            "the tagged server was stopped"
        );
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "another tag runs on"
        );
        assert_eq!(pending.undo(), Ok(Undone::AlreadyGone));
        let _ = bystander.kill();
        let _ = bystander.wait();
    }

    /// The spawn carries its tag, and the pending record is gone once the
    /// pid is recorded.
    #[test]
    fn a_spawned_server_carries_its_tag_and_only_its_pid_record_stays() {
        let server = ServerProcess::spawn(
            {
                let mut c = Command::new("sleep");
                c.arg("30");
                c
            },
            "iolab",
        )
        .expect("spawned");
        let env = std::fs::read(format!("/proc/{}/environ", server.pid)).unwrap();
        let tag = env
            .split(|&b| b == 0)
            .find_map(|v| v.strip_prefix(format!("{SPAWN_TAG_VAR}=").as_bytes()))
            .map(|t| String::from_utf8_lossy(t).to_string())
            .expect("tagged");
        assert!(plausible_tag(&tag), "{tag}");
        assert_eq!(find_tagged(&tag), Some(server.pid));
        let records: Vec<String> = std::fs::read_dir(super::super::records::state_dir().unwrap())
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .collect();
        let pid_field = format!("\"pid\":{},", server.pid);
        assert!(records
            .iter()
            .any(|r| r.contains(&pid_field) && r.contains("\"process\"")));
        assert!(
            !records.iter().any(|r| r.contains(&tag)),
            "pending record left"
        );
        drop(server);
    }

    #[test]
    fn only_iolab_shaped_tags_are_plausible() {
        assert!(plausible_tag("123-0"));
        for bad in ["", "123", "-1", "1-", "a-1", "1-2-3", "1 -2"] {
            assert!(!plausible_tag(bad), "{bad}");
        }
    }
}
