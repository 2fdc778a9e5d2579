//! Faults found from outside (issue 43): the README's first command on a
//! clean clone, signals during waits, hostile files. Each test is named
//! after the fault it pins down and failed before its fix.

mod common;

use std::path::Path;
use std::process::Command;

use common::{have, mkfifo, text, workdir};

/// `make run` in a fresh clone: `results/` is ignored by git, so a clone
/// has none, and the run must make it (it was exit 2, "cannot write in
/// directory results"), leaving no scratch directory behind.
#[test]
fn make_run_works_in_a_clone_without_a_results_directory() {
    if !have("make") {
        eprintln!("skipped: make is not installed");
        return;
    }
    let w = workdir();
    let clone = w.path().join("clone");
    std::fs::create_dir_all(clone.join("target/release")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("Makefile"),
        clone.join("Makefile"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_iolab"),
        clone.join("target/release/iolab"),
    )
    .unwrap();
    let scratch = w.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    // -o: the binary is given, so neither the deps nor the build run.
    let o = Command::new("make")
        .current_dir(&clone)
        .args(["-s", "-o", "deps", "-o", "build", "run", "RUN_BUDGET=4s"])
        .arg("RUN_FLAGS=--size 16m --quiet")
        .arg(format!("RUN_DIR={}", scratch.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "make run: {}", text(&o));
    let runs: Vec<_> = std::fs::read_dir(clone.join("results"))
        .expect("make run made results/")
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    for f in ["results.json", "report.html"] {
        assert!(runs[0].join(f).is_file(), "{f} in {}", runs[0].display());
    }
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().collect();
    assert!(
        left.is_empty(),
        "the temporary run directory stays: {left:?}"
    );
}

/// `iolab run -o a/b/c` makes the missing parents, and refuses before it
/// prepares the scratch file when the nearest existing one cannot take it.
#[test]
fn run_output_is_checked_before_the_scratch_file_is_prepared() {
    let w = workdir();
    let blocker = w.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let out = blocker.join("deeper/run");
    let o = common::iolab(&[
        "run",
        w.path().to_str().unwrap(),
        "--budget",
        "4s",
        "--size",
        "16m",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("--output"), "{t}");
    assert!(!t.contains("preparing"), "prepared before refusing: {t}");
}

/// A fio job's block size of 0 passed `--dry-run`, then a worker divided
/// by zero and the run hung ignoring SIGTERM. The job file's values get
/// the checks the flags get: exit 2 naming the key, dry run or not.
#[test]
fn a_zero_block_size_in_a_fio_job_is_refused_naming_the_key() {
    let w = workdir();
    for (key, line) in [
        ("bs", "bs=0"),
        ("blocksize", "blocksize=0"),
        ("bssplit", "bssplit=0/100"),
    ] {
        let job = w.path().join(format!("{key}.fio"));
        std::fs::write(&job, format!("[j]\nrw=randread\n{line}\nsize=16m\n")).unwrap();
        for dry in [true, false] {
            let mut args = vec![
                "device",
                "--fio-job",
                job.to_str().unwrap(),
                "--target",
                w.path().to_str().unwrap(),
                "--io-count",
                "100",
                "--quiet",
            ];
            if dry {
                args.push("--dry-run");
            }
            let o = common::iolab(&args);
            assert_eq!(o.status.code(), Some(2), "{line} dry={dry}: {}", text(&o));
            assert!(text(&o).contains(&format!("{key}:")), "{}", text(&o));
            assert!(!text(&o).contains("panicked"), "{}", text(&o));
        }
    }
    let o = common::iolab(&[
        "device",
        "--bs",
        "0",
        "--engine",
        "null",
        "--io-count",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// Signal `child` with `sig` and wait at most `ceiling` for it to end.
fn signal_and_wait(
    mut child: std::process::Child,
    sig: i32,
    ceiling: std::time::Duration,
) -> std::process::Output {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > ceiling {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("still running {ceiling:?} after the signal: {}", text(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn spawn(args: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    // A suite started in the background of a script inherits SIGINT
    // ignored; the commands that only print rely on its default action.
    // SAFETY: signal(2) is async-signal-safe, called between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    c.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Every file iolab reads, given a FIFO nobody writes: the first SIGINT
/// ends the wait (they blocked in open() past it).
#[test]
fn the_first_sigint_ends_a_wait_for_an_input_fifo() {
    let w = workdir();
    let fifo = w.path().join("in.fifo");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let hosts = format!("@{f}");
    let cases: [&[&str]; 4] = [
        &["report", f],
        &["device", "--fio-job", f, "--engine", "null"],
        &["kv", "-P", f, "--engine", "null"],
        &[
            "device",
            "--hosts",
            &hosts,
            "--engine",
            "null",
            "--io-count",
            "10",
        ],
    ];
    for args in cases {
        let child = spawn(args);
        std::thread::sleep(std::time::Duration::from_millis(700));
        let o = signal_and_wait(child, libc::SIGINT, std::time::Duration::from_secs(20));
        // Commands that only print keep SIGINT's default: killed by it.
        use std::os::unix::process::ExitStatusExt;
        let stopped = o.status.code() == Some(130) || o.status.signal() == Some(libc::SIGINT);
        assert!(stopped, "{args:?}: {:?} {}", o.status, text(&o));
    }
}

/// `device --json FIFO` whose reader never reads: the write blocked for
/// ever, holding the scratch file, and the first SIGTERM was ignored.
#[test]
fn the_first_sigterm_ends_a_write_into_a_fifo_nobody_reads() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let w = workdir();
    let fifo = w.path().join("out.fifo");
    mkfifo(&fifo);
    // The reader: opened, its pipe as small as Linux allows, never read.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    // SAFETY: fcntl on a descriptor this test owns.
    unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    let scratch = w.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let child = spawn(&[
        "device",
        "--target",
        scratch.to_str().unwrap(),
        "--size",
        "16m",
        "--runtime",
        "1s",
        "--json",
        fifo.to_str().unwrap(),
        "--quiet",
    ]);
    std::thread::sleep(std::time::Duration::from_secs(4));
    let o = signal_and_wait(child, libc::SIGTERM, std::time::Duration::from_secs(20));
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().collect();
    assert!(left.is_empty(), "the scratch file stays: {left:?}");
    drop(reader);
}

/// An HDR V2 histogram whose header claims a 4 GiB payload (hdrhistogram
/// allocates what the header says before it reads), and one whose bounds
/// would make a counts array of gigabytes.
fn hostile_histograms() -> Vec<String> {
    use base64::Engine as _;
    use hdrhistogram::serialization::Serializer;
    use std::io::Write;
    let mut header = Vec::new();
    header.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    header.extend_from_slice(&0xFFFF_FF00u32.to_be_bytes()); // payload length
    header.extend_from_slice(&0u32.to_be_bytes()); // normalizing offset
    header.extend_from_slice(&3u32.to_be_bytes()); // significant digits
    header.extend_from_slice(&1u64.to_be_bytes()); // lowest
    header.extend_from_slice(&3_600_000_000_000u64.to_be_bytes()); // highest
    header.extend_from_slice(&1.0f64.to_bits().to_be_bytes());
    header.extend_from_slice(&[2, 0, 0, 0]);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&header).unwrap();
    let compressed = z.finish().unwrap();
    let mut claims = Vec::new();
    claims.extend_from_slice(&0x1c84_9314u32.to_be_bytes());
    claims.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
    claims.extend_from_slice(&compressed);
    let wide = hdrhistogram::Histogram::<u64>::new_with_bounds(1, u64::MAX / 2, 5).unwrap();
    let mut buf = Vec::new();
    hdrhistogram::serialization::V2DeflateSerializer::new()
        .serialize(&wide, &mut buf)
        .unwrap();
    [claims, buf]
        .iter()
        .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
        .collect()
}

/// `report` and `compare` on a small results file whose histograms claim
/// a huge payload, under a 2 GiB address-space limit: they took 4 GB (and
/// aborted under `ulimit -v`); now the file is refused or the histogram
/// skipped, and nothing aborts.
#[test]
fn report_and_compare_bound_memory_on_hostile_histograms() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let w = workdir();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/device-batching.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let hostile = hostile_histograms();
    for p in r["points"].as_array_mut().unwrap() {
        p["histograms"]["read.lat"] = serde_json::Value::String(hostile[0].clone());
        p["histograms"]["read.clat"] = serde_json::Value::String(hostile[1].clone());
    }
    let file = w.path().join("hostile.json");
    std::fs::write(&file, serde_json::to_vec(&r).unwrap()).unwrap();
    let f = file.to_str().unwrap();
    let html = w.path().join("r.html");
    let cases: [&[&str]; 3] = [
        &["report", f, "--format", "text"],
        &["report", f, "-o", html.to_str().unwrap()],
        &["compare", f, f],
    ];
    for args in cases {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.args(args);
        // SAFETY: setrlimit in the child before exec; no allocation.
        unsafe {
            c.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 2 << 30,
                    rlim_max: 2 << 30,
                };
                libc::setrlimit(libc::RLIMIT_AS, &lim);
                Ok(())
            });
        }
        let o = c.output().unwrap();
        assert_eq!(
            o.status.signal(),
            None,
            "{args:?}: {:?} {}",
            o.status,
            text(&o)
        );
        assert!(
            matches!(o.status.code(), Some(0..=2)),
            "{args:?}: {:?} {}",
            o.status,
            text(&o)
        );
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }
}
