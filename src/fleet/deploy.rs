//! `--deploy`: this build, stripped of its debug info (`objcopy
//! --strip-debug`, else `strip -g`, else as it is), goes to a cache
//! directory on each host named after the stripped file's hash
//! (`${IOLAB_DEPLOY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/iolab/deploy}/HASH/iolab`),
//! compressed on the wire (zstd, else gzip, when both ends have it), and
//! only when the host does not hold it yet: one ssh session asks, a second
//! sends. The agent runs from the cache and hashes itself in its hello, so
//! the build check compares the stripped file's identity (`Payload::build`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::build::{self, BuildId};
use super::hosts::HostSpec;
use super::ssh::{self, Ended, SshOptions, StderrTail};

/// How long each deploy session may take (a login that never returns,
/// such as an sshd ForceCommand, is given up after it).
pub const DEPLOY_TIMEOUT: Duration = Duration::from_secs(120);

/// How the copy is compressed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireCodec {
    Zstd,
    Gzip,
}

impl WireCodec {
    fn tool(self) -> &'static str {
        match self {
            WireCodec::Zstd => "zstd",
            WireCodec::Gzip => "gzip",
        }
    }

    fn compress(self, from: &Path, to: &Path) -> bool {
        let level = match self {
            WireCodec::Zstd => "-3",
            WireCodec::Gzip => "-1",
        };
        let out = std::fs::File::create(to);
        let Ok(out) = out else { return false };
        Command::new(self.tool())
            .args([level, "-c"])
            .arg(from)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// The compressed copy, made once for every host that needs it.
struct Packed {
    path: PathBuf,
    codec: WireCodec,
    len: u64,
}

/// What is deployed: the stripped copy in a private directory of this
/// machine (removed when the payload goes), its build identity, and a
/// compressed copy made on first need.
pub struct Payload {
    dir: PathBuf,
    exe: PathBuf,
    /// The identity the deployed agents report.
    pub build: BuildId,
    /// The size of this machine's executable before stripping.
    pub local_len: u64,
    packed: OnceLock<Option<Packed>>,
}

/// Whether `tool` runs here.
fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn strip_to(from: &Path, to: &Path) -> bool {
    let ok = |c: &mut Command| {
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    ok(Command::new("objcopy")
        .arg("--strip-debug")
        .arg(from)
        .arg(to))
        || ok(Command::new("strip").arg("-g").arg("-o").arg(to).arg(from))
}

impl Payload {
    /// Strip `local` into a private directory (registered with the testbed)
    /// and name its build.
    pub fn prepare(local: &Path) -> anyhow::Result<Payload> {
        let under = std::env::temp_dir();
        let dir = crate::testbed::create_with(|| {
            let d = tempfile::Builder::new()
                .prefix("iolab-deploy.")
                .tempdir_in(&under)
                .map_err(|e| anyhow::anyhow!("--deploy: a directory in {}: {e}", under.display()))?
                .keep();
            Ok((d.clone(), crate::testbed::Resource::Path(d)))
        })?;
        let stripped = dir.join("iolab");
        let exe = match strip_to(local, &stripped) {
            true => stripped,
            false => local.to_path_buf(),
        };
        Payload::of(dir, exe, local)
    }

    fn of(dir: PathBuf, exe: PathBuf, local: &Path) -> anyhow::Result<Payload> {
        let made = build::of_executable(&exe).and_then(|b| {
            let len = std::fs::metadata(local)?.len();
            Ok((b, len))
        });
        let (build, local_len) = match made {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                crate::testbed::release_path(&dir);
                return Err(e);
            }
        };
        Ok(Payload {
            dir,
            exe,
            build,
            local_len,
            packed: OnceLock::new(),
        })
    }

    /// `local` as it is, uncompressed (tests).
    pub fn plain(local: &Path) -> anyhow::Result<Payload> {
        let dir = tempfile::Builder::new()
            .prefix("iolab-deploy.")
            .tempdir()?
            .keep();
        Payload::of(dir, local.to_path_buf(), local)
    }

    /// The size of what the hosts run.
    pub fn len(&self) -> u64 {
        self.build.exe_len
    }

    pub fn is_empty(&self) -> bool {
        self.build.exe_len == 0
    }

    /// The compressed copy, if a compressor runs here and the host has its
    /// decompressor (`remote`: the tools the host has).
    fn packed_for(&self, remote: &[String]) -> Option<&Packed> {
        let p = self.packed.get_or_init(|| {
            let codec = [WireCodec::Zstd, WireCodec::Gzip]
                .into_iter()
                .find(|c| have(c.tool()))?;
            let path = self.dir.join(format!("iolab.{}", codec.tool()));
            codec.compress(&self.exe, &path).then_some(())?;
            let len = std::fs::metadata(&path).ok()?.len();
            Some(Packed { path, codec, len })
        });
        p.as_ref()
            .filter(|p| remote.iter().any(|t| t == p.codec.tool()))
    }
}

impl Drop for Payload {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        crate::testbed::release_path(&self.dir);
    }
}

/// This build on one host.
#[derive(Debug, Clone)]
pub struct Deployed {
    /// The cache directory holding it there.
    pub dir: String,
    /// Bytes sent over ssh (None: the host had it already).
    pub sent: Option<u64>,
    /// The first session's time (its ssh handshake, mostly).
    pub handshake: Duration,
}

/// The cache directory of `hash` on the host, for its shell.
fn cache_dir(hash: &str) -> String {
    format!(r#""${{IOLAB_DEPLOY_CACHE:-${{XDG_CACHE_HOME:-$HOME/.cache}}/iolab/deploy}}/{hash}""#)
}

/// A cache directory the host's shell named (nothing a shell would expand).
fn plausible_dir(d: &str, hash: &str) -> bool {
    d.starts_with('/')
        && d.ends_with(&format!("/{hash}"))
        && !d.contains("/../")
        && d.len() < 4096
        && d.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+'))
}

/// Copy `payload` to `host`'s cache unless it is there already.
pub fn deploy(host: &HostSpec, opts: &SshOptions, payload: &Payload) -> anyhow::Result<Deployed> {
    deploy_within(host, opts, payload, DEPLOY_TIMEOUT)
}

/// One ssh session running `script` with `stdin`; its stdout, or why not.
fn session(
    host: &HostSpec,
    opts: &SshOptions,
    script: &str,
    stdin: Stdio,
    limit: Duration,
) -> anyhow::Result<String> {
    let mut child = ssh::command(host, opts, script)
        .stdin(stdin)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting {}: {e}", opts.ssh.display()))?;
    let (stdout, stderr) = (StderrTail::default(), StderrTail::default());
    if let Some(o) = child.stdout.take() {
        stdout.follow(o);
    }
    if let Some(e) = child.stderr.take() {
        stderr.follow(e);
    }
    let status = ssh::wait_or_kill(&mut child, limit).map_err(|why| match why {
        Ended::Stopped => anyhow::Error::new(crate::error::Interrupted)
            .context("stopped by a signal while copying iolab to the host (--deploy)"),
        Ended::TimedOut => anyhow::anyhow!(
            "copying iolab there (--deploy) took longer than {} s; ssh and its session were ended",
            limit.as_secs()
        ),
    })?;
    if !status.success() {
        anyhow::bail!("copying iolab there failed ({status}): {}", stderr.text());
    }
    Ok(stdout.text())
}

pub(crate) fn deploy_within(
    host: &HostSpec,
    opts: &SshOptions,
    payload: &Payload,
    limit: Duration,
) -> anyhow::Result<Deployed> {
    let hash = &payload.build.exe_hash;
    let c = cache_dir(hash);
    let probe = format!(
        r#"c={c}; if [ -x "$c/iolab" ] && [ "$(wc -c < "$c/iolab")" -eq {len} ]; then echo "cached $c"; else echo "absent $c"; fi; for z in zstd gzip; do command -v $z >/dev/null 2>&1 && echo "has $z"; done; exit 0"#,
        len = payload.len()
    );
    let t0 = Instant::now();
    let said = session(host, opts, &probe, Stdio::null(), limit)?;
    let handshake = t0.elapsed();
    let lines: Vec<&str> = said.lines().map(str::trim).collect();
    let tools: Vec<String> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("has "))
        .map(String::from)
        .collect();
    let bad = || anyhow::anyhow!("copying iolab there failed: the host said {said:?}");
    if let Some(d) = lines.iter().find_map(|l| l.strip_prefix("cached ")) {
        if !plausible_dir(d, hash) {
            return Err(bad());
        }
        return Ok(Deployed {
            dir: d.to_string(),
            sent: None,
            handshake,
        });
    }
    let (file, decompress, len) = match payload.packed_for(&tools) {
        Some(p) => (&p.path, format!("{} -dc", p.codec.tool()), p.len),
        None => (&payload.exe, "cat".to_string(), payload.len()),
    };
    let send = format!(
        r#"c={c}; umask 077 && mkdir -p "$c" && t=$(mktemp "$c/.iolab.XXXXXXXX") && {{ {decompress} > "$t" && chmod 700 "$t" && mv -f "$t" "$c/iolab" && echo "$c"; }} || {{ rm -f "$t"; exit 1; }}"#
    );
    let input = std::fs::File::open(file)
        .map_err(|e| anyhow::anyhow!("--deploy: reading {}: {e}", file.display()))?;
    let d = session(host, opts, &send, Stdio::from(input), limit)?;
    if !plausible_dir(&d, hash) {
        return Err(bad());
    }
    Ok(Deployed {
        dir: d,
        sent: Some(len),
        handshake,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A login that never returns (an sshd ForceCommand) was waited for
    /// without a bound; now it is given up and its process group killed.
    #[test]
    fn a_deploy_whose_login_never_returns_is_given_up_and_killed() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = dir.path().join("ssh");
        let pidfile = dir.path().join("pid");
        std::fs::write(
            &ssh,
            format!(
                "#!/bin/sh\nsleep 600 &\necho $! > {}\nwait\n",
                pidfile.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let opts = SshOptions {
            ssh: ssh.clone(),
            ..SshOptions::default()
        };
        let h = super::super::hosts::parse_host("h1", "--hosts").unwrap();
        let payload = Payload::plain(&ssh).unwrap();
        let t = std::time::Instant::now();
        let e = deploy_within(&h, &opts, &payload, Duration::from_secs(1)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
        assert!(format!("{e:#}").contains("longer than 1 s"), "{e:#}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "));
        assert!(!alive, "the login's child {pid} still runs");
    }

    #[test]
    fn cache_dirs_the_host_names_are_checked() {
        assert!(plausible_dir("/root/.cache/iolab/deploy/00ab", "00ab"));
        assert!(!plausible_dir("/root/.cache/iolab/deploy/00abc", "00ab"));
        assert!(!plausible_dir("Welcome\n/x/00ab", "00ab"));
        assert!(!plausible_dir("/x; rm -rf //00ab", "00ab"));
        assert!(!plausible_dir("/x/../00ab", "00ab"));
        assert!(cache_dir("00ab").ends_with(r#"/iolab/deploy}/00ab""#));
    }
}
