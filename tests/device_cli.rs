//! Integration tests of `iolab device` through the real binary: bad input,
//! safety refusals, scratch-file lifecycle, results file contents, engines,
//! verification, and Ctrl-C.

mod common;
use common::{device_point, files_in, interrupt_after_first_point, iolab, results, text, workdir};
use std::process::Command;

#[test]
fn bad_input_exits_2_naming_the_field() {
    let cases: &[(&[&str], &str)] = &[
        (&["--bs", "4q"], "--bs"),
        (&["--bs", "1000"], "--bs"),
        (&["--qd", "0"], "--qd"),
        (&["--qd", "many"], "--qd"),
        (&["--engine", "bogus"], "--engine"),
        (&["--rw", "sideways"], "--rw"),
        (&["--mix", "150", "--rw", "randrw"], "--mix"),
        (&["--runtime", "5parsecs"], "--runtime"),
        (&["--ramp=-1s"], "--ramp"),
        (&["--cpus", "9999"], "--cpus"),
        (&["--io-count", "lots"], "--io-count"),
        (&["--batch", "0"], "--batch"),
        (&["--region", "diagonal"], "--region"),
        (&["--profile", "nope"], "--profile"),
        (&["--engine", "psync", "--uring-sqpoll"], "--uring"),
        (&["--verify", "--bs", "4k:50,8k:50"], "--verify"),
        (&["--clock", "hpet"], "--clock"),
    ];
    for (args, field) in cases {
        let mut all = vec!["device", "--dry-run"];
        all.extend_from_slice(args);
        let o = iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains(field),
            "{args:?} should name {field}: {}",
            text(&o)
        );
        assert!(!text(&o).contains("panicked"), "{args:?}");
    }
}

#[test]
fn block_size_larger_than_target_is_refused() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let o = iolab(&[
        "device",
        "--target",
        d,
        "--size",
        "1m",
        "--bs",
        "2m",
        "--io-count",
        "10",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--bs"));
    assert!(
        files_in(dir.path()).is_empty(),
        "scratch file removed after the refusal"
    );
}

#[test]
fn dry_run_prints_the_job_and_touches_nothing() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let o = iolab(&[
        "device",
        "--target",
        d,
        "--profile",
        "quick",
        "--runtime",
        "2s",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("4 job(s)") && out.contains("qd32-4k-randread-iops"),
        "{out}"
    );
    assert!(out.contains("estimated duration: 8 s"), "{out}");
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn scratch_run_writes_complete_results_and_cleans_up() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("out.json");
    let o = iolab(&[
        "device",
        "--target",
        d,
        "--size",
        "32m",
        "--engine",
        "psync",
        "--rw",
        "randrw",
        "--mix",
        "70",
        "--bs",
        "4k:70,64k:30",
        "--io-count",
        "2000",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        files_in(dir.path()),
        vec![json.clone()],
        "only the results file remains"
    );
    let r = results(&json);
    assert_eq!(r["schema"], "iolab-results");
    assert_eq!(r["complete"], true);
    let prov = &r["provenance"];
    for key in [
        "iolab_version",
        "git_revision",
        "kernel",
        "cpu_model",
        "memory_bytes",
        "timer",
        "plan",
        "command_line",
    ] {
        assert!(!prov[key].is_null(), "provenance.{key}");
    }
    assert!(prov["timer"]["clock_read_ns"].as_f64().unwrap() > 0.0);
    assert_eq!(prov["target"]["kind"], "scratch_file");
    let p = &r["points"][0];
    let reads = p["ops"]["read"]["ops"].as_u64().unwrap();
    let writes = p["ops"]["write"]["ops"].as_u64().unwrap();
    assert_eq!(reads + writes, 2000);
    // The machine's CPU section parses into its type, exactly.
    let typed = iolab::results::Results::read(&json).unwrap();
    let ext = &typed.points[0].extra;
    assert!(ext.cpu.is_some(), "extra.cpu: {}", p["extra"]);
    assert!(ext.other.is_empty(), "untyped: {:?}", ext.other.keys());
    assert!(
        (reads as f64 / 2000.0 - 0.7).abs() < 0.06,
        "mix 70: {reads} reads"
    );
    let lat = &p["ops"]["read"]["lat"];
    for k in [
        "1.000000",
        "50.000000",
        "99.000000",
        "99.990000",
        "99.999000",
    ] {
        assert!(
            lat["percentiles_ns"][k].as_u64().unwrap() > 0,
            "percentile {k}"
        );
    }
    assert!(lat["min_ns"].as_u64().unwrap() <= lat["max_ns"].as_u64().unwrap());
    assert!(
        p["ops"]["read"]["slat"].is_null(),
        "psync has no submission latency"
    );
    assert!(p["histograms"]["read.lat"].as_str().unwrap().len() > 10);
    assert!(p["cpu"]["usr_pct"].as_f64().is_some());
    let system = &p["extra"]["cpu"];
    for k in ["usr_pct", "sys_pct", "iowait_pct", "idle_pct"] {
        assert!(
            system[k].as_f64().is_some_and(|v| v >= 0.0),
            "machine cpu {k}"
        );
    }
    assert!(!p["series"].as_array().unwrap().is_empty());
    assert_eq!(p["direct"], true);
    if prov["target"]["disk"].is_object() {
        assert!(
            p["device"]["read_ios"].as_u64().is_some(),
            "diskstats deltas for the backing disk"
        );
    }
}

#[test]
fn fsync_every_n_writes() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("s.json");
    let args = [
        "--target",
        d,
        "--size",
        "8m",
        "--rw",
        "randwrite",
        "--engine",
        "psync",
        "--fsync-every",
        "10",
        "--io-count",
        "1000",
    ];
    let p = device_point(&args, &json);
    assert_eq!(p["ops"]["write"]["ops"], 1000);
    assert_eq!(p["ops"]["fsync"]["ops"], 100, "one fsync per 10 writes");
    assert!(p["ops"]["fsync"]["lat"]["mean_ns"].as_f64().unwrap() > 0.0);
}

#[test]
fn keep_keeps_the_scratch_file() {
    let dir = workdir();
    let file = dir.path().join("data.bin");
    let o = iolab(&[
        "device",
        "--target",
        file.to_str().unwrap(),
        "--size",
        "4m",
        "--engine",
        "psync",
        "--io-count",
        "10",
        "--keep",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 4 << 20);
}

#[test]
fn existing_file_needs_overwrite_for_writes() {
    let dir = workdir();
    let file = dir.path().join("precious.dat");
    let content = vec![0x5au8; 1 << 20];
    std::fs::write(&file, &content).unwrap();
    let f = file.to_str().unwrap();
    let o = iolab(&[
        "device",
        "--target",
        f,
        "--rw",
        "randwrite",
        "--engine",
        "psync",
        "--io-count",
        "10",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--overwrite"));
    assert_eq!(std::fs::read(&file).unwrap(), content, "untouched");
    // Reads are fine without it, and leave the file in place.
    let o = iolab(&[
        "device",
        "--target",
        f,
        "--rw",
        "randread",
        "--engine",
        "psync",
        "--io-count",
        "10",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&file).unwrap(), content);
    let o = iolab(&[
        "device",
        "--target",
        f,
        "--rw",
        "randwrite",
        "--engine",
        "psync",
        "--io-count",
        "10",
        "--overwrite",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(file.exists(), "an existing file is never deleted");
    assert_ne!(std::fs::read(&file).unwrap(), content);
}

#[test]
fn fake_engine_statistics_are_exact() {
    let dir = workdir();
    let json = dir.path().join("f.json");
    let fake = |extra: &[&str]| {
        let mut args = vec!["--engine", "fake", "--fake-latency", "100us"];
        args.extend_from_slice(extra);
        device_point(&args, &json)
    };
    // One server, 100 us per request, QD 1: every latency is exactly 100 us.
    let p = fake(&["--qd", "1", "--io-count", "1000"]);
    let clat = &p["ops"]["read"]["clat"];
    assert_eq!(clat["n"], 1000);
    let mean = clat["mean_ns"].as_f64().unwrap();
    assert!((mean - 100_000.0).abs() / 100_000.0 < 0.001, "mean {mean}");
    let iops = p["ops"]["read"]["iops"].as_f64().unwrap();
    assert!(
        (iops - 10_000.0).abs() / 10_000.0 < 0.01,
        "virtual-time IOPS {iops}"
    );

    // QD 4 on one server: requests queue, so each waits for 4 service times.
    let p = fake(&["--qd", "4", "--io-count", "4000"]);
    let p50 = p["ops"]["read"]["clat"]["percentiles_ns"]["50.000000"]
        .as_u64()
        .unwrap() as f64;
    assert!(
        (p50 - 400_000.0).abs() / 400_000.0 < 0.01,
        "queueing p50 {p50}"
    );
    let iops = p["ops"]["read"]["iops"].as_f64().unwrap();
    assert!(
        (iops - 10_000.0).abs() / 10_000.0 < 0.01,
        "one server still gives 10k IOPS: {iops}"
    );

    // Batches of 8 on 8 servers: per-block latency = 100 us / 8.
    let p = fake(&["--fake-servers", "8", "--batch", "8", "--io-count", "800"]);
    let b = &p["batch"];
    assert_eq!(b["k"], 8);
    assert_eq!(b["batches"], 100);
    let per_block = b["per_block_mean_ns"].as_f64().unwrap();
    assert!(
        (per_block - 12_500.0).abs() / 12_500.0 < 0.01,
        "per block {per_block}"
    );
}

#[test]
fn every_engine_runs_direct_and_buffered() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("e.json");
    let runs: &[&[&str]] = &[
        &["--engine", "psync"],
        &["--engine", "psync", "--buffered"],
        &["--engine", "aio", "--qd", "8"],
        &["--engine", "aio", "--qd", "8", "--buffered"],
        &["--engine", "io_uring", "--qd", "8"],
        &["--engine", "io_uring", "--qd", "8", "--buffered"],
        &[
            "--engine",
            "io_uring",
            "--qd",
            "8",
            "--uring-fixed-buffers",
            "--uring-fixed-files",
        ],
        &["--engine", "mmap", "--buffered"],
        &["--engine", "null", "--qd", "8"],
    ];
    for extra in runs {
        let mut args = vec![
            "device",
            "--target",
            d,
            "--size",
            "16m",
            "--rw",
            "randrw",
            "--io-count",
            "500",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--json", json.to_str().unwrap()]);
        let o = iolab(&args);
        assert!(o.status.success(), "{extra:?}: {}", text(&o));
        let r = results(&json);
        let p = &r["points"][0];
        assert_eq!(p["total"]["ops"], 500, "{extra:?}");
        let buffered = extra.contains(&"--buffered") || extra.contains(&"null");
        assert_eq!(p["direct"], !buffered, "{extra:?}");
        if extra.contains(&"--buffered") {
            let warned = p["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("page cache"));
            assert!(
                warned,
                "buffered reads of a small file warn about the page cache: {extra:?}"
            );
        }
    }
    assert_eq!(files_in(dir.path()), vec![json], "scratch files removed");
}

#[test]
fn verify_catches_a_block_corrupted_between_passes() {
    let dir = workdir();
    let file = dir.path().join("v.dat");
    let f = file.to_str().unwrap();
    let o = iolab(&[
        "device",
        "--target",
        f,
        "--size",
        "8m",
        "--rw",
        "write",
        "--bs",
        "4k",
        "--verify",
        "--engine",
        "io_uring",
        "--qd",
        "4",
        "--io-count",
        "2048",
        "--keep",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // A clean read pass verifies every block.
    let json = dir.path().join("v.json");
    let o = iolab(&[
        "device",
        "--target",
        f,
        "--rw",
        "read",
        "--bs",
        "4k",
        "--verify",
        "--io-count",
        "2048",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        results(&json)["points"][0]["verify"]["blocks_checked"],
        2048
    );
    // Corrupt one byte of the block at 1 MiB + 4 KiB, then read again.
    let mut data = std::fs::read(&file).unwrap();
    data[(1 << 20) + 4096 + 100] ^= 0xff;
    std::fs::write(&file, &data).unwrap();
    let o = iolab(&[
        "device",
        "--target",
        f,
        "--rw",
        "read",
        "--bs",
        "4k",
        "--verify",
        "--io-count",
        "2048",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let v = &results(&json)["points"][0]["verify"];
    assert_eq!(v["mismatches"], 1);
    assert_eq!(v["first_mismatches"][0]["offset"], (1 << 20) + 4096);
    assert!(text(&o).contains("verification failed"));
}

#[test]
fn verify_within_one_mixed_job_passes() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("m.json");
    let o = iolab(&[
        "device",
        "--target",
        d,
        "--size",
        "4m",
        "--rw",
        "randrw",
        "--verify",
        "--engine",
        "aio",
        "--qd",
        "16",
        "--jobs",
        "2",
        "--io-count",
        "20000",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v = &results(&json)["points"][0]["verify"];
    assert_eq!(v["mismatches"], 0);
    assert!(v["blocks_checked"].as_u64().unwrap() > 5000);
}

#[test]
fn sigint_keeps_completed_jobs_and_removes_the_scratch_file() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("i.json");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "device",
            "--profile",
            "quick",
            "--target",
            d,
            "--size",
            "64m",
            "--runtime",
            "1s",
            "--engine",
            "psync",
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ])
        .spawn()
        .unwrap();
    let out = interrupt_after_first_point(child, &json);
    assert_eq!(out.status.code(), Some(130));
    let r = results(&json);
    assert_eq!(r["interrupted"], true);
    assert_eq!(r["complete"], false);
    let n = r["points"].as_array().unwrap().len();
    assert!((1..4).contains(&n), "{n} points");
    assert_eq!(r["points"][0]["name"], "qd1-4k-randread-latency");
    assert_eq!(files_in(dir.path()), vec![json], "no scratch file left");
}

#[test]
fn sysinfo_prints_provenance() {
    let o = iolab(&["sysinfo", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["kernel"].as_str().unwrap().starts_with("Linux"));
    assert!(v["timer"]["per_io_ns"].as_f64().unwrap() > 0.0);
    let o = iolab(&["sysinfo"]);
    assert!(text(&o).contains("timer cost"));
    let o = iolab(&["sysinfo", "--target", "/no/such/path"]);
    assert_eq!(o.status.code(), Some(2));
    // Issue 31 item 16: a directory was called "(ExistingFile, 0 bytes)".
    let dir = workdir();
    let o = iolab(&["sysinfo", "--target", dir.path().to_str().unwrap()]);
    let t = text(&o);
    assert!(
        t.contains("(directory)") && !t.contains("ExistingFile"),
        "{t}"
    );
    // One output option, as in every verb: -o FILE, -o - (stdout), --json [FILE].
    let dir = workdir();
    let file = dir.path().join("m.json");
    for args in [["-o", "-"], ["--json", "-"]] {
        let o = iolab(&["sysinfo", args[0], args[1]]);
        assert!(
            serde_json::from_slice::<serde_json::Value>(&o.stdout).is_ok(),
            "{args:?}"
        );
    }
    let o = iolab(&["sysinfo", "--json", file.to_str().unwrap()]);
    assert!(o.status.success() && o.stdout.is_empty(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert!(v["kernel"].is_string());
}

/// Every point says which clock stamped its requests: the TSC where it can
/// be used (here the kernel's clocksource is tsc), CLOCK_MONOTONIC when asked.
#[test]
fn the_clock_is_chosen_and_recorded() {
    let usable = iolab::measure::tsc::unusable_because().is_none();
    for (clock, expected) in [("mono", "mono"), ("tsc", "tsc"), ("auto", "tsc")] {
        let d = workdir();
        let out = d.path().join("r.json");
        let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args([
                "device",
                "--engine",
                "null",
                "--io-count",
                "10000",
                "--quiet",
            ])
            .args(["--clock", clock, "--json"])
            .arg(&out)
            .output()
            .unwrap();
        if !usable && clock != "mono" {
            if clock == "tsc" {
                assert_eq!(o.status.code(), Some(2), "{}", text(&o));
                assert!(text(&o).contains("--clock"), "{}", text(&o));
            }
            continue;
        }
        assert!(o.status.success(), "{clock}: {}", text(&o));
        let p = &results(&out)["points"][0];
        assert_eq!(p["extra"]["clock"]["source"], expected, "--clock {clock}");
        if expected == "tsc" {
            assert!(p["extra"]["clock"]["ghz"].as_f64().unwrap() > 0.1);
            assert!(p["extra"]["clock"]["drift_ppm"].is_number());
        }
    }
}

/// A file stamped in 4 KiB blocks read back with --verify --bs 64k: every
/// block verifies (each read was reported corrupted before), each 4 KiB
/// unit counted.
#[test]
fn verify_reads_larger_than_the_stamped_blocks() {
    let dir = workdir();
    let file = dir.path().join("v.dat");
    let f = file.to_str().unwrap();
    let o = iolab(&[
        "device",
        "--target",
        f,
        "--size",
        "4m",
        "--rw",
        "write",
        "--bs",
        "4k",
        "--verify",
        "--io-count",
        "1024",
        "--keep",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let json = dir.path().join("v.json");
    let o = iolab(&[
        "device",
        "--target",
        f,
        "--rw",
        "read",
        "--bs",
        "64k",
        "--verify",
        "--io-count",
        "64",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v = &results(&json)["points"][0]["verify"];
    assert_eq!(v["blocks_checked"], 64 * 16);
    assert_eq!(v["mismatches"], 0, "{v}");
}

/// `--profile act`: small 1.5 KiB reads at ACT's rate (the point), the
/// large-block writes and reads beside them (extra.act), ACT's table per
/// second, the terminal's table; the scratch file removed; bad
/// multipliers and a multiplier without the profile exit 2.
#[test]
fn act_profile_runs_acts_three_streams() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("act.json");
    let args = ["--profile", "act", "--act-scale", "0.5", "--runtime", "2s"];
    let p = device_point(
        &[&args[..], &["--size", "32m", "--target", d]].concat(),
        &json,
    );
    assert_eq!(p["job"]["bs"][0][0], 1536);
    assert_eq!(p["job"]["open_loop"]["rate_iops"], 1000.0);
    assert!(
        p["ops"]["write"].is_null(),
        "large blocks are not in the point's ops"
    );
    let read_ops = p["ops"]["read"]["ops"].as_u64().unwrap();
    assert!(read_ops > 500, "{read_ops}");
    let act = &p["extra"]["act"];
    assert_eq!(act["scale"], 0.5);
    assert_eq!(act["large_block_bytes"], 131072);
    assert_eq!(
        act["thresholds_ms"],
        serde_json::json!([1, 2, 4, 8, 16, 32, 64])
    );
    for s in ["large_block_writes", "large_block_reads"] {
        assert!(act[s]["ops"].as_u64().unwrap() > 5, "{s}: {}", act[s]);
    }
    let intervals = act["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 2, "{act}");
    let counted: u64 = intervals.iter().map(|i| i["reads"].as_u64().unwrap()).sum();
    assert_eq!(counted, read_ops, "every small read is in one interval");
    let printed = iolab(
        &[
            &["device"][..],
            &args[..],
            &[
                "--size",
                "32m",
                "--target",
                d,
                "--json",
                json.to_str().unwrap(),
                "--force",
            ],
        ]
        .concat(),
    );
    assert!(printed.status.success(), "{}", text(&printed));
    assert!(text(&printed).contains("% > 64 ms"), "{}", text(&printed));
    assert!(
        text(&printed).contains("ACT verdict: "),
        "{}",
        text(&printed)
    );
    let act = &results(&json)["points"][0]["extra"]["act"];
    assert_eq!(act["slice_s"], 3600.0, "{act}");
    assert_eq!(act["slices"].as_array().map(Vec::len), Some(1), "{act}");
    let pass = act["verdict"]["pass"].as_bool().expect("a verdict");
    assert_eq!(act["slices"][0]["pass"].as_bool(), Some(pass), "{act}");
    assert_eq!(act["verdict"]["criteria"][1]["over_ms"], 8, "{act}");
    // `iolab report` renders the ACT section too, as text and markdown.
    let report = iolab(&["report", json.to_str().unwrap(), "--format", "text"]);
    assert!(report.status.success(), "{}", text(&report));
    for want in ["% > 64 ms", "ACT verdict: ", "per hour"] {
        assert!(text(&report).contains(want), "{want}: {}", text(&report));
    }
    let md = iolab(&["report", json.to_str().unwrap(), "--format", "markdown"]);
    assert!(text(&md).contains("## ACT"), "{}", text(&md));
    assert_eq!(
        files_in(dir.path()),
        vec![json.clone()],
        "only the results stay"
    );
    for (args, field) in [
        (
            vec![
                "device",
                "--profile",
                "act",
                "--act-scale",
                "0",
                "--target",
                d,
            ],
            "--act-scale",
        ),
        (
            vec![
                "device",
                "--profile",
                "act",
                "--act-scale",
                "-3",
                "--target",
                d,
            ],
            "--act-scale",
        ),
        (
            vec!["device", "--act-scale", "2", "--target", d],
            "--act-scale",
        ),
    ] {
        let o = iolab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(field), "{args:?}: {}", text(&o));
    }
}

/// Issue 44 item 15: the dry run named neither the target (a bare ".")
/// nor `--io-count` ("until io limit") nor `--thinktime`.
#[test]
fn the_dry_run_names_the_target_the_io_count_and_the_thinktime() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let o = iolab(&[
        "device",
        "-t",
        d,
        "--size",
        "16m",
        "--rw",
        "randread",
        "--io-count",
        "1000",
        "--thinktime",
        "100us",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains(&format!(
            "plan on a 16m scratch file in {d} (created; removed at exit)"
        )),
        "{out}"
    );
    assert!(out.contains("io_count=1000 (all workers)"), "{out}");
    assert!(
        out.contains("thinktime=100.0us every 1 request(s)"),
        "{out}"
    );
    assert!(files_in(dir.path()).is_empty(), "a dry run creates nothing");
}
