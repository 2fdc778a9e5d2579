//! Crash records: one small JSON file per live resource in the state
//! directory (`IOLAB_STATE_DIR`, else /run/iolab, else /tmp/iolab-UID),
//! naming the owner by pid and process start time (so a reused pid is not
//! mistaken for the owner). A normal teardown deletes the record; a record
//! whose owner is gone marks a leftover for `sweep`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::Resource;

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    pid: u32,
    /// Field 22 of /proc/PID/stat (clock ticks since boot).
    start_time: u64,
    resource: Resource,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The state directory, created if needed; `None` if none is writable.
pub fn state_dir() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("IOLAB_STATE_DIR") {
        Some(d) => vec![PathBuf::from(d)],
        None => vec![
            PathBuf::from("/run/iolab"),
            std::env::temp_dir().join(format!("iolab-{}", unsafe { libc::getuid() })),
        ],
    };
    candidates
        .into_iter()
        .find(|d| std::fs::create_dir_all(d).is_ok() && writable(d))
}

/// Records are trusted only in a directory this user owns and only for
/// what iolab makes itself: paths and cgroups it names `iolab-...`, the
/// scheduler file of a disk with a plain scheduler name, the tracefs mount.
/// A planted record cannot make iolab remove or change anything else.
fn trusted(dir: &Path, res: &Resource) -> bool {
    use std::os::unix::fs::MetadataExt;
    let owner_ok = std::fs::metadata(dir).is_ok_and(|m| m.uid() == unsafe { libc::getuid() });
    owner_ok && plausible(res)
}

/// Whether `res` is something iolab could have made.
pub fn plausible(res: &Resource) -> bool {
    let iolab_named = |p: &Path| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("iolab-"))
    };
    match res {
        Resource::Path(p) => iolab_named(p),
        Resource::Cgroup { path, parent } => {
            iolab_named(path)
                && path.starts_with("/sys/fs/cgroup")
                && path.parent() == Some(parent.as_path())
        }
        Resource::Scheduler { path, original } => {
            let parts: Vec<_> = path.components().map(|c| c.as_os_str()).collect();
            parts.len() == 6
                && path.starts_with("/sys/block")
                && parts[4] == "queue"
                && parts[5] == "scheduler"
                && !original.is_empty()
                && original
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        }
        Resource::Mount(p) => p == Path::new(super::mount::TRACEFS),
        // ext4 on nbdfuse: `iolab-volume-PID-N/iolab-ext4`; a medium of
        // `device --make`: `iolab-media-NAME-PID-N/mnt`.
        Resource::Mountpoint(p) => {
            p.is_absolute()
                && !p.components().any(|c| c == std::path::Component::ParentDir)
                && (iolab_named(p) || p.parent().is_some_and(iolab_named))
        }
        Resource::Loop {
            device, backing, ..
        } => super::loopdev::plausible_device(device) && iolab_named(backing),
        Resource::Netns(name) => super::netns::plausible_name(name),
        Resource::NbdDevice { device } => super::nbd_kernel::plausible_device(device),
        Resource::NvmeTarget { subsystem, port } => {
            let nvmet = Path::new(super::nvme_kernel::NVMET);
            subsystem.parent() == Some(&nvmet.join("subsystems"))
                && port.parent() == Some(&nvmet.join("ports"))
                && subsystem
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(super::nvme_kernel::plausible_subsystem)
        }
        Resource::NvmeController { name, nqn } => {
            super::nvme_kernel::plausible_nqn(nqn)
                && name
                    .strip_prefix("nvme")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        }
        Resource::RdmaLink { veth } => super::soft_roce::plausible_veth(veth),
        Resource::Process { program, .. } => super::process::SERVERS.contains(&program.as_str()),
        Resource::SpawningProcess { tag, program } => {
            super::process::SERVERS.contains(&program.as_str())
                && super::process::plausible_tag(tag)
        }
    }
}

fn writable(d: &Path) -> bool {
    let c = std::ffi::CString::new(d.as_os_str().as_encoded_bytes());
    // SAFETY: a NUL-terminated path.
    c.is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
}

/// Start time of `pid`, or `None` if it does not run.
pub fn start_time(pid: u32) -> Option<u64> {
    stat_after_command(pid)?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Whether process `pid` still runs: it exists and is not a zombie (a
/// killed sweeper its parent has not reaped yet left its claims for good).
pub fn runs(pid: u32) -> bool {
    stat_after_command(pid).is_some_and(|rest| rest.split_whitespace().next() != Some("Z"))
}

/// /proc/PID/stat from field 3 (the state) on: the command name (field 2)
/// may hold spaces and parentheses, so it is cut at its last ')'.
fn stat_after_command(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat[stat.rfind(')')? + 1..].to_string())
}

/// Write the record of `res`; its path, or `None` if records cannot be kept.
pub fn write(res: &Resource) -> Option<PathBuf> {
    let dir = state_dir()?;
    let pid = std::process::id();
    let rec = Record {
        pid,
        start_time: start_time(pid)?,
        resource: res.clone(),
    };
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{pid}-{seq}.json"));
    let text = serde_json::to_vec(&rec).ok()?;
    crate::results::write_atomic(&path, &text).ok()?;
    Some(path)
}

/// The record files in `dir`, newest first within each process (file
/// `PID-SEQ.json`): what a run set up later may sit on what it set up
/// earlier (a mount on a loop device on a FUSE file), so it goes first.
fn newest_first(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let key = |p: &Path| -> (u64, u64) {
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let mut it = stem.splitn(2, '-').map(|x| x.parse::<u64>().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort_by_key(|p| std::cmp::Reverse(key(p)));
    paths
}

/// A record claimed by a sweep: renamed so no other sweep takes it, then
/// deleted (`forget`, its resource is gone) or put back (`keep`, it stays).
pub struct Claim {
    pub pid: u32,
    pub resource: Resource,
    original: PathBuf,
    claimed: PathBuf,
}

impl Claim {
    pub fn forget(self) {
        let _ = std::fs::remove_file(&self.claimed);
    }

    pub fn keep(self) {
        let _ = std::fs::rename(&self.claimed, &self.original);
    }
}

/// A record's temporary file (`.PID-SEQ.json.WRITER.tmp`, written then
/// renamed by `write_atomic`) whose writer died before the rename: put in
/// place when it holds a whole record (its resource may exist: a process
/// recorded after its spawn), else removed.
fn recover_unrenamed(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some((record, writer)) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.rsplit_once('.'))
        else {
            continue;
        };
        let dead = writer.parse::<u32>().is_ok_and(|pid| !runs(pid));
        if !dead || !record.ends_with(".json") {
            continue;
        }
        let whole = std::fs::read(&path)
            .ok()
            .is_some_and(|b| serde_json::from_slice::<Record>(&b).is_ok());
        if !(whole && std::fs::rename(&path, dir.join(record)).is_ok()) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Claim every record whose owner no longer runs (renamed first, so two
/// sweeping processes never both take one), newest first within each
/// process.
pub fn sweep() -> Vec<Claim> {
    let Some(dir) = state_dir() else {
        return Vec::new();
    };
    recover_unrenamed(&dir);
    let me = std::process::id();
    let mut out = Vec::new();
    for path in newest_first(&dir) {
        let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
        // A record claimed by a sweep that died before it finished (an
        // iolab killed mid-sweep, as a server child whose parent was
        // SIGKILLed is) is taken again, as if it had never been claimed.
        let abandoned = ext
            .strip_prefix("sweeping-")
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| pid != me && !runs(pid));
        if ext != "json" && !abandoned {
            continue;
        }
        let path = if abandoned {
            let back = path.with_extension("json");
            if std::fs::rename(&path, &back).is_err() {
                continue;
            }
            back
        } else {
            path
        };
        let Some(rec) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
        else {
            continue;
        };
        if start_time(rec.pid) == Some(rec.start_time) {
            continue; // the owner still runs
        }
        if !trusted(&dir, &rec.resource) {
            continue;
        }
        let claimed = path.with_extension(format!("sweeping-{me}"));
        if std::fs::rename(&path, &claimed).is_ok() {
            out.push(Claim {
                pid: rec.pid,
                resource: rec.resource,
                original: path,
                claimed,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_iolab_makes_is_trusted() {
        let p = |s: &str| PathBuf::from(s);
        let sched = |path: &str, original: &str| Resource::Scheduler {
            path: p(path),
            original: original.into(),
        };
        assert!(plausible(&Resource::Path(p(
            "/var/tmp/iolab-scratch-1-0.dat"
        ))));
        assert!(!plausible(&Resource::Path(p("/etc/passwd"))));
        assert!(plausible(&Resource::Cgroup {
            path: p("/sys/fs/cgroup/user.slice/iolab-kv-7"),
            parent: p("/sys/fs/cgroup/user.slice"),
        }));
        assert!(!plausible(&Resource::Cgroup {
            path: p("/home/x/iolab-kv-7"),
            parent: p("/home/x"),
        }));
        assert!(plausible(&sched(
            "/sys/block/vda/queue/scheduler",
            "mq-deadline"
        )));
        assert!(!plausible(&sched(
            "/sys/block/vda/queue/nr_requests",
            "none"
        )));
        assert!(!plausible(&sched("/etc/fstab", "none")));
        assert!(!plausible(&sched(
            "/sys/block/vda/queue/scheduler",
            "x y\n"
        )));
        assert!(plausible(&Resource::Mount(p("/sys/kernel/tracing"))));
        assert!(!plausible(&Resource::Mount(p("/"))));
        assert!(plausible(&Resource::Mountpoint(p(
            "/tmp/iolab-volume-1/iolab-ext4"
        ))));
        assert!(!plausible(&Resource::Mountpoint(p("/home"))));
        assert!(plausible(&Resource::Mountpoint(p(
            "/var/tmp/w/iolab-media-ext4-7-0/mnt"
        ))));
        assert!(!plausible(&Resource::Mountpoint(p("/var/tmp/w/mnt"))));
        assert!(!plausible(&Resource::Mountpoint(p("/iolab-x/../home"))));
        assert!(!plausible(&Resource::Mountpoint(p(
            "iolab-media-x-1-0/mnt"
        ))));
        let lo = |d: &str, b: &str| Resource::Loop {
            device: p(d),
            backing: p(b),
            id: (1, 2),
        };
        assert!(plausible(&lo(
            "/dev/loop3",
            "/var/tmp/iolab-scratch-1-0.dat"
        )));
        assert!(!plausible(&lo(
            "/dev/vda",
            "/var/tmp/iolab-scratch-1-0.dat"
        )));
        assert!(!plausible(&lo("/dev/loop3", "/var/lib/images/disk.img")));
    }

    #[test]
    fn records_are_swept_newest_first_within_a_process() {
        let d = tempfile::tempdir().unwrap();
        for n in ["7-2.json", "7-10.json", "12-1.json", "7-9.json"] {
            std::fs::write(d.path().join(n), "{}").unwrap();
        }
        let names: Vec<String> = newest_first(d.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["12-1.json", "7-10.json", "7-9.json", "7-2.json"]);
    }

    #[test]
    fn own_start_time_is_read_and_a_dead_pid_has_none() {
        assert!(start_time(std::process::id()).is_some());
        assert!(start_time(u32::MAX - 1).is_none());
    }
}
