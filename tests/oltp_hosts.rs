//! `iolab oltp --hosts` end to end against namespace hosts with their own
//! sshd (tests/fleet_common): SQLite on two hosts at once, each loading its
//! own warehouse, every users count's point merged exactly (transactions,
//! NOPM and histograms added, the hosts' rows beside it), the consistency
//! conditions checked on every host; PostgreSQL shared by the hosts, each
//! in a schema of its own; no database and no process left on any host,
//! after a lost host and after Ctrl-C too; a media run (two directories
//! in rounds) on the hosts; what a run on hosts
//! cannot do is exit 2 naming the flag. Needs root, ip netns and sshd for
//! the hosts; skips otherwise.

mod fleet_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fleet_common::{all_hosts, text, Lab};
use iolab::measure::histogram::LatencyHistogram;
use iolab::results::{Point, Results};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// `oltp` on every host of the lab: one warehouse each, SQLite in `work`.
fn oltp(lab: &Lab, work: &Path, extra: &[&str]) -> Command {
    let mut c = oltp_on(lab);
    c.arg("-t").arg(work).args(extra);
    c
}

/// `oltp` on every host of the lab, one warehouse each, no target yet.
fn oltp_on(lab: &Lab) -> Command {
    let mut c = Command::new(IOLAB);
    c.args(["oltp", "--hosts", &all_hosts(lab), "--ssh-config"])
        .arg(&lab.ssh_config)
        .args(["--host-iolab", IOLAB, "--quiet", "-w", "1", "--ramp", "0s"])
        .args(["--loader-threads", "2"]);
    c
}

/// The lab's directory the hosts' databases go in (`-t`), empty.
fn work_dir(lab: &Lab) -> PathBuf {
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    work
}

/// The merged transactions are the rows' sum, the merged histograms
/// count every one of them and are the sum of the hosts' own.
fn assert_exact(p: &Point) {
    let rows = &p.extra.hosts.as_ref().expect("the hosts' rows").per_host;
    let sum: u64 = rows.iter().map(|r| r.ops).sum();
    assert_eq!(p.total.ops, sum, "{}", p.name);
    assert!(rows.iter().all(|r| r.ops > 0), "{rows:?}");
    let counted: u64 = p
        .histograms
        .values()
        .map(|h| LatencyHistogram::decode(h).unwrap().len())
        .sum();
    assert_eq!(counted, p.total.ops, "{}", p.name);
    for (key, merged) in &p.histograms {
        let parts: u64 = rows
            .iter()
            // A host that ran no transaction of a type (a point cut
            // short) has no histogram of it.
            .filter_map(|r| r.histograms.get(key))
            .map(|h| LatencyHistogram::decode(h).unwrap().len())
            .sum();
        assert_eq!(
            LatencyHistogram::decode(merged).unwrap().len(),
            parts,
            "{key}"
        );
    }
}

/// Nothing of the run is left: no database in `work`, no agent on a host.
fn assert_nothing_left(lab: &Lab, work: &Path) {
    let quiet = lab.wait_quiet(Duration::from_secs(30));
    assert!(quiet.is_empty(), "left on the hosts: {quiet:?}");
    let left: Vec<_> = std::fs::read_dir(work).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn oltp_on_two_hosts_merges_every_point_exactly_and_leaves_nothing() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = work_dir(&lab);
    let out = lab.dir.path().join("oltp.json");
    let o = oltp(&lab, &work, &["--users", "1,2", "--runtime", "2s", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = Results::read(&out).unwrap();
    assert!(r.complete && !r.interrupted, "{:?}", r.warnings);
    let names: Vec<&str> = r.points.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["oltp.users1", "oltp.users2"]);
    for (p, users) in r.points.iter().zip([1, 2]) {
        let h = p.extra.hosts.as_ref().unwrap();
        let hosts: Vec<&str> = h.per_host.iter().map(|r| r.host.as_str()).collect();
        assert_eq!(hosts, [&lab.hosts[0].addr, &lab.hosts[1].addr]);
        assert!(h.lost.is_empty() && !p.is_interrupted());
        assert_exact(p);
        let oltp = p.extra.oltp.as_ref().expect("the merged oltp section");
        // Each host its own warehouse and users; the whole's are the sum.
        assert_eq!((oltp.warehouses, oltp.users), (2, 2 * users));
        let commits: u64 = oltp
            .transactions
            .values()
            .map(|t| t.commits + t.rollbacks)
            .sum();
        assert_eq!(commits, p.total.ops);
        let new_orders = &oltp.transactions["new_order"];
        assert_eq!(
            new_orders.commits + new_orders.rollbacks,
            p.ops["new_order"].ops
        );
        assert!(oltp.nopm > 0.0);
        // Conditions 1-4, checked on both hosts, passed.
        assert_eq!(oltp.consistency.len(), 4, "{:?}", oltp.consistency);
        assert!(
            oltp.consistency.iter().all(|c| c.passed),
            "{:?}",
            oltp.consistency
        );
        assert!(oltp.consistency.iter().all(|c| c.checked >= 2));
    }
    assert_eq!(r.provenance.plan["hosts"].as_array().unwrap().len(), 2);
    assert_nothing_left(&lab, &work);
}

/// A media run on hosts, as on this machine: a directory on every host
/// and a tmpfs every host builds (`--make`) in two rounds against a
/// baseline, every pass on both hosts at
/// once (each host loading a fresh database per pass), each point the
/// hosts' exact merge tagged by its pass, nothing left.
#[test]
fn an_oltp_campaign_runs_its_setups_in_rounds_on_every_host() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = work_dir(&lab);
    let (a, b) = (work.join("a"), work.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let out = lab.dir.path().join("campaign.json");
    // The second setup is a tmpfs every host builds in b (`--make`).
    let o = oltp_on(&lab)
        .arg("-t")
        .arg(format!("A={}", a.display()))
        .args(["--make", "tmpfs", "--make-in"])
        .arg(&b)
        .args([
            "--rounds",
            "2",
            "--baseline",
            "tmpfs",
            "--users",
            "1",
            "--runtime",
            "1s",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = Results::read(&out).unwrap();
    let mut names: Vec<&str> = r.points.iter().map(|p| p.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "A r1: oltp.users1",
            "A r2: oltp.users1",
            "tmpfs r1: oltp.users1",
            "tmpfs r2: oltp.users1"
        ]
    );
    for p in &r.points {
        let h = p.extra.hosts.as_ref().expect("the hosts' rows");
        assert_eq!(h.per_host.len(), 2, "{}", p.name);
        assert_exact(p);
        assert_eq!(p.extra.oltp.as_ref().map(|o| o.warehouses), Some(2));
        let pass = p.pass.as_ref().expect("tagged with its pass");
        assert_eq!(pass.baseline, pass.setup == "tmpfs", "{}", p.name);
    }
    assert_eq!(r.extra.hosts.as_ref().map(|h| h.hosts.len()), Some(2));
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&b.display().to_string()), "a tmpfs left");
    let media = r.extra.media.as_ref().expect("the setups");
    assert_eq!(media.targets.as_ref().map(|t| t.len()), Some(2));
    assert!(r.complete);
    for d in [&a, &b] {
        let left: Vec<_> = std::fs::read_dir(d).unwrap().flatten().collect();
        assert!(left.is_empty(), "{left:?}");
    }
    let quiet = lab.wait_quiet(Duration::from_secs(30));
    assert!(quiet.is_empty(), "left on the hosts: {quiet:?}");
}

/// A PostgreSQL server in the lab's shared namespace, run as the
/// `postgres` user with trust authentication (every host reaches it at
/// `url`), stopped at the end; `None` when PostgreSQL is not installed.
struct SharedPostgres {
    target: fleet_common::SharedTarget,
    server: std::process::Child,
    _data: tempfile::TempDir,
    url: String,
}

impl SharedPostgres {
    fn start(lab: &Lab) -> Option<SharedPostgres> {
        let found = Command::new("sh")
            .args([
                "-c",
                "command -v initdb && command -v postgres && command -v psql && id postgres",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            eprintln!(
                "skipping: PostgreSQL (initdb, postgres, psql, a postgres user) is not installed"
            );
            return None;
        }
        let data = tempfile::tempdir().unwrap();
        let as_postgres = [
            "setpriv",
            "--reuid=postgres",
            "--regid=postgres",
            "--clear-groups",
        ];
        let o = Command::new("chown")
            .args(["postgres:postgres"])
            .arg(data.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let pgdata = data.path().join("data");
        let o = Command::new(as_postgres[0])
            .args(&as_postgres[1..])
            .args(["initdb", "-U", "bench", "--auth=trust", "-D"])
            .arg(&pgdata)
            .output()
            .unwrap();
        assert!(o.status.success(), "initdb: {}", text(&o));
        let hba = pgdata.join("pg_hba.conf");
        let mut conf = std::fs::read_to_string(&hba).unwrap();
        conf.push_str("\nhost all all 0.0.0.0/0 trust\n");
        std::fs::write(&hba, conf).unwrap();
        let target = lab.shared_target();
        let server = target
            .command(as_postgres[0])
            .args(&as_postgres[1..])
            .arg("postgres")
            .arg("-D")
            .arg(&pgdata)
            .args(["-c", &format!("listen_addresses={}", target.addr)])
            .args([
                "-c",
                "port=5432",
                "-c",
                "unix_socket_directories=",
                "-c",
                "fsync=off",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("postgres://bench@{}:5432/postgres", target.addr);
        let pg = SharedPostgres {
            target,
            server,
            _data: data,
            url,
        };
        let end = Instant::now() + Duration::from_secs(30);
        while pg.sql("SELECT 1") != "1" {
            assert!(Instant::now() < end, "postgres did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(pg)
    }

    /// One query's result, unaligned.
    fn sql(&self, q: &str) -> String {
        let o = self
            .target
            .command("psql")
            .args([
                "-h",
                &self.target.addr,
                "-U",
                "bench",
                "-d",
                "postgres",
                "-tAc",
                q,
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }
}

impl Drop for SharedPostgres {
    fn drop(&mut self) {
        // SAFETY: our own child (the server: ip netns exec and setpriv exec it).
        unsafe { libc::kill(self.server.id() as i32, libc::SIGTERM) };
        let _ = self.server.wait();
    }
}

/// Two hosts against one PostgreSQL (`--server-url`, TPC-C's many
/// clients on one server): each host loads and runs its own warehouse in
/// a schema of its own, merged as with SQLite; nothing is left on the
/// server, in the URL's database or in a schema.
#[test]
fn hosts_share_one_postgres_each_in_a_schema_of_its_own() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let Some(pg) = SharedPostgres::start(&lab) else {
        return;
    };
    let work = work_dir(&lab);
    let out = lab.dir.path().join("pg.json");
    let args = [
        "--engine",
        "postgres",
        "--server-url",
        &pg.url,
        "--users",
        "1",
        "--runtime",
        "2s",
        "-o",
    ];
    let o = oltp(&lab, &work, &args).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = Results::read(&out).unwrap();
    assert_eq!(r.points.len(), 1);
    let p = &r.points[0];
    assert_exact(p);
    let oltp = p.extra.oltp.as_ref().unwrap();
    assert_eq!(oltp.warehouses, 2);
    assert!(
        oltp.consistency.iter().all(|c| c.passed),
        "{:?}",
        oltp.consistency
    );
    let left = pg.sql("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'iolab%'");
    assert_eq!(left, "0", "a host's schema was left on the server");
    let tables = pg.sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
    assert_eq!(tables, "0", "a host loaded into the URL's database");
    assert_nothing_left(&lab, &work);
}

/// The agent's pid on host `i`, once it runs.
fn agent_pid(lab: &Lab, i: usize) -> u32 {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let found = lab.hosts[i]
            .others()
            .into_iter()
            .find(|p| p.contains(" agent"))
            .and_then(|p| p.split(':').next()?.parse().ok());
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < end, "no agent on host {i}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Two points of 6 s on both hosts; `hit` is done 2 s after the first
/// point's results are saved (the second point runs).
fn interrupted_run(
    lab: &Lab,
    extra: &[&str],
    hit: impl FnOnce(&std::process::Child),
) -> (Output, Results) {
    let work = work_dir(lab);
    let out = lab.dir.path().join("cut.json");
    let _ = std::fs::remove_file(&out);
    let child = oltp(lab, &work, &["--users", "1,1", "--runtime", "6s", "-o"])
        .arg(&out)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(300);
    while !out.exists() {
        assert!(Instant::now() < end, "the first point never ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Past the second point's prepare and start (it runs 6 s).
    std::thread::sleep(Duration::from_secs(2));
    hit(&child);
    let o = child.wait_with_output().unwrap();
    (o, Results::read(&out).unwrap())
}

#[test]
fn a_lost_host_is_named_and_a_sigint_tears_every_database_down() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = work_dir(&lab);
    let (o, r) = interrupted_run(&lab, &[], |_| {
        // SAFETY: an agent in a namespace this test made.
        unsafe { libc::kill(agent_pid(&lab, 1) as i32, libc::SIGKILL) };
    });
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(r.points.len(), 2, "{}", text(&o));
    let p = &r.points[1];
    let h = p.extra.hosts.as_ref().unwrap();
    assert_eq!(h.lost.len(), 1, "{h:?}");
    assert_eq!(h.lost[0].host, lab.hosts[1].addr);
    assert!(p.is_interrupted() && !r.complete);
    assert_exact(p);
    assert_eq!(h.per_host.len(), 1);
    assert!(lab.wait_quiet(Duration::from_secs(30)).is_empty());
    // The killed agent's database waits for that host's next iolab start.
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 1);
    let swept = Command::new("ip")
        .args(["netns", "exec", &lab.hosts[1].ns, IOLAB, "sysinfo"])
        .env("IOLAB_STATE_DIR", &lab.hosts[1].state)
        .output()
        .unwrap();
    assert!(swept.status.success(), "{}", text(&swept));
    assert_nothing_left(&lab, &work);

    // Ctrl-C: every agent stops its point, sends its part and removes its database.
    let (o, r) = interrupted_run(&lab, &[], |c| {
        // SAFETY: our own child.
        unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    });
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(r.interrupted && !r.complete);
    assert_eq!(r.points.len(), 2, "{}", text(&o));
    assert_exact(&r.points[1]);
    assert_nothing_left(&lab, &work);
}

/// Refused before any host is contacted: no lab needed.
#[test]
fn what_oltp_hosts_cannot_run_is_exit_2_naming_the_flag() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let db = d.path().join("tpcc.sqlite");
    std::fs::write(&db, b"").unwrap();
    let db = db.to_str().unwrap();
    for (args, flag) in [
        (vec!["--engine", "postgres"], "--engine"),
        (vec!["--engine", "mariadb", "-t", "/var/tmp"], "--engine"),
        (vec!["--db", db], "--db"),
        (vec!["--keep"], "--keep"),
        (vec!["--make", "raw", "-t", "/var/tmp"], "--make"),
        (vec!["-t", "/var/tmp", "-t", "rel"], "--target"),
        (
            vec![
                "-t",
                "/var/tmp",
                "-t",
                "/tmp",
                "--engine",
                "postgres",
                "--server-url",
                "postgres://u@10.0.0.9/db",
            ],
            "--server-url",
        ),
        (vec!["--rounds", "2"], "--rounds"),
        (vec!["--size", "1g"], "--size"),
        (vec!["-t", "relative/dir"], "--target"),
    ] {
        let o = Command::new(IOLAB)
            .args(["oltp", "--hosts", "127.0.0.1", "--quiet"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("connecting"),
            "{err}"
        );
    }
    // The hosts' flags need --hosts.
    let o = Command::new(IOLAB)
        .args(["oltp", "--on-host-loss", "continue", "--quiet", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--on-host-loss"));
    // --dry-run names the hosts and contacts none.
    let o = Command::new(IOLAB)
        .args(["oltp", "--hosts", "h1,h2", "--dry-run", "--users", "1,2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("hosts: h1, h2") && out.contains("/var/tmp"),
        "{out}"
    );
}
