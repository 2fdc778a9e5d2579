//! fio's `numjobs` clones without `group_reporting`: fio reports one job
//! per clone, all under the job's name. They are one job of the job file
//! (what iolab runs as `--jobs N`), so they become one point, summed as
//! fio's group_reporting would: `compare` then matches it with iolab's
//! run of the same job file instead of taking the clones for rounds.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::measure::histogram::{LatStats, LatencyHistogram};
use crate::results::{OpStats, Param, Point};

/// What makes fio jobs clones of one another: name, host, group and options.
pub type CloneKey = (String, String, u64, String);

pub fn key(job: &Value) -> CloneKey {
    let s = |k: &str| {
        job.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    (
        s("jobname"),
        s("hostname"),
        job.get("groupid").and_then(|g| g.as_u64()).unwrap_or(0),
        job.get("job options")
            .map(|o| o.to_string())
            .unwrap_or_default(),
    )
}

/// Consecutive points with the same key and `numjobs` > 1 merged into one.
pub fn merge(points: Vec<(CloneKey, Point)>) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    let mut run: Vec<Point> = Vec::new();
    let mut run_key: Option<CloneKey> = None;
    for (k, p) in points {
        let clone_of_run = run_key.as_ref() == Some(&k) && jobs_of(&p) > 1;
        if !clone_of_run && !run.is_empty() {
            out.push(merge_run(std::mem::take(&mut run)));
        }
        run_key = Some(k);
        run.push(p);
    }
    if !run.is_empty() {
        out.push(merge_run(run));
    }
    out
}

fn jobs_of(p: &Point) -> u64 {
    p.param_num(Param::Jobs).unwrap_or(1)
}

fn merge_run(mut run: Vec<Point>) -> Point {
    if run.len() == 1 {
        return run.remove(0);
    }
    let n = run.len();
    let mut merged = run[0].clone();
    let mut lost_percentiles = false;
    let names: Vec<String> = run.iter().flat_map(|p| p.ops.keys().cloned()).collect();
    merged.ops = BTreeMap::new();
    for op in names {
        if merged.ops.contains_key(&op) {
            continue;
        }
        let parts: Vec<&OpStats> = run.iter().filter_map(|p| p.ops.get(&op)).collect();
        let mut o = OpStats {
            ops: parts.iter().map(|o| o.ops).sum(),
            bytes: parts.iter().map(|o| o.bytes).sum(),
            iops: parts.iter().map(|o| o.iops).sum(),
            mib_s: parts.iter().map(|o| o.mib_s).sum(),
            slat: None,
            clat: None,
            lat: None,
        };
        for kind in ["slat", "clat", "lat"] {
            let key = format!("{op}.{kind}");
            let hists: Option<Vec<LatencyHistogram>> = run
                .iter()
                .map(|p| {
                    p.histograms
                        .get(&key)
                        .and_then(|h| LatencyHistogram::decode(h).ok())
                })
                .collect();
            let stats = match hists {
                Some(hs) => {
                    let mut all = LatencyHistogram::new();
                    hs.iter().for_each(|h| all.merge(h));
                    merged.histograms.insert(key, all.encode());
                    all.stats()
                }
                None => pooled(
                    &parts
                        .iter()
                        .filter_map(|o| lat_of(o, kind))
                        .collect::<Vec<_>>(),
                ),
            };
            match kind {
                "slat" => o.slat = stats,
                "clat" => o.clat = stats,
                _ => o.lat = stats,
            }
        }
        // As for one job: without total-latency percentiles, clat's are shown
        // (the point carries fio's clat-only warning).
        if let (Some(l), Some(c)) = (o.lat.as_mut(), o.clat.as_ref()) {
            if l.percentiles_ns.is_empty() {
                l.percentiles_ns = c.percentiles_ns.clone();
            }
        }
        let had = parts
            .iter()
            .any(|p| p.lat.as_ref().is_some_and(|l| !l.percentiles_ns.is_empty()));
        lost_percentiles |= had && o.lat.as_ref().is_some_and(|l| l.percentiles_ns.is_empty());
        merged.ops.insert(op, o);
    }
    merged.total.ops = merged.ops.values().map(|o| o.ops).sum();
    merged.total.bytes = merged.ops.values().map(|o| o.bytes).sum();
    merged.total.iops = merged.ops.values().map(|o| o.iops).sum();
    merged.total.mib_s = merged.ops.values().map(|o| o.mib_s).sum();
    merged.duration_ns = run.iter().map(|p| p.duration_ns).max().unwrap_or(0);
    let c = &mut merged.cpu;
    c.usr_pct = run.iter().map(|p| p.cpu.usr_pct).sum();
    c.sys_pct = run.iter().map(|p| p.cpu.sys_pct).sum();
    c.user_ns = run.iter().map(|p| p.cpu.user_ns).sum();
    c.sys_ns = run.iter().map(|p| p.cpu.sys_ns).sum();
    c.ctx_voluntary = run.iter().map(|p| p.cpu.ctx_voluntary).sum();
    c.wall_ns = merged.duration_ns;
    for p in &run[1..] {
        for w in &p.warnings {
            if !merged.warnings.contains(w) {
                merged.warnings.push(w.clone());
            }
        }
    }
    merged.warnings.push(format!(
        "{n} fio clones (numjobs={n} without group_reporting) summed into one point"
    ));
    if lost_percentiles {
        merged.warnings.push(
            "the clones' latency percentiles cannot be combined without fio's json+ bins: only mean, min and max are shown (run fio with --output-format=json+ or group_reporting)".into(),
        );
    }
    merged
}

fn lat_of<'a>(o: &'a OpStats, kind: &str) -> Option<&'a LatStats> {
    match kind {
        "slat" => o.slat.as_ref(),
        "clat" => o.clat.as_ref(),
        _ => o.lat.as_ref(),
    }
}

/// Count, mean, min, max and pooled standard deviation of several
/// summaries (percentiles cannot be pooled).
fn pooled(each: &[&LatStats]) -> Option<LatStats> {
    let n: u64 = each.iter().map(|l| l.n).sum();
    if n == 0 {
        return None;
    }
    let mean = each.iter().map(|l| l.mean_ns * l.n as f64).sum::<f64>() / n as f64;
    let var = each
        .iter()
        .map(|l| l.n as f64 * (l.stdev_ns.powi(2) + (l.mean_ns - mean).powi(2)))
        .sum::<f64>()
        / n as f64;
    Some(LatStats {
        n,
        min_ns: each.iter().map(|l| l.min_ns).min().unwrap_or(0),
        max_ns: each.iter().map(|l| l.max_ns).max().unwrap_or(0),
        mean_ns: mean,
        stdev_ns: var.sqrt(),
        percentiles_ns: BTreeMap::new(),
    })
}
