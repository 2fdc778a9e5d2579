//! Every `iolab ...` example in the README, the docs and each verb's
//! `--help` parses, and runs: scaled down (short runtimes, small files and
//! record counts), with its paths moved into a temporary directory, in the
//! order its page gives (a read pass after its write pass). Examples that
//! need a block device only parse; long studies (steady state, batched and
//! SNIA profiles) run as `--dry-run`, which checks everything but the I/O.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::text;

/// One example: where it was found and its words.
struct Example {
    origin: String,
    words: Vec<String>,
}

/// Split a command line as a shell would for these examples: words,
/// 'single' and "double" quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `iolab ...` lines of the fenced code blocks of a Markdown file, with
/// continuation lines joined and `# comments` dropped.
fn markdown_examples(path: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut in_code = false;
    let mut pending = String::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            continue;
        }
        let line = raw.trim().trim_start_matches("$ ");
        if pending.is_empty() && !line.starts_with("iolab ") && line != "iolab" {
            continue;
        }
        let line = match line.find(" #") {
            Some(at) => &line[..at],
            None => line,
        };
        match line.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                let cmd = std::mem::take(&mut pending);
                // Usage synopses, templates and sample output are not commands.
                let output = cmd
                    .split_whitespace()
                    .nth(1)
                    .is_some_and(|w| w.ends_with(':'));
                if !output && !cmd.contains('[') && !cmd.contains('$') && !cmd.contains("...") {
                    out.push(Example {
                        origin: format!("{}:{}", path.display(), i + 1),
                        words: shell_words(&cmd),
                    });
                }
            }
        }
    }
    out
}

/// The EXAMPLES of `iolab VERB --help` (text after two spaces is a note).
fn help_examples(verb: &str) -> Vec<Example> {
    let o = common::iolab(&[verb, "--help"]);
    let help = String::from_utf8_lossy(&o.stdout).to_string();
    help.lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| l.starts_with("iolab "))
        .map(|l| {
            let cmd = l.split("  ").next().unwrap_or(l);
            Example {
                origin: format!("iolab {verb} --help"),
                words: shell_words(cmd),
            }
        })
        .collect()
}

fn value_after<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    words
        .iter()
        .position(|w| w == flag)
        .and_then(|i| words.get(i + 1))
        .map(String::as_str)
}

fn has(words: &[String], flag: &str) -> bool {
    words.iter().any(|w| w == flag)
}

/// Replace the value of `flag` (if given) with `value`.
fn set(words: &mut [String], flag: &str, value: &str) -> bool {
    match words.iter().position(|w| w == flag) {
        Some(i) if i + 1 < words.len() => {
            words[i + 1] = value.to_string();
            true
        }
        _ => false,
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The port of an nbdkit memory export for the examples on
/// `nbd://127.0.0.1/` (started once; it exits with this test process).
/// `None` without nbdkit: those examples then only parse.
fn nbd_port() -> Option<u16> {
    static PORT: std::sync::OnceLock<Option<u16>> = std::sync::OnceLock::new();
    *PORT.get_or_init(|| {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        Command::new("nbdkit")
            .args(["-f", "--exit-with-parent", "-i", "127.0.0.1", "-p"])
            .arg(port.to_string())
            .args(["memory", "1G"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let t0 = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if t0.elapsed().as_secs() > 10 {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(port)
    })
}

/// What to do with an example: `None` to only parse it (a block device,
/// an NBD example without nbdkit, a server that is not installed or not
/// ours), else the words to run (scaled down, paths moved into `dir`, a
/// private server's target into `servers` (a directory its user can
/// enter), NBD examples pointed at a local nbdkit).
fn scaled(words: &[String], dir: &Path, servers: &Path) -> Option<Vec<String>> {
    // Block devices, and iSCSI and NVMe/TCP targets no test starts for the examples.
    if words.iter().any(|w| {
        w.starts_with("/dev/") || w.starts_with("iscsi://") || w.starts_with("nvme-tcp://")
    }) {
        return None;
    }
    // Cassandra (a JVM starting in 10-30 s per private server, per pass of
    // a plan): tests/kv_cassandra.rs runs it; its examples are parsed only.
    if words.iter().any(|w| w.contains("cassandra")) {
        return None;
    }
    // Several hosts over ssh (tests/fleet_cli.rs runs them on namespace
    // hosts with their own sshd), and a target listening on another
    // machine's address: parsed only.
    if words
        .iter()
        .any(|w| w == "--hosts" || w == "--allow-remote")
    {
        return None;
    }
    let words: Vec<String> = if words.iter().any(|w| w.starts_with("nbd://127.0.0.1/")) {
        let port = nbd_port()?;
        words
            .iter()
            .map(|w| w.replace("nbd://127.0.0.1/", &format!("nbd://127.0.0.1:{port}/")))
            .collect()
    } else {
        words.to_vec()
    };
    let d = dir.display().to_string();
    let moved = |a: &str| -> Option<String> {
        for prefix in ["/mnt/test", "/mnt/nvme", "/mnt/t", "/mnt", "/var/tmp"] {
            if let Some(rest) = a.strip_prefix(prefix) {
                if rest.is_empty() || rest.starts_with('/') {
                    return Some(format!("{d}{rest}"));
                }
            }
        }
        None
    };
    let mut w: Vec<String> = words[1..]
        .iter()
        .map(|a| {
            // A labelled target (LABEL=PATH) moves its path.
            match a.split_once('=') {
                Some((label, path)) if !label.contains('/') && !label.starts_with('-') => {
                    moved(path).map(|p| format!("{label}={p}"))
                }
                _ => moved(a),
            }
            .unwrap_or_else(|| a.clone())
        })
        .collect();
    // Several targets of a media run: each moved directory is made (for
    // `run`, its DIR arguments too).
    let path_of = |v: &String| v.split_once('=').map_or(v.clone(), |x| x.1.to_string());
    let mut targets: Vec<String> = w
        .windows(2)
        .filter(|p| matches!(p[0].as_str(), "-t" | "--target" | "--make-in"))
        .map(|p| path_of(&p[1]))
        .collect();
    if w.first().is_some_and(|v| v == "run") {
        let flag_values = [
            "-o",
            "--output",
            "--budget",
            "--profile",
            "--size",
            "--engine",
            "--seed",
            "--status-interval",
            "--rounds",
            "--baseline",
            "--make",
            "--make-in",
            "-t",
            "--target",
        ];
        targets.extend(
            w.iter()
                .enumerate()
                .skip(1)
                .filter(|(i, a)| !a.starts_with('-') && !flag_values.contains(&w[i - 1].as_str()))
                .map(|(_, a)| path_of(a)),
        );
    }
    if targets.len() > 1 {
        for t in targets.iter().filter(|t| t.starts_with(&d)) {
            std::fs::create_dir_all(t).unwrap();
        }
    }
    // One round: what more rounds do (the spread, their order) is checked
    // by tests/device_media.rs and tests/run_media.rs; here they only cost
    // time (a third of the whole test's).
    set(&mut w, "--rounds", "1");
    let verb = w.first().cloned().unwrap_or_default();
    match verb.as_str() {
        "device" => {
            let profile = value_after(&w, "--profile").unwrap_or("").to_string();
            let plan = value_after(&w, "--plan").unwrap_or("").to_string();
            // Studies of many points, and budgets (checked by the plan).
            let long = has(&w, "--steady-state")
                || has(&w, "--budget")
                || profile.starts_with("batched")
                || profile.starts_with("snia")
                || plan.contains("bingmann")
                || plan.contains("snia");
            if long && !has(&w, "--dry-run") {
                w.push("--dry-run".into());
            }
            set(&mut w, "--runtime", "200ms");
            set(&mut w, "--io-count", "10k");
            set(&mut w, "--size", "16m");
            let bounded = ["--runtime", "--budget", "--io-count", "--io-bytes"]
                .iter()
                .any(|f| has(&w, f));
            if !bounded {
                w.extend(["--runtime".into(), "200ms".into()]);
            }
            let file_engine = value_after(&w, "--engine").is_none_or(|e| e != "null");
            if file_engine && !has(&w, "--size") {
                w.extend(["--size".into(), "16m".into()]);
            }
        }
        "run" => {
            if has(&w, "--make") && !is_root() {
                return None;
            }
            // The smallest budget run takes: 0.5 s per core job of the
            // profile, in each pass of a media run (targets x rounds).
            let per_pass = match value_after(&w, "--profile") {
                Some("quick") => 2.5,
                Some("full") => 6.0,
                _ => 4.0,
            };
            let made = value_after(&w, "--make").map_or(0, |m| m.split(',').count());
            let setups = (targets.len() + made).max(1);
            let rounds: usize = value_after(&w, "--rounds").map_or(1, |r| r.parse().unwrap_or(1));
            let budget = format!("{}s", per_pass * (setups * rounds) as f64);
            if !set(&mut w, "--budget", &budget) {
                w.extend(["--budget".into(), budget]);
            }
            if !set(&mut w, "--size", "16m") {
                w.extend(["--size".into(), "16m".into()]);
            }
        }
        "kv" => {
            // Configurations are built on loop devices (root).
            if has(&w, "--make") && !is_root() {
                return None;
            }
            private_server_target(&mut w, servers)?;
            // MongoDB's private server is FerretDB, the protocol's test
            // double, some ms an operation here: fewer records (2,000
            // took 35 s, 300 take 2 s).
            let records = if value_after(&w, "--engine") == Some("mongodb") {
                "300"
            } else {
                "2000"
            };
            for (i, a) in w.clone().iter().enumerate() {
                if a.starts_with("recordcount=") {
                    w[i] = format!("recordcount={records}");
                } else if a.starts_with("operationcount=") {
                    w[i] = format!("operationcount={records}");
                }
            }
            set(&mut w, "--num", "2000");
            set(&mut w, "--reads", "2000");
            set(&mut w, "--readers", "1,2");
            if !["--dir", "--target", "-t", "--db"]
                .iter()
                .any(|f| has(&w, f))
            {
                w.extend(["--target".into(), d.clone()]);
            }
            if has(&w, "-P") && !w.iter().any(|a| a.starts_with("recordcount=")) {
                w.extend(["-p".into(), format!("recordcount={records}")]);
                w.extend(["-p".into(), format!("operationcount={records}")]);
            }
            // A plan file's [[kv]] parts, scaled down by flags (which win
            // over the file): small loads, YCSB phases of at most 1 s. Its
            // [media] table builds configurations (root).
            if has(&w, "--plan") {
                if !is_root() {
                    return None;
                }
                for (flag, value) in [("--num", "2000"), ("--reads", "2000"), ("--readers", "1,2")]
                {
                    if !set(&mut w, flag, value) {
                        w.extend([flag.into(), value.into()]);
                    }
                }
                for p in [
                    "recordcount=2000",
                    "operationcount=2000",
                    "maxexecutiontime=1",
                ] {
                    w.extend(["-p".into(), p.into()]);
                }
            }
        }
        "remote" => {
            // Shaping the veth pair needs root (namespaces).
            if has(&w, "--fabric-rate") && !is_root() {
                return None;
            }
            // The kernel's NVMe-oF paths and iolab's RDMA transport: a run
            // on a kernel without them exits 2 naming the transport
            // (tests/remote_cli.rs); the VM tests run them. Here they are
            // planned only.
            let kernel = value_after(&w, "--transports")
                .is_some_and(|t| t.contains("-kernel") || t.split(',').any(|x| x == "nvme-rdma"));
            if kernel && !has(&w, "--dry-run") {
                w.push("--dry-run".into());
            }
            for (flag, value) in [
                ("--runtime", "200ms"),
                ("--ramp", "0s"),
                ("--size", "32m"),
                ("--breakdown", "50"),
                ("--rates", "50"),
                ("--mixes", "100"),
                ("--qd", "2"),
            ] {
                let keep = matches!(flag, "--mixes" | "--qd") && has(&w, flag);
                if !keep && !set(&mut w, flag, value) {
                    w.extend([flag.into(), value.into()]);
                }
            }
            // A database example (on the command line or in its plan file)
            // loads and runs a few hundred keys.
            if has(&w, "--db") || has(&w, "--plan") {
                for flag in ["--db-num", "--db-ops"] {
                    if !set(&mut w, flag, "300") {
                        w.extend([flag.into(), "300".into()]);
                    }
                }
            }
        }
        "serve" => {
            // NVMe over RDMA needs an RDMA device (tests/linux_vm/nvme_rdma_target.rs
            // runs it in a guest with soft-RoCE): here it only parses.
            let rdma = value_after(&w, "--protocol").is_some_and(|p| p == "nvme-rdma");
            if rdma && iolab::native::verbs::unavailable().is_some() {
                return None;
            }
            // An image the example names is made; the server stops by itself.
            if let Some(t) = value_after(&w, "-t") {
                let p = dir.join(t);
                if !p.exists() {
                    std::fs::write(&p, vec![0u8; 16 << 20]).unwrap();
                }
            }
            let on_dir = value_after(&w, "-t").is_some_and(|t| dir.join(t).is_dir());
            if !set(&mut w, "--size", "16m") && on_dir {
                w.extend(["--size".into(), "16m".into()]);
            }
            set(&mut w, "--time-limit", "500ms");
            if !has(&w, "--time-limit") {
                w.extend(["--time-limit".into(), "500ms".into()]);
            }
            if !has(&w, "--listen") {
                w.extend(["--listen".into(), "127.0.0.1:0".into()]);
            }
        }
        "oltp" => scaled_oltp(&mut w, servers)?,
        "trace" => {
            if !is_root() {
                return None;
            }
            if !set(&mut w, "--runtime", "300ms") {
                w.extend(["--runtime".into(), "300ms".into()]);
            }
            if !set(&mut w, "--size", "16M") {
                w.extend(["--size".into(), "16M".into()]);
            }
            if !has(&w, "--dir") && !has(&w, "--target") {
                w.extend(["--target".into(), d.clone()]);
            }
        }
        _ => {}
    }
    Some(w)
}

/// A server engine's example (kv or oltp): its target moved where the
/// server's user can enter; `None` (parse only) for a server of someone
/// else's (`--server-url`), a server that is not installed or a kind
/// already run once by this test. `Some(false)`:
/// not a server engine.
fn private_server_target(w: &mut Vec<String>, servers: &Path) -> Option<bool> {
    use iolab::servers::{private, ServerKind};
    let (kind, program) = match value_after(w, "--engine") {
        Some("postgres") => (ServerKind::Postgres, "postgres"),
        Some("mariadb") => (ServerKind::Mariadb, "mariadbd"),
        Some("redis") => (ServerKind::Redis, "redis-server"),
        Some("mongodb") => (ServerKind::Mongodb, "ferretdb"),
        _ => return Some(false),
    };
    if has(w, "--server-url") {
        return None;
    }
    private::find_program(kind, program)?;
    // One run per verb and server kind: a private server's start and load
    // cost seconds each (tests/kv_servers.rs and tests/oltp_servers.rs
    // cover them); the other examples are parsed only.
    static RAN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let key = format!("{} {}", w.first().map_or("", String::as_str), kind.name());
    let mut ran = RAN.lock().unwrap_or_else(|e| e.into_inner());
    if ran.contains(&key) {
        return None;
    }
    ran.push(key);
    let target = servers.display().to_string();
    if !set(w, "-t", &target) && !set(w, "--target", &target) {
        w.extend(["-t".into(), target]);
    }
    Some(true)
}

/// An oltp example: one warehouse, one user, a 1 s point; a private
/// server's target moved where its user can enter, SQLite's made; `None` (parse only)
/// for a server of someone else's (`--server-url`), a kept database
/// (`--db`), a server that is not installed or a media run of servers.
fn scaled_oltp(w: &mut Vec<String>, servers: &Path) -> Option<()> {
    if has(w, "--server-url") || has(w, "--db") {
        return None;
    }
    // A media run of servers (several targets, --make): tests/oltp_media.rs.
    let targets = w.iter().filter(|a| *a == "-t" || *a == "--target").count();
    if (targets > 1 || has(w, "--make"))
        && value_after(w, "--engine").is_some_and(|e| e != "sqlite")
    {
        return None;
    }
    let private = private_server_target(w, servers)?;
    if let Some(t) = value_after(w, "-t").or(value_after(w, "--target")) {
        if !private {
            // A target moved into the page's directory (/mnt/sata -> DIR/sata).
            std::fs::create_dir_all(t).unwrap();
        }
    }
    // `--runtime` and its alias `--time`: whichever the example spells.
    if !set(w, "--time", "1s") && !set(w, "--runtime", "1s") {
        w.extend(["--runtime".into(), "1s".into()]);
    }
    for (flag, value) in [("-w", "1"), ("--users", "1"), ("--ramp", "0s")] {
        if !set(w, flag, value) {
            w.extend([flag.into(), value.into()]);
        }
    }
    Some(())
}

/// Inputs an example reads (results files, fio output): made from the
/// fixtures under the names it uses.
fn provide_inputs(words: &[String], dir: &Path) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let verb = words.get(1).map(String::as_str).unwrap_or("");
    if !matches!(verb, "report" | "compare") {
        return;
    }
    let mut skip = false;
    for a in &words[2..] {
        if skip {
            skip = false;
            continue;
        }
        if a.starts_with('-') {
            skip = matches!(
                a.as_str(),
                "-o" | "--output" | "--html" | "--format" | "--metric" | "--by" | "--export"
            );
            continue;
        }
        if a.ends_with('/') {
            std::fs::create_dir_all(dir.join(a)).unwrap();
            continue;
        }
        let dest = dir.join(a);
        if !a.ends_with(".json") || dest.exists() {
            continue;
        }
        let src = if a.contains("fio") {
            fixtures.join("fio/numjobs2-jsonplus.json")
        } else {
            fixtures.join("report/device-batching.json")
        };
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(src, dest).unwrap();
    }
}

fn all_examples() -> Vec<(String, Vec<Example>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        // Measurement commands of bench/ scripts, with shell variables.
        .filter(|p| !p.ends_with("benchmarks.md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut out: Vec<(String, Vec<Example>)> = pages
        .iter()
        .map(|p| (p.display().to_string(), markdown_examples(p)))
        .collect();
    for verb in [
        "run", "device", "kv", "oltp", "trace", "report", "compare", "sysinfo", "remote", "serve",
    ] {
        out.push((format!("{verb} --help"), help_examples(verb)));
    }
    out
}

/// What an example runs, for running each once: its words, but for an
/// OLTP example without where its results and its databases go, and with
/// `--time` spelled `--runtime` (the same load and run, seconds each).
fn what_it_runs(args: &[String]) -> String {
    if args.first().is_none_or(|v| v != "oltp") {
        return args.join(" ");
    }
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        match a.as_str() {
            "-o" | "--output" | "--json" => skip = true,
            // How many targets counts (a media run), not where.
            "-t" | "--target" => {
                out.push("-t");
                skip = true;
            }
            "--time" => out.push("--runtime"),
            a => out.push(a),
        }
    }
    out.join(" ")
}

/// What one page's examples gave: failures, and how many ran.
struct PageOutcome {
    failures: Vec<String>,
    ran: usize,
}

/// Run one page's examples in order, in a directory of its own; an
/// example already run (by any page: `seen`) only parses.
fn run_page(
    list: &[Example],
    servers: &Path,
    seen: &std::sync::Mutex<std::collections::HashSet<String>>,
) -> PageOutcome {
    let mut out = PageOutcome {
        failures: Vec::new(),
        ran: 0,
    };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
        dir.path().join("examples"),
    )
    .unwrap();
    for ex in list {
        if let Err(e) = iolab::cli::Cli::try_parse_args(&ex.words) {
            out.failures
                .push(format!("{}: {:?} does not parse: {e}", ex.origin, ex.words));
            continue;
        }
        let Some(args) = scaled(&ex.words, dir.path(), servers) else {
            continue;
        };
        let same = what_it_runs(&args)
            .replace(&dir.path().display().to_string(), "DIR")
            .replace(&servers.display().to_string(), "SERVERS");
        if !seen.lock().unwrap().insert(same) {
            continue;
        }
        provide_inputs(&ex.words, dir.path());
        // A bound on each: an example that hangs is a failure, not a stuck suite.
        let t0 = std::time::Instant::now();
        let o = Command::new("timeout")
            .arg("--signal=INT")
            .arg("--kill-after=10")
            .arg("60")
            .arg(env!("CARGO_BIN_EXE_iolab"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        eprintln!(
            "{:6.1}s  iolab {}",
            t0.elapsed().as_secs_f64(),
            args.join(" ")
        );
        out.ran += 1;
        if !o.status.success() {
            out.failures.push(format!(
                "{}: iolab {} exited {:?}:\n{}",
                ex.origin,
                args.join(" "),
                o.status.code(),
                text(&o)
            ));
        }
    }
    out
}

/// Pages run four at a time (each page's examples in order; many wait on
/// short runtimes and servers, not the CPUs): the suite's longest test,
/// 206 s one page at a time per core, 122 s three at a time, 110 s four.
const PAGES_AT_ONCE: usize = 4;

#[test]
fn every_readme_docs_and_help_example_parses_and_runs() {
    let examples = all_examples();
    let total: usize = examples.iter().map(|(_, v)| v.len()).sum();
    assert!(total >= 60, "found only {total} examples");
    // Private servers run as their own user, which must reach their data.
    let servers = tempfile::tempdir_in("/var/tmp").unwrap();
    // An example repeated on several pages runs once (its later copies parse).
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    let outcomes = common::each_at_once(&examples, PAGES_AT_ONCE, |(page, list)| {
        let t0 = std::time::Instant::now();
        let outcome = run_page(list, servers.path(), &seen);
        eprintln!("{:6.1}s  page {page}", t0.elapsed().as_secs_f64());
        outcome
    });
    let failures: Vec<String> = outcomes.iter().flat_map(|o| o.failures.clone()).collect();
    let ran: usize = outcomes.iter().map(|o| o.ran).sum();
    assert!(
        failures.is_empty(),
        "{} of {total} examples failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(ran >= 40, "only {ran} examples ran");
}
