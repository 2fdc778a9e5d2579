//! Which iolab build is running: the version, the git revision it was built
//! from and a hash of the executable file itself (two builds of one dirty
//! tree differ there). Agent and control side must agree on all three.

use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildId {
    pub version: String,
    pub git_rev: String,
    /// xxh3-64 of the executable, hex (an identity check, not a security
    /// measure: ssh authenticates the host).
    pub exe_hash: String,
    pub exe_len: u64,
}

impl std::fmt::Display for BuildId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "iolab {} ({}, executable {})",
            self.version, self.git_rev, self.exe_hash
        )
    }
}

/// The build of the executable at `path` as this code names it (the
/// control side names the iolab it would deploy; the agent its own).
pub fn of_executable(path: &Path) -> anyhow::Result<BuildId> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("reading the executable {}: {e}", path.display()))?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok(BuildId {
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_rev: env!("IOLAB_GIT_REV").to_string(),
        exe_hash: format!("{:016x}", hasher.digest()),
        exe_len: len,
    })
}

/// This process's own build (computed once).
pub fn current() -> anyhow::Result<BuildId> {
    static ID: OnceLock<Result<BuildId, String>> = OnceLock::new();
    ID.get_or_init(|| of_executable(Path::new("/proc/self/exe")).map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_different_file_is_a_different_build() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, b"one build").unwrap();
        std::fs::write(&b, b"another build").unwrap();
        let (ia, ib) = (of_executable(&a).unwrap(), of_executable(&b).unwrap());
        assert_ne!(ia, ib);
        assert_eq!(ia, of_executable(&a).unwrap());
        assert!(ia.to_string().contains(&ia.exe_hash));
    }
}
