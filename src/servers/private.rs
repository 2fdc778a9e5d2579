//! A private database server: iolab's own instance with its data on the
//! storage under test, never the machine's default one. Its directory
//! (`iolab-KIND-PID-N` under the target: data, log, password or init file,
//! socket) and its process (a process group of its own) are testbed
//! resources, so they go at the end, on an error, on a second Ctrl-C and
//! at the next start after a SIGKILL. It listens on 127.0.0.1 at a free
//! port with a random password; as root it runs as the server's own system
//! user (postgres, mysql, redis), since PostgreSQL refuses root.
//! Cassandra is the exception: a JVM started from jars iolab fetched, it
//! runs as iolab's user and takes no password (it has no cheap way to set
//! one at start); it too listens on 127.0.0.1 only. A private FerretDB
//! (MongoDB's wire protocol, a test double) has no system user either and
//! runs as iolab's, without a password.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::endpoint::{Endpoint, ServerKind};
use super::settings::ServerSettings;
use super::{cassandra, ferretdb, mariadb, mongodb, postgres, redis};
use crate::error::usage;
use crate::testbed::process::ServerProcess;
use crate::testbed::{self, Resource};

/// How long a server may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// The user a server runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl RunAs {
    /// The server's system user when iolab is root, else iolab's own user.
    pub fn for_kind(kind: ServerKind) -> anyhow::Result<RunAs> {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        if uid != 0 || kind == ServerKind::Cassandra {
            return Ok(RunAs {
                name: std::env::var("USER").unwrap_or_else(|_| uid.to_string()),
                uid,
                gid,
            });
        }
        let name = match kind {
            ServerKind::Postgres => "postgres",
            ServerKind::Mariadb => "mysql",
            ServerKind::Redis => "redis",
            ServerKind::Cassandra => unreachable!("runs as iolab's user"),
            ServerKind::Mongodb => {
                return Ok(RunAs {
                    name: "root".into(),
                    uid,
                    gid,
                })
            }
        };
        let (uid, gid) = passwd_ids(name).ok_or_else(|| {
            usage(
                "--engine",
                format!(
                    "{} runs as its own user '{name}', which this machine does not have \
                     (install the server's Debian package: scripts/install-deps.sh)",
                    kind.name()
                ),
            )
        })?;
        Ok(RunAs {
            name: name.into(),
            uid,
            gid,
        })
    }

    /// Run `cmd` as this user.
    pub fn apply(&self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        // SAFETY: getuid cannot fail.
        if unsafe { libc::getuid() } != self.uid {
            cmd.uid(self.uid).gid(self.gid);
        }
    }
}

/// uid and gid of `user` from /etc/passwd.
fn passwd_ids(user: &str) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 4 && f[0] == user).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

/// The files of a private server.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `iolab-KIND-PID-N`: everything below is inside it.
    pub dir: PathBuf,
    pub data: PathBuf,
    pub log: PathBuf,
    /// MariaDB's socket (it always opens one).
    pub socket: PathBuf,
    /// Cassandra's commit log: `data/commitlog`, or a directory of its own
    /// under `--commitlog-dir`.
    pub commitlog: PathBuf,
}

/// The server's directory, removed (recursively) when dropped: after the
/// process, which is declared before it in `PrivateServer`.
struct ServerDir {
    path: PathBuf,
    /// A socket placed outside `path` because `path` was too long for one.
    socket_outside: Option<PathBuf>,
    /// A directory of the server's placed elsewhere (Cassandra's commit log).
    dir_outside: Option<PathBuf>,
}

impl Drop for ServerDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        testbed::release_path(&self.path);
        if let Some(s) = &self.socket_outside {
            let _ = std::fs::remove_file(s);
            testbed::release_path(s);
        }
        if let Some(d) = &self.dir_outside {
            let _ = std::fs::remove_dir_all(d);
            testbed::release_path(d);
        }
    }
}

/// A running private server.
pub struct PrivateServer {
    pub kind: ServerKind,
    pub endpoint: Endpoint,
    pub layout: Layout,
    pub run_as: RunAs,
    pub version: String,
    /// The server's effective settings that matter here, as it reports them.
    pub config: Vec<(String, String)>,
    /// Its process group (the server's first process).
    pub pgid: u32,
    /// Dropped first: the server stops before its directory goes.
    process: ServerProcess,
    _dir: ServerDir,
}

impl std::fmt::Debug for PrivateServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} (pid {}) in {}",
            self.kind.name(),
            self.version,
            self.pgid,
            self.layout.dir.display()
        )
    }
}

/// Refuse early what cannot work: the server is not installed, or its user
/// cannot reach the directory its data would go in.
pub fn check(kind: ServerKind, under: &Path) -> anyhow::Result<RunAs> {
    if kind == ServerKind::Cassandra {
        if let Some(why) = cassandra::missing() {
            return Err(usage(
                "--engine",
                format!("a private Cassandra cannot start here: {why}, or use --server-url"),
            ));
        }
    }
    if kind == ServerKind::Mongodb && ferretdb::find().is_none() {
        return Err(usage(
            "--engine",
            format!(
                "mongodb needs --server-url mongodb://HOST:PORT of your MongoDB; without one iolab \
                 starts a private FerretDB (MongoDB's wire protocol over SQLite: the protocol's test \
                 double, never a MongoDB performance figure), and none was found: {}",
                ferretdb::HOW_TO_GET
            ),
        ));
    }
    for prog in programs(kind) {
        if find_program(kind, prog).is_none() {
            return Err(usage(
                "--engine",
                format!(
                    "{} is not installed here ({prog} not found); install it with scripts/install-deps.sh \
                     or use --server-url for a server elsewhere",
                    kind.name()
                ),
            ));
        }
    }
    let meta = std::fs::metadata(under)
        .map_err(|e| usage("--target", format!("{}: {e}", under.display())))?;
    if !meta.is_dir() {
        return Err(usage(
            "--target",
            format!("{} is not a directory", under.display()),
        ));
    }
    let run_as = RunAs::for_kind(kind)?;
    if let Some(blocked) = unreachable_ancestor(under, &run_as) {
        return Err(usage(
            "--target",
            format!(
                "{} runs as user '{}', which cannot enter {} (its permissions); \
                 put the data under a directory it can reach, for example /var/tmp",
                kind.name(),
                run_as.name,
                blocked.display()
            ),
        ));
    }
    Ok(run_as)
}

/// The programs a private server of `kind` needs.
fn programs(kind: ServerKind) -> &'static [&'static str] {
    match kind {
        ServerKind::Postgres => &["initdb", "postgres"],
        ServerKind::Mariadb => &["mariadb-install-db", "mariadbd"],
        ServerKind::Redis => &["redis-server"],
        // java and the jars: cassandra::missing.
        ServerKind::Cassandra => &[],
        ServerKind::Mongodb => &["ferretdb"],
    }
}

/// Where `program` is: PostgreSQL's in its newest versioned bin directory,
/// FerretDB's where `ferretdb::find` looks, the others on PATH or in the
/// system directories.
pub fn find_program(kind: ServerKind, program: &str) -> Option<PathBuf> {
    match kind {
        ServerKind::Mongodb => ferretdb::find(),
        ServerKind::Postgres => postgres_program(program),
        _ => program_on_path(program),
    }
}

/// A PostgreSQL program: in the newest /usr/lib/postgresql/VERSION/bin
/// that has it (Debian's layout).
pub(super) fn postgres_program(program: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|d| d.join(program).is_file())
        .collect();
    dirs.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop().map(|d| d.join(program))
}

/// A program on PATH or in the system's sbin and bin directories.
pub(super) fn program_on_path(program: &str) -> Option<PathBuf> {
    crate::testbed::command::which(program).or_else(|| {
        ["/usr/sbin", "/usr/bin", "/sbin"]
            .iter()
            .map(|d| Path::new(d).join(program))
            .find(|p| p.is_file())
    })
}

/// The first directory from `/` down to `dir` that `who` cannot enter.
fn unreachable_ancestor(dir: &Path, who: &RunAs) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dir = dir.canonicalize().ok()?;
    let mut p = PathBuf::from("/");
    let check = |p: &Path| -> bool {
        let Ok(m) = std::fs::metadata(p) else {
            return true;
        };
        let mode = m.mode();
        who.uid == 0
            || (m.uid() == who.uid && mode & 0o100 != 0)
            || (m.gid() == who.gid && mode & 0o010 != 0)
            || mode & 0o001 != 0
    };
    if !check(&p) {
        return Some(p);
    }
    for c in dir.components().skip(1) {
        p.push(c);
        if !check(&p) {
            return Some(p);
        }
    }
    None
}

/// Start a private server of `kind` with its data under `under`.
pub fn start(
    kind: ServerKind,
    under: &Path,
    settings: &ServerSettings,
) -> anyhow::Result<PrivateServer> {
    settings.validate()?;
    if kind == ServerKind::Cassandra {
        cassandra::check_settings(settings)?;
    }
    let run_as = check(kind, under)?;
    let (dir, layout) = make_dir(kind, under, &run_as, settings)?;
    let password = random_password();
    init(kind, &layout, &run_as, &password)?;
    let mut tries = 0;
    loop {
        tries += 1;
        let port = free_port()?;
        let endpoint = Endpoint {
            kind,
            host: "127.0.0.1".into(),
            port,
            // Redis's password belongs to its default user; FerretDB
            // over SQLite has no users.
            user: match kind {
                ServerKind::Redis | ServerKind::Cassandra | ServerKind::Mongodb => String::new(),
                _ => "iolab".into(),
            },
            password: match kind {
                ServerKind::Cassandra | ServerKind::Mongodb => String::new(),
                _ => password.clone(),
            },
            database: match kind {
                ServerKind::Redis => "0".into(),
                // YCSB's cassandra-cql keyspace.
                ServerKind::Cassandra => "ycsb".into(),
                ServerKind::Mongodb => String::new(),
                _ => "iolab".into(),
            },
            socket: None,
            options: String::new(),
        };
        let mut cmd = command(kind, &layout, &endpoint, settings)?;
        run_as.apply(&mut cmd);
        let log = log_file(&layout.log, &run_as)?;
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let mut process = ServerProcess::spawn(cmd, kind.program())?;
        match wait_ready(&mut process, &endpoint, &layout) {
            Ok(()) => {
                let (version, config) = describe(&endpoint)
                    .with_context(|| format!("asking {} for its version", kind.name()))?;
                return Ok(PrivateServer {
                    kind,
                    pgid: process.pid,
                    endpoint,
                    layout,
                    run_as,
                    version,
                    config,
                    process,
                    _dir: dir,
                });
            }
            Err(e) if tries < 3 && port_taken(&layout.log) => {
                drop(process);
                let _ = e;
                continue;
            }
            Err(e) => return Err(e),
        }
    }
}

impl PrivateServer {
    /// The server's process still runs.
    pub fn alive(&mut self) -> bool {
        self.process.exited().is_none()
    }
}

/// The server's directory, owned by the user it runs as, registered with
/// the testbed before anything is put in it.
fn make_dir(
    kind: ServerKind,
    under: &Path,
    run_as: &RunAs,
    settings: &ServerSettings,
) -> anyhow::Result<(ServerDir, Layout)> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let under = under
        .canonicalize()
        .with_context(|| format!("resolving {}", under.display()))?;
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let path = under.join(format!("iolab-{}-{pid}-{n}", kind.name()));
    testbed::create(Resource::Path(path.clone()), || {
        std::fs::create_dir(&path).with_context(|| format!("creating {}", path.display()))
    })?;
    let mut dir = ServerDir {
        path: path.clone(),
        socket_outside: None,
        dir_outside: None,
    };
    chown(&path, run_as)?;
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    let mut socket = path.join("mysqld.sock");
    // sun_path holds 108 bytes with its NUL.
    if socket.as_os_str().len() > 100 {
        socket = std::env::temp_dir().join(format!("iolab-mysql-{pid}-{n}.sock"));
        testbed::register(Resource::Path(socket.clone()));
        dir.socket_outside = Some(socket.clone());
    }
    let mut commitlog = path.join("data").join("commitlog");
    if let (ServerKind::Cassandra, Some(place)) = (kind, &settings.commitlog_dir) {
        let place = place
            .canonicalize()
            .map_err(|e| usage("--commitlog-dir", format!("{}: {e}", place.display())))?;
        if !place.is_dir() {
            return Err(usage(
                "--commitlog-dir",
                format!("{} is not a directory", place.display()),
            ));
        }
        let own = place.join(format!("iolab-{}-commitlog-{pid}-{n}", kind.name()));
        testbed::create(Resource::Path(own.clone()), || {
            std::fs::create_dir(&own).with_context(|| format!("creating {}", own.display()))
        })?;
        dir.dir_outside = Some(own.clone());
        chown(&own, run_as)?;
        commitlog = own;
    }
    let layout = Layout {
        data: path.join("data"),
        log: path.join("server.log"),
        dir: path,
        socket,
        commitlog,
    };
    Ok((dir, layout))
}

fn chown(p: &Path, who: &RunAs) -> anyhow::Result<()> {
    std::os::unix::fs::chown(p, Some(who.uid), Some(who.gid))
        .with_context(|| format!("giving {} to user {}", p.display(), who.name))
}

/// The log file, appended to by the server's stdout and stderr.
fn log_file(path: &Path, who: &RunAs) -> anyhow::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    chown(path, who)?;
    Ok(f)
}

/// A file only the server's user can read (password, init statements).
pub(super) fn private_file(path: &Path, text: &str, who: &RunAs) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    chown(path, who)
}

fn random_password() -> String {
    use rand::RngExt;
    let mut rng = rand::rng();
    (0..24)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

pub(super) fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

/// The log says the port was taken between choosing and binding it.
fn port_taken(log: &Path) -> bool {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.contains("Address already in use")
        || text.contains("address already in use")
        || text.contains("Bind on TCP/IP port")
        || text.contains("Failed to bind port")
}

/// Create the data directory (initdb, mariadb-install-db; nothing for Redis).
fn init(kind: ServerKind, layout: &Layout, run_as: &RunAs, password: &str) -> anyhow::Result<()> {
    let mut cmd = match kind {
        ServerKind::Postgres => postgres::init_command(layout, run_as, password)?,
        ServerKind::Mariadb => mariadb::init_command(layout, run_as, password)?,
        ServerKind::Redis | ServerKind::Cassandra | ServerKind::Mongodb => {
            std::fs::create_dir(&layout.data)?;
            return chown(&layout.data, run_as);
        }
    };
    run_as.apply(&mut cmd);
    let log = log_file(&layout.log, run_as)?;
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let prog = cmd.get_program().to_string_lossy().into_owned();
    let out = run_bounded(&mut cmd, Duration::from_secs(120))
        .with_context(|| format!("running {prog}"))?;
    if !out.success() {
        anyhow::bail!(
            "{prog} failed ({out}); its output is in {}:\n{}",
            layout.log.display(),
            tail(&layout.log, 15)
        );
    }
    Ok(())
}

/// Run `cmd` to its end, killed after `limit`.
fn run_bounded(cmd: &mut Command, limit: Duration) -> anyhow::Result<std::process::ExitStatus> {
    let mut child = cmd.spawn()?;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("did not finish within {} s (killed)", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server's command line.
fn command(
    kind: ServerKind,
    layout: &Layout,
    ep: &Endpoint,
    s: &ServerSettings,
) -> anyhow::Result<Command> {
    Ok(match kind {
        ServerKind::Postgres => postgres::server_command(layout, ep, s)?,
        ServerKind::Mariadb => mariadb::server_command(layout, ep, s)?,
        ServerKind::Redis => redis::server_command(layout, ep, s)?,
        ServerKind::Cassandra => cassandra::server_command(layout, ep, s)?,
        ServerKind::Mongodb => {
            if let Some((k, _)) = s.set.first() {
                return Err(usage(
                    "--server-set",
                    format!("{k}: the private FerretDB takes no server options"),
                ));
            }
            ferretdb::server_command(layout, ep)?
        }
    })
}

/// Poll until the server takes connections; fail at once, naming its log,
/// if it exits.
fn wait_ready(process: &mut ServerProcess, ep: &Endpoint, layout: &Layout) -> anyhow::Result<()> {
    let within = match ep.kind {
        ServerKind::Cassandra => cassandra::READY_WITHIN,
        _ => READY_WITHIN,
    };
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = process.exited() {
            anyhow::bail!(
                "{} exited at start ({status}); its log is kept as {}:\n{}",
                ep.kind.program(),
                keep_log(&layout.log).display(),
                tail(&layout.log, 15)
            );
        }
        if crate::interrupt::stop_requested() {
            return Err(crate::error::Interrupted.into());
        }
        match ready(ep) {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                anyhow::bail!(
                    "{} did not take connections within {} s ({}); its log is kept as {}:\n{}",
                    ep.kind.program(),
                    within.as_secs(),
                    crate::error::chain_line(&e),
                    keep_log(&layout.log).display(),
                    tail(&layout.log, 15)
                )
            }
            Err(_) => std::thread::sleep(Duration::from_millis(match ep.kind {
                ServerKind::Cassandra => 250,
                _ => 50,
            })),
        }
    }
}

/// One readiness probe (which also creates iolab's database the first time).
fn ready(ep: &Endpoint) -> anyhow::Result<()> {
    match ep.kind {
        ServerKind::Postgres => postgres::ready(ep),
        ServerKind::Mariadb => mariadb::ready(ep),
        ServerKind::Redis => redis::ready(ep),
        ServerKind::Cassandra => cassandra::ready(ep),
        ServerKind::Mongodb => mongodb::ready(ep),
    }
}

/// The server's version and the settings it reports.
pub fn describe(ep: &Endpoint) -> anyhow::Result<(String, Vec<(String, String)>)> {
    match ep.kind {
        ServerKind::Postgres => postgres::describe(ep),
        ServerKind::Mariadb => mariadb::describe(ep),
        ServerKind::Redis => redis::describe(ep),
        ServerKind::Cassandra => cassandra::describe(ep),
        ServerKind::Mongodb => mongodb::describe(ep),
    }
}

/// A copy of a server's log that outlives its directory (removed when
/// iolab exits): `server-logs/` in the state directory, named after the
/// server's directory. The log itself if it cannot be copied.
fn keep_log(log: &Path) -> PathBuf {
    let name = log
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| format!("{}.log", n.to_string_lossy()))
        .unwrap_or_else(|| "server.log".into());
    let kept = crate::testbed::records::state_dir().map(|d| d.join("server-logs"));
    match kept {
        Some(dir) if std::fs::create_dir_all(&dir).is_ok() => {
            let to = dir.join(name);
            match std::fs::copy(log, &to) {
                Ok(_) => to,
                Err(_) => log.to_path_buf(),
            }
        }
        _ => log.to_path_buf(),
    }
}

/// The last `n` lines of a log.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_starts_log_is_kept_outside_the_servers_directory() {
        let dir = tempfile::tempdir().unwrap();
        let server = dir
            .path()
            .join(format!("iolab-test-{}-0", std::process::id()));
        std::fs::create_dir(&server).unwrap();
        let log = server.join("server.log");
        std::fs::write(&log, "ERROR cannot bind\n").unwrap();
        let kept = keep_log(&log);
        if crate::testbed::records::state_dir().is_none() {
            assert_eq!(kept, log);
            return;
        }
        assert!(!kept.starts_with(dir.path()), "{}", kept.display());
        assert_eq!(
            std::fs::read_to_string(&kept).unwrap(),
            "ERROR cannot bind\n"
        );
        std::fs::remove_file(&kept).unwrap();
    }
}
