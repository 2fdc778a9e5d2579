//! Media runs of `iolab oltp`: the TPC-C-derived load and points on
//! several directories (`--target` given several times) and on
//! configurations iolab builds (`--make`), interleaved by rounds in
//! alternating order, a fresh database (SQLite, or a private PostgreSQL)
//! per target per round, one results file whose points carry the target
//! and round and whose `analysis.media` normalizes them to the baseline;
//! bad input refused with exit 2 naming the field before anything runs;
//! nothing mounted, attached, running or left under the targets after the
//! run and after SIGINT at random moments. The `--make` test needs root
//! and mkfs.ext4 and the PostgreSQL one the server; each says why it is
//! skipped otherwise.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{iolab, media_leftovers, text, workdir};

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// The short oltp run of every test: one warehouse, the given users, 1 s
/// points without ramp.
const SHORT: [&str; 6] = ["-w", "1", "--time", "1s", "--ramp", "0s"];

#[test]
fn sqlite_on_two_directories_interleaved_in_one_results_file() {
    let (d, a, b) = common::two_dirs();
    let json = d.path().join("oltp.json");
    let fast = format!("fast={}", s(&b));
    let (a_s, json_s) = (s(&a), s(&json));
    let mut args = vec!["oltp", "-t", &a_s, "-t", &fast, "--rounds", "2"];
    args.extend(["--baseline", "fast", "--users", "1,2", "-o", &json_s]);
    args.extend(SHORT);
    let o = iolab(&args);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("=== fast round 2") && out.contains("outside the measured intervals"),
        "each pass announced, the media table at the end: {out}"
    );
    let r = common::results(&json);
    assert_eq!(r["kind"], "oltp");
    assert_eq!(r["complete"], true);
    let (order, names) = common::media_order_and_names(&r);
    let want: Vec<(String, String)> = [("1", "a"), ("1", "fast"), ("2", "fast"), ("2", "a")]
        .iter()
        .flat_map(|(r, l)| std::iter::repeat_n((r.to_string(), l.to_string()), 2))
        .collect();
    assert_eq!(order, want, "A B, then B A; two user counts per pass");
    assert_eq!(names[0], "a r1: oltp.users1");
    assert_eq!(names[3], "fast r1: oltp.users2");
    let m = &r["analysis"]["media"];
    assert_eq!(m["targets"], serde_json::json!(["a", "fast"]));
    assert_eq!(
        m["workloads"],
        serde_json::json!(["oltp.users1", "oltp.users2"])
    );
    common::check_media_ratios(m, "fast", 2, "NOPM");
    assert!(m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["unit"] == "NOPM"));
    // Every pass loaded its own database, recorded with its target and round.
    let loads = r["extra"]["oltp_loads"].as_array().unwrap();
    let passes: Vec<(String, u64)> = loads
        .iter()
        .map(|l| {
            assert!(l["rows"]["stock"].as_u64().unwrap() == 100_000, "{l}");
            (
                l["medium"].as_str().unwrap().to_string(),
                l["round"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        passes,
        [
            ("a".to_string(), 1),
            ("fast".to_string(), 1),
            ("fast".to_string(), 2),
            ("a".to_string(), 2)
        ]
    );
    for p in r["points"].as_array().unwrap() {
        let checks = p["extra"]["oltp"]["consistency"].as_array().unwrap();
        assert_eq!(checks.len(), 4, "{}", p["name"]);
        assert!(checks.iter().all(|c| c["passed"] == true), "{}", p["name"]);
    }
    assert!(
        r["extra"]["media"]["overhead"]["measured_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // Every database was removed after its pass.
    assert!(common::files_in(&a).is_empty() && common::files_in(&b).is_empty());
    // The report draws a NOPM line per pass.
    let html = d.path().join("r.html");
    let o = iolab(&["report", &json_s, "-o", &s(&html)]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    for label in ["a r1", "fast r1", "fast r2", "a r2"] {
        assert!(page.contains(&format!("{label}, 2 users")), "{label}");
    }
    let nopm = page.split("id=\"oltp-nopm\"").nth(1).unwrap();
    let nopm = nopm.split("<section").next().unwrap();
    assert_eq!(
        nopm.matches("class=\"series\"").count(),
        4,
        "one NOPM line per target and round"
    );
}

#[test]
fn a_private_postgres_on_each_target() {
    if !common::server_installed(iolab::servers::ServerKind::Postgres) {
        eprintln!("SKIP: PostgreSQL is not installed (scripts/install-deps.sh)");
        return;
    }
    // The server's own user must reach its data: not under /tmp's 0700 dirs.
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    for x in [&a, &b] {
        std::fs::create_dir_all(x).unwrap();
    }
    let state = workdir();
    let json = d.path().join("pg.json");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["oltp", "--engine", "postgres", "-t", &s(&a), "-t", &s(&b)])
        .args(SHORT)
        .args(["--quiet", "-o", &s(&json)])
        .env("IOLAB_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    let (order, names) = common::media_order_and_names(&r);
    assert_eq!(order, [("1".into(), "a".into()), ("1".into(), "b".into())]);
    assert_eq!(names[1], "b r1: oltp.users1");
    for p in r["points"].as_array().unwrap() {
        assert!(p["extra"]["server"]["process"].is_object(), "{}", p["name"]);
        assert!(
            p["extra"]["timeline"]["t_s"].as_array().is_some(),
            "{}",
            p["name"]
        );
    }
    assert!(r["extra"]["server"]["version"]
        .as_str()
        .unwrap()
        .contains("PostgreSQL"));
    common::check_media_ratios(&r["analysis"]["media"], "a", 1, "NOPM");
    for x in [&a, &b] {
        assert!(common::files_in(x).is_empty(), "{:?}", common::files_in(x));
    }
    assert!(common::files_in(state.path()).is_empty());
}

#[test]
fn configurations_built_and_removed() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !common::have("mkfs.ext4") {
        eprintln!("SKIP: needs root and mkfs.ext4 (scripts/install-deps.sh)");
        return;
    }
    let data = tempfile::tempdir_in("/var/tmp").unwrap();
    let out = workdir();
    let json = out.path().join("m.json");
    let o = iolab(
        &[
            &["oltp", "-t", &s(data.path()), "--make", "tmpfs,ext4"][..],
            &["--baseline", "ext4", "--size", "512m", "--quiet"],
            &["-o", &s(&json)],
            &SHORT,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    let (order, _) = common::media_order_and_names(&r);
    assert_eq!(
        order,
        [("1".into(), "tmpfs".into()), ("1".into(), "ext4".into())]
    );
    assert_eq!(r["extra"]["media"]["targets"][1]["filesystem"], "ext4");
    common::check_media_ratios(&r["analysis"]["media"], "ext4", 1, "NOPM");
    assert!(
        media_leftovers(data.path()).is_empty(),
        "{:?}",
        media_leftovers(data.path())
    );
}

#[test]
fn bad_input_is_refused_naming_the_field_before_anything_runs() {
    let (d, a, b) = common::two_dirs();
    let (a, b) = (s(&a), s(&b));
    let two = ["-t", a.as_str(), "-t", b.as_str()];
    let kept = s(&d.path().join("kept.sqlite"));
    std::fs::write(&kept, b"").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        ([&two[..], &["--db", &kept]].concat(), "--db"),
        ([&two[..], &["--keep"]].concat(), "--keep"),
        (
            [
                &two[..],
                &[
                    "--engine",
                    "postgres",
                    "--server-url",
                    "postgres://u@127.0.0.1/x",
                ],
            ]
            .concat(),
            "--server-url",
        ),
        (vec!["-t", &a, "--make", "raw", "--make-in", &b], "--make"),
        (vec!["-t", &a, "--size", "1g"], "--size"),
        ([&two[..], &["--size", "1g"]].concat(), "--size"),
        (vec!["-t", &a, "--rounds", "2"], "--rounds"),
        ([&two[..], &["--baseline", "c"]].concat(), "--baseline"),
        ([&two[..], &["--rounds", "0"]].concat(), "--rounds"),
        (vec!["-t", &a, "-t", "/nonexistent/x"], "/nonexistent/x"),
    ];
    for (extra, field) in cases {
        let args = [&["oltp"][..], &extra, &SHORT].concat();
        let o = iolab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(field), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // Nothing was made in either target.
    assert!(common::files_in(Path::new(&a)).is_empty());
    assert!(common::files_in(Path::new(&b)).is_empty());
}

/// One SIGINT (the current point stops, exit 130) or two 5 ms apart (the
/// teardown at once) at a random moment of a SQLite run over two
/// directories: no database, scratch directory, temporary file or crash
/// record left, and the results file readable.
#[test]
fn sigint_at_random_moments_leaves_nothing() {
    let (d, a, b) = common::two_dirs();
    let state = workdir();
    let mut rng = common::Rng::from_env_or_clock();
    let seed = rng.seed;
    for attempt in 0..4 {
        let delay = Duration::from_millis(rng.below(4000));
        let twice = attempt % 2 == 1;
        let json = d.path().join(format!("r{attempt}.json"));
        let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["oltp", "-t", &s(&a), "-t", &s(&b), "--rounds", "2"])
            .args(["-w", "1", "--time", "1s", "--ramp", "0s", "--quiet"])
            .args(["-o", &s(&json)])
            .env("IOLAB_STATE_DIR", state.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let out = common::sigint_and_wait(child, twice);
        let why = common::interrupted_as_expected(&out, seed, delay, twice);
        for x in [&a, &b] {
            assert!(
                common::files_in(x).is_empty(),
                "{why}: {:?}",
                common::files_in(x)
            );
        }
        let left = common::stray_files(d.path(), state.path());
        assert!(left.is_empty(), "{why}: {left:?}");
        if json.exists() && !twice {
            let r = common::results(&json);
            assert!(r["points"].as_array().is_some(), "{why}: a readable file");
        }
    }
}
