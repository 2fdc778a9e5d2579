//! `iolab remote --inject-errors RATE` and `--continue-on-error` (issue 31
//! item 13): nbdkit's error filter fails a share of the nbdkit transports'
//! requests with EIO; with --continue-on-error the points count them per
//! kind and are kept, without it the point fails as any failing point does
//! (recorded in `skipped_points`, the run going on). Bad rates, and
//! injection with no nbdkit transport, exit 2 naming the flag before
//! anything is set up. nbdkit comes from scripts/install-deps.sh; the
//! tests that need it say so and return without it.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{have, iolab, text, workdir};

/// One short QD4 random-read point per transport, no breakdown.
fn remote(data: &Path, out: &Path, state: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["remote", "-t", data.to_str().unwrap()])
        .args(["-o", out.to_str().unwrap()])
        .args(["--size", "32m", "--mixes", "100", "--qd", "4"])
        .args(["--runtime", "300ms", "--ramp", "100ms", "--breakdown", "0"])
        .args(extra)
        .env("IOLAB_STATE_DIR", state)
        .output()
        .unwrap()
}

fn nbdkit_here() -> bool {
    let found = have("nbdkit");
    if !found {
        eprintln!("skipped: nbdkit is not installed (scripts/install-deps.sh installs it)");
    }
    found
}

fn errors_of(p: &serde_json::Value) -> u64 {
    p["errors"]
        .as_object()
        .map_or(0, |e| e.values().map(|v| v.as_u64().unwrap()).sum())
}

#[test]
fn continue_on_error_keeps_the_nbdkit_points_with_their_eio_count() {
    if !nbdkit_here() {
        return;
    }
    let (data, out, state) = (workdir(), workdir(), workdir());
    let o = remote(
        data.path(),
        out.path(),
        state.path(),
        &[
            "--transports",
            "das,nbdkit-file",
            "--inject-errors",
            "5%",
            "--continue-on-error",
            "--rates",
            "50",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&out.path().join("results.json"));
    let points = r["points"].as_array().unwrap();
    // The closed-loop point and the open-loop one on each transport.
    assert_eq!(points.len(), 4, "{}", text(&o));
    for p in points {
        let t = p["params"]["transport"].as_str().unwrap();
        assert_eq!(p["job"]["continue_on_error"], true, "{t}");
        assert!(p["total"]["ops"].as_u64().unwrap() > 0, "{t}: {p}");
        if t == "das" {
            assert_eq!(errors_of(p), 0, "{t}: {}", p["errors"]);
            assert!(p["extra"]["injected_errors"].is_null(), "{t}");
            continue;
        }
        assert_eq!(t, "nbd-nbdkit-file");
        let errors = p["errors"].as_object().unwrap();
        assert!(
            errors.keys().all(|k| k.contains("os error 5")),
            "EIO only: {errors:?}"
        );
        assert!(errors_of(p) > 0, "{}", p["name"]);
        assert_eq!(p["extra"]["injected_errors"]["errno"], "EIO");
        assert_eq!(p["extra"]["injected_errors"]["rate"], 0.05);
    }
    let transports = r["extra"]["remote"]["transports"].as_array().unwrap();
    assert!(transports[0]["injected_errors"].is_null());
    assert_eq!(transports[1]["injected_errors"]["rate"], 0.05);
    assert!(r["extra"]["skipped_points"].is_null(), "{}", r["warnings"]);
    // The table's errors column and the notes say it on the terminal.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("errors"), "{stdout}");
    assert!(
        stdout.contains("note: nbd-nbdkit-file: EIO injected into 5% of requests"),
        "{stdout}"
    );
    assert!(
        stdout.contains("request(s) failed over 2 point(s)"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(html.contains("<th>errors</th>"), "no errors column");
    assert!(html.contains("EIO injected into 5% of requests"));
}

/// Without --continue-on-error the first injected EIO fails the nbdkit
/// point, as any failing point: not in `points`, in `skipped_points` as
/// failed with the error, a warning; DAS is measured and the run exits 0.
#[test]
fn without_continue_on_error_the_nbdkit_point_fails_as_before() {
    if !nbdkit_here() {
        return;
    }
    let (data, out, state) = (workdir(), workdir(), workdir());
    let o = remote(
        data.path(),
        out.path(),
        state.path(),
        &[
            "--transports",
            "das,nbdkit-file",
            "--inject-errors",
            "5%",
            "--rates",
            "none",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = common::results(&out.path().join("results.json"));
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{}", text(&o));
    assert_eq!(points[0]["params"]["transport"], "das");
    let skipped = r["extra"]["skipped_points"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    let name = "nbd-nbdkit-file: randread-4k-qd4-nbd";
    assert_eq!(skipped[0]["name"], name);
    assert_eq!(skipped[0]["failed"], true);
    let reason = skipped[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("read at offset") && reason.contains("Input/output error"),
        "{reason}"
    );
    let warned = format!("point {name} failed: ");
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(&warned)),
        "{}",
        r["warnings"]
    );
    assert_eq!(
        r["extra"]["remote"]["transports"][1]["injected_errors"]["rate"],
        0.05
    );
}

#[test]
fn bad_rates_and_no_nbdkit_transport_exit_2_naming_the_flag() {
    let (data, out) = (workdir(), workdir());
    let d = data.path().to_str().unwrap();
    let o_dir = out.path().join("never");
    let o = o_dir.to_str().unwrap();
    for bad in ["0", "0%", "101%", "1.5", "-1%", "abc", "", "5%%"] {
        let run = iolab(&[
            "remote",
            "-t",
            d,
            "-o",
            o,
            "--transports",
            "das,nbdkit-file",
            "--inject-errors",
            bad,
        ]);
        assert_eq!(run.status.code(), Some(2), "{bad:?}: {}", text(&run));
        let said = text(&run);
        assert!(said.contains("--inject-errors"), "{bad:?}: {said}");
        assert!(!said.contains("panicked"), "{said}");
    }
    for transports in ["das", "das,iolab,qemu-nbd"] {
        let run = iolab(&[
            "remote",
            "-t",
            d,
            "-o",
            o,
            "--transports",
            transports,
            "--inject-errors",
            "1%",
        ]);
        assert_eq!(run.status.code(), Some(2), "{transports}: {}", text(&run));
        let said = text(&run);
        assert!(
            said.contains("--inject-errors") && said.contains("nbdkit-file, nbdkit-memory"),
            "{said}"
        );
    }
    assert!(!o_dir.exists(), "nothing is set up before the refusal");
    assert!(common::files_in(data.path()).is_empty(), "no scratch file");
}

/// The dry run names the transports with injected errors and their rate,
/// and the databases left out; a plan file sets both flags.
#[test]
fn the_plan_says_which_transports_inject_and_at_what_rate() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(&plan, "inject-errors = \"2%\"\ncontinue-on-error = true\n").unwrap();
    let o = iolab(&[
        "remote",
        "-t",
        d,
        "--plan",
        plan.to_str().unwrap(),
        "--transports",
        "das,iolab,nbdkit-memory",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    let line = |label: &str| {
        s.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} in {s}"))
            .to_string()
    };
    assert!(
        line("nbd-nbdkit-memory").contains("EIO injected into 2% of requests"),
        "{s}"
    );
    assert!(!line("das").contains("injected"), "{s}");
    assert!(!line("nbd-iolab").contains("injected"), "{s}");
    assert!(
        s.contains("--continue-on-error: failed requests counted"),
        "{s}"
    );
    // RocksDB stops at the first EIO (and a kv error stops the whole run):
    // no database on a volume with injected errors, DAS's still runs.
    let o = iolab(&[
        "remote",
        "-t",
        d,
        "--transports",
        "das,nbdkit-memory",
        "--inject-errors",
        "2%",
        "--db",
        "800",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("no database on nbd-nbdkit-memory: --inject-errors fails 2% of its requests"),
        "{s}"
    );
    assert!(!s.contains("no database on das"), "{s}");
}
