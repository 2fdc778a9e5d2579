//! Local vs remote (`iolab remote`): every transport's point of each
//! workload beside the local (DAS) point of the same workload, with IOPS
//! and mean latency as ratios to DAS and CPU per I/O on both sides; and
//! the database on each volume (`--db`) beside the one on DAS.

use super::baseline::{ratio, ratio_of};
use super::media::mean_lat_ns;
pub use crate::results::analysis::remote::{DbRow, RemoteRow};
use crate::results::Param;
use crate::results::Point;

/// The transport label of DAS points (the baseline).
pub const BASELINE: &str = "das";

/// The rows of every closed-loop point that names its transport, in point
/// order (the load-latency points are in the load-latency analysis).
pub fn analyze(points: &[&Point]) -> Vec<RemoteRow> {
    let mut rows: Vec<RemoteRow> = points
        .iter()
        .filter_map(|p| {
            let transport = p.param(Param::Transport)?.to_string();
            let job = p.job.as_ref().filter(|j| j.open_loop.is_none())?;
            let workload = job
                .default_name()
                .strip_suffix(&format!("-{}", job.engine_label()))?
                .to_string();
            let ops = p.total.ops.max(1) as f64;
            let target_cpu = p.extra.peers.as_ref().and_then(|peers| {
                let v: Vec<f64> = peers.processes.iter().filter_map(|c| c.us_per_io).collect();
                (!v.is_empty()).then(|| v.iter().sum())
            });
            Some(RemoteRow {
                workload,
                transport,
                point: p.name.clone(),
                iops: p.total.iops,
                mean_ns: mean_lat_ns(p),
                p95_ns: p.main_lat().and_then(|l| l.percentile(95.0)),
                host_cpu_us_per_io: (p.total.ops > 0)
                    .then(|| (p.cpu.user_ns + p.cpu.sys_ns) as f64 / 1e3 / ops),
                target_cpu_us_per_io: target_cpu,
                iops_vs_das: None,
                mean_vs_das: None,
                errors: p.errors.clone(),
            })
        })
        .collect();
    let base: Vec<(String, f64, Option<f64>)> = rows
        .iter()
        .filter(|r| r.transport == BASELINE)
        .map(|r| (r.workload.clone(), r.iops, r.mean_ns))
        .collect();
    for r in &mut rows {
        if let Some((_, iops, mean)) = base.iter().find(|b| b.0 == r.workload) {
            r.iops_vs_das = ratio(r.iops, *iops);
            r.mean_vs_das = ratio_of(r.mean_ns, *mean);
        }
    }
    if rows.iter().all(|r| r.transport == BASELINE) {
        rows.clear();
    }
    rows
}

/// The rows of every database point of a remote run (`role` db), the
/// mixed phase only (the load is its set-up), in point order.
pub fn analyze_db(points: &[&Point]) -> Vec<DbRow> {
    let mut rows: Vec<DbRow> = points
        .iter()
        .filter(|p| p.param(Param::Role) == Some("db"))
        .filter(|p| p.param(Param::Workload) == Some("readrandomwriterandom"))
        .filter_map(|p| {
            let lat = |op: &str| p.ops.get(op).and_then(|o| o.lat.as_ref());
            Some(DbRow {
                transport: p.param(Param::Transport)?.to_string(),
                value_size: p.param_num(Param::ValueSize)?,
                point: p.name.clone(),
                ops_s: p.total.iops,
                read_mean_ns: lat("read").map(|l| l.mean_ns),
                read_p99_ns: lat("read").and_then(|l| l.percentile(99.0)),
                write_mean_ns: lat("write").map(|l| l.mean_ns),
                write_p99_ns: lat("write").and_then(|l| l.percentile(99.0)),
                ops_vs_das: None,
            })
        })
        .collect();
    let base: Vec<(u64, f64)> = rows
        .iter()
        .filter(|r| r.transport == BASELINE)
        .map(|r| (r.value_size, r.ops_s))
        .collect();
    for r in &mut rows {
        if let Some((_, ops)) = base.iter().find(|b| b.0 == r.value_size) {
            r.ops_vs_das = ratio(r.ops_s, *ops);
        }
    }
    rows
}
