//! The polling data path (issue 47, part 2): `iolab serve --poll` serves
//! NBD and NVMe/TCP with data verified at QD 1 and 8, says its polling
//! CPUs, takes its CPUs while idle and still stops promptly at
//! `--time-limit` and on a signal; the `--poll` engines read and write
//! verified data against iolab's targets (sleeping and polling) and
//! nbdkit; bad input exits 2 naming the flag; a plan file takes `poll`;
//! `iolab remote` runs both modes in one comparison, each point tagged
//! with its mode and the target's polling CPUs.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{free_port, have, iolab, text, workdir};

/// A process killed (SIGKILL) when dropped, even when an assertion fails.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `iolab serve ARGS` on 127.0.0.1:0 and the lines it says on stdout
/// until the serving line and, with --poll, the polling line (60 s at most).
fn serving(args: &[&str]) -> (KillOnDrop, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let server = KillOnDrop(child);
    let want = if args.contains(&"--poll") { 2 } else { 1 };
    let lines: Vec<String> = (0..want)
        .map(|_| {
            rx.recv_timeout(Duration::from_secs(60))
                .expect("iolab serve never said what it serves")
        })
        .collect();
    (server, lines)
}

/// The URL in "iolab serve: nbd://ADDR/ serving ..." (NVMe/TCP: with its NQN).
fn url_of(line: &str) -> String {
    let start = line.find("iolab serve: ").unwrap() + "iolab serve: ".len();
    line[start..].split(' ').next().unwrap().to_string()
}

/// Wait for `child`'s end, `ceiling` at most; its exit code and stderr.
fn ended_within(mut server: KillOnDrop, ceiling: Duration) -> (Option<i32>, String) {
    let start = Instant::now();
    while server.0.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < ceiling, "still running after {ceiling:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut err = String::new();
    use std::io::Read;
    let _ = server.0.stderr.take().unwrap().read_to_string(&mut err);
    (server.0.wait().unwrap().code(), err)
}

/// utime + stime of every thread of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// The write pass then the random read-write pass with --verify at `qd`
/// over `url`, with `extra` flags; the second pass's point.
fn verified(url: &str, qd: &str, extra: &[&str]) -> serde_json::Value {
    let dir = workdir();
    let mut last = serde_json::Value::Null;
    for (name, rw, count) in [("w", "write", "2048"), ("rw", "randrw", "3000")] {
        let json = dir.path().join(format!("{name}.json"));
        let mut args = vec![
            "device",
            "--quiet",
            "--target",
            url,
            "--size",
            "8m",
            "--rw",
            rw,
            "--bs",
            "4k",
            "--qd",
            qd,
            "--io-count",
            count,
            "--verify",
            "--overwrite",
            "-o",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = iolab(&args);
        assert!(
            o.status.success(),
            "{url} {rw} qd {qd} {extra:?}: {}",
            text(&o)
        );
        last = common::results(&json)["points"][0].clone();
    }
    assert_eq!(last["verify"]["mismatches"], 0, "{url} qd {qd} {extra:?}");
    assert!(
        last["verify"]["blocks_checked"].as_u64().unwrap() > 100,
        "{url} qd {qd} {extra:?}: {}",
        last["verify"]
    );
    last
}

#[test]
fn a_polling_target_serves_verified_data_to_sleeping_and_polling_initiators() {
    for proto in ["nbd", "nvme-tcp"] {
        let dir = workdir();
        let d = dir.path().to_str().unwrap();
        let (_server, lines) = serving(&["-t", d, "--size", "16m", "--protocol", proto, "--poll"]);
        let url = url_of(&lines[0]);
        assert!(
            lines[1].starts_with("iolab serve: polling (never sleeping) on CPUs ")
                && lines[1].contains("SO_BUSY_POLL"),
            "{lines:?}"
        );
        for qd in ["1", "8"] {
            let p = verified(&url, qd, &[]);
            assert!(
                p["job"]["net"].is_null(),
                "sleeping initiator: {}",
                p["job"]
            );
            let p = verified(&url, qd, &["--poll"]);
            assert_eq!(p["job"]["net"]["poll"], true, "{}", p["job"]);
        }
    }
}

#[test]
fn polling_initiators_read_back_over_a_sleeping_target_and_nbdkit() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    for proto in ["nbd", "nvme-tcp"] {
        let (_server, lines) = serving(&["-t", d, "--size", "16m", "--protocol", proto]);
        let url = url_of(&lines[0]);
        for qd in ["1", "8"] {
            let p = verified(&url, qd, &["--poll"]);
            assert_eq!(p["job"]["net"]["poll"], true);
        }
    }
    if !have("nbdkit") {
        return;
    }
    let port = free_port();
    let child = Command::new("nbdkit")
        .args(["-f", "--exit-with-parent", "-i", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .args(["memory", "64M"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _nbdkit = KillOnDrop(child);
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "nbdkit did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let p = verified(&format!("nbd://127.0.0.1:{port}/"), "8", &["--poll"]);
    assert_eq!(p["job"]["engine"], "nbd");
}

#[test]
fn an_idle_polling_target_takes_its_cpu_and_still_stops_at_once() {
    // --time-limit while idle: exit 0 soon after the limit, having spun.
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let started = Instant::now();
    let (server, lines) = serving(&[
        "-t",
        d,
        "--size",
        "8m",
        "--poll",
        "--poll-cpus",
        "0",
        "--time-limit",
        "3s",
    ]);
    assert!(lines[1].contains("on CPUs 0;"), "{lines:?}");
    let pid = server.0.id();
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_millis(1500));
    let used = cpu_ticks(pid) - before;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    // A sleeping idle target takes nothing; a polling one a share of its
    // CPU even on a machine busy with other work (100% on a quiet one).
    assert!(
        used * 10 >= hz * 15 / 10,
        "an idle polling target took {used} ticks in 1.5 s (HZ {hz})"
    );
    let (code, err) = ended_within(server, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60));
    // A signal while idle: 130, the scratch file gone.
    for proto in ["nbd", "nvme-tcp"] {
        let dir = workdir();
        let d = dir.path().to_str().unwrap();
        let (server, _) = serving(&["-t", d, "--size", "8m", "--protocol", proto, "--poll"]);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(server.0.id() as i32, libc::SIGTERM) };
        let (code, err) = ended_within(server, Duration::from_secs(60));
        assert_eq!(code, Some(130), "{proto}: {err}");
        assert!(
            common::files_in(dir.path()).is_empty(),
            "{proto}: scratch left"
        );
    }
}

#[test]
fn an_idle_polling_target_still_accepts_connections() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let (_server, lines) = serving(&["-t", d, "--size", "8m", "--poll", "--protocol", "nvme-tcp"]);
    let url = url_of(&lines[0]);
    // Idle a while, then connect: the acceptor hands over to a spinning reactor.
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..2 {
        let o = iolab(&[
            "device",
            "--quiet",
            "--target",
            &url,
            "--rw",
            "randread",
            "--io-count",
            "200",
            "--overwrite",
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
}

#[test]
fn poll_with_what_cannot_poll_exits_2_naming_the_flag() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[defaults]\npoll = true\n\n[[experiment]]\nname = \"r\"\nrw = \"randread\"\n",
    )
    .unwrap();
    for (args, flag) in [
        (vec!["device", "-t", d, "--size", "8m", "--poll"], "--poll"),
        (
            vec![
                "device", "-t", d, "--size", "8m", "--engine", "psync", "--poll",
            ],
            "--poll",
        ),
        (
            vec![
                "device",
                "-t",
                "iscsi://127.0.0.1:1/iqn.x/1",
                "--poll",
                "--dry-run",
            ],
            "--poll",
        ),
        (
            vec![
                "device",
                "-t",
                d,
                "--size",
                "8m",
                "--plan",
                plan.to_str().unwrap(),
            ],
            "poll",
        ),
        (vec!["serve", "-t", d, "--poll-cpus", "0"], "--poll"),
        (
            vec!["serve", "-t", d, "--poll", "--poll-cpus", "99999"],
            "--poll-cpus",
        ),
        (
            vec!["serve", "-t", d, "--poll", "--poll-cpus", "x"],
            "--poll-cpus",
        ),
    ] {
        let o = iolab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(flag), "{args:?}: {}", text(&o));
    }
    assert!(common::files_in(dir.path()).iter().all(|p| p == &plan));
}

#[test]
fn a_plan_file_polls_a_remote_engine() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let (_server, lines) = serving(&["-t", d, "--size", "8m"]);
    let url = url_of(&lines[0]);
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[defaults]\npoll = true\nio_count = \"200\"\n\n[[experiment]]\nname = \"r\"\nrw = \"randread\"\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let o = iolab(&[
        "device",
        "--quiet",
        "--target",
        &url,
        "--plan",
        plan.to_str().unwrap(),
        "--overwrite",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    assert_eq!(
        r["points"][0]["job"]["net"]["poll"], true,
        "{}",
        r["points"][0]["job"]
    );
}

#[test]
fn remote_compares_sleeping_and_polling_in_one_run() {
    let (data, out, state) = (workdir(), workdir(), workdir());
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["remote", "-t", data.path().to_str().unwrap()])
        .args(["-o", out.path().to_str().unwrap()])
        .args(["--loopback", "--quiet", "--size", "32m", "--ramp", "100ms"])
        .args([
            "--transports",
            "das,iolab,iolab-poll,nvme-tcp,nvme-tcp-poll",
        ])
        .args(["--mixes", "100", "--qd", "1", "--runtime", "500ms"])
        .args(["--breakdown", "0", "--rates", "none"])
        .env("IOLAB_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&out.path().join("results.json"));
    let points = r["points"].as_array().unwrap();
    let mut seen = Vec::new();
    for p in points {
        let t = p["params"]["transport"].as_str().unwrap().to_string();
        let polls = t.ends_with("-poll");
        assert_eq!(p["job"]["net"]["poll"] == true, polls, "{t}: {}", p["job"]);
        if polls {
            let pol = &p["extra"]["polling"];
            assert_eq!(pol["target"], "busy-poll", "{t}: {pol}");
            assert_eq!(pol["initiator"], "busy-poll", "{t}: {pol}");
            let cpus = pol["target_cpus"].as_str().unwrap_or_default();
            assert!(
                !cpus.is_empty() && cpus.split(',').all(|c| c.parse::<usize>().is_ok()),
                "{t}: {pol}"
            );
            // The initiator spins on CPUs the target's reactors do not.
            if let Some(ini) = pol["initiator_cpus"].as_str() {
                let pinned: Vec<String> = p["job"]["cpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.to_string())
                    .collect();
                assert_eq!(pinned.join(","), ini, "{t}: {}", p["job"]);
                assert!(
                    cpus.split(',').all(|c| !pinned.iter().any(|x| x == c)),
                    "{t}: {pol}"
                );
            }
            assert!(
                p["extra"]["peers"]["processes"][0]["role"] == t.as_str(),
                "{t}: {}",
                p["extra"]["peers"]
            );
        } else {
            assert!(p["extra"]["polling"].is_null(), "{t}");
        }
        seen.push(t);
    }
    for t in [
        "das",
        "nbd-iolab",
        "nbd-iolab-poll",
        "nvme-tcp-iolab",
        "nvme-tcp-iolab-poll",
    ] {
        assert!(seen.iter().any(|s| s == t), "no point of {t}: {seen:?}");
    }
    let rows = r["analysis"]["remote"].as_array().unwrap();
    for t in ["nbd-iolab-poll", "nvme-tcp-iolab-poll"] {
        let row = rows
            .iter()
            .find(|row| row["transport"] == t)
            .unwrap_or_else(|| panic!("no row of {t}: {rows:?}"));
        // Beside DAS's point of the same workload.
        assert_eq!(row["workload"], "randread-4k-qd1", "{row}");
        assert!(row["iops_vs_das"].as_f64().is_some(), "{row}");
    }
    let named = points
        .iter()
        .find(|p| p["params"]["transport"] == "nbd-iolab-poll")
        .unwrap();
    assert!(
        named["name"].as_str().unwrap().ends_with("-nbd+poll"),
        "{}",
        named["name"]
    );
}
