//! Reaching a host: the system's `ssh`, in batch mode (no password or
//! passphrase prompt), with the user's own configuration, keys, agent and
//! known_hosts; host keys are checked as ssh checks them (iolab never turns
//! that off); `--ssh-config FILE` becomes `-F FILE`. A run's sessions to
//! one host share one connection (`ControlDir`). `--deploy` is
//! `fleet::deploy`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::hosts::HostSpec;

/// How the control side reaches its hosts.
#[derive(Debug, Clone)]
pub struct SshOptions {
    /// `-F FILE` (`--ssh-config`).
    pub config: Option<PathBuf>,
    /// ssh's ConnectTimeout, seconds.
    pub connect_timeout_s: u32,
    /// The iolab to run on a host when not deploying (its PATH is searched).
    pub remote_iolab: String,
    /// Copy `local_iolab` to each host for the run (`--deploy`).
    pub deploy: bool,
    /// This build's executable: what is deployed, and the build hosts must run.
    pub local_iolab: PathBuf,
    /// The ssh client (tests may name another).
    pub ssh: PathBuf,
    /// The directory of this run's ssh control sockets (`ControlDir`): one
    /// ssh connection per host, shared by the run's sessions there.
    pub control_dir: Option<PathBuf>,
}

impl Default for SshOptions {
    fn default() -> Self {
        SshOptions {
            config: None,
            connect_timeout_s: 10,
            remote_iolab: "iolab".into(),
            deploy: false,
            local_iolab: PathBuf::from("/proc/self/exe"),
            ssh: PathBuf::from("ssh"),
            control_dir: None,
        }
    }
}

/// A word for the remote shell, single-quoted.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `ssh [options] -- HOST COMMAND` for one host.
pub fn command(host: &HostSpec, opts: &SshOptions, remote: &str) -> Command {
    let mut c = options(host, opts);
    c.arg("--").arg(&host.host).arg(remote);
    // Ctrl-C reaches iolab, which stops the agents in order; ssh is not
    // killed under them by the terminal.
    use std::os::unix::process::CommandExt;
    c.process_group(0);
    c
}

/// How long a host's shared connection outlives its last session (it is
/// ended with `ssh -O exit` when the run ends; this bounds what a killed
/// control side leaves).
pub const CONTROL_PERSIST: &str = "15s";

/// `ssh [options]` for one host, without the host and command.
fn options(host: &HostSpec, opts: &SshOptions) -> Command {
    let mut c = Command::new(&opts.ssh);
    c.args(["-T", "-o", "BatchMode=yes"]);
    c.arg("-o")
        .arg(format!("ConnectTimeout={}", opts.connect_timeout_s));
    // A host that vanishes mid-pass is noticed within ~15 s.
    c.args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]);
    if let Some(f) = &opts.config {
        c.arg("-F").arg(f);
    }
    if let Some(p) = host.port {
        c.arg("-p").arg(p.to_string());
    }
    if let Some(u) = &host.user {
        c.arg("-l").arg(u);
    }
    if let Some(d) = &opts.control_dir {
        c.args(["-o", "ControlMaster=auto", "-o"])
            .arg(format!("ControlPath={}/%C", d.display()))
            .arg("-o")
            .arg(format!("ControlPersist={CONTROL_PERSIST}"));
    }
    c
}

/// A private directory (mode 700) for a run's ssh control sockets,
/// registered with the testbed (a second Ctrl-C or the next start after a
/// SIGKILL removes it). When dropped, each host's shared connection is
/// ended (`ssh -O exit`) and the directory removed.
pub struct ControlDir {
    path: PathBuf,
    hosts: Vec<HostSpec>,
    opts: SshOptions,
}

impl ControlDir {
    /// A new directory for `hosts`, reached with `opts`.
    pub fn create(hosts: &[HostSpec], opts: &SshOptions) -> anyhow::Result<ControlDir> {
        // A socket's path is at most 107 bytes: the name ssh puts in (%C)
        // is 40.
        let mut under = std::env::temp_dir();
        if under.as_os_str().len() > 48 {
            under = PathBuf::from("/tmp");
        }
        let path = crate::testbed::create_with(|| {
            let d = tempfile::Builder::new()
                .prefix("iolab-ssh.")
                .tempdir_in(&under)
                .map_err(|e| anyhow::anyhow!("making a directory in {}: {e}", under.display()))?
                .keep();
            Ok((d.clone(), crate::testbed::Resource::Path(d)))
        })?;
        let opts = SshOptions {
            control_dir: Some(path.clone()),
            ..opts.clone()
        };
        Ok(ControlDir {
            path,
            hosts: hosts.to_vec(),
            opts,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlDir {
    fn drop(&mut self) {
        let used = std::fs::read_dir(&self.path).is_ok_and(|mut d| d.next().is_some());
        if used {
            for hosts in self.hosts.chunks(64) {
                let mut children: Vec<Child> = hosts
                    .iter()
                    .filter_map(|h| {
                        options(h, &self.opts)
                            .args(["-O", "exit", "--"])
                            .arg(&h.host)
                            .stdin(Stdio::null())
                            .stdout(Stdio::null())
                            .stderr(Stdio::null())
                            .spawn()
                            .ok()
                    })
                    .collect();
                for c in &mut children {
                    reap(c, Duration::from_secs(5));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.path);
        crate::testbed::release_path(&self.path);
    }
}

/// Whether the ssh configuration in use chooses `KexAlgorithms`: `FILE`
/// (`--ssh-config`), else ~/.ssh/config, /etc/ssh/ssh_config and
/// /etc/ssh/ssh_config.d/*.conf (other `Include`s are not followed).
pub fn config_chooses_kex(config: Option<&Path>) -> bool {
    let files: Vec<PathBuf> = match config {
        Some(f) => vec![f.to_path_buf()],
        None => {
            let mut v: Vec<PathBuf> = std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".ssh/config"))
                .into_iter()
                .collect();
            v.push("/etc/ssh/ssh_config".into());
            if let Ok(d) = std::fs::read_dir("/etc/ssh/ssh_config.d") {
                v.extend(d.filter_map(|e| e.ok()).map(|e| e.path()));
            }
            v
        }
    };
    files.iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().any(|l| {
                let l = l.trim_start().to_ascii_lowercase();
                l.starts_with("kexalgorithms") && !l.starts_with('#')
            })
        })
    })
}

/// A median handshake above this, with no `KexAlgorithms` chosen, earns
/// the hint that a cheaper key exchange exists.
pub const SLOW_HANDSHAKE: Duration = Duration::from_millis(50);

/// The hint, once per process, when the hosts' median ssh handshake took
/// longer than `SLOW_HANDSHAKE` and the configuration chooses no key
/// exchange (OpenSSH's default post-quantum one costs ~50 ms of client CPU
/// per host).
pub fn kex_hint(median: Duration, config: Option<&Path>) -> Option<String> {
    static SAID: AtomicBool = AtomicBool::new(false);
    if median <= SLOW_HANDSHAKE || config_chooses_kex(config) || SAID.swap(true, Ordering::SeqCst) {
        return None;
    }
    Some(format!(
        "iolab: ssh took {} ms (median) to reach a host's agent; its default key exchange is \
         the expensive part: curve25519-sha256 is much cheaper (KexAlgorithms curve25519-sha256 \
         in the ssh config, or -o KexAlgorithms=curve25519-sha256)",
        median.as_millis()
    ))
}

/// The last few KiB of a child's stderr, read on a thread (ssh's own
/// messages name why a login failed).
#[derive(Clone, Default)]
pub struct StderrTail(Arc<(Mutex<Vec<u8>>, AtomicBool)>);

const TAIL: usize = 4096;

impl StderrTail {
    pub fn follow(&self, mut r: impl Read + Send + 'static) {
        let tail = self.0.clone();
        let spawned = std::thread::Builder::new()
            .name("ssh-stderr".into())
            .spawn(move || {
                let mut chunk = [0u8; 1024];
                while let Ok(n) = r.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let mut b = tail.0.lock().unwrap_or_else(|e| e.into_inner());
                    b.extend_from_slice(&chunk[..n]);
                    if b.len() > TAIL {
                        let cut = b.len() - TAIL;
                        b.drain(..cut);
                    }
                }
                tail.1.store(true, Ordering::SeqCst);
            });
        if spawned.is_err() {
            self.0 .1.store(true, Ordering::SeqCst);
        }
    }

    /// What the child said, once its stderr ended (waiting up to a second
    /// for the reader to see the end after the child exited).
    pub fn text(&self) -> String {
        let end = std::time::Instant::now() + Duration::from_secs(1);
        while !self.0 .1.load(Ordering::SeqCst) && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        let b = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&b).trim().to_string()
    }
}

/// Wait up to `limit` for `child`; then kill it. Its exit status, if any.
pub fn reap(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let end = std::time::Instant::now() + limit;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if std::time::Instant::now() >= end {
            let _ = child.kill();
            return child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Why `wait_or_kill` ended a child.
pub(crate) enum Ended {
    Stopped,
    TimedOut,
}

/// Wait for `child` (an ssh in its own process group) at most `limit`,
/// and no longer than the first stop signal: then kill its group, which
/// ends the session on the host too, and reap it.
pub(crate) fn wait_or_kill(
    child: &mut Child,
    limit: Duration,
) -> Result<std::process::ExitStatus, Ended> {
    let end = std::time::Instant::now() + limit;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Ok(s);
        }
        let why = if crate::interrupt::stop_requested() {
            Ended::Stopped
        } else if std::time::Instant::now() >= end {
            Ended::TimedOut
        } else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        // SAFETY: signalling the process group this child leads.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.kill();
        let _ = child.wait();
        return Err(why);
    }
}

/// What runs the agent on the host: the deployed copy (in the host's
/// deploy cache, `fleet::deploy`), or the host's own iolab.
pub fn agent_command(opts: &SshOptions, deployed: Option<&str>) -> String {
    match deployed {
        Some(d) => format!("{}/iolab agent", shell_quote(d)),
        None => format!("{} agent", shell_quote(&opts.remote_iolab)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn ssh_gets_batch_mode_the_config_and_the_host_last() {
        let h = super::super::hosts::parse_host("bob@h1:2222", "--hosts").unwrap();
        let opts = SshOptions {
            config: Some("/tmp/cfg".into()),
            ..SshOptions::default()
        };
        let a = args(&command(&h, &opts, "iolab agent"));
        assert!(a.contains(&"BatchMode=yes".to_string()));
        let f = a.iter().position(|x| x == "-F").unwrap();
        assert_eq!(a[f + 1], "/tmp/cfg");
        assert_eq!(a[a.len() - 3..], ["--", "h1", "iolab agent"]);
        assert!(a.windows(2).any(|w| w == ["-p", "2222"]));
        assert!(a.windows(2).any(|w| w == ["-l", "bob"]));
        assert!(!a.iter().any(|x| x.contains("StrictHostKeyChecking")));
    }

    /// The key-exchange hint: only for slow handshakes, only when the
    /// configuration chooses no KexAlgorithms, and once.
    #[test]
    fn the_kex_hint_is_said_once_when_the_handshake_is_slow_and_no_kex_is_chosen() {
        let dir = tempfile::tempdir().unwrap();
        let (chosen, plain) = (dir.path().join("chosen"), dir.path().join("plain"));
        std::fs::write(&chosen, "Host *\n  KexAlgorithms curve25519-sha256\n").unwrap();
        std::fs::write(&plain, "Host *\n  # KexAlgorithms none\n  User root\n").unwrap();
        assert!(config_chooses_kex(Some(&chosen)));
        assert!(!config_chooses_kex(Some(&plain)));
        let slow = Duration::from_millis(120);
        assert!(kex_hint(Duration::from_millis(20), Some(&plain)).is_none());
        assert!(kex_hint(slow, Some(&chosen)).is_none());
        let h = kex_hint(slow, Some(&plain)).expect("a hint");
        assert!(
            h.contains("KexAlgorithms=curve25519-sha256") && h.contains("120 ms"),
            "{h}"
        );
        assert!(kex_hint(slow, Some(&plain)).is_none(), "said once");
    }

    #[test]
    fn quoting_and_remote_dirs() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
        let c = agent_command(&SshOptions::default(), Some("/root/.cache/iolab/deploy/ab"));
        assert_eq!(c, "'/root/.cache/iolab/deploy/ab'/iolab agent");
    }
}
