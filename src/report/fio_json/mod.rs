//! fio interoperability: read fio's JSON output (`--output-format=json`,
//! `json+` with latency bins, several jobs, client/server `client_stats`)
//! into the iolab results model, and write iolab results in fio's JSON
//! shape (jobs[] with read/write/trim/sync sections, slat/clat/lat_ns with
//! fio-style percentile keys and json+ `bins`) for fio-plot and
//! fio_jsonplus_clat2csv.

pub mod export;

use std::collections::BTreeMap;

use anyhow::{anyhow, Context};
use serde_json::{json, Map, Value};

use crate::measure::histogram::{LatStats, LatencyHistogram};
use crate::measure::rusage::CpuStats;
use crate::plan::fiojob::{option_bytes, option_ns};
use crate::plan::parse::format_size;
use crate::results::ext::FIO_CLAT_ONLY;
use crate::results::{OpStats, Point, Provenance, Results, SeriesPoint, Totals};

/// fio JSON (possibly after fio's own notes on stdout) rather than iolab's.
pub fn looks_like_fio(text: &str) -> bool {
    let head: String = text.chars().take(4096).collect();
    head.contains("\"fio version\"")
}

/// Parse fio output text: skips anything before the first `{` (fio prints
/// notes such as "note: both iodepth >= 1 and synchronous I/O engine" there).
pub fn from_fio_text(text: &str) -> anyhow::Result<Results> {
    let start = text
        .find('{')
        .ok_or_else(|| anyhow!("no JSON object found"))?;
    let v: Value = serde_json::from_str(&text[start..]).context("fio output is not valid JSON")?;
    from_fio(&v)
}

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0)
}

fn u(v: &Value, k: &str) -> u64 {
    v.get(k)
        .and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f as u64)))
        .unwrap_or(0)
}

fn opt_str(opts: &Map<String, Value>, k: &str) -> Option<String> {
    opts.get(k).and_then(|x| x.as_str()).map(|s| s.to_string())
}

/// fio's latency object -> LatStats (None when it holds no samples).
fn lat_stats(v: Option<&Value>) -> Option<LatStats> {
    let v = v?;
    let n = u(v, "N");
    if n == 0 {
        return None;
    }
    let mut percentiles_ns = BTreeMap::new();
    if let Some(p) = v.get("percentile").and_then(|p| p.as_object()) {
        for (k, x) in p {
            if let (Ok(q), Some(ns)) = (k.parse::<f64>(), x.as_u64()) {
                percentiles_ns.insert(crate::measure::histogram::percentile_key(q), ns);
            }
        }
    }
    Some(LatStats {
        n,
        min_ns: u(v, "min"),
        max_ns: u(v, "max"),
        mean_ns: f(v, "mean"),
        stdev_ns: f(v, "stddev"),
        percentiles_ns,
    })
}

/// json+ bins ({"ns": count}) -> an encoded HDR histogram.
fn bins_histogram(v: Option<&Value>) -> Option<String> {
    let bins = v?.get("bins")?.as_object()?;
    if bins.is_empty() {
        return None;
    }
    let mut h = LatencyHistogram::new();
    for (k, c) in bins {
        let (Ok(ns), Some(c)) = (k.parse::<u64>(), c.as_u64()) else {
            continue;
        };
        // One call per bin: a file's count is not a loop bound (a mangled
        // count of 2^64 - 1 recorded one at a time would never end).
        h.record_n(ns, c);
    }
    Some(h.encode())
}

fn norm_engine(e: &str) -> String {
    match e {
        "libaio" => "aio".into(),
        "sync" | "psync" | "pvsync" | "vsync" => "psync".into(),
        other => other.into(),
    }
}

fn norm_rw(rw: &str) -> String {
    // fio allows "randread:8" style offsets modifiers.
    let base = rw.split(':').next().unwrap_or(rw);
    match base {
        "rw" => "readwrite".into(),
        other => other.into(),
    }
}

/// fio's `bssplit` ("4k/70:64k/30", read set first) in iolab's split
/// syntax ("4k:70,64k:30"), so a fio run and iolab's run of the same job
/// file have the same `bs` parameter.
fn norm_bssplit(split: &str) -> Option<String> {
    let read_set = split.split(',').next()?;
    let parts: Option<Vec<String>> = read_set
        .split(':')
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (size, pct) = e.split_once('/')?;
            let size = option_bytes(size)?;
            Some(format!("{}:{}", format_size(size), pct.trim()))
        })
        .collect();
    parts.filter(|v| !v.is_empty()).map(|v| v.join(","))
}

fn norm_bs(bs: &str) -> String {
    // "4k", "4096", "4k-16k", "4k,8k" -> first read size, iolab style.
    let first = bs.split([',', '-', ':']).next().unwrap_or(bs);
    option_bytes(first)
        .map(format_size)
        .unwrap_or_else(|| bs.to_string())
}

/// Params in iolab's vocabulary, from global + job options.
fn params_of(opts: &Map<String, Value>) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    let rw = opt_str(opts, "rw")
        .or_else(|| opt_str(opts, "readwrite"))
        .unwrap_or_else(|| "read".into());
    let rw = norm_rw(&rw);
    if rw == "readwrite" || rw == "randrw" {
        p.insert(
            "mix".into(),
            opt_str(opts, "rwmixread").unwrap_or_else(|| "50".into()),
        );
    }
    p.insert("rw".into(), rw);
    let bs = opt_str(opts, "bssplit")
        .and_then(|s| norm_bssplit(&s))
        .unwrap_or_else(|| {
            norm_bs(
                &opt_str(opts, "bs")
                    .or_else(|| opt_str(opts, "blocksize"))
                    .unwrap_or_else(|| "4k".into()),
            )
        });
    p.insert("bs".into(), bs);
    p.insert(
        "qd".into(),
        opt_str(opts, "iodepth").unwrap_or_else(|| "1".into()),
    );
    p.insert(
        "jobs".into(),
        opt_str(opts, "numjobs").unwrap_or_else(|| "1".into()),
    );
    p.insert(
        "engine".into(),
        norm_engine(&opt_str(opts, "ioengine").unwrap_or_else(|| "psync".into())),
    );
    if let Some((rate, arrival)) = open_loop_params(opts) {
        p.insert("rate".into(), rate);
        p.insert("arrival".into(), arrival.into());
    }
    p
}

/// `rate` and `arrival` as iolab's own run of the job file records them:
/// fio's `rate_iops` is per job clone, iolab's `rate` is the total over all
/// `numjobs` clones (docs/device.md), so one job file pairs in `compare`.
fn open_loop_params(opts: &Map<String, Value>) -> Option<(String, &'static str)> {
    let per_clone: f64 = opt_str(opts, "rate_iops")?
        .split(',')
        .next()?
        .trim()
        .parse()
        .ok()
        .filter(|r: &f64| r.is_finite() && *r > 0.0)?;
    let jobs: f64 = opt_str(opts, "numjobs")
        .and_then(|n| n.trim().parse().ok())
        .filter(|&n: &f64| n >= 1.0)
        .unwrap_or(1.0);
    let arrival = match opt_str(opts, "rate_process").as_deref() {
        Some("poisson") => "poisson",
        _ => "uniform",
    };
    Some((format!("{:.0}", per_clone * jobs), arrival))
}

fn job_point(job: &Value, global: &Map<String, Value>) -> Point {
    let mut opts = global.clone();
    if let Some(o) = job.get("job options").and_then(|o| o.as_object()) {
        for (k, v) in o {
            opts.insert(k.clone(), v.clone());
        }
    }
    let mut name = job
        .get("jobname")
        .and_then(|n| n.as_str())
        .unwrap_or("fio-job")
        .to_string();
    if let Some(h) = job.get("hostname").and_then(|h| h.as_str()) {
        name = format!("{name}@{h}");
    }
    // Each direction's runtime is the job's wall time; job_runtime is summed
    // over the jobs of a group_reporting group (4 s for two 2 s jobs).
    let dir_ms = ["read", "write", "trim"]
        .iter()
        .map(|d| job.get(*d).map(|s| u(s, "runtime")).unwrap_or(0))
        .max()
        .unwrap_or(0);
    let runtime_ms = if dir_ms > 0 {
        dir_ms
    } else {
        u(job, "job_runtime")
    };
    let mut ops = BTreeMap::new();
    let mut histograms = BTreeMap::new();
    let mut total = Totals::default();
    let mut clat_pct = false;
    for dir in ["read", "write", "trim"] {
        let Some(s) = job.get(dir) else { continue };
        let n = u(s, "total_ios");
        if n == 0 && u(s, "io_bytes") == 0 {
            continue;
        }
        for lat in ["slat", "clat", "lat"] {
            if let Some(h) = bins_histogram(s.get(format!("{lat}_ns").as_str())) {
                histograms.insert(format!("{dir}.{lat}"), h);
            }
        }
        let clat = lat_stats(s.get("clat_ns"));
        let mut lat = lat_stats(s.get("lat_ns"));
        if let (Some(l), Some(c)) = (lat.as_mut(), clat.as_ref()) {
            if l.percentiles_ns.is_empty() && !c.percentiles_ns.is_empty() {
                l.percentiles_ns = c.percentiles_ns.clone();
                clat_pct = true;
            }
        }
        let o = OpStats {
            ops: n,
            bytes: u(s, "io_bytes"),
            iops: f(s, "iops"),
            mib_s: f(s, "bw_bytes") / (1 << 20) as f64,
            slat: lat_stats(s.get("slat_ns")),
            clat,
            lat,
        };
        total.ops = total.ops.saturating_add(o.ops);
        total.bytes = total.bytes.saturating_add(o.bytes);
        total.iops += o.iops;
        total.mib_s += o.mib_s;
        ops.insert(dir.to_string(), o);
    }
    if let Some(s) = job.get("sync").filter(|s| u(s, "total_ios") > 0) {
        ops.insert(
            "fsync".into(),
            OpStats {
                ops: u(s, "total_ios"),
                bytes: 0,
                iops: u(s, "total_ios") as f64 / (runtime_ms.max(1) as f64 / 1e3),
                mib_s: 0.0,
                slat: None,
                clat: None,
                lat: lat_stats(s.get("lat_ns")),
            },
        );
    }
    let wall_ns = runtime_ms.saturating_mul(1_000_000);
    // fio's usr_cpu/sys_cpu are CPU time over job_runtime: for a
    // group_reporting group, the mean per job. Scaled to the group's wall
    // time they are a share of one CPU, like iolab's process CPU.
    let per_job = if dir_ms > 0 {
        (u(job, "job_runtime") as f64 / dir_ms as f64)
            .round()
            .max(1.0)
    } else {
        1.0
    };
    let (usr, sys) = (f(job, "usr_cpu") * per_job, f(job, "sys_cpu") * per_job);
    let cpu = CpuStats {
        wall_ns,
        user_ns: (usr / 100.0 * wall_ns as f64) as u64,
        sys_ns: (sys / 100.0 * wall_ns as f64) as u64,
        usr_pct: usr,
        sys_pct: sys,
        ctx_voluntary: u(job, "ctx"),
        major_faults: u(job, "majf"),
        minor_faults: u(job, "minf"),
        ..Default::default()
    };
    let mut warnings = Vec::new();
    if u(job, "error") != 0 {
        warnings.push(format!(
            "fio reported error {} for this job",
            u(job, "error")
        ));
    }
    if clat_pct {
        warnings.push(format!("{FIO_CLAT_ONLY}: the total-latency percentiles shown are clat's (run fio with --lat_percentiles=1 for total latency)"));
    }
    let mut extra = crate::results::PointExt::default();
    extra.insert(
        "fio".into(),
        json!({ "jobname": job.get("jobname"), "hostname": job.get("hostname"), "job options": job.get("job options") }),
    );
    Point {
        name,
        job: None,
        pass: None,
        params: params_of(&opts),
        started_at: String::new(),
        duration_ns: wall_ns,
        ramp_ns: opts
            .get("ramp_time")
            .and_then(|r| r.as_str())
            .and_then(option_ns)
            .unwrap_or(0),
        direct: opt_str(&opts, "direct").as_deref() == Some("1"),
        ops,
        total,
        batch: None,
        cpu,
        device: None,
        series: Vec::<SeriesPoint>::new(),
        verify: None,
        errors: BTreeMap::new(),
        warnings,
        histograms,
        extra,
    }
}

/// Convert parsed fio JSON into iolab results (kind "fio").
pub fn from_fio(v: &Value) -> anyhow::Result<Results> {
    let version = v
        .get("fio version")
        .and_then(|x| x.as_str())
        .ok_or_else(|| anyhow!("not fio JSON output (no \"fio version\")"))?;
    let jobs = v
        .get("jobs")
        .or_else(|| v.get("client_stats"))
        .and_then(|j| j.as_array())
        .ok_or_else(|| anyhow!("fio JSON without jobs or client_stats"))?;
    let global = v
        .get("global options")
        .and_then(|g| g.as_object())
        .cloned()
        .unwrap_or_default();
    let mut prov = Provenance::minimal();
    prov.tools.insert("fio".into(), version.to_string());
    if let Some(ts) = v.get("timestamp").and_then(|t| t.as_u64()) {
        prov.started_at = crate::results::time::rfc3339(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(ts),
        );
    }
    let mut r = Results::new("fio", prov);
    let mut keyed = Vec::new();
    for j in jobs {
        // Client/server output adds an "All clients" aggregate: keep the per-host jobs.
        if j.get("jobname").and_then(|n| n.as_str()) == Some("All clients") {
            continue;
        }
        keyed.push((clones::key(j), job_point(j, &global)));
    }
    r.points = clones::merge(keyed);
    let hosts: Vec<String> = jobs
        .iter()
        .filter_map(|j| j.get("hostname").and_then(|h| h.as_str()).map(String::from))
        .collect();
    if let Some(h) = hosts.first() {
        r.provenance.hostname = h.clone();
    }
    r.complete = true;
    r.ensure_analysis();
    Ok(r)
}

pub use export::{to_fio_json, to_fio_json_files};

mod clones;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_fio_notes_before_the_json() {
        let text = "note: both iodepth >= 1 and synchronous I/O engine are selected\n{\"fio version\": \"fio-3.33\", \"jobs\": [{\"jobname\": \"j\", \"job options\": {\"rw\": \"randwrite\", \"bs\": \"4096\"}, \"read\": {\"total_ios\": 0}, \"write\": {\"total_ios\": 10, \"io_bytes\": 40960, \"iops\": 10.0, \"bw_bytes\": 40960, \"lat_ns\": {\"N\": 10, \"min\": 1000, \"max\": 3000, \"mean\": 2000.0, \"stddev\": 10.0}}, \"job_runtime\": 1000}]}";
        assert!(looks_like_fio(text));
        let r = from_fio_text(text).unwrap();
        let p = &r.points[0];
        assert_eq!(p.params["rw"], "randwrite");
        assert_eq!(p.params["bs"], "4k");
        assert_eq!(p.params["engine"], "psync");
        assert_eq!(p.ops["write"].ops, 10);
        assert_eq!(p.ops["write"].lat.as_ref().unwrap().mean_ns, 2000.0);
        assert_eq!(p.duration_ns, 1_000_000_000);
        assert_eq!(r.provenance.tools["fio"], "fio-3.33");
        assert!(from_fio_text("no json here").is_err());
        assert!(from_fio_text("{\"fio version\": \"x\"}").is_err());
    }

    /// Item 4 of issue 44: one job file, two paths, one `rate`.
    #[test]
    fn rate_iops_is_the_total_over_numjobs_as_in_iolabs_own_run() {
        let jobfile = "[j]\nrw=randread\nbs=4k\nnumjobs=2\nrate_iops=1000\nruntime=1s\nsize=16m\n";
        let spec = &crate::plan::fiojob::parse_fio_job(jobfile).unwrap()[0];
        let own = crate::runner::point::params_of(spec);
        let fio = "{\"fio version\": \"fio-3.33\", \"jobs\": [{\"jobname\": \"j\", \"job options\": {\"rw\": \"randread\", \"bs\": \"4k\", \"numjobs\": \"2\", \"rate_iops\": \"1000\"}, \"read\": {\"total_ios\": 2000, \"io_bytes\": 8192000, \"iops\": 2000.0}, \"write\": {\"total_ios\": 0}, \"job_runtime\": 2000}]}";
        let imported = &from_fio_text(fio).unwrap().points[0].params;
        assert_eq!(own["rate"], "2000");
        for k in ["rate", "arrival", "rw", "bs", "jobs"] {
            assert_eq!(imported.get(k), own.get(k), "param {k}");
        }
        let poisson = fio.replace("\"numjobs\": \"2\"", "\"rate_process\": \"poisson\"");
        let p = &from_fio_text(&poisson).unwrap().points[0].params;
        assert_eq!(
            (p["rate"].as_str(), p["arrival"].as_str()),
            ("1000", "poisson")
        );
    }

    #[test]
    fn normalizes_fio_vocabulary() {
        assert_eq!(norm_bs("4096"), "4k");
        assert_eq!(norm_bs("4k-16k"), "4k");
        assert_eq!(norm_engine("libaio"), "aio");
        assert_eq!(norm_rw("randread:8"), "randread");
    }
}
