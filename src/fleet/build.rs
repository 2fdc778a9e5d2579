//! Which iolab build is running: the version, the git revision it was built
//! from and a hash of the executable file itself (two builds of one dirty
//! tree differ there). Agent and control side must agree on all three.
//! Hashing a 160 MB debug build costs ~50 ms of CPU, paid by the control
//! side and every agent on every run; so the hash is kept in a small cache
//! keyed by the file's device, inode, size, mtime and ctime (any write to
//! the file changes its ctime, which no user can set back):
//! `${IOLAB_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/iolab/build-ids}`.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
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
    of_executable_cached(path, cache_dir().as_deref())
}

/// The build cache's directory (None: no home to keep it in).
fn cache_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = env("IOLAB_BUILD_CACHE") {
        return Some(PathBuf::from(d));
    }
    let base = env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("iolab").join("build-ids"))
}

/// The file's identity on this machine, as a cache entry's name.
fn file_key(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    Some(format!(
        "{:x}-{:x}-{:x}-{}.{}-{}.{}",
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

/// Entries kept in the cache (one per executable file seen lately).
const CACHE_ENTRIES: usize = 32;

/// `of_executable` with the cache in `cache` (None: always hash).
fn of_executable_cached(path: &Path, cache: Option<&Path>) -> anyhow::Result<BuildId> {
    let entry = cache.zip(file_key(path)).map(|(d, k)| d.join(k));
    let known = entry
        .as_ref()
        .and_then(|e| std::fs::read_to_string(e).ok())
        .and_then(|t| {
            let (hash, len) = t.trim().split_once(' ')?;
            Some((hash.to_string(), len.parse().ok()?))
        });
    let (exe_hash, exe_len) = match known {
        Some(k) => k,
        None => {
            let (hash, len) = hash_file(path)?;
            if let Some(e) = &entry {
                remember(e, &hash, len);
            }
            (hash, len)
        }
    };
    Ok(BuildId {
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_rev: env!("IOLAB_GIT_REV").to_string(),
        exe_hash,
        exe_len,
    })
}

/// Keep one hash in the cache (best effort: a cache that cannot be
/// written only costs the next run the hashing), the oldest entries
/// beyond `CACHE_ENTRIES` removed.
fn remember(entry: &Path, hash: &str, len: u64) {
    let Some(dir) = entry.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(".{}.tmp", std::process::id()));
    if std::fs::write(&tmp, format!("{hash} {len}\n")).is_err()
        || std::fs::rename(&tmp, entry).is_err()
    {
        let _ = std::fs::remove_file(&tmp);
        return;
    }
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, PathBuf)> = list
        .flatten()
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if entries.len() > CACHE_ENTRIES {
        entries.sort();
        for (_, old) in &entries[..entries.len() - CACHE_ENTRIES] {
            let _ = std::fs::remove_file(old);
        }
    }
}

/// xxh3-64 of the file, hex, and its length.
fn hash_file(path: &Path) -> anyhow::Result<(String, u64)> {
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
    Ok((format!("{:016x}", hasher.digest()), len))
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

    #[test]
    fn a_known_file_is_not_hashed_again_and_a_changed_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let exe = dir.path().join("exe");
        std::fs::write(&exe, b"one build").unwrap();
        let first = of_executable_cached(&exe, Some(&cache)).unwrap();
        assert_eq!(first, of_executable_cached(&exe, None).unwrap());
        // The entry is what is read back: a planted hash comes out.
        let entry = cache.join(file_key(&exe).unwrap());
        std::fs::write(&entry, "00000000000000aa 9\n").unwrap();
        let planted = of_executable_cached(&exe, Some(&cache)).unwrap();
        assert_eq!(planted.exe_hash, "00000000000000aa");
        // Any write changes the key: the file is hashed again.
        std::fs::write(&exe, b"two build").unwrap();
        let changed = of_executable_cached(&exe, Some(&cache)).unwrap();
        assert_ne!(changed.exe_hash, "00000000000000aa");
        assert_eq!(changed, of_executable_cached(&exe, None).unwrap());
    }

    #[test]
    fn the_cache_keeps_only_the_latest_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        for i in 0..CACHE_ENTRIES + 5 {
            let exe = dir.path().join(format!("exe{i}"));
            std::fs::write(&exe, format!("build {i}")).unwrap();
            of_executable_cached(&exe, Some(&cache)).unwrap();
        }
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), CACHE_ENTRIES);
    }
}
