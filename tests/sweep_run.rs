//! Integration tests of sweeps, open-loop load, latency-target search and
//! steady-state rounds through the real binary. The fake engine runs on a
//! virtual clock (deterministic, no disk); the real runs use small scratch
//! files on the real disk.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn iolab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .output()
        .expect("run iolab")
}

fn ok(args: &[&str]) -> Value {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let json = dir.path().join("r.json");
    let mut all = vec!["device", "-q", "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = iolab(&all);
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    results(&json)
}

fn results(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn open_loop_point(r: &Value, rate: &str) -> Value {
    r["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["params"]["rate"] == rate)
        .unwrap_or_else(|| panic!("no point at rate {rate}"))
        .clone()
}

const FAKE: [&str; 6] = [
    "--engine",
    "fake",
    "--fake-latency",
    "100us",
    "--fake-servers",
    "1",
];

/// The coordinated-omission test: one server of 100 us saturates at 10k
/// IOPS. Below it both latencies are the service time. Above it, latency
/// from the intended issue time grows with the length of the run (the
/// backlog keeps growing) while latency from the actual issue does not.
#[test]
fn open_loop_intended_latency_grows_above_saturation() {
    let run = |runtime: &str| {
        let mut a = FAKE.to_vec();
        a.extend(["--qd", "16", "--rate", "5000,20000", "--runtime", runtime]);
        ok(&a)
    };
    let short = run("1s");
    let long = run("4s");
    for r in [&short, &long] {
        let below = open_loop_point(r, "5000");
        let ol = &below["extra"]["open_loop"];
        assert!((f(&below["total"]["iops"]) - 5000.0).abs() < 50.0);
        assert!((f(&ol["lat_from_intended"]["read"]["mean_ns"]) - 100_000.0).abs() < 1000.0);
        assert_eq!(f(&ol["late_fraction"]), 0.0);
        let above = open_loop_point(r, "20000");
        let ol = &above["extra"]["open_loop"];
        assert!(
            (f(&above["total"]["iops"]) - 10_000.0).abs() < 200.0,
            "saturates at 10k"
        );
        assert!(f(&ol["late_fraction"]) > 0.9);
        assert!(f(&ol["final_backlog"]) > 1000.0);
        assert!(above["warnings"][0]
            .as_str()
            .unwrap()
            .contains("target rate not reached"));
    }
    let intended = |r: &Value| {
        f(
            &open_loop_point(r, "20000")["extra"]["open_loop"]["lat_from_intended"]["read"]
                ["mean_ns"],
        )
    };
    let issued = |r: &Value| f(&open_loop_point(r, "20000")["ops"]["read"]["lat"]["mean_ns"]);
    // Intended-time latency: ~run/4 on average (backlog grows at 10k/s); 4x the run, ~4x the latency.
    assert!(
        intended(&long) > 3.0 * intended(&short),
        "{} vs {}",
        intended(&long),
        intended(&short)
    );
    assert!(
        intended(&short) > 100.0 * 100_000.0,
        "far above the service time"
    );
    // Actual-issue latency is capped by the depth (16 x 100 us) and does not grow.
    let (a, b) = (issued(&short), issued(&long));
    assert!((a - b).abs() / a < 0.1, "{a} vs {b}");
    assert!(a <= 16.0 * 100_000.0 * 1.05);
}

/// A ramp of the measured maximum: the closed-loop point comes first, the
/// knee and saturation land in the analysis.
#[test]
fn load_latency_ramp_with_knee_and_saturation() {
    let mut a = FAKE.to_vec();
    a.extend([
        "--qd",
        "8",
        "--rate",
        "10%..130%/30",
        "--arrival",
        "poisson",
        "--runtime",
        "2s",
    ]);
    let r = ok(&a);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 6, "closed-loop max + 5 rates");
    assert_eq!(pts[0]["extra"]["role"], "closed_loop_max");
    assert!((f(&pts[0]["total"]["iops"]) - 10_000.0).abs() < 100.0);
    let ll = &r["analysis"]["load_latency"][0];
    assert_eq!(ll["curve"].as_array().unwrap().len(), 5);
    assert!((f(&ll["closed_loop_max_iops"]) - 10_000.0).abs() < 100.0);
    // Poisson arrivals into one 100 us server: p99 doubles well before 100%.
    let knee = f(&ll["knee"]["target_iops"]);
    assert!(knee < 9_000.0, "knee {knee}");
    // 130% cannot be held: that is where saturation shows.
    assert!(f(&ll["saturation"]["first_short_target_iops"]) > 12_000.0);
    assert!(f(&ll["saturation"]["max_achieved_iops"]) <= 10_200.0);
}

/// QD search against a known device: 4 servers of 100 us, so a request at
/// depth q waits ceil(q/4) x 100 us; p99 <= 510 us (500 us plus the
/// histogram's 0.1% resolution) holds up to QD 20.
#[test]
fn latency_target_finds_the_largest_qd() {
    let r = ok(&[
        "--engine",
        "fake",
        "--fake-latency",
        "100us",
        "--fake-servers",
        "4",
        "--latency-target",
        "510us",
        "--percentile",
        "99",
        "--runtime",
        "1s",
    ]);
    let t = &r["analysis"]["latency_target"][0];
    assert_eq!(t["variable"], "qd");
    assert_eq!(f(&t["answer"]), 20.0, "{t}");
    let steps: Vec<f64> = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| f(&s["value"]))
        .collect();
    assert_eq!(&steps[..6], &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0]);
    assert_eq!(
        steps.len(),
        r["points"].as_array().unwrap().len(),
        "every step is a point"
    );
}

/// The fake device is perfectly stable: steady state after exactly one window.
#[test]
fn steady_state_rounds_on_a_stable_device() {
    let mut a = FAKE.to_vec();
    a.extend(["--qd", "4", "--steady-state", "--runtime", "200ms"]);
    let r = ok(&a);
    let s = &r["analysis"]["steady_state"][0];
    assert_eq!(s["steady"], true, "{s}");
    assert_eq!(s["rounds"].as_array().unwrap().len(), 5);
    assert_eq!(r["points"].as_array().unwrap().len(), 5);
    assert_eq!(r["points"][4]["extra"]["steady"]["round"], 5);
}

/// A short real sweep on a scratch file: a point whose block is larger than
/// the file is skipped with its reason and the sweep goes on.
#[test]
fn real_sweep_skips_what_cannot_run() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let r = ok(&[
        "--target",
        dir.path().to_str().unwrap(),
        "--size",
        "8m",
        "--engine",
        "psync,io_uring",
        "--rw",
        "randread,read",
        "--bs",
        "4k,64k,16m",
        "--qd",
        "4",
        "--budget",
        "4s",
    ]);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 8, "2 engines x 2 patterns x 2 block sizes");
    let skipped = r["extra"]["skipped_points"].as_array().unwrap();
    assert_eq!(skipped.len(), 4);
    assert!(skipped[0]["reason"]
        .as_str()
        .unwrap()
        .contains("larger than"));
    assert_eq!(r["complete"], true);
    let a = &r["analysis"];
    assert!(a["peaks"]["max_iops"]["point"].is_string());
    assert!(!a["random_vs_sequential"].as_array().unwrap().is_empty());
    for p in pts {
        assert!(f(&p["total"]["iops"]) > 0.0);
        assert!(!p["series"].as_array().unwrap().is_empty());
    }
}

/// A short real load-latency ramp with io_uring on a scratch file, after a
/// purge and a 1x precondition.
#[test]
fn real_load_latency_ramp_after_precondition() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let r = ok(&[
        "--target",
        dir.path().to_str().unwrap(),
        "--size",
        "16m",
        "--engine",
        "io_uring",
        "--qd",
        "8",
        "--rate",
        "25%..100%/25",
        "--runtime",
        "500ms",
        "--purge",
        "--precondition",
        "1",
    ]);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts[0]["extra"]["phase"], "precondition");
    assert_eq!(f(&pts[0]["total"]["bytes"]), (16u64 << 20) as f64);
    assert_eq!(pts[1]["extra"]["role"], "closed_loop_max");
    assert_eq!(pts.len(), 6);
    let ll = &r["analysis"]["load_latency"][0];
    assert_eq!(ll["curve"].as_array().unwrap().len(), 4);
    let first = &ll["curve"][0];
    assert!(f(&first["achieved_iops"]) > 0.5 * f(&first["target_iops"]));
    assert!(r["extra"]["purge"].as_str().unwrap().contains("punched"));
}

#[test]
fn budget_too_small_and_bad_rates_exit_2() {
    for args in [
        vec!["--qd", "1..4096", "--budget", "1s"],
        vec!["--rate", "10%,500"],
        vec!["--rate", "1000", "--batch", "4"],
        vec!["--steady-state", "speed"],
        vec!["--steady-state", "--rate", "100"],
        vec!["--bs", "4k:70,64k"],
        vec!["--profile", "snia-iops", "--bs", "4k,8k"],
    ] {
        let mut all = vec!["device", "--dry-run", "--engine", "null"];
        all.extend(args.iter());
        let o = iolab(&all);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Rate search (open loop): one 100 us server holds its service time as
/// latency up to 10k IOPS with uniform arrivals, so the answer is the
/// closed-loop maximum itself.
#[test]
fn latency_target_searches_the_rate_in_open_loop() {
    let mut a = FAKE.to_vec();
    a.extend([
        "--qd",
        "64",
        "--latency-target",
        "300us",
        "--rate",
        "1",
        "--runtime",
        "1s",
    ]);
    let r = ok(&a);
    let t = &r["analysis"]["latency_target"][0];
    assert_eq!(t["variable"], "rate", "{t}");
    let answer = f(&t["answer"]);
    assert!(answer > 9_000.0 && answer <= 10_001.0, "{t}");
    let steps = t["steps"].as_array().unwrap();
    assert!(steps.len() >= 5, "doubling from 1/64 of the maximum: {t}");
    assert_eq!(r["points"][0]["extra"]["role"], "closed_loop_max");
}
