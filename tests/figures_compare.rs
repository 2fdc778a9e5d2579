//! Issue 44: every figure `compare` prints means one thing, taken from the
//! figure catalogue (src/figures/): oltp points compare on NOPM, TPM and
//! each transaction's p90 (never IOPS or MiB/s); kv latencies name their
//! operation type; fio's completion-latency percentiles say so and pair
//! with iolab's; figures that are no score are never shaded better or
//! worse; an empty selection and an empty match are said.

use std::path::Path;
use std::process::Output;

mod common;
use common::{iolab, text};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
        .display()
        .to_string()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", text(o));
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// Item 1 (the blocker): two oltp runs compared showed transactions/s as
/// IOPS, "MiB/s 0", "avg block 0 B" and no NOPM; `--metric nopm` was
/// refused and `--metric mean,p99` printed an empty table with exit 0.
#[test]
fn oltp_runs_compare_on_nopm_tpm_and_transaction_latency() {
    let f = fixture("oltp-postgres.json");
    let t = stdout(&iolab(&["compare", &f, &f]));
    for want in ["NOPM", "TPM", "new_order p90 lat", "delivery p90 lat"] {
        assert!(t.contains(want), "{want} missing:\n{t}");
    }
    for never in ["IOPS", "MiB/s", "avg block", "in flight"] {
        assert!(!t.contains(never), "{never} on oltp points:\n{t}");
    }
    let t = stdout(&iolab(&["compare", &f, &f, "--metric", "nopm"]));
    assert!(t.contains("NOPM") && t.contains("4950"), "{t}");
    let t = stdout(&iolab(&["compare", &f, &f, "--metric", "mean,p99"]));
    assert!(
        t.contains("new_order mean lat") && t.contains("payment p99 lat"),
        "{t}"
    );
    let o = iolab(&["compare", &f, &f, "--metric", "iops"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = text(&o);
    assert!(e.contains("--metric") && e.contains("nopm"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("c.html");
    stdout(&iolab(&[
        "compare",
        &f,
        &f,
        "--html",
        html.to_str().unwrap(),
    ]));
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("NOPM relative to"), "no NOPM chart");
    assert!(!h.contains("MiB/s relative"), "a MiB/s chart for oltp");
    assert!(!h.contains("avg block"), "an avg block chart for oltp");
}

/// Item 2: a mixed kv phase's "mean lat" was the reads' beside the
/// throughput of all operations, and load phases had no latency.
#[test]
fn kv_latencies_are_per_operation_type_and_loads_have_theirs() {
    let f = fixture("kv-ycsb-rocksdb.json");
    let t = stdout(&iolab(&["compare", &f, &f]));
    for want in [
        "ops/s",
        "read mean lat",
        "update mean lat",
        "update p99 lat",
        "insert mean lat",
    ] {
        assert!(t.contains(want), "{want} missing:\n{t}");
    }
    assert!(!t.contains("IOPS"), "kv throughput is ops/s:\n{t}");
    // The YCSB-A run's update mean is its own (16.4us), not the reads'.
    let update = t
        .lines()
        .find(|l| l.contains("ycsb-a") && l.contains("update mean lat"))
        .unwrap();
    assert!(update.contains("16.4us"), "{update}");
}

/// Item 3: a fio file's "p99 lat" was its clat p99, unsaid; it now says
/// so and iolab's point is compared on its clat too (like with like).
#[test]
fn fio_completion_percentiles_are_labelled_and_paired_like_with_like() {
    let o = iolab(&[
        "compare",
        &fixture("run-standard.json"),
        &fixture("fio-randread.json"),
        "--by",
        "rw,bs,qd",
        "--metric",
        "p99",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["point"].as_str().unwrap().contains("randread 4k qd8"))
        .expect("the qd8 point matched");
    assert_eq!(row["basis"], "clat", "{row}");
    assert_eq!(row["metric"], "read p99 lat (clat)");
    assert!(
        row["cells"][0].is_object() && row["cells"][1].is_object(),
        "both sides' clat: {row}"
    );
    let t = stdout(&iolab(&[
        "compare",
        &fixture("fio-randread.json"),
        &fixture("fio-randread.json"),
    ]));
    assert!(t.contains("read p99 lat (clat)"), "{t}");
    assert!(t.contains("clat: from submission to completion"), "{t}");
}

/// Item 12 (compare): avg block and in-flight are no scores: never
/// "(higher is better)", never shaded as a gain or a loss.
#[test]
fn figures_that_are_no_score_are_neither_better_nor_worse() {
    let a = fixture("device-loadlat.json");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("c.html");
    stdout(&iolab(&[
        "compare",
        &a,
        &fixture("run-standard.json"),
        "--by",
        "rw,bs",
        "--html",
        html.to_str().unwrap(),
    ]));
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("IOPS / "), "{h}");
    assert!(
        !h.contains("avg block / device-loadlat's (higher"),
        "avg block scored"
    );
    assert!(!h.contains("in flight (IOPS x mean lat) / device-loadlat's (higher"));
    for line in h
        .split("<tr>")
        .filter(|r| r.contains("avg block") || r.contains("in flight"))
    {
        assert!(
            !line.contains("class=\"up\"") && !line.contains("class=\"down\""),
            "shaded: {line}"
        );
    }
    let missing = h
        .split("<tr>")
        .flat_map(|r| r.split("</td>"))
        .filter(|c| c.ends_with(">-"))
        .find(|c| c.contains("class=\"up\"") || c.contains("class=\"down\""));
    assert!(missing.is_none(), "a missing cell shaded: {missing:?}");
}

/// Item 15: compare said nothing when nothing matched, and printed
/// latencies with one digit ("3us vs 5us -> 1.66x").
#[test]
fn an_empty_match_is_said_and_latencies_have_three_digits() {
    let t = stdout(&iolab(&[
        "compare",
        &fixture("kv-ycsb-rocksdb.json"),
        &fixture("kv-postgres.json"),
    ]));
    assert!(t.contains("nothing matched"), "{t}");
    let o = iolab(&[
        "compare",
        &fixture("kv-ycsb-rocksdb.json"),
        &fixture("kv-postgres.json"),
        "--fail-if-slower",
        "10",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a gate that checked nothing passed"
    );
    let f = fixture("kv-ycsb-rocksdb.json");
    let t = stdout(&iolab(&["compare", &f, &f, "--metric", "mean"]));
    // ycsb-c's read mean is 2.95us: three digits, not "3us".
    assert!(t.contains("2.95us"), "{t}");
}

/// Item 15: compare's `--help` named stale default metrics; it lists every
/// figure of the catalogue, and docs/report.md too.
#[test]
fn help_and_docs_name_every_figure() {
    let help = stdout(&iolab(&["compare", "--help"]));
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.md"))
        .unwrap();
    for d in iolab::figures::CATALOGUE {
        assert!(help.contains(d.key), "compare --help lacks {}", d.key);
        assert!(doc.contains(d.key), "docs/report.md lacks {}", d.key);
    }
}
