//! `iolab kv --hosts` end to end against namespace hosts with their own
//! sshd (tests/fleet_common): every phase of a YCSB plan (load, run) on
//! two hosts at once, merged exactly, with `--instances 2` on each too; no
//! database and no process left on any host; the combinations a run on
//! hosts cannot do and a refused login are exit 2 naming the flag or the
//! host. Needs root, ip netns and sshd for the hosts; skips otherwise.

mod fleet_common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use fleet_common::{all_hosts, text, Lab};
use iolab::measure::histogram::LatencyHistogram;
use iolab::results::{Point, Results};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

fn kv(lab: &Lab, hosts: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(IOLAB);
    c.args(["kv", "a", "--hosts", hosts, "--ssh-config"])
        .arg(&lab.ssh_config)
        .args(["--host-iolab", IOLAB, "--quiet"])
        .args(["-p", "recordcount=300", "-p", "operationcount=400"])
        .args(extra);
    c
}

/// The merged operations are the rows' sum and the merged histograms
/// count every one of them.
fn assert_exact(p: &Point, rows: &[iolab::results::ext::HostRow]) {
    let sum: u64 = rows.iter().map(|r| r.ops).sum();
    assert_eq!(p.total.ops, sum, "{}", p.name);
    assert!(rows.iter().all(|r| r.ops > 0), "{rows:?}");
    let counted: u64 = p
        .histograms
        .iter()
        .filter(|(k, _)| k.ends_with(".lat"))
        .map(|(_, h)| LatencyHistogram::decode(h).unwrap().len())
        .sum();
    assert_eq!(counted, p.total.ops, "{}", p.name);
}

/// Issue 46: every host's row has every operation type of the phase
/// (the load's inserts, the run's reads and updates) with its full
/// percentiles, its own series, and the histograms the aggregate's are
/// the sum of.
fn assert_hosts_keep_their_own(p: &Point, rows: &[iolab::results::ext::HostRow]) {
    for r in rows {
        let ops: Vec<&String> = r.per_op.keys().collect();
        assert_eq!(
            ops,
            p.ops.keys().collect::<Vec<_>>(),
            "{}: {}",
            p.name,
            r.host
        );
        for (k, o) in &r.per_op {
            let lat = o.lat.as_ref().expect("each operation type's latency");
            assert!(lat.percentile(99.9).is_some(), "{} {k}", r.host);
        }
        assert!(
            !r.series.is_empty(),
            "{}: {} has its series",
            p.name,
            r.host
        );
    }
    for (key, merged) in &p.histograms {
        let parts: u64 = rows
            .iter()
            .map(|r| LatencyHistogram::decode(&r.histograms[key]).unwrap().len())
            .sum();
        assert_eq!(
            LatencyHistogram::decode(merged).unwrap().len(),
            parts,
            "{key}"
        );
    }
}

const ROCKSDB: &[&str] = &["--engine", "rocksdb"];

/// The lab's directory the hosts' databases go in (`--dir`).
fn work_dir(lab: &Lab) -> std::path::PathBuf {
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    work
}

/// `c` run with `--dir work --json out`: it succeeds; its results.
fn run_json(mut c: Command, work: &Path, out: &Path) -> Results {
    let o = c
        .arg("--dir")
        .arg(work)
        .arg("--json")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    Results::read(out).unwrap()
}

/// The measurements' rounds (`IOLAB_KV_ROUNDS`, 1 by default).
fn measure_rounds() -> usize {
    std::env::var("IOLAB_KV_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
}

/// The plan of `kv` with `engine` on every host of the lab; its results.
fn run_on_hosts(lab: &Lab, engine: &[&str], instances: &str, extra: &[&str]) -> Results {
    let out = lab.dir.path().join(format!("out-{instances}.json"));
    let work = work_dir(lab);
    let mut c = kv(lab, &all_hosts(lab), engine);
    c.args(extra).args(["--instances", instances]);
    let r = run_json(c, &work, &out);
    // Each host removed its databases; nothing runs there any more.
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
    let quiet = lab.wait_quiet(Duration::from_secs(20));
    assert!(quiet.is_empty(), "left on the hosts: {quiet:?}");
    r
}

/// Workload A's load and run on two hosts, each host's operations in its
/// row, merged exactly, every read checked.
fn assert_two_hosts_ran_ycsb_a(r: &Results) {
    let names: Vec<&str> = r.points.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["ycsb-a.load", "ycsb-a.run"]);
    for (p, per_host) in r.points.iter().zip([300, 400]) {
        let h = p.extra.hosts.as_ref().expect("the hosts' rows");
        assert_eq!(h.per_host.len(), 2);
        assert!(h.per_host.iter().all(|x| x.ops == per_host), "{h:?}");
        assert!(h.lost.is_empty() && !p.is_interrupted());
        assert_exact(p, &h.per_host);
        assert!(p.extra.instances.is_none());
        assert_hosts_keep_their_own(p, &h.per_host);
    }
    assert!(r.complete);
    let v = r.points[1]
        .verify
        .as_ref()
        .expect("the hosts' checks, added");
    assert!(v.blocks_checked > 0 && v.mismatches == 0, "{v:?}");
}

#[test]
fn kv_on_two_hosts_merges_every_phase_exactly_and_leaves_nothing() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let r = run_on_hosts(&lab, ROCKSDB, "1", &[]);
    assert_two_hosts_ran_ycsb_a(&r);
    // The report draws the hosts of a kv run as of a device run.
    let html = lab.dir.path().join("r.html");
    let o = Command::new(IOLAB)
        .arg("report")
        .arg(lab.dir.path().join("out-1.json"))
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    // kv's throughput is ops/s, named so (issue 44).
    assert!(page.contains("ops/s per host"), "no hosts chart");
    assert!(
        page.contains(&lab.hosts[1].addr),
        "no row of the second host"
    );
    // Two instances on each host: a row per host and per host's instance.
    let r = run_on_hosts(&lab, ROCKSDB, "2", &[]);
    for p in &r.points {
        let h = p.extra.hosts.as_ref().unwrap();
        assert_exact(p, &h.per_host);
        let i = p.extra.instances.as_ref().expect("the instances' rows");
        assert_eq!(i.per_host.len(), 4);
        assert!(i.per_host[0].host.ends_with("/inst-1"), "{i:?}");
        assert_exact(p, &i.per_host);
    }
    assert_eq!(r.points[0].total.ops, 4 * 300);
    // A -P file's properties reach the hosts (its text is sent inline):
    // workload A read-only, as the file says, with the -p counts on top.
    let props = lab.dir.path().join("read-only.props");
    std::fs::write(&props, "readproportion=1.0\nupdateproportion=0\n").unwrap();
    let r = run_on_hosts(&lab, ROCKSDB, "1", &["-P", props.to_str().unwrap()]);
    let run = &r.points[1];
    assert_eq!(run.total.ops, 2 * 400, "{}", run.name);
    assert_eq!(
        run.ops.get("read").map(|o| o.ops),
        Some(2 * 400),
        "{:?}",
        run.ops
    );
    assert!(
        run.ops.get("update").is_none_or(|o| o.ops == 0),
        "{:?}",
        run.ops
    );
}

/// Issue 46: a kv campaign on hosts, as on this machine: two setups (a
/// directory on every host, and a tmpfs every host builds: `--make`) in
/// two rounds against a baseline, every pass on both hosts at once, each
/// phase's point the hosts' exact merge named and tagged by its pass, the
/// media comparison made, nothing left (no database, no mount).
#[test]
fn a_kv_campaign_runs_its_setups_in_rounds_on_every_host() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = work_dir(&lab);
    let (a, make_in) = (work.join("a"), work.join("make-in"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&make_in).unwrap();
    let out = lab.dir.path().join("campaign.json");
    let o = kv(&lab, &all_hosts(&lab), ROCKSDB)
        .arg("-t")
        .arg(format!("A={}", a.display()))
        .args(["--make", "tmpfs", "--make-in"])
        .arg(&make_in)
        .args(["--rounds", "2", "--baseline", "tmpfs", "--json"])
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
            "A r1: ycsb-a.load",
            "A r1: ycsb-a.run",
            "A r2: ycsb-a.load",
            "A r2: ycsb-a.run",
            "tmpfs r1: ycsb-a.load",
            "tmpfs r1: ycsb-a.run",
            "tmpfs r2: ycsb-a.load",
            "tmpfs r2: ycsb-a.run",
        ]
    );
    for (p, per_host) in r.points.iter().zip([300, 400].into_iter().cycle()) {
        let h = p.extra.hosts.as_ref().expect("the hosts' rows");
        assert_eq!(h.per_host.len(), 2, "{}", p.name);
        assert!(h.per_host.iter().all(|x| x.ops == per_host), "{h:?}");
        assert_exact(p, &h.per_host);
        let pass = p.pass.as_ref().expect("tagged with its pass");
        assert_eq!(pass.baseline, pass.setup == "tmpfs", "{}", p.name);
    }
    assert_eq!(r.extra.hosts.as_ref().map(|h| h.hosts.len()), Some(2));
    let media = r.extra.media.as_ref().expect("the setups");
    assert_eq!(media.targets.as_ref().map(|t| t.len()), Some(2));
    assert!(r.complete);
    for d in [&a, &make_in] {
        let left: Vec<_> = std::fs::read_dir(d).unwrap().flatten().collect();
        assert!(left.is_empty(), "{left:?}");
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&make_in.display().to_string()));
    let quiet = lab.wait_quiet(Duration::from_secs(20));
    assert!(quiet.is_empty(), "left on the hosts: {quiet:?}");
}

#[test]
fn a_refused_login_is_exit_2_naming_the_host_and_nothing_starts() {
    let Some(lab) = fleet_common::lab(2, &[1]) else {
        return;
    };
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let o = kv(&lab, &all_hosts(&lab), &["--engine", "sqlite", "--dir"])
        .arg(&work)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&lab.hosts[1].addr), "{err}");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    assert!(lab.wait_quiet(Duration::from_secs(20)).is_empty());
}

/// A Redis server in the lab's shared namespace (every host reaches it at
/// `url`), stopped at the end; `None` when redis is not installed.
struct SharedRedis {
    target: fleet_common::SharedTarget,
    server: std::process::Child,
    url: String,
}

impl SharedRedis {
    fn start(lab: &Lab) -> Option<SharedRedis> {
        let found = Command::new("sh")
            .args(["-c", "command -v redis-server && command -v redis-cli"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            eprintln!("skipping: redis-server or redis-cli is not installed");
            return None;
        }
        let target = lab.shared_target();
        let server = target
            .command("redis-server")
            .args(["--bind", &target.addr, "--port", "6379", "--save", ""])
            .args(["--appendonly", "no", "--protected-mode", "no"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("redis://{}:6379", target.addr);
        let r = SharedRedis {
            target,
            server,
            url,
        };
        let end = std::time::Instant::now() + Duration::from_secs(20);
        while r.cli(&["ping"]) != "PONG" {
            assert!(
                std::time::Instant::now() < end,
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(r)
    }

    fn cli(&self, args: &[&str]) -> String {
        let o = self
            .target
            .command("redis-cli")
            .args(["-h", &self.target.addr, "-p", "6379"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }
}

impl Drop for SharedRedis {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Two hosts against one Redis server every host reaches (`--server-url`,
/// YCSB's many clients on one database): each host loads and runs in a
/// namespace of its own, and none is left on the server.
#[test]
fn hosts_share_one_server_each_in_a_namespace_of_its_own() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let Some(redis) = SharedRedis::start(&lab) else {
        return;
    };
    let engine = ["--engine", "redis", "--server-url", &redis.url];
    let r = run_on_hosts(&lab, &engine, "1", &[]);
    assert_two_hosts_ran_ycsb_a(&r);
    assert_eq!(
        redis.cli(&["dbsize"]),
        "0",
        "a host's records were left on the server"
    );
}

/// Measurement, not a check (docs/benchmarks.md): YCSB A and C from 1, 2
/// and 3 namespace hosts against one Redis server, 4 client threads per
/// host; aggregate and per-host throughput and the run's p99. Run with
/// `cargo test --test kv_hosts -- --ignored --nocapture measure_one_server`.
#[test]
#[ignore]
fn measure_one_server_from_several_hosts() {
    let Some(lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let Some(redis) = SharedRedis::start(&lab) else {
        return;
    };
    let rounds = measure_rounds();
    let work = work_dir(&lab);
    println!("| workload | hosts | round | run ops/s (all hosts) | per host | run p99 us |");
    println!("|---|---|---|---|---|---|");
    for round in 1..=rounds {
        // C is A's zipfian requests, all reads.
        let workloads: [(&str, &[&str]); 2] = [
            ("a", &[]),
            ("c", &["-p", "readproportion=1", "-p", "updateproportion=0"]),
        ];
        for (workload, mix) in workloads {
            for n in 1..=lab.hosts.len() {
                let hosts: Vec<&str> = lab.hosts[..n].iter().map(|h| h.addr.as_str()).collect();
                let out = lab.dir.path().join("m.json");
                let mut c = kv(&lab, &hosts.join(","), &["--engine", "redis"]);
                c.args(["--server-url", &redis.url, "--threads", "4"])
                    .args(["-p", "recordcount=10000", "-p", "operationcount=100000000"])
                    .args(mix)
                    .args(["--runtime", "5s"]);
                let r = run_json(c, &work, &out);
                let run = &r.points[1];
                let h = run.extra.hosts.as_ref().expect("the hosts' rows");
                assert_exact(run, &h.per_host);
                let per: Vec<String> = h
                    .per_host
                    .iter()
                    .map(|x| format!("{:.0}", x.iops))
                    .collect();
                let p99 = run.main_lat().and_then(|l| l.percentile(99.0)).unwrap_or(0);
                println!(
                    "| {workload} | {n} | {round} | {:.0} | {} | {:.0} |",
                    run.total.iops,
                    per.join(" / "),
                    p99 as f64 / 1e3
                );
                assert_eq!(redis.cli(&["dbsize"]), "0");
            }
        }
    }
}

/// Refused before any host is contacted: no lab needed.
#[test]
fn what_hosts_cannot_run_is_exit_2_naming_the_flag() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // -P files go to the hosts inline, up to 64 KiB in all.
    let big = d.path().join("big.props");
    let filler = "# a comment line of a large property file\n".repeat(2000);
    std::fs::write(&big, format!("recordcount=10\n{filler}")).unwrap();
    let big = big.to_str().unwrap();
    let db = d.path().join("db");
    for (args, flag) in [
        (vec!["--engine", "postgres"], "--engine"),
        (
            vec![
                "--engine",
                "redis",
                "--server-url",
                "redis://10.0.0.9:6379",
                "--instances",
                "2",
            ],
            "--instances",
        ),
        (vec!["--make", "raw", "-t", "/var/tmp"], "--make"),
        (vec!["-t", "relative", "-t", "/tmp"], "--target"),
        (
            vec!["-t", "/var/tmp", "-t", "/tmp", "--engine", "postgres"],
            "--engine",
        ),
        (vec!["-P", big], "-P"),
        (vec!["--db", db.to_str().unwrap()], "--db"),
        (vec!["--keep"], "--keep"),
        (vec!["--dir", "relative/dir"], "--dir"),
        (vec!["--instances", "0"], "--instances"),
    ] {
        let o = Command::new(IOLAB)
            .args(["kv", "a", "--hosts", "127.0.0.1", "--quiet"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!Path::new(&db).exists());
    // The hosts' flags need --hosts.
    let o = Command::new(IOLAB)
        .args(["kv", "a", "--deploy", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--deploy"));
}

/// The agent's pid on host `i`, once it runs.
fn agent_pid(lab: &Lab, i: usize) -> u32 {
    let end = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let found = lab.hosts[i]
            .others()
            .into_iter()
            .find(|p| p.contains(" agent"))
            .and_then(|p| p.split(':').next()?.parse().ok());
        if let Some(pid) = found {
            return pid;
        }
        assert!(std::time::Instant::now() < end, "no agent on host {i}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A paced load of 3 s (cut by --runtime) on both hosts; `hit` is done to
/// it 1.5 s after the agent on host 1 started.
fn interrupted_run(lab: &Lab, hit: impl FnOnce(&std::process::Child)) -> (Output, Results) {
    interrupted_run_with(lab, &[], hit)
}

fn interrupted_run_with(
    lab: &Lab,
    extra: &[&str],
    hit: impl FnOnce(&std::process::Child),
) -> (Output, Results) {
    let out = lab.dir.path().join("cut.json");
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let child = kv(lab, &all_hosts(lab), &["--engine", "rocksdb"])
        .args(["-p", "recordcount=100000", "--target-ops", "500"])
        .args(["--runtime", "3s", "--dir"])
        .arg(&work)
        .arg("--json")
        .arg(&out)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    agent_pid(lab, 1);
    std::thread::sleep(Duration::from_millis(1500));
    hit(&child);
    let o = child.wait_with_output().unwrap();
    (o, Results::read(&out).unwrap())
}

#[test]
fn a_host_lost_mid_phase_is_named_and_a_sigint_tears_every_database_down() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = lab.dir.path().join("work");
    let (o, r) = interrupted_run(&lab, |_| {
        // SAFETY: an agent in a namespace this test made.
        unsafe { libc::kill(agent_pid(&lab, 1) as i32, libc::SIGKILL) };
    });
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(r.points.len(), 1, "no phase after the loss");
    let p = &r.points[0];
    let h = p.extra.hosts.as_ref().unwrap();
    assert_eq!(h.lost.len(), 1, "{h:?}");
    assert_eq!(h.lost[0].host, lab.hosts[1].addr);
    assert!(p.is_interrupted() && p.total.ops > 0);
    assert_exact(p, &h.per_host);
    assert!(r.warnings.iter().any(|w| w.contains("not run: ycsb-a.run")));
    assert!(lab.wait_quiet(Duration::from_secs(20)).is_empty());
    // The killed agent's databases wait for that host's next iolab start.
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 1);
    let swept = Command::new("ip")
        .args(["netns", "exec", &lab.hosts[1].ns, IOLAB, "sysinfo"])
        .env("IOLAB_STATE_DIR", &lab.hosts[1].state)
        .output()
        .unwrap();
    assert!(swept.status.success(), "{}", text(&swept));
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);

    // --on-host-loss continue: the run phase goes on on the host left.
    let kill = |_: &std::process::Child| {
        // SAFETY: an agent in a namespace this test made.
        unsafe { libc::kill(agent_pid(&lab, 1) as i32, libc::SIGKILL) };
    };
    let (o, r) = interrupted_run_with(&lab, &["--on-host-loss", "continue"], kill);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(r.points.len(), 2, "{}", text(&o));
    let rows = &r.points[1].extra.hosts.as_ref().unwrap().per_host;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].host, lab.hosts[0].addr);
    assert!(rows[0].ops > 0 && !r.points[1].is_interrupted());
    assert!(lab.wait_quiet(Duration::from_secs(20)).is_empty());
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 1);
    let swept = Command::new("ip")
        .args(["netns", "exec", &lab.hosts[1].ns, IOLAB, "sysinfo"])
        .env("IOLAB_STATE_DIR", &lab.hosts[1].state)
        .output()
        .unwrap();
    assert!(swept.status.success(), "{}", text(&swept));
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);

    // Ctrl-C: every agent stops its phase, sends its part and removes its databases.
    let (o, r) = interrupted_run(&lab, |c| {
        // SAFETY: our own child.
        unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    });
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(r.interrupted && !r.complete);
    assert_eq!(r.points.len(), 1);
    assert_exact(
        &r.points[0],
        &r.points[0].extra.hosts.as_ref().unwrap().per_host,
    );
    assert!(lab.wait_quiet(Duration::from_secs(20)).is_empty());
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
}

/// Benchmarks section 24: RocksDB, YCSB 80/20 read/update with 800 B and
/// 10 KB values, on 1 and 3 namespace hosts and with 1 and 3 instances on
/// this machine; every merge checked exact. Run with
/// `cargo test --test kv_hosts -- --ignored --nocapture measure`.
#[test]
#[ignore]
fn measure_hosts_and_instances() {
    let Some(lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let work = work_dir(&lab);
    let rounds = measure_rounds();
    println!("| value | where | round | load ops/s (summed; ops / longest) | run ops/s (summed; ops / longest) | run p99 | run start skew | run CPU % | run ops per CPU-second | exact |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for round in 1..=rounds {
        for (size, records) in [(800, 100000), (10240, 10000)] {
            let props = [
                "-p".to_string(),
                "fieldcount=1".into(),
                "-p".into(),
                format!("fieldlength={size}"),
                "-p".into(),
                "readproportion=0.8".into(),
                "-p".into(),
                "updateproportion=0.2".into(),
                "-p".into(),
                format!("recordcount={records}"),
                "-p".into(),
                "operationcount=10000000".into(),
                "--runtime".into(),
                "10s".into(),
                "--engine".into(),
                "rocksdb".into(),
            ];
            let runs = [
                ("1 host", Some(lab.hosts[0].addr.clone()), "1"),
                ("3 hosts", Some(all_hosts(&lab)), "1"),
                ("1 instance here", None, "1"),
                ("3 instances here", None, "3"),
            ];
            for (label, hosts, n) in runs {
                let out = lab.dir.path().join("m.json");
                let mut c = match &hosts {
                    Some(h) => kv(&lab, h, &[]),
                    None => {
                        let mut c = Command::new(IOLAB);
                        c.args(["kv", "a", "--quiet"]);
                        c
                    }
                };
                c.args(&props).args(["--instances", n]);
                let r = run_json(c, &work, &out);
                let (load, run) = (&r.points[0], &r.points[1]);
                for p in &r.points {
                    let rows = p
                        .extra
                        .hosts
                        .as_ref()
                        .or(p.extra.instances.as_ref())
                        .map(|h| h.per_host.clone());
                    if let Some(rows) = rows {
                        assert_exact(p, &rows);
                    }
                }
                let p99 = run.main_lat().and_then(|l| l.percentile(99.0)).unwrap_or(0);
                let wall = |p: &Point| p.total.ops as f64 / (p.duration_ns as f64 / 1e9);
                let skew = run
                    .extra
                    .hosts
                    .as_ref()
                    .or(run.extra.instances.as_ref())
                    .map(|h| format!("{:.0} us", h.start_skew_ns as f64 / 1e3))
                    .unwrap_or_else(|| "-".into());
                // The run phase's CPU: summed over the hosts' agents, or the one process's.
                let cpu = run.cpu.usr_pct + run.cpu.sys_pct;
                println!(
                "| {size} B | {label} | {round} | {:.0}; {:.0} | {:.0}; {:.0} | {:.0} us | {skew} | {:.0} | {:.0} | yes |",
                load.total.iops,
                wall(load),
                run.total.iops,
                wall(run),
                p99 as f64 / 1e3,
                cpu,
                run.total.ops as f64 / (cpu / 100.0 * run.duration_ns as f64 / 1e9).max(1e-9)
            );
            }
        }
    }
}
