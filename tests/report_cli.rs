//! Integration tests of `iolab report` and `iolab compare` through the real
//! binary, on fixture results: iolab runs, a synthetic file with every
//! chart type, and fio 3.33 JSON outputs (json, json+ with two jobs,
//! client/server). Also the fio-json export read back by fio's own
//! fio_jsonplus_clat2csv, and results from an interrupted run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn iolab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .output()
        .expect("run iolab")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
        .display()
        .to_string()
}

fn workdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

const FIXTURES: [&str; 11] = [
    "trace-sample.json",
    "run-standard.json",
    "run-all-steps.json",
    "device-loadlat.json",
    "device-batching.json",
    "device-steady.json",
    "device-snia-iops.json",
    "synthetic-all.json",
    "fio-randread.json",
    "fio-jsonplus-2jobs.json",
    "fio-client.json",
];

/// The report must not load anything: no scripts, no external references.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"), "no scripts");
    assert!(!html.contains("<link"), "no external styles");
    assert!(!html.contains("src="), "no external sources");
    assert!(!html.contains("url("), "no CSS urls");
    assert!(!html.contains("href=\"http"), "no remote links");
    assert!(!html.contains("@import"));
}

#[test]
fn every_fixture_renders_as_html() {
    let dir = workdir();
    for f in FIXTURES {
        let out = dir.path().join(format!("{f}.html"));
        let o = iolab(&["report", &fixture(f), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{f}: {}", text(&o));
        let html = std::fs::read_to_string(&out).unwrap();
        assert_self_contained(&html);
        assert!(html.contains("<svg"), "{f}: no chart");
        assert!(html.contains("id=\"provenance\""), "{f}");
        assert!(html.contains("data:text/csv"), "{f}: no CSV download");
    }
}

#[test]
fn synthetic_fixture_has_every_chart_type() {
    let dir = workdir();
    let out = dir.path().join("all.html");
    let o = iolab(&[
        "report",
        &fixture("synthetic-all.json"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    for id in [
        "bs-sweep",
        "latency-per-block",
        "batching",
        "heat-map",
        "load-latency",
        "percentiles",
        "cdf",
        "kv-throughput",
        "kv-latency",
        "kv-readers",
        "kv-load",
        "breakdown",
        "steady-state",
        "time-series",
        "cpu",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{id}\"")),
            "missing {id}"
        );
    }
    assert!(html.contains("knee ~"), "load-latency knee marked");
    assert!(html.contains("ramp (not measured)"), "ramp shaded");
    assert!(html.contains("stroke-dasharray"), "writes dashed");
}

#[test]
fn text_markdown_and_csv_formats() {
    let f = fixture("run-standard.json");
    let o = iolab(&["report", &f, "--format", "text"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("randread-4k-qd1"));
    let o = iolab(&["report", &f, "--format", "markdown"]);
    let md = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        md.contains("## Summary") && md.contains("| point |"),
        "{md}"
    );
    let o = iolab(&["report", &f, "--format", "csv"]);
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("point,") && header.contains("lat_p99_ns"));
    assert_eq!(lines.count(), 21, "one row per point and op");
    let o = iolab(&["report", &f, "--format", "pdf"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--format"));
}

#[test]
fn bad_input_files_exit_2() {
    let dir = workdir();
    let p = dir.path().join("x.json");
    std::fs::write(&p, "{\"hello\": 1}").unwrap();
    let o = iolab(&["report", p.to_str().unwrap(), "--format", "text"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = iolab(&["report", "/nonexistent/results.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    std::fs::write(&p, "{\"fio version\": \"fio-3.33\"}").unwrap();
    let o = iolab(&["report", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn fio_json_is_converted_to_points() {
    let o = iolab(&[
        "report",
        &fixture("fio-jsonplus-2jobs.json"),
        "--format",
        "csv",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(csv.contains("rr,") && csv.contains("sw,"), "{csv}");
    assert!(
        csv.contains(",aio,") || csv.contains("aio"),
        "libaio -> aio"
    );
    assert!(csv.contains("randwrite") && csv.contains("16k"));
    let o = iolab(&["report", &fixture("fio-client.json"), "--format", "text"]);
    assert!(text(&o).contains("rr@127.0.0.1"), "{}", text(&o));
}

/// An interrupted run keeps its points and still renders, saying so.
#[test]
fn interrupted_results_render() {
    let dir = workdir();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("run-standard.json")).unwrap())
            .unwrap();
    v["points"].as_array_mut().unwrap().truncate(3);
    v["interrupted"] = serde_json::Value::Bool(true);
    v["complete"] = serde_json::Value::Bool(false);
    let p = dir.path().join("partial.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let out = dir.path().join("partial.html");
    let o = iolab(&["report", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("Interrupted run"));
    assert!(html.contains("3 point(s)"));
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
fn fio_json_export_reads_back_and_passes_fio_tools() {
    let dir = workdir();
    let out = dir.path().join("export.json");
    let o = iolab(&[
        "report",
        &fixture("run-standard.json"),
        "--export",
        "fio-json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 21);
    let j = &jobs[0];
    for d in ["read", "write", "trim"] {
        assert!(j[d]["clat_ns"].is_object(), "{d}");
    }
    assert!(
        j["read"]["lat_ns"]["percentile"]["99.000000"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(!j["read"]["lat_ns"]["bins"].as_object().unwrap().is_empty());
    let n: u64 = j["read"]["lat_ns"]["bins"]
        .as_object()
        .unwrap()
        .values()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(
        n,
        j["read"]["total_ios"].as_u64().unwrap(),
        "bins hold every request"
    );
    // iolab reads its own export as fio JSON.
    let o = iolab(&["report", out.to_str().unwrap(), "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 22);
    // Into a directory: one fio file per point (fio-plot's layout).
    let d = dir.path().join("per-point");
    std::fs::create_dir(&d).unwrap();
    let o = iolab(&[
        "report",
        &fixture("run-standard.json"),
        "--export",
        "fio-json",
        "-o",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let files: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert_eq!(files.len(), 21);
    assert!(d.join("001-randread-4k-iodepth-1-numjobs-1.json").exists());
    let one: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("001-randread-4k-iodepth-1-numjobs-1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(one["jobs"].as_array().unwrap().len(), 1);
    let buckets: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| one["jobs"][0][k].as_object().unwrap().values())
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!(
        (buckets - 100.0).abs() < 0.01,
        "latency buckets sum to {buckets}%"
    );
    // fio's own tool converts and validates the bins.
    let Some(tool) = clat2csv() else {
        eprintln!("SKIP fio_jsonplus_clat2csv: not installed (apt package fio)");
        return;
    };
    let csv = dir.path().join("clat.csv");
    for extra in [None, Some("--validate")] {
        let mut c = Command::new("python3");
        c.arg(&tool).arg(&out).arg(&csv);
        if let Some(e) = extra {
            c.arg(e);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        if extra.is_some() {
            assert!(String::from_utf8_lossy(&o.stdout).contains("validated"));
        }
    }
    assert!(dir.path().join("clat_job0.csv").exists());
}

#[test]
fn compare_matches_points_and_shows_ratios() {
    let dir = workdir();
    let html = dir.path().join("cmp.html");
    let o = iolab(&[
        "compare",
        &fixture("run-standard.json"),
        &fixture("synthetic-all.json"),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(t.contains("baseline: run-standard"), "{t}");
    assert!(
        t.contains("1.00x ~"),
        "identical points are inside the noise: {t}"
    );
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("<svg") && h.contains("class=\"noise\""));
    // The charts are ratios to the baseline with its line at 1 (absolute
    // values differing by decades hid the small bars), legends whole on hover.
    assert!(h.contains("relative to run-standard, per point"), "{h}");
    assert!(h.contains("class=\"reference\""), "no baseline line");
    assert!(h.contains("<title>synthetic-all</title>"), "no full legend");
}

#[test]
fn compare_iolab_with_fio_json() {
    // iolab's randread 4k qd8 (matrix step) against fio's randread 4k iodepth 8.
    let o = iolab(&[
        "compare",
        &fixture("run-standard.json"),
        &fixture("fio-randread.json"),
        "--by",
        "rw,bs,qd",
        "--metric",
        "iops,p99",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    let row = t
        .lines()
        .find(|l| l.contains("randread 4k qd8") && l.contains("IOPS"))
        .unwrap_or_else(|| panic!("no matched row: {t}"));
    assert!(row.contains('x'), "ratio shown: {row}");
    // Two fio files against each other, and bad metrics.
    let o = iolab(&[
        "compare",
        &fixture("fio-randread.json"),
        &fixture("fio-jsonplus-2jobs.json"),
        &fixture("fio-client.json"),
        "--by",
        "rw,bs",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = iolab(&[
        "compare",
        &fixture("fio-randread.json"),
        &fixture("fio-client.json"),
        "--metric",
        "speed",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn compare_rounds_show_spread_and_noise() {
    let dir = workdir();
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("fio-randread.json")).unwrap())
            .unwrap();
    // Three rounds of the same job in one file, IOPS 100, 110, 120; another
    // file with rounds 115, 125, 135 (overlapping) and one far away (300).
    let make = |name: &str, iops: &[f64]| -> String {
        let mut v = base.clone();
        let job = v["jobs"][0].clone();
        v["jobs"] = serde_json::Value::Array(
            iops.iter()
                .map(|&x| {
                    let mut j = job.clone();
                    j["read"]["iops"] = serde_json::json!(x);
                    j
                })
                .collect(),
        );
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        p.display().to_string()
    };
    let a = make("a.json", &[100.0, 110.0, 120.0]);
    let b = make("b.json", &[115.0, 125.0, 135.0]);
    let c = make("c.json", &[300.0, 310.0, 320.0]);
    let o = iolab(&["compare", &a, &b, &c, "--metric", "iops"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(t.contains("n=3"), "{t}");
    assert!(t.contains("1.14x ~"), "overlapping rounds are noise: {t}");
    assert!(t.contains("2.82x") && !t.contains("2.82x ~"), "{t}");
}

/// Real results files (from this machine, see tests/fixtures/report/README.md)
/// render the chart each was made for, with its data points.
#[test]
fn real_results_draw_their_charts() {
    let dir = workdir();
    for (f, id, min_points) in [
        ("device-loadlat.json", "load-latency", 6 * 5),
        ("device-batching.json", "batching", 8),
        ("device-steady.json", "steady-state", 3),
        ("device-snia-iops.json", "heat-map", 56),
        ("trace-sample.json", "breakdown", 5),
        ("run-all-steps.json", "load-latency", 6 * 5),
        ("run-all-steps.json", "batching", 6),
        ("run-all-steps.json", "breakdown", 5),
    ] {
        let out = dir.path().join(format!("{f}-{id}.html"));
        let o = iolab(&["report", &fixture(f), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{f}: {}", text(&o));
        let html = std::fs::read_to_string(&out).unwrap();
        let sec = html
            .split(&format!("<section id=\"{id}\""))
            .nth(1)
            .unwrap_or_else(|| panic!("{f}: no {id} section"));
        let sec = sec.split("</section>").next().unwrap();
        let n: usize = sec
            .split("data-points=\"")
            .skip(1)
            .filter_map(|t| t.split('"').next()?.parse::<usize>().ok())
            .sum();
        assert!(n >= min_points, "{f} {id}: {n} points");
        match id {
            "load-latency" => {
                assert!(sec.contains("(intended)") && sec.contains("(issue)"), "{f}");
                assert!(sec.contains("knee ~"), "{f}: knee not marked");
            }
            "batching" => {
                assert!(sec.contains("vs block size B"), "{f}: no speedup vs B");
                assert!(sec.contains("parallelism"), "{f}");
            }
            "steady-state" => {
                assert!(sec.contains("steady-state window") && sec.contains("110% of mean"));
            }
            _ => {}
        }
    }
}

/// The headlines show the analyses of a full run.
#[test]
fn run_summary_headlines_show_the_analyses() {
    let o = iolab(&[
        "report",
        &fixture("run-all-steps.json"),
        "--format",
        "markdown",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    for h in [
        "batching: effective parallelism",
        "load-latency knee",
        "stack breakdown",
    ] {
        assert!(t.contains(h), "{h} missing: {t}");
    }
}

/// Issue 31 item 4: an oltp results file said NOPM nowhere a reader looks:
/// "No headline numbers", transactions as IOPS, a MiB/s column of zeros,
/// iolab's own CPU as the only CPU.
#[test]
fn oltp_reports_lead_with_nopm_and_show_the_servers_cpu() {
    let f = fixture("oltp-postgres.json");
    let o = iolab(&["report", &f, "--format", "text"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("NOPM 4950  TPM 10920"), "{t}");
    assert!(
        t.contains("client (iolab's driver): CPU") && t.contains("server: CPU"),
        "{t}"
    );
    assert!(!t.contains("MiB/s"), "{t}");
    let dir = workdir();
    for (fmt, nopm_label) in [
        ("html", "NOPM (new orders per minute)"),
        ("markdown", "NOPM"),
    ] {
        let out = dir.path().join(format!("r.{fmt}"));
        let o = iolab(&["report", &f, "--format", fmt, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
        let doc = std::fs::read_to_string(&out).unwrap();
        assert!(doc.contains(nopm_label), "{fmt}");
        assert!(
            doc.contains("| TPM |") || doc.contains("<th>TPM</th>"),
            "{fmt}"
        );
        assert!(doc.contains("server CPU usr/sys %"), "{fmt}");
        assert!(!doc.contains("No headline numbers"), "{fmt}");
        assert!(
            !doc.contains("| MiB/s |"),
            "{fmt}: no MiB/s column of zeros"
        );
        if fmt == "html" {
            assert!(doc.contains("txn/s over time"));
            assert!(!doc.contains("Bandwidth over time"), "no chart of zeros");
        }
    }
}

/// Issue 31 item 3: compare showed IOPS only; it shows bandwidth, the
/// block size each side really issued, and the in-flight check (IOPS x
/// mean latency, to hold against the slots) for every side.
#[test]
fn compare_shows_bandwidth_block_size_and_the_in_flight_check() {
    let o = iolab(&[
        "compare",
        &fixture("run-standard.json"),
        &fixture("fio-randread.json"),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    for want in [
        "MiB/s",
        "avg block",
        "in flight (IOPS x mean lat)",
        "Little's law",
    ] {
        assert!(t.contains(want), "{want} missing: {t}");
    }
}
