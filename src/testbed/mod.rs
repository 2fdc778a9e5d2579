//! Everything iolab sets up on the machine and must take down again:
//! scratch files, scratch database directories, tracefs instances and the
//! tracefs mount, memory cgroups, I/O scheduler switches, network
//! namespaces, soft-RoCE links, servers, loop devices and mounts (each owned by a guard that
//! takes it down on drop: `cgroup`, `mount`, `scheduler`, `netns`,
//! `process`, `loopdev`, and
//! the path guards in `dut::scratch` and `kv::run`). Every live resource is
//! registered here, in-process (so a second Ctrl-C can remove them all at
//! once) and as a crash record in a state directory (so what a SIGKILLed run
//! left is removed by the next iolab start: `sweep_stale`).

pub mod cgroup;
pub mod command;
pub mod kernel_modules;
pub mod loopdev;
pub mod media;
pub mod mount;
pub mod nbd_kernel;
pub mod netns;
pub mod nvme_kernel;
pub mod process;
pub mod records;
pub mod scheduler;
pub mod scratch_dir;
pub mod soft_roce;
pub mod tracefs_share;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::lock::lock_within;

use serde::{Deserialize, Serialize};

/// One thing iolab created and must remove.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    /// A scratch file, scratch directory or tracefs instance directory.
    Path(PathBuf),
    /// A cgroup iolab made (as a child of `parent`, its own cgroup).
    Cgroup { path: PathBuf, parent: PathBuf },
    /// A disk's I/O scheduler iolab switched; `original` goes back.
    Scheduler { path: PathBuf, original: String },
    /// A filesystem iolab mounted (tracefs).
    Mount(PathBuf),
    /// A directory iolab made and mounted a filesystem on (unmounted, then
    /// removed with rmdir).
    Mountpoint(PathBuf),
    /// A loop device iolab attached to `backing` (file identity `id`).
    Loop {
        device: PathBuf,
        backing: PathBuf,
        id: loopdev::FileId,
    },
    /// A network namespace iolab created (`/run/netns/NAME`, `iolab-...`).
    Netns(String),
    /// An nvmet subsystem (configfs directory named by iolab's NQN) and the
    /// port that serves it.
    NvmeTarget { subsystem: PathBuf, port: PathBuf },
    /// An NBD device iolab attached an export to (the kernel's NBD client).
    NbdDevice { device: PathBuf },
    /// The kernel's NVMe host controller `name` connected to iolab's `nqn`.
    NvmeController { name: String, nqn: String },
    /// A soft-RoCE link: iolab's veth pair (`veth` its first end) with an
    /// rdma_rxe device on it (`soft_roce`).
    RdmaLink { veth: String },
    /// A server iolab started (its own process group), named by pid, start
    /// time and program so a reused pid is never signalled.
    Process {
        pid: u32,
        start_time: u64,
        program: String,
    },
    /// A server being started: recorded before its spawn (its pid is not
    /// known yet), found by the tag in its environment
    /// (`process::SPAWN_TAG_VAR`) if iolab died before recording `Process`.
    SpawningProcess { tag: String, program: String },
}

/// What taking a resource down did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undone {
    /// It was there and is gone now.
    Removed,
    /// It was gone already (nothing to say).
    AlreadyGone,
    /// It goes by itself when its last user does (a loop device with a
    /// lazily unmounted filesystem still open on it: LOOP_CLR_FD set it to
    /// detach then).
    Deferred,
}

impl Resource {
    /// Take it down; why not, if it is still there (a mount on it, a loop
    /// device over it). What is already gone is fine.
    pub fn undo(&self) -> Result<Undone, String> {
        match self {
            Resource::Path(p) => remove_path(p),
            Resource::Mountpoint(p) => {
                if !p.exists() {
                    return Ok(Undone::AlreadyGone);
                }
                mount::unmount_and_remove(p).map(|()| Undone::Removed)
            }
            Resource::Loop { device, id, .. } => loopdev::detach(device, *id),
            Resource::SpawningProcess { tag, program } => Ok(process::stop_tagged(tag, program)),
            other => {
                other.undo_best_effort();
                Ok(Undone::Removed)
            }
        }
    }

    fn undo_best_effort(&self) {
        match self {
            Resource::Path(_)
            | Resource::Mountpoint(_)
            | Resource::Loop { .. }
            | Resource::SpawningProcess { .. } => {}
            Resource::Cgroup { path, parent } => cgroup::remove(path, parent),
            Resource::Scheduler { path, original } => {
                let _ = std::fs::write(path, original);
            }
            Resource::Mount(p) => {
                mount::unmount(p);
                if p == std::path::Path::new(mount::TRACEFS) && !mount::is_mount_point(p) {
                    tracefs_share::forget_mount();
                }
            }
            Resource::Netns(name) => netns::delete(name),
            Resource::NbdDevice { device } => nbd_kernel::detach(device),
            Resource::NvmeTarget { subsystem, port } => nvme_kernel::remove_target(subsystem, port),
            Resource::NvmeController { name, nqn } => nvme_kernel::disconnect(name, nqn),
            Resource::RdmaLink { veth } => soft_roce::remove(veth),
            Resource::Process {
                pid,
                start_time,
                program,
            } => process::stop(*pid, *start_time, program),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Resource::Path(p) => p.display().to_string(),
            Resource::Cgroup { path, .. } => format!("cgroup {}", path.display()),
            Resource::Scheduler { path, original } => {
                format!(
                    "I/O scheduler switch ({} back to {original})",
                    path.display()
                )
            }
            Resource::Mount(p) => format!("mount {}", p.display()),
            Resource::Mountpoint(p) => format!("mount on {}", p.display()),
            Resource::Loop {
                device, backing, ..
            } => {
                format!(
                    "loop device {} over {}",
                    device.display(),
                    backing.display()
                )
            }
            Resource::Netns(name) => format!("network namespace {name}"),
            Resource::NbdDevice { device } => format!("NBD device {}", device.display()),
            Resource::NvmeTarget { subsystem, .. } => {
                format!("nvmet subsystem {}", subsystem.display())
            }
            Resource::NvmeController { name, nqn } => {
                format!("NVMe-oF controller {name} (connected to {nqn})")
            }
            Resource::RdmaLink { veth } => format!("soft-RoCE link on veth {veth}"),
            Resource::Process { pid, program, .. } => format!("{program} (pid {pid})"),
            Resource::SpawningProcess { tag, program } => {
                format!("{program} started with {}={tag}", process::SPAWN_TAG_VAR)
            }
        }
    }
}

/// Remove a scratch file or directory, a tracefs instance or a backing
/// file; never one a loop device is still attached to, never a directory
/// with a filesystem still mounted inside (its contents are not ours to
/// walk into).
fn remove_path(p: &Path) -> Result<Undone, String> {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return Ok(Undone::AlreadyGone);
    };
    if !meta.is_dir() {
        if let Some(dev) = loopdev::device_over(p) {
            // Attached by a losetup that outlived its iolab before the
            // device was recorded, or left in use: the file is iolab's, so
            // is the device. Detached (or set to detach itself) first.
            let id = loopdev::file_id(p).map_err(|e| e.to_string())?;
            loopdev::detach(&dev, id)
                .map_err(|why| format!("loop device {} is attached to it: {why}", dev.display()))?;
        }
        return removed_unless_gone(std::fs::remove_file(p));
    }
    // A tracefs instance goes with a plain rmdir (its files cannot be
    // unlinked); a scratch directory needs the recursion.
    if std::fs::remove_dir(p).is_ok() {
        return Ok(Undone::Removed);
    }
    if let Some(m) = mount::mount_under(p) {
        return Err(format!("{} is still mounted inside", m.display()));
    }
    if let Some(dev) = loopdev::device_under(p) {
        return Err(format!(
            "loop device {} is still attached to a file inside",
            dev.display()
        ));
    }
    removed_unless_gone(std::fs::remove_dir_all(p))
}

/// What a removal did: its owner's guard may remove the path between the
/// check above and this removal (a first Ctrl-C's normal path racing a
/// second one's teardown), and a path gone meanwhile is gone, not a
/// failure that would keep its crash record.
fn removed_unless_gone(removal: std::io::Result<()>) -> Result<Undone, String> {
    match removal {
        Ok(()) => Ok(Undone::Removed),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Undone::AlreadyGone),
        Err(e) => Err(e.to_string()),
    }
}

/// Live resources of this process, with their crash record (if written).
static LIVE: Mutex<Vec<(Resource, Option<PathBuf>)>> = Mutex::new(Vec::new());

/// Set by the teardown of a second Ctrl-C: nothing is created any more.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a second Ctrl-C's teardown has begun (it waits for nothing).
fn closed() -> bool {
    CLOSED.load(Ordering::SeqCst)
}

/// Register a resource just created (its guard calls `release` when it
/// has taken it down). After the teardown it is taken down at once.
pub fn register(res: Resource) {
    let Ok(mut v) = LIVE.lock() else {
        return;
    };
    if closed() {
        drop(v);
        let _ = res.undo();
        return;
    }
    let record = records::write(&res);
    v.push((res, record));
}

/// Create `res` with `make` and register it in one step with respect to
/// the teardown of a second Ctrl-C: it is either created and registered
/// before the teardown (which then takes it down) or not created at all.
/// Its crash record is written before `make` runs (and deleted if `make`
/// fails), so a SIGKILL in between leaves a record, never an unrecorded
/// resource: the sweep finds what the record names gone, or takes it down.
pub fn create<T>(res: Resource, make: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let mut v = LIVE
        .lock()
        .map_err(|_| anyhow::anyhow!("resource registry poisoned"))?;
    if closed() {
        return Err(anyhow::Error::new(crate::error::Interrupted));
    }
    let record = records::write(&res);
    match make() {
        Ok(made) => {
            v.push((res, record));
            Ok(made)
        }
        Err(e) => {
            if let Some(rec) = record {
                let _ = std::fs::remove_file(rec);
            }
            Err(e)
        }
    }
}

/// Like `create`, for a resource whose identity is known only once it
/// exists (a process's pid): `make` returns both.
pub fn create_with<T>(make: impl FnOnce() -> anyhow::Result<(T, Resource)>) -> anyhow::Result<T> {
    create_pending_with(None, make)
}

/// Like `create_with`, with `pending` recorded while `make` runs (a
/// server before its pid is known): a SIGKILL between the creation and
/// the record of its identity leaves the pending record for the sweep.
pub fn create_pending_with<T>(
    pending: Option<&Resource>,
    make: impl FnOnce() -> anyhow::Result<(T, Resource)>,
) -> anyhow::Result<T> {
    let mut v = LIVE
        .lock()
        .map_err(|_| anyhow::anyhow!("resource registry poisoned"))?;
    if closed() {
        return Err(anyhow::Error::new(crate::error::Interrupted));
    }
    let pending_record = pending.and_then(records::write);
    let made = make();
    let made = made.map(|(made, res)| {
        let record = records::write(&res);
        v.push((res, record));
        made
    });
    if let Some(rec) = pending_record {
        let _ = std::fs::remove_file(rec);
    }
    made
}

/// The resource at `path` was taken down (or is kept on purpose).
pub fn release_path(path: &Path) {
    release(&Resource::Path(path.to_path_buf()));
}

/// `res` was taken down (or is kept on purpose): forget it and its record.
/// Guards call this after taking the resource down, never before: until
/// then a second Ctrl-C must still find it.
pub fn release(res: &Resource) {
    // The records go while the registry is held: a second Ctrl-C's
    // teardown (which takes the registry, then exits) must not find the
    // resource gone from it with its record still on disk.
    if let Ok(mut v) = LIVE.lock() {
        v.retain(|(r, rec)| {
            let keep = r != res;
            if let (false, Some(rec)) = (keep, rec) {
                let _ = std::fs::remove_file(rec);
            }
            keep
        });
    }
}

/// How long a second Ctrl-C's teardown waits for the registry: `create`
/// holds it while a crash record is written and synced, which under heavy
/// I/O on the state directory's disk can take longer than a moment.
const REGISTRY_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Take down everything still registered, newest first, and the temporary
/// files of unfinished writes (a second Ctrl-C). The normal path holds the
/// registry's lock only while it records or releases a resource: wait for
/// it (`REGISTRY_PATIENCE`), never block. What cannot be taken down keeps
/// its record for the next start.
pub fn teardown_all() {
    crate::results::output::remove_in_flight();
    if let Some(mut v) = lock_within(&LIVE, REGISTRY_PATIENCE) {
        CLOSED.store(true, Ordering::SeqCst);
        while let Some((res, rec)) = v.pop() {
            if let (Ok(_), Some(rec)) = (res.undo(), rec) {
                let _ = std::fs::remove_file(rec);
            }
        }
    }
}

/// Remove what iolab processes that no longer run left behind; one line
/// per resource removed or left in place (with why), for the terminal. A
/// record whose resource stays is kept, so the next start tries again.
///
/// A server iolab started (`iolab serve` under `remote`, tagged in its
/// environment) does not sweep: its parent swept before it, and a sweep it
/// began when its parent was SIGKILLed would be cut short when the next
/// start stops it, leaving its claims behind that start. Stopping a
/// process may end such a sweeper, so a pass that undid something is
/// followed by one more, which takes what the sweeper had claimed.
pub fn sweep_stale() -> Vec<String> {
    if std::env::var_os(process::SPAWN_TAG_VAR).is_some() {
        return Vec::new();
    }
    // A set-up command of the dead run (mkfs, mount) may hold a device for
    // a moment longer: retry what stays, within one bound for the sweep.
    let patience = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut said = Vec::new();
    for _pass in 0..2 {
        let mut undid = false;
        for claim in records::sweep() {
            let (removed, line) = undo_claim(claim, patience);
            undid |= removed;
            // A claim kept in the first pass fails the same way in the second.
            said.extend(line.filter(|l| !said.contains(l)));
        }
        if !undid {
            break;
        }
    }
    said
}

/// Take down the resource of one claim (retrying until `patience`):
/// whether it was taken down, and the line for the terminal, if any.
fn undo_claim(claim: records::Claim, patience: std::time::Instant) -> (bool, Option<String>) {
    let what = claim.resource.describe();
    let pid = claim.pid;
    let mut undone = claim.resource.undo();
    while undone.is_err() && std::time::Instant::now() < patience {
        std::thread::sleep(std::time::Duration::from_millis(100));
        // Gone now, after the first try began taking it down.
        undone = claim.resource.undo().map(|u| match u {
            Undone::AlreadyGone => Undone::Removed,
            u => u,
        });
    }
    match undone {
        Ok(undone) => {
            claim.forget();
            let line = match undone {
                Undone::Removed => Some(format!(
                    "removed {what} left by iolab process {pid}, which no longer runs"
                )),
                Undone::Deferred => Some(format!(
                    "{what} left by iolab process {pid} detaches itself when its last user closes it"
                )),
                Undone::AlreadyGone => None,
            };
            (undone != Undone::AlreadyGone, line)
        }
        Err(why) => {
            claim.keep();
            (false, Some(format!(
                "could not remove {what} left by iolab process {pid}: {why} (its record stays; the next start tries again)"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_removed_meanwhile_counts_as_gone() {
        let gone = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(removed_unless_gone(Err(gone)), Ok(Undone::AlreadyGone));
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(removed_unless_gone(Err(denied)).is_err());
        assert_eq!(removed_unless_gone(Ok(())), Ok(Undone::Removed));
    }

    /// A scratch file's guard removes it while a second Ctrl-C's teardown
    /// takes it down: whichever wins, the teardown must not report a
    /// failure (which keeps the crash record of a file that is gone).
    #[test]
    fn undo_racing_the_owners_removal_never_fails() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..300 {
            let path = dir.path().join(format!("iolab-race-{i}"));
            std::fs::write(&path, b"x").unwrap();
            let owner = {
                let path = path.clone();
                std::thread::spawn(move || {
                    let _ = std::fs::remove_file(&path);
                })
            };
            let undone = Resource::Path(path.clone()).undo();
            owner.join().unwrap();
            assert!(undone.is_ok(), "round {i}: {undone:?}");
            assert!(!path.exists());
        }
    }
}
