//! Test hosts for the fleet: network namespaces on this machine, each with
//! a veth to the root namespace and its own sshd on its namespace address,
//! with a host key, a client key, authorized_keys, known_hosts and an
//! ssh_config generated in a temporary directory (never the machine's own
//! sshd or ~/.ssh). Everything goes when the `Lab` is dropped.
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use iolab::fleet::{FleetOptions, HostSpec, SshOptions};
use iolab::testbed::netns::NetnsGuard;

pub const SSHD: &str = "/usr/sbin/sshd";

/// Host numbers unique within this test process (subnets and names).
static NEXT: AtomicU32 = AtomicU32::new(0);

/// Why the lab cannot run here, if it cannot.
pub fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    for (tool, path) in [
        ("sshd", SSHD),
        ("ssh", "/usr/bin/ssh"),
        ("ssh-keygen", "/usr/bin/ssh-keygen"),
    ] {
        if !Path::new(path).exists() {
            return Some(format!("{tool} is not installed (scripts/install-deps.sh)"));
        }
    }
    let ok = Command::new("ip").args(["netns", "list"]).output();
    if !ok.is_ok_and(|o| o.status.success()) {
        return Some("ip netns does not work here".into());
    }
    None
}

/// `Some(lab)`, or None after saying why the test skips.
pub fn lab(n: usize, refused: &[usize]) -> Option<Lab> {
    if let Some(why) = missing() {
        eprintln!("skipping: {why}");
        return None;
    }
    Some(Lab::start(n, refused))
}

fn run(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub struct TestHost {
    pub ns: String,
    pub addr: String,
    pub state: PathBuf,
    veth: String,
    sshd: Child,
    _guard: NetnsGuard,
}

impl TestHost {
    /// Processes in the namespace other than its sshd (agents, shells).
    pub fn others(&self) -> Vec<String> {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.ns])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter(|p| *p != self.sshd.id().to_string())
            .filter_map(|p| {
                let cmd = std::fs::read(format!("/proc/{p}/cmdline")).ok()?;
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                // sshd's per-session processes come and go with the session.
                (!cmd.starts_with("sshd:")).then(|| format!("{p}: {cmd}"))
            })
            .collect()
    }
}

impl Drop for TestHost {
    fn drop(&mut self) {
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .output();
    }
}

/// Hosts first: they go (sshd killed) before their directory.
pub struct Lab {
    pub hosts: Vec<TestHost>,
    pub dir: tempfile::TempDir,
    pub ssh_config: PathBuf,
}

fn keygen(path: &Path) {
    run(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        "iolab-test",
        "-f",
        path.to_str().unwrap(),
    ]);
}

impl Lab {
    /// `n` hosts; those in `refused` do not accept the client's key.
    pub fn start(n: usize, refused: &[usize]) -> Lab {
        std::fs::create_dir_all("/run/sshd").unwrap(); // sshd's privilege separation directory
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        let client_pub = std::fs::read_to_string(d.join("client_key.pub")).unwrap();
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        std::fs::write(d.join("authorized_keys"), &client_pub).unwrap();
        std::fs::write(d.join("nobody_keys"), "").unwrap();
        let hosts: Vec<TestHost> = (0..n)
            .map(|i| start_host(d, refused.contains(&i)))
            .collect();
        let known: String = hosts
            .iter()
            .map(|h| format!("{} {}", h.addr, host_pub.trim()) + "\n")
            .collect();
        std::fs::write(d.join("known_hosts"), known).unwrap();
        let ssh_config = d.join("ssh_config");
        std::fs::write(
            &ssh_config,
            format!(
                "Host *\n  User root\n  IdentityFile {k}\n  IdentitiesOnly yes\n  \
                 UserKnownHostsFile {kh}\n  GlobalKnownHostsFile /dev/null\n  \
                 StrictHostKeyChecking yes\n  LogLevel ERROR\n  ControlMaster no\n",
                k = d.join("client_key").display(),
                kh = d.join("known_hosts").display()
            ),
        )
        .unwrap();
        for h in &hosts {
            wait_listening(&h.addr);
        }
        Lab {
            dir,
            hosts,
            ssh_config,
        }
    }

    pub fn specs(&self) -> Vec<HostSpec> {
        self.hosts
            .iter()
            .map(|h| iolab::fleet::hosts::parse_host(&h.addr, "--hosts").unwrap())
            .collect()
    }

    /// Options reaching these hosts, running this build's binary there.
    pub fn options(&self) -> FleetOptions {
        let iolab = PathBuf::from(env!("CARGO_BIN_EXE_iolab"));
        FleetOptions {
            ssh: SshOptions {
                config: Some(self.ssh_config.clone()),
                connect_timeout_s: 5,
                remote_iolab: iolab.display().to_string(),
                local_iolab: iolab,
                ..SshOptions::default()
            },
            hello_timeout: Duration::from_secs(30),
            start_margin: Duration::from_millis(300),
            ..FleetOptions::default()
        }
    }

    /// Stop host `i`'s sshd: the host no longer answers on port 22.
    pub fn stop_sshd(&mut self, i: usize) {
        let _ = self.hosts[i].sshd.kill();
        let _ = self.hosts[i].sshd.wait();
    }

    /// An executable script in the lab's directory.
    pub fn script(&self, name: &str, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let p = self.dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    }

    /// Wait up to `limit` for no agent (or shell) to be left on any host.
    pub fn wait_quiet(&self, limit: Duration) -> Vec<String> {
        let end = Instant::now() + limit;
        loop {
            let left: Vec<String> = self.hosts.iter().flat_map(|h| h.others()).collect();
            if left.is_empty() || Instant::now() > end {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn start_host(d: &Path, refuse: bool) -> TestHost {
    let i = NEXT.fetch_add(1, Ordering::SeqCst);
    let pid = std::process::id();
    let ns = format!("iolab-{pid}-fh{i}");
    let guard = NetnsGuard::create(&ns).unwrap();
    let veth = format!("if{:x}h{i}", pid & 0xffffff);
    let third = (pid % 64) * 4 + i / 64;
    let base = (i % 64) * 4;
    let (outside, inside) = (
        format!("10.213.{third}.{}", base + 1),
        format!("10.213.{third}.{}", base + 2),
    );
    run(&[
        "ip", "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
    ]);
    run(&["ip", "addr", "add", &format!("{outside}/30"), "dev", &veth]);
    run(&["ip", "link", "set", &veth, "up"]);
    run(&[
        "ip",
        "-n",
        &ns,
        "addr",
        "add",
        &format!("{inside}/30"),
        "dev",
        "eth0",
    ]);
    run(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
    run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
    let state = d.join(format!("state-{i}"));
    std::fs::create_dir_all(&state).unwrap();
    let keys = if refuse {
        "nobody_keys"
    } else {
        "authorized_keys"
    };
    let cfg = d.join(format!("sshd_config-{i}"));
    std::fs::write(
        &cfg,
        format!(
            "ListenAddress {inside}\nPort 22\nHostKey {hk}\nAuthorizedKeysFile {ak}\n\
             PidFile none\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
             SetEnv IOLAB_STATE_DIR={st} IOLAB_DEPLOY_CACHE={dc}\nMaxStartups 100\nSubsystem sftp internal-sftp\n",
            hk = d.join("host_key").display(),
            ak = d.join(keys).display(),
            st = state.display(),
            dc = d.join(format!("deploy-cache-{i}")).display()
        ),
    )
    .unwrap();
    let sshd = Command::new("ip")
        .args(["netns", "exec", &ns, SSHD, "-D", "-e", "-f"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    TestHost {
        ns,
        addr: inside,
        state,
        veth,
        sshd,
        _guard: guard,
    }
}

fn wait_listening(addr: &str) {
    let end = Instant::now() + Duration::from_secs(20);
    let sa: std::net::SocketAddr = format!("{addr}:22").parse().unwrap();
    while TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < end, "sshd on {addr} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A namespace every host of a lab reaches at one address (the shared
/// target of several initiators: the NVMe-oF study's storage server). It
/// holds `addr` on its loopback; each host has a veth of its own to it and
/// a route to `addr` through it. What runs inside listens only there.
pub struct SharedTarget {
    pub ns: String,
    pub addr: String,
    _guard: NetnsGuard,
}

impl SharedTarget {
    /// `cmd` run inside the target's namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns, program]);
        c
    }
}

impl Lab {
    pub fn shared_target(&self) -> SharedTarget {
        let i = NEXT.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let ns = format!("iolab-{pid}-ft{i}");
        let guard = NetnsGuard::create(&ns).unwrap();
        let third = pid % 250;
        let addr = format!("10.215.{third}.1");
        run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        run(&[
            "ip",
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{addr}/32"),
            "dev",
            "lo",
        ]);
        for (k, h) in self.hosts.iter().enumerate() {
            let (t_end, h_end) = (format!("t{k}"), format!("tgt{k}"));
            run(&[
                "ip", "-n", &ns, "link", "add", &t_end, "type", "veth", "peer", "name", &h_end,
                "netns", &h.ns,
            ]);
            let base = k * 4;
            let (t_ip, h_ip) = (
                format!("10.216.{third}.{}", base + 1),
                format!("10.216.{third}.{}", base + 2),
            );
            run(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{t_ip}/30"),
                "dev",
                &t_end,
            ]);
            run(&["ip", "-n", &ns, "link", "set", &t_end, "up"]);
            run(&[
                "ip",
                "-n",
                &h.ns,
                "addr",
                "add",
                &format!("{h_ip}/30"),
                "dev",
                &h_end,
            ]);
            run(&["ip", "-n", &h.ns, "link", "set", &h_end, "up"]);
            run(&["ip", "-n", &h.ns, "route", "add", &addr, "via", &t_ip]);
        }
        SharedTarget {
            ns,
            addr,
            _guard: guard,
        }
    }
}

impl Lab {
    /// Host `t` as the others' storage server (`remote --target-host`):
    /// an address on its loopback that every other host reaches over a
    /// veth of its own (the namespaces' veths to the root namespace do not
    /// route between hosts). Gone with the namespaces.
    pub fn serve_from(&self, t: usize) -> String {
        let pid = std::process::id();
        let third = pid % 250;
        let i = NEXT.fetch_add(1, Ordering::SeqCst);
        let tns = &self.hosts[t].ns;
        let addr = format!("10.217.{third}.{}", 1 + (i % 250));
        run(&[
            "ip",
            "-n",
            tns,
            "addr",
            "add",
            &format!("{addr}/32"),
            "dev",
            "lo",
        ]);
        for (k, h) in self.hosts.iter().enumerate().filter(|(k, _)| *k != t) {
            let (t_end, h_end) = (format!("s{i}t{k}"), format!("s{i}h{k}"));
            run(&[
                "ip", "-n", tns, "link", "add", &t_end, "type", "veth", "peer", "name", &h_end,
                "netns", &h.ns,
            ]);
            let base = k * 4;
            let (t_ip, h_ip) = (
                format!("10.218.{third}.{}", base + 1),
                format!("10.218.{third}.{}", base + 2),
            );
            run(&[
                "ip",
                "-n",
                tns,
                "addr",
                "add",
                &format!("{t_ip}/30"),
                "dev",
                &t_end,
            ]);
            run(&["ip", "-n", tns, "link", "set", &t_end, "up"]);
            run(&[
                "ip",
                "-n",
                &h.ns,
                "addr",
                "add",
                &format!("{h_ip}/30"),
                "dev",
                &h_end,
            ]);
            run(&["ip", "-n", &h.ns, "link", "set", &h_end, "up"]);
            run(&["ip", "-n", &h.ns, "route", "add", &addr, "via", &t_ip]);
        }
        addr
    }
}

/// Every host of `lab`, as `--hosts` takes them.
pub fn all_hosts(lab: &Lab) -> String {
    let addrs: Vec<&str> = lab.hosts.iter().map(|h| h.addr.as_str()).collect();
    addrs.join(",")
}

/// A finished command's status and output, for a failed assertion.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A results file, or a panic naming it.
pub fn load(p: &Path) -> iolab::results::Results {
    iolab::results::Results::read(p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()))
}
