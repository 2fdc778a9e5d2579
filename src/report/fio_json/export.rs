//! iolab results in fio's JSON shape: jobs[] with read/write/trim/sync
//! sections, slat/clat/lat_ns with fio-style percentile keys and json+
//! `bins` recovered from the HDR histograms, latency_ns/us/ms
//! distributions, CPU and context switches.

use crate::results::Param;
use serde_json::{json, Map, Value};

use crate::measure::histogram::{LatStats, LatencyHistogram};
use crate::results::output::is_stream;
use crate::results::{write_atomic, Point, Results};
use crate::session::export::Exporter;

/// fio's percentile key for a JSON map: 99.9 -> "99.900000".
fn lat_json(l: Option<&LatStats>, bins: Option<&String>) -> Value {
    let Some(l) = l else {
        return json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
    };
    let mut o = json!({
        "min": l.min_ns, "max": l.max_ns, "mean": l.mean_ns, "stddev": l.stdev_ns, "N": l.n,
    });
    if !l.percentiles_ns.is_empty() {
        o["percentile"] = json!(l.percentiles_ns);
    }
    if let Some(h) = bins.and_then(|b| LatencyHistogram::decode(b).ok()) {
        let total = h.len() as f64;
        let mut prev = 0u64;
        let mut map = Map::new();
        for (ns, frac) in h.cdf() {
            let cum = (frac * total).round() as u64;
            if cum > prev {
                map.insert(ns.to_string(), json!(cum - prev));
            }
            prev = cum;
        }
        if !map.is_empty() {
            o["bins"] = Value::Object(map);
        }
    }
    o
}

fn dir_json(p: &Point, dir: &str) -> Value {
    let ms = p.duration_ns / 1_000_000;
    let Some(o) = p.ops.get(dir) else {
        return json!({
            "io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0,
            "total_ios": 0, "short_ios": 0, "drop_ios": 0,
            "slat_ns": lat_json(None, None), "clat_ns": lat_json(None, None), "lat_ns": lat_json(None, None),
            "bw_min": 0, "bw_max": 0, "bw_agg": 0.0, "bw_mean": 0.0, "bw_dev": 0.0, "bw_samples": 0,
            "iops_min": 0, "iops_max": 0, "iops_mean": 0.0, "iops_stddev": 0.0, "iops_samples": 0
        });
    };
    let h = |k: &str| p.histograms.get(&format!("{dir}.{k}"));
    // Per-second samples scaled to this op's share of the total.
    let share = if p.total.iops > 0.0 {
        o.iops / p.total.iops
    } else {
        0.0
    };
    let series = crate::results::series::folded(&p.series);
    let iops: Vec<f64> = series.iter().map(|s| s.iops * share).collect();
    let bw: Vec<f64> = series.iter().map(|s| s.mib_s * share * 1024.0).collect();
    let stats = |v: &[f64]| -> (f64, f64, f64, f64) {
        if v.is_empty() {
            return (0.0, 0.0, 0.0, 0.0);
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(0.0, f64::max);
        (min, max, mean, var.sqrt())
    };
    let (bmin, bmax, bmean, bdev) = stats(&bw);
    let (imin, imax, imean, idev) = stats(&iops);
    json!({
        "io_bytes": o.bytes,
        "io_kbytes": o.bytes / 1024,
        "bw_bytes": (o.mib_s * (1 << 20) as f64) as u64,
        "bw": (o.mib_s * 1024.0) as u64,
        "iops": o.iops,
        "runtime": ms,
        "total_ios": o.ops,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": lat_json(o.slat.as_ref(), h("slat")),
        "clat_ns": lat_json(o.clat.as_ref().or(o.lat.as_ref()), h("clat").or_else(|| if o.clat.is_none() { h("lat") } else { None })),
        "lat_ns": lat_json(exported_lat(p, o).as_ref(), h("lat")),
        "bw_min": bmin as u64, "bw_max": bmax as u64, "bw_agg": 100.0, "bw_mean": bmean, "bw_dev": bdev, "bw_samples": bw.len(),
        "iops_min": imin as u64, "iops_max": imax as u64, "iops_mean": imean, "iops_stddev": idev, "iops_samples": iops.len()
    })
}

/// Total latency as exported: a point imported from fio run without
/// `--lat_percentiles` shows clat's percentiles as its total latency's (with
/// a warning); they are not written back as fio's lat percentiles.
fn exported_lat(p: &Point, o: &crate::results::OpStats) -> Option<LatStats> {
    let lat = o.lat.as_ref()?;
    let copied = p.extra.fio.is_some()
        && o.clat.as_ref().is_some_and(|c| {
            !c.percentiles_ns.is_empty() && c.percentiles_ns == lat.percentiles_ns
        });
    let mut lat = lat.clone();
    if copied {
        lat.percentiles_ns.clear();
    }
    Some(lat)
}

/// fio's latency distribution (`latency_ns`, `latency_us`, `latency_ms`):
/// the percentage of requests in each bucket, from the point's histograms.
fn latency_buckets(p: &Point) -> (Value, Value, Value) {
    let mut h: Option<LatencyHistogram> = None;
    for op in ["read", "write", "trim"] {
        // fio fills these from completion latency (clat); a synchronous
        // engine has none apart from its total latency.
        let enc = p
            .histograms
            .get(&format!("{op}.clat"))
            .or_else(|| p.histograms.get(&format!("{op}.lat")));
        if let Some(x) = enc.and_then(|e| LatencyHistogram::decode(e).ok()) {
            match h.as_mut() {
                Some(m) => m.merge(&x),
                None => h = Some(x),
            }
        }
    }
    const EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let cdf = h.map(|h| h.cdf()).unwrap_or_default();
    // Share of requests at or below `ns`.
    let below = |ns: u64| -> f64 {
        cdf.iter()
            .take_while(|(v, _)| *v <= ns)
            .last()
            .map(|(_, f)| *f)
            .unwrap_or(0.0)
    };
    let mut prev = 0.0;
    let mut bucket = |scale: u64, edges: &[u64]| -> Map<String, Value> {
        let mut m = Map::new();
        for &e in edges {
            let at = below(e * scale);
            m.insert(e.to_string(), json!(((at - prev) * 100.0).max(0.0)));
            prev = at;
        }
        m
    };
    let ns = bucket(1, &EDGES);
    let us = bucket(1_000, &EDGES);
    let mut ms = bucket(
        1_000_000,
        &[2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000],
    );
    ms.insert(">=2000".into(), json!(((1.0 - prev) * 100.0).max(0.0)));
    if cdf.is_empty() {
        ms.insert(">=2000".into(), json!(0.0));
    }
    (Value::Object(ns), Value::Object(us), Value::Object(ms))
}

/// One fio-shaped file per point, named so fio-plot's directory layout
/// works: `NNN-<rw>-<bs>-iodepth-<qd>-numjobs-<jobs>.json` (`batch-<k>`
/// instead of `iodepth-<qd>` for batched points).
pub fn to_fio_json_files(r: &Results) -> Vec<(String, Value)> {
    r.points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let one = Results {
                points: vec![p.clone()],
                ..r.clone()
            };
            let par = |k: Param, d: &str| p.param(k).unwrap_or(d).to_string();
            // Batched points say so: fio-plot would take them for QD points.
            let depth = match p.param(Param::Batch) {
                Some(k) => format!("batch-{k}"),
                None => format!("iodepth-{}", par(Param::Qd, "1")),
            };
            let name = format!(
                "{:03}-{}-{}-{depth}-numjobs-{}.json",
                i + 1,
                par(Param::Rw, "job"),
                par(Param::Bs, "bs"),
                par(Param::Jobs, "1")
            )
            .replace(['/', ' ', ':'], "_");
            (name, to_fio_json(&one))
        })
        .collect()
}

/// iolab results in fio's JSON shape (one fio job per point).
pub fn to_fio_json(r: &Results) -> Value {
    let mut doc = skeleton(r);
    doc["jobs"] = r
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| fio_job(p, i))
        .collect();
    doc
}

/// The document around the jobs (`jobs` empty).
fn skeleton(r: &Results) -> Value {
    let ts = chrono_free_epoch(&r.provenance.started_at);
    json!({
        "fio version": format!("iolab-{}", r.provenance.iolab_version),
        "timestamp": ts,
        "timestamp_ms": ts * 1000,
        "time": r.provenance.started_at,
        "global options": {},
        "jobs": [],
    })
}

/// Point `p` (the `i`th) as a fio job.
fn fio_job(p: &Point, i: usize) -> Value {
    let (lat_ns, lat_us, lat_ms) = latency_buckets(p);
    let par = |k: Param, d: &str| p.param(k).unwrap_or(d).to_string();
    let engine = match par(Param::Engine, "psync").as_str() {
        "aio" => "libaio".to_string(),
        e => e.to_string(),
    };
    let mut jo = json!({
        "name": p.name,
        "rw": par(Param::Rw, "read"),
        "bs": par(Param::Bs, "4k"),
        "iodepth": par(Param::Qd, "1"),
        "numjobs": par(Param::Jobs, "1"),
        "ioengine": engine,
        "direct": if p.direct { "1" } else { "0" },
        "runtime": format!("{}", p.duration_ns / 1_000_000_000),
    });
    if let Some(m) = p.param(Param::Mix) {
        jo["rwmixread"] = json!(m);
    }
    if let Some(k) = p.param(Param::Batch) {
        jo["iodepth_batch_submit"] = json!(k);
        jo["iodepth_batch_complete_min"] = json!(k);
    }
    if let Some(n) = p.job.as_ref().and_then(|j| j.numa_node) {
        jo["numa_cpu_nodes"] = json!(n.to_string());
    }
    if let Some(n) = p.job.as_ref().and_then(|j| j.buffer_node()) {
        jo["numa_mem_policy"] = json!(format!("bind:{n}"));
    }
    let fs = p.ops.get("fsync");
    json!({
        "jobname": p.name,
        "groupid": i,
        "error": 0,
        "eta": 0,
        "elapsed": p.duration_ns.saturating_add(p.ramp_ns) / 1_000_000_000,
        "job options": jo,
        "read": dir_json(p, "read"),
        "write": dir_json(p, "write"),
        "trim": dir_json(p, "trim"),
        "sync": {
            "total_ios": fs.map(|o| o.ops).unwrap_or(0),
            "lat_ns": lat_json(fs.and_then(|o| o.lat.as_ref()), p.histograms.get("fsync.lat")),
        },
        "job_runtime": p.duration_ns / 1_000_000,
        "usr_cpu": p.cpu.usr_pct,
        "sys_cpu": p.cpu.sys_pct,
        "ctx": p.cpu.ctx_voluntary.saturating_add(p.cpu.ctx_involuntary),
        "majf": p.cpu.major_faults,
        "minf": p.cpu.minor_faults,
        "latency_ns": lat_ns,
        "latency_us": lat_us,
        "latency_ms": lat_ms,
        "iolab": { "params": p.params },
    })
}

/// The fio-JSON export of a running job list, kept on disk after every
/// point at the cost of that point alone: the new job is written over the
/// document's closing lines, which are written again after it. The file is
/// byte for byte `to_fio_json` pretty-printed. (Rebuilding the whole export
/// per point cost minutes and hundreds of MB over a 200-point sweep.)
pub struct FioExportFile {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
    /// Bytes before the first job (through `"jobs": [`).
    head: String,
    /// Bytes after the last job's closing bracket (`,\n  "time": ...}`).
    tail: String,
    /// Where the jobs written so far end.
    jobs_end: u64,
    written: usize,
}

impl FioExportFile {
    pub fn new(path: std::path::PathBuf) -> FioExportFile {
        FioExportFile {
            path,
            file: None,
            head: String::new(),
            tail: String::new(),
            jobs_end: 0,
            written: 0,
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Bring the file up to `r`'s points (each point is written once: the
    /// jobs of points already written are not revisited).
    pub fn update(&mut self, r: &Results) -> anyhow::Result<()> {
        use std::io::{Seek, SeekFrom, Write};
        if self.file.is_none() {
            self.start(r)?;
        }
        let file = self.file.as_mut().expect("opened by start");
        if self.written >= r.points.len() {
            return Ok(());
        }
        let mut chunk = String::new();
        for (i, p) in r.points.iter().enumerate().skip(self.written) {
            chunk.push_str(if i == 0 { "\n" } else { ",\n" });
            let job = serde_json::to_string_pretty(&fio_job(p, i))?;
            for (n, line) in job.lines().enumerate() {
                if n > 0 {
                    chunk.push('\n');
                }
                chunk.push_str("    ");
                chunk.push_str(line);
            }
        }
        self.written = r.points.len();
        file.seek(SeekFrom::Start(self.jobs_end))?;
        file.write_all(chunk.as_bytes())?;
        self.jobs_end += chunk.len() as u64;
        let close = format!("\n  ]{}", self.tail);
        file.write_all(close.as_bytes())?;
        file.set_len(self.jobs_end + close.len() as u64)?;
        Ok(())
    }

    /// Write the document without jobs and remember where jobs go.
    fn start(&mut self, r: &Results) -> anyhow::Result<()> {
        use std::io::Write;
        let text = serde_json::to_string_pretty(&skeleton(r))?;
        let at = text
            .find("\"jobs\": []")
            .expect("the skeleton has an empty jobs array");
        self.head = format!("{}\"jobs\": [", &text[..at]);
        self.tail = text[at + "\"jobs\": []".len()..].to_string();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.path)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", self.path.display()))?;
        f.write_all(format!("{}]{}", self.head, self.tail).as_bytes())?;
        self.jobs_end = self.head.len() as u64;
        self.file = Some(f);
        Ok(())
    }
}

/// `--export fio-json FILE` as one of the sink's exporters: the file
/// brought up to date at every save, or, when it is a stream (a FIFO,
/// /dev/stdout), written once at the run's end.
pub struct FioJsonExporter {
    file: FioExportFile,
    is_stream: bool,
}

impl FioJsonExporter {
    pub fn new(path: std::path::PathBuf) -> FioJsonExporter {
        FioJsonExporter {
            is_stream: is_stream(&path),
            file: FioExportFile::new(path),
        }
    }
}

impl Exporter for FioJsonExporter {
    fn saved(&mut self, r: &Results, last: bool) -> anyhow::Result<()> {
        if !self.is_stream {
            self.file.update(r)?;
        } else if last {
            let text = serde_json::to_string_pretty(&to_fio_json(r))?;
            write_atomic(self.file.path(), text.as_bytes())?;
        }
        Ok(())
    }
}

/// Seconds since the epoch of an RFC 3339 UTC time ("2026-11-21T05:47:10Z"), 0 if unparsable.
fn chrono_free_epoch(s: &str) -> u64 {
    let d: Vec<u64> = s
        .split(|c: char| !c.is_ascii_digit())
        .filter(|x| !x.is_empty())
        .take(6)
        .filter_map(|x| x.parse().ok())
        .collect();
    if d.len() < 6 {
        return 0;
    }
    let (y, m, day) = (d[0] as i64, d[1] as i64, d[2] as i64);
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    (days * 86_400) as u64 + d[3] * 3600 + d[4] * 60 + d[5]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written point by point, the export is the whole-document export,
    /// byte for byte, after every point.
    #[test]
    fn appended_export_is_the_whole_export() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report/device-batching.json");
        let full = Results::read(&path).unwrap();
        assert!(full.points.len() >= 3);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x.fio.json");
        let mut export = FioExportFile::new(out.clone());
        let mut r = full.clone();
        r.points.clear();
        for n in 0..=full.points.len() {
            r.points = full.points[..n].to_vec();
            export.update(&r).unwrap();
            let want = serde_json::to_string_pretty(&to_fio_json(&r)).unwrap();
            assert_eq!(
                std::fs::read_to_string(&out).unwrap(),
                want,
                "after {n} points"
            );
        }
    }

    fn fixture(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report")
            .join(name)
    }

    /// fio fills latency_ns/us/ms from completion latency (clat).
    #[test]
    fn latency_buckets_come_from_clat() {
        let r = Results::read(&fixture("device-batching.json")).unwrap();
        let p = r
            .points
            .iter()
            .max_by_key(|p| p.param(Param::Batch).map(|b| b.parse::<u32>().unwrap_or(0)))
            .unwrap();
        let only = |keep: &str| {
            let mut q = p.clone();
            q.histograms.retain(|k, _| k == keep);
            latency_buckets(&q)
        };
        let (from_clat, from_lat) = (only("read.clat"), only("read.lat"));
        assert_ne!(from_clat, from_lat, "the fixture's clat and lat differ");
        assert_eq!(latency_buckets(p), from_clat);
    }

    /// clat percentiles shown as total latency on import are not exported
    /// back as fio's lat percentiles.
    #[test]
    fn imported_clat_percentiles_are_not_exported_as_lat() {
        let text = std::fs::read_to_string(fixture("fio-randread.json")).unwrap();
        let r = crate::report::fio_json::from_fio_text(&text).unwrap();
        let read = &to_fio_json(&r)["jobs"][0]["read"];
        assert!(read["clat_ns"].get("percentile").is_some());
        assert!(
            read["lat_ns"].get("percentile").is_none(),
            "{}",
            read["lat_ns"]
        );
        assert!(read["lat_ns"]["mean"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn epoch_of_rfc3339() {
        assert_eq!(chrono_free_epoch("1970-01-01T00:00:00Z"), 0);
        assert_eq!(chrono_free_epoch("2026-11-21T05:47:10Z"), 1_795_240_030);
        assert_eq!(chrono_free_epoch("garbage"), 0);
    }
}
