//! Host groups (`iolab device --hosts @FILE.toml`) end to end, against
//! namespace hosts with their own sshd (tests/fleet_common): each host
//! runs its group's job and target, each group's row is its hosts merged
//! exactly beside the aggregate of all, a group's rate is shared over its
//! hosts, the views show the groups; and the refused files and verbs
//! (exit 2 naming the file, the group and the key, or --hosts). The lab
//! needs root, ip netns and sshd and skips otherwise; the refusals run
//! everywhere (nothing is contacted).

mod fleet_common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fleet_common::{load, text, Lab};
use iolab::measure::histogram::LatencyHistogram;
use iolab::results::ext::HostRow;
use iolab::results::{Point, Results};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

fn device(lab: &Lab, hosts: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(IOLAB);
    c.arg("device")
        .arg("--hosts")
        .arg(format!("@{}", hosts.display()))
        .arg("--ssh-config")
        .arg(&lab.ssh_config)
        .args(["--host-iolab", IOLAB, "--quiet"])
        .args(extra);
    c
}

/// Hosts 0 and 1 read, host 2 writes (`extra` adds keys to each group).
fn groups_file(lab: &Lab, readers: &str, writers: &str) -> std::path::PathBuf {
    let f = lab.dir.path().join("g.toml");
    let text = format!(
        "[[group]]\nname = \"readers\"\nhosts = [\"{}\", \"{}\"]\nrw = \"randread\"\n{readers}\n\
         [[group]]\nname = \"writers\"\nhosts = [\"{}\"]\nrw = \"randwrite\"\n{writers}\n",
        lab.hosts[0].addr, lab.hosts[1].addr, lab.hosts[2].addr
    );
    std::fs::write(&f, text).unwrap();
    f
}

fn count(encoded: &str) -> u64 {
    LatencyHistogram::decode(encoded).unwrap().len()
}

/// Every host ran its group's pattern; each group's row is its hosts'
/// points merged exactly (ops summed, histograms added) and the aggregate
/// is every host's.
fn assert_groups_exact(p: &Point) {
    let h = p.extra.hosts.as_ref().expect("a hosts section");
    assert_eq!(h.per_host.len(), 3, "{}", p.name);
    let in_group = |g: &str| -> Vec<&HostRow> {
        h.per_host
            .iter()
            .filter(|r| r.group.as_deref() == Some(g))
            .collect()
    };
    for (g, op, other) in [("readers", "read", "write"), ("writers", "write", "read")] {
        let hosts = in_group(g);
        assert_eq!(hosts.len(), if g == "readers" { 2 } else { 1 }, "{h:?}");
        for r in &hosts {
            assert!(
                r.per_op[op].ops > 0,
                "{} ran no {op}: {:?}",
                r.host,
                r.per_op
            );
            assert!(!r.per_op.contains_key(other), "{} ran {other}", r.host);
        }
        let row = h
            .groups
            .iter()
            .find(|r| r.host == format!("group {g}"))
            .unwrap_or_else(|| panic!("no row of group {g}: {:?}", h.groups));
        let sum: u64 = hosts.iter().map(|r| r.ops).sum();
        assert_eq!(row.ops, sum, "group {g}");
        assert_eq!(row.per_op[op].ops, sum, "group {g}");
        assert_eq!(
            count(&row.histograms[&format!("{op}.lat")]),
            sum,
            "group {g}"
        );
    }
    assert_eq!(h.groups.len(), 2);
    let all: u64 = h.per_host.iter().map(|r| r.ops).sum();
    assert_eq!(p.total.ops, all);
    assert_eq!(
        p.total.ops,
        h.groups.iter().map(|r| r.ops).sum::<u64>(),
        "the groups' rows add up to the aggregate"
    );
    for op in ["read", "write"] {
        assert_eq!(count(&p.histograms[&format!("{op}.lat")]), p.ops[op].ops);
    }
}

/// `iolab report` of `out` in `format`, read from a file beside it.
fn report(out: &Path, format: &str) -> String {
    let page = out.with_extension(format);
    let o = Command::new(IOLAB)
        .arg("report")
        .arg(out)
        .args(["--format", format, "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::read_to_string(&page).unwrap()
}

#[test]
fn two_groups_run_their_own_jobs_targets_and_rates_and_merge_exactly() {
    let Some(lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let (reads, writes) = (lab.dir.path().join("reads"), lab.dir.path().join("writes"));
    std::fs::create_dir_all(&reads).unwrap();
    std::fs::create_dir_all(&writes).unwrap();
    let g = groups_file(
        &lab,
        "bs = \"8k\"",
        &format!(
            "target = \"{}\"\nsize = \"4m\"\nnumjobs = 2",
            writes.display()
        ),
    );
    let out = lab.dir.path().join("groups.json");
    let o = device(
        &lab,
        &g,
        &["--engine", "psync", "--rw", "read", "--size", "8m"],
    )
    .args(["--runtime", "1s", "--target"])
    .arg(&reads)
    .arg("--json")
    .arg(&out)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = load(&out);
    assert_eq!(r.points.len(), 1);
    let p = &r.points[0];
    assert_groups_exact(p);
    let h = p.extra.hosts.as_ref().unwrap();
    // The readers' block size is their group's, the writers' the command line's.
    for row in &h.per_host {
        let per_op = row.per_op.values().next().unwrap();
        let bs = per_op.bytes / per_op.ops.max(1);
        let want = if row.group.as_deref() == Some("readers") {
            8192
        } else {
            4096
        };
        assert_eq!(bs, want, "{}", row.host);
    }
    let described = r.extra.hosts.as_ref().unwrap();
    assert!(described.groups.is_some(), "the groups in the provenance");
    // Each group's scratch file went where the group said, and went.
    assert_eq!(std::fs::read_dir(&reads).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(&writes).unwrap().count(), 0);
    // The views: the hosts' table (text) and the CSV carry the group rows
    // and each host's group.
    let shown = report(&out, "text");
    println!("{shown}");
    let writer = format!("{} [writers]", lab.hosts[2].addr);
    for want in ["group readers", "group writers", writer.as_str()] {
        assert!(shown.contains(want), "{want}: {shown}");
    }
    for format in ["csv", "markdown", "html"] {
        let page = report(&out, format);
        assert!(
            page.contains("group writers") && page.contains(&writer),
            "{format}: {page}"
        );
    }

    // Rates: the readers' 2,000 shared over their two hosts; the writers
    // keep the command line's rate, shared over every host (600 / 3).
    let g = groups_file(&lab, "rate = 2000", "");
    let out = lab.dir.path().join("rates.json");
    let o = device(
        &lab,
        &g,
        &["--engine", "null", "--qd", "4", "--rate", "600"],
    )
    .args(["--runtime", "1s", "--json"])
    .arg(&out)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r: Results = load(&out);
    let p = &r.points[0];
    assert_groups_exact(p);
    let h = p.extra.hosts.as_ref().unwrap();
    for row in &h.per_host {
        let want = if row.group.as_deref() == Some("readers") {
            1000.0
        } else {
            200.0
        };
        assert_eq!(row.offered_rate, Some(want), "{}", row.host);
    }
    assert_eq!(p.params["rate"], "600", "the command line's job");
    let left = lab.wait_quiet(Duration::from_secs(20));
    assert!(left.is_empty(), "left on the hosts: {left:?}");
}

/// Bad groups files and the verbs that do not run groups yet: exit 2
/// naming the file, the group and the key (or --hosts), before any host
/// is contacted.
#[test]
fn bad_groups_files_and_other_verbs_are_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let g = |name: &str, body: &str| {
        let f = dir.path().join(name);
        std::fs::write(&f, body).unwrap();
        format!("@{}", f.display())
    };
    let two = "[[group]]\nname = \"readers\"\nhosts = [\"h0\", \"h1\"]\nrw = \"randread\"\n\
               [[group]]\nname = \"writers\"\nhosts = [\"h2\"]\nrw = \"randwrite\"\n";
    let cases = [
        (
            g(
                "unknown.toml",
                "[[group]]\nname = \"r\"\nhosts = [\"h0\"]\ncolour = \"red\"\n",
            ),
            "unknown.toml: group r.colour",
        ),
        (
            g("twice.toml", &two.replace("\"h2\"", "\"h1\"")),
            "twice.toml: group writers.hosts",
        ),
        (
            g("empty.toml", "[[group]]\nname = \"r\"\nhosts = []\n"),
            "empty.toml: group r.hosts",
        ),
        (
            g("names.toml", &two.replace("writers", "readers")),
            "names.toml: group readers",
        ),
        (
            g(
                "depth.toml",
                &two.replace("rw = \"randwrite\"", "iodepth = 0"),
            ),
            "depth.toml: group writers.iodepth",
        ),
        (
            g("bs.toml", &two.replace("rw = \"randwrite\"", "bs = \"4q\"")),
            "bs.toml: group writers.bs",
        ),
    ];
    for (hosts, field) in &cases {
        let o = Command::new(IOLAB)
            .args([
                "device",
                "--engine",
                "null",
                "--runtime",
                "1s",
                "--hosts",
                hosts,
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{hosts}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(field), "{hosts}: {err}");
    }
    // A twice-named host's message names both groups.
    let o = Command::new(IOLAB)
        .args(["device", "--engine", "null", "--hosts", &cases[1].0])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("group readers") && err.contains("group writers"),
        "{err}"
    );
    // run and kv: a file of two groups is refused naming --hosts.
    let groups = g("two.toml", two);
    for args in [
        vec!["run", "/var/tmp", "--hosts", &groups, "--dry-run"],
        vec!["kv", "a", "--engine", "redb", "--hosts", &groups],
    ] {
        let o = Command::new(IOLAB).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--hosts") && err.contains("host groups are for device runs yet"),
            "{args:?}: {err}"
        );
    }
    // Two hosts of a group verifying on one export they share: refused
    // naming --verify, as without groups.
    let shared = g(
        "shared.toml",
        &two.replace(
            "rw = \"randread\"",
            "rw = \"randrw\"\ntarget = \"nbd://127.0.0.1:10809/\"",
        ),
    );
    let o = Command::new(IOLAB)
        .args(["device", "--rw", "randrw", "--verify", "--overwrite"])
        .args(["--target", "/var/tmp", "--hosts", &shared])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--verify") && err.contains("shared export"),
        "{err}"
    );
    // A dry run of device says each group's job and contacts nobody.
    let o = Command::new(IOLAB)
        .args([
            "device",
            "--engine",
            "null",
            "--dry-run",
            "--hosts",
            &groups,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("group writers: h2 rw=randwrite"), "{said}");
}
