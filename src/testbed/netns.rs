//! Network namespaces iolab creates for `iolab remote` (an initiator host
//! and a target host), named `iolab-<pid>-<role>` and bound at
//! /run/netns/NAME as iproute2 does, so `ip netns exec` reaches them.
//! Deleting one is an unmount and an unlink (what `ip netns delete` does),
//! with no process to start, so a second Ctrl-C can do it too. Interfaces
//! inside go with the namespace once its last process has exited.

use std::path::PathBuf;

use super::Resource;

pub const NETNS_DIR: &str = "/run/netns";

/// Names iolab gives its namespaces (a record naming anything else is not trusted).
pub fn plausible_name(name: &str) -> bool {
    name.starts_with("iolab-")
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

pub fn path_of(name: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(name)
}

/// Remove the namespace's binding (best effort).
pub fn delete(name: &str) {
    if !plausible_name(name) {
        return;
    }
    let p = path_of(name);
    if let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) {
        // SAFETY: a NUL-terminated path; a failed unmount is harmless.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
    let _ = std::fs::remove_file(&p);
}

/// A namespace created with `ip netns add`, deleted on drop.
pub struct NetnsGuard {
    pub name: String,
}

impl NetnsGuard {
    /// Create namespace `name` and register it, in one step with respect
    /// to a second Ctrl-C.
    pub fn create(name: &str) -> anyhow::Result<NetnsGuard> {
        anyhow::ensure!(plausible_name(name), "bad namespace name {name}");
        super::create(Resource::Netns(name.to_string()), || {
            let out = std::process::Command::new("ip")
                .args(["netns", "add", name])
                .output()?;
            if !out.status.success() {
                delete(name);
                anyhow::bail!(
                    "ip netns add {name}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            Ok(())
        })?;
        Ok(NetnsGuard {
            name: name.to_string(),
        })
    }
}

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        delete(&self.name);
        super::release(&Resource::Netns(self.name.clone()));
    }
}
