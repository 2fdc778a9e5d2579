//! Integration tests of the capabilities wired into `iolab device`:
//! `--fio-job FILE.fio` (global and job sections, rate_iops as open loop,
//! target/size from the file, unsupported options refused by name),
//! `--export fio-json FILE` (valid fio JSON, read back by `iolab report`
//! and fio_jsonplus_clat2csv, kept on interrupt) and `--breakdown` (the
//! stack tracer per point, as root; untraced with a warning otherwise),
//! and a quiet job's main thread sleeping while the workers run.

mod common;
use common::{files_in, interrupt_after_first_point, iolab, results, text, workdir};
use std::path::{Path, PathBuf};
use std::process::Command;

fn write(path: &Path, s: &str) -> String {
    std::fs::write(path, s).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn fio_job_file_runs_global_and_job_sections() {
    let dir = workdir();
    let d = dir.path().display();
    let job = write(
        &dir.path().join("two.fio"),
        &format!(
            "; global options apply to every job\n\
             [global]\n\
             ioengine=libaio\n\
             direct=1\n\
             size=16m\n\
             directory={d}\n\
             runtime=300ms\n\
             time_based\n\
             \n\
             [rr]\n\
             rw=randread\n\
             bs=4k\n\
             iodepth=4\n\
             \n\
             [paced]\n\
             rw=randread\n\
             ioengine=io_uring\n\
             iodepth=2\n\
             numjobs=2\n\
             rate_iops=100\n\
             rate_process=poisson\n"
        ),
    );
    let json = dir.path().join("r.json");
    let o = iolab(&[
        "device",
        "--fio-job",
        &job,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = results(&json);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2, "{r}");
    assert_eq!(pts[0]["name"], "rr");
    assert_eq!(pts[0]["job"]["engine"], "aio");
    assert_eq!(pts[0]["job"]["qd"], 4);
    assert_eq!(pts[0]["direct"], true);
    assert!(pts[0]["total"]["iops"].as_f64().unwrap() > 0.0);
    assert_eq!(pts[1]["name"], "paced");
    assert_eq!(pts[1]["job"]["engine"], "io_uring");
    // fio's rate_iops is per job clone: 2 x 100 in total, Poisson arrivals.
    assert_eq!(pts[1]["job"]["open_loop"]["rate_iops"], 200.0);
    assert_eq!(pts[1]["job"]["open_loop"]["arrival"], "poisson");
    assert!(pts[1]["extra"]["open_loop"].is_object(), "{}", pts[1]);
    // Target and size from the job file: a 16 MiB scratch file in `directory`.
    let t = &r["provenance"]["target"];
    assert_eq!(t["size_bytes"], 16 << 20);
    assert!(
        t["path"].as_str().unwrap().starts_with(&d.to_string()),
        "{t}"
    );
    assert!(r["extra"]["fio_job"]["text"]
        .as_str()
        .unwrap()
        .contains("[paced]"));
    // The scratch file is gone; the job file and results stay.
    let mut left = files_in(dir.path());
    left.sort();
    assert_eq!(left, vec![json.clone(), dir.path().join("two.fio")]);

    // --target and --size win over the job file's.
    let other = workdir();
    let o = iolab(&[
        "device",
        "--fio-job",
        &job,
        "--target",
        other.path().to_str().unwrap(),
        "--size",
        "8m",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains(&format!(
            "plan on a 8m scratch file in {}",
            other.path().display()
        )),
        "{out}"
    );
    assert!(out.contains("rate=200 (poisson)"), "{out}");
    let json2 = other.path().join("r.json");
    let o = iolab(&[
        "device",
        "--fio-job",
        &job,
        "--target",
        other.path().to_str().unwrap(),
        "--size",
        "8m",
        "--json",
        json2.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = &results(&json2)["provenance"]["target"];
    assert_eq!(t["size_bytes"], 8 << 20);
    assert!(t["path"]
        .as_str()
        .unwrap()
        .starts_with(&other.path().display().to_string()));
}

#[test]
fn fio_job_filename_names_the_target_file() {
    let dir = workdir();
    let file = dir.path().join("data.bin");
    let job = write(
        &dir.path().join("w.fio"),
        &format!(
            "[w]\nrw=write\nbs=64k\nsize=4m\nioengine=psync\ndirect=1\nfilename={}\n",
            file.display()
        ),
    );
    let json = dir.path().join("r.json");
    let o = iolab(&[
        "device",
        "--fio-job",
        &job,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = results(&json);
    let p = &r["points"][0];
    assert_eq!(
        r["provenance"]["target"]["path"],
        file.display().to_string()
    );
    // No time_based: fio stops after `size` bytes.
    assert_eq!(p["ops"]["write"]["bytes"], 4 << 20, "{p}");
    assert!(!file.exists(), "iolab created it, so it removes it");
}

#[test]
fn fio_job_unsupported_options_are_all_named() {
    let dir = workdir();
    let job = write(
        &dir.path().join("bad.fio"),
        "[global]\nioengine=libaio\nloops=2\n[j]\nrw=randread\nzonemode=zbd\nexitall\n",
    );
    let o = iolab(&["device", "--fio-job", &job, "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    for opt in [
        "--fio-job",
        "loops (line 3)",
        "zonemode (line 6)",
        "exitall (line 7)",
    ] {
        assert!(out.contains(opt), "{opt} missing: {out}");
    }
    assert!(!out.contains("panicked"));
    // Missing file and workload flags that the job file sets: exit 2 too.
    let o = iolab(&["device", "--fio-job", "/nonexistent/x.fio", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--fio-job"));
    let good = write(&dir.path().join("ok.fio"), "[j]\nrw=read\n");
    let o = iolab(&["device", "--fio-job", &good, "--rw", "write", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--rw"), "{}", text(&o));
}

#[test]
fn shipped_fio_example_is_accepted() {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/randread.fio");
    let o = iolab(&["device", "--fio-job", ex.to_str().unwrap(), "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("rate=2000 (poisson)"), "{}", text(&o));
}

fn clat2csv() -> Option<PathBuf> {
    [
        "/usr/bin/fio_jsonplus_clat2csv",
        "/usr/share/fio/fio_jsonplus_clat2csv",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

#[test]
fn export_fio_json_is_valid_fio_json() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("r.json");
    let fio = dir.path().join("out.fio.json");
    let o = iolab(&[
        "device",
        "--target",
        d,
        "--size",
        "16m",
        "--rw",
        "randread",
        "--qd",
        "1,4",
        "--io-count",
        "2000",
        "--json",
        json.to_str().unwrap(),
        "--export",
        "fio-json",
        fio.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(&format!("fio-json: {}", fio.display())));
    let v = results(&fio);
    assert!(v["fio version"].is_string(), "{v}");
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for (j, qd) in jobs.iter().zip(["1", "4"]) {
        assert_eq!(j["job options"]["iodepth"], qd, "{j}");
        assert!(j["read"]["iops"].as_f64().unwrap() > 0.0, "{j}");
        let clat = &j["read"]["clat_ns"];
        assert!(clat["N"].as_u64().unwrap() > 0);
        let pct = clat["percentile"].as_object().unwrap();
        for k in ["50.000000", "99.000000", "99.900000"] {
            assert!(pct[k].as_u64().unwrap() > 0, "{k} in {clat}");
        }
        assert!(clat["bins"].as_object().is_some_and(|b| !b.is_empty()));
    }
    // iolab report reads it back.
    let o = iolab(&["report", fio.to_str().unwrap(), "--format", "text"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("read"), "{}", text(&o));
    // fio's own json+ tool accepts it.
    let Some(tool) = clat2csv() else {
        eprintln!("SKIP fio_jsonplus_clat2csv: not installed (apt package fio)");
        return;
    };
    let csv = dir.path().join("clat.csv");
    let o = Command::new("python3")
        .arg(&tool)
        .arg(&fio)
        .arg(&csv)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let csv0 = dir.path().join("clat_job0.csv");
    assert!(
        std::fs::read_to_string(&csv0).is_ok_and(|t| t.lines().count() > 1),
        "{}",
        text(&o)
    );
}

#[test]
fn export_fio_json_is_kept_on_interrupt() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("r.json");
    let fio = dir.path().join("out.fio.json");
    let csv = dir.path().join("out.csv");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "device",
            "--target",
            d,
            "--size",
            "16m",
            "--qd",
            "1,2,4,8",
            "--engine",
            "psync",
            "--runtime",
            "1s",
            "--json",
            json.to_str().unwrap(),
            "--export",
            "fio-json",
            fio.to_str().unwrap(),
            "--export",
            "csv",
            csv.to_str().unwrap(),
            "--quiet",
        ])
        .spawn()
        .unwrap();
    let out = interrupt_after_first_point(child, &json);
    assert_eq!(out.status.code(), Some(130));
    let n = results(&json)["points"].as_array().unwrap().len();
    let v = results(&fio);
    assert_eq!(v["jobs"].as_array().unwrap().len(), n, "{v}");
    // Every format is written at the last save, Ctrl-C's included, as
    // `iolab report` renders it from the results file.
    let o = iolab(&[
        "report",
        json.to_str().unwrap(),
        "--format",
        "csv",
        "-o",
        "-",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&csv).unwrap(), o.stdout);
}

/// Root and tracefs (or the means to mount it), as `iolab trace` needs.
fn can_trace() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    if !Path::new("/sys/kernel/tracing").is_dir() {
        return Err("no /sys/kernel/tracing".into());
    }
    Ok(())
}

fn instances_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n == &format!("iolab-{pid}"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn breakdown_traces_every_point_as_root() {
    if let Err(why) = can_trace() {
        eprintln!("SKIP breakdown_traces_every_point_as_root: {why}");
        return;
    }
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "device",
            "--target",
            d,
            "--size",
            "32m",
            "--rw",
            "randread",
            "--engine",
            "psync,io_uring",
            "--qd",
            "4",
            "--io-count",
            "3000",
            "--breakdown",
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("tracing: tracefs at"), "{out}");
    // The btt-style table follows each point's normal table.
    assert_eq!(out.matches("software ").count(), 2, "{out}");
    assert!(out.contains("D2C"), "{out}");
    let r = results(&json);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    for p in pts {
        let b = &p["extra"]["trace"]["breakdown"];
        assert!(b["requests"].as_u64().unwrap() > 1000, "{p}");
        let stages: Vec<&str> = b["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap())
            .collect();
        for want in ["user prepare", "syscall+submit", "Q2G", "completion path"] {
            assert!(stages.contains(&want), "{want} missing in {stages:?}");
        }
        assert!(
            stages.contains(&"D2irq device") || stages.contains(&"D2C device"),
            "{stages:?}"
        );
        for s in b["stages"].as_array().unwrap() {
            assert!(s["n"].as_u64().unwrap() > 0 || s["stage"] == "residual");
        }
        assert!(b["total"]["mean_ns"].as_f64().unwrap() > 0.0);
        assert!(p["extra"]["trace"]["lost"].is_object());
    }
    assert_eq!(pts[0]["job"]["engine"], "psync");
    assert_eq!(pts[1]["job"]["engine"], "io_uring");
    assert!(
        instances_of(pid).is_empty(),
        "tracefs instance iolab-{pid} left behind"
    );
    assert_eq!(
        files_in(dir.path()),
        vec![json.clone()],
        "no scratch file left"
    );
    // The HTML report draws the stage bars from extra.trace.
    let html = dir.path().join("r.html");
    let o = iolab(&[
        "report",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("Stage breakdown"));
}

#[test]
fn breakdown_instance_is_removed_on_ctrl_c() {
    if let Err(why) = can_trace() {
        eprintln!("SKIP breakdown_instance_is_removed_on_ctrl_c: {why}");
        return;
    }
    let dir = workdir();
    let json = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "device",
            "--target",
            dir.path().to_str().unwrap(),
            "--size",
            "16m",
            "--engine",
            "psync",
            "--runtime",
            "20s",
            "--breakdown",
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ])
        .spawn()
        .unwrap();
    let pid = child.id();
    // Interrupt while the point is being traced (its instance exists).
    let start = std::time::Instant::now();
    while instances_of(pid).is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(start.elapsed().as_secs() < 30, "instance never appeared");
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(
        instances_of(pid).is_empty(),
        "tracefs instance iolab-{pid} left behind after Ctrl-C"
    );
    let r = results(&json);
    assert_eq!(r["interrupted"], true);
    let p = &r["points"][0];
    assert_eq!(p["extra"]["interrupted"], true, "{p}");
    assert!(
        p["extra"]["trace"]["breakdown"]["requests"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(files_in(dir.path()), vec![json], "no scratch file left");
}

#[test]
fn breakdown_without_a_traceable_target_runs_untraced() {
    // The null engine has no device: said on stderr and in the warnings.
    let dir = workdir();
    let json = dir.path().join("r.json");
    let o = iolab(&[
        "device",
        "--engine",
        "null",
        "--io-count",
        "1000",
        "--breakdown",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--breakdown: tracing unavailable"),
        "{}",
        text(&o)
    );
    let r = results(&json);
    assert!(
        r["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("--breakdown: tracing unavailable")),
        "{r}"
    );
    assert!(r["points"][0]["extra"]["trace"].is_null());
    assert!(r["points"][0]["total"]["iops"].as_f64().unwrap() > 0.0);
}

#[test]
fn breakdown_as_non_root_runs_untraced() {
    let setpriv = Path::new("/usr/bin/setpriv");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !setpriv.exists() {
        eprintln!(
            "SKIP breakdown_as_non_root_runs_untraced: needs root to drop to nobody, and setpriv"
        );
        return;
    }
    let dir = workdir();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let o = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        // Its crash records in the test's directory, not a /tmp/iolab-65534 left behind.
        .env("IOLAB_STATE_DIR", dir.path().join("state"))
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "device",
            "--target",
            dir.path().to_str().unwrap(),
            "--size",
            "16m",
            "--io-count",
            "500",
            "--breakdown",
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    if !o.status.success() && text(&o).contains("Permission denied") {
        eprintln!(
            "SKIP breakdown_as_non_root_runs_untraced: nobody cannot run the binary: {}",
            text(&o)
        );
        return;
    }
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("not root"), "{}", text(&o));
    let r = results(&json);
    assert!(r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("not root")));
    assert!(r["points"][0]["extra"]["trace"].is_null());
}

/// The job's main thread wakes once a second (progress, peer samples) or
/// when a worker ends, also when nothing is shown: it used to wake every
/// millisecond after the first second of a quiet run (1357 wake-ups in
/// 1.5 s), taking CPU from the workers and the device it measures.
#[test]
fn the_main_thread_sleeps_while_a_quiet_job_runs() {
    let dir = common::workdir();
    let json = dir.path().join("q.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "device",
            "--engine",
            "null",
            "--rw",
            "randread",
            "--runtime",
            "4s",
            "--quiet",
        ])
        .args(["-o", json.to_str().unwrap()])
        .spawn()
        .unwrap();
    let pid = child.id();
    let switches = || -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/status")).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let a = switches();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let b = switches();
    assert!(child.wait().unwrap().success());
    assert!(b - a < 30, "the main thread woke {} times in 1.5 s", b - a);
}

/// Issue 31 item 10: `verify=crc32c` on a write job checked nothing; as in
/// fio, the write is followed by a read-back that checks every block.
#[test]
fn fio_job_verified_writes_are_read_back_and_checked() {
    let dir = workdir();
    let d = dir.path().display();
    let job = write(
        &dir.path().join("v.fio"),
        &format!(
            "[w]\nrw=randwrite\nbs=4k\nsize=2m\ndirectory={d}\nioengine=psync\nverify=crc32c\nruntime=200ms\ntime_based\n"
        ),
    );
    let json = dir.path().join("v.json");
    let o = iolab(&[
        "device",
        "--fio-job",
        &job,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = results(&json);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2, "{r}");
    assert_eq!(pts[1]["name"], "w (verify)");
    let v = &pts[1]["verify"];
    assert!(v["blocks_checked"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["mismatches"], 0, "{v}");
    // The read-back is one pass over the region.
    assert_eq!(pts[1]["total"]["bytes"], 2 << 20, "{}", pts[1]["total"]);
}

/// Issue 44 item 15: a size-limited verified random write stamped about
/// 63% of the blocks (offsets with repeats; 646 of 1,024 checked), where
/// fio's random map writes every one: now every block is written once,
/// and the read-back checks all of them. On a file of zeros, so a block
/// the job missed is "never written", not a layout stamp.
#[test]
fn fio_job_verified_random_writes_cover_every_block() {
    let dir = workdir();
    let file = dir.path().join("zeros");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let job = write(
        &dir.path().join("cover.fio"),
        &format!(
            "[w]\nrw=randwrite\nbs=4k\nsize=4m\nfilename={}\nioengine=psync\nverify=crc32c\n",
            file.display()
        ),
    );
    let json = dir.path().join("cover.json");
    let o = iolab(&[
        "device",
        "--fio-job",
        &job,
        "--overwrite",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = results(&json);
    let v = &r["points"][1]["verify"];
    assert_eq!(r["points"][0]["total"]["ops"], 1024, "{}", r["points"][0]);
    assert_eq!(v["blocks_checked"], 1024, "{v}");
    assert!(v.get("never_written").is_none_or(|n| n == 0), "{v}");
    assert_eq!(v["mismatches"], 0, "{v}");
}

/// fio runs a job file's jobs at once unless a `stonewall` separates
/// them, and `group_reporting` reports a group as one: iolab the same.
#[test]
fn fio_jobs_between_stonewalls_run_at_once_and_groups_report_as_one() {
    let dir = workdir();
    let d = dir.path().display();
    let job = write(
        &dir.path().join("groups.fio"),
        &format!(
            "[global]\nioengine=psync\nbs=4k\nsize=8m\ndirectory={d}\n\
             runtime=300ms\ntime_based\n\
             [a]\nrw=randread\n\
             [b]\nrw=randwrite\n\
             [c]\nstonewall\nrw=read\n\
             [d]\nstonewall\ngroup_reporting\nrw=randread\n\
             [e]\nrw=randread\nnumjobs=2\n"
        ),
    );
    let json = dir.path().join("r.json");
    let o = iolab(&[
        "device",
        "--fio-job",
        &job,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = results(&json);
    let pts = r["points"].as_array().unwrap();
    let names: Vec<&str> = pts.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b", "c", "d"], "{r}");
    // a and b ran together, each its own point, each saying so.
    assert_eq!(pts[0]["params"]["ran_with"], "a,b");
    assert_eq!(pts[1]["params"]["ran_with"], "a,b");
    assert!(pts[1]["total"]["ops"].as_u64().unwrap() > 0);
    // c waited for them.
    assert!(pts[2]["started_at"].as_str() > pts[1]["started_at"].as_str());
    assert!(pts[2]["params"].get("ran_with").is_none());
    // d and e (2 workers) reported as one group, merged exactly.
    let g = &pts[3];
    assert_eq!(g["params"]["group_of"], "d,e");
    let ops = g["total"]["ops"].as_u64().unwrap();
    let hist = g["histograms"]["read.lat"].as_str().unwrap();
    let h = iolab::measure::histogram::LatencyHistogram::decode(hist).unwrap();
    assert_eq!(h.len(), ops);
    // The dry run says which jobs run at once.
    let o = iolab(&["device", "--fio-job", &job, "--dry-run"]);
    assert!(text(&o).contains("all 2 jobs at once"), "{}", text(&o));
}
