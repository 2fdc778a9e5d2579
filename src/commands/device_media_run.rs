//! Running a checked media plan (`device_media::plan`): build the
//! configurations, prepare the given targets, measure every job on every
//! target round by round in alternating order through one `Driver`, and
//! print the comparison (`analysis.media`). Everything built or created
//! is a guard, dropped at the end, on an error and after Ctrl-C.

use std::io::IsTerminal;

use serde_json::json;

use super::device_media::{round_order, MediaPlan, Subject};
use super::media_targets;
use crate::analysis::media::{legacy_rows, MediaAnalysis};
use crate::analysis::AnalysisOptions;
use crate::cli::device::DeviceArgs;
use crate::dut::{self, Target, TargetOptions};
use crate::interrupt;
use crate::report::observer::Terminal;
use crate::results::{Provenance, Results};
use crate::session::{Driver, ResultsSink, Tags};
use crate::testbed::media::{MediaKind, Medium};

pub fn run(a: &DeviceArgs, plan: &MediaPlan) -> anyhow::Result<()> {
    interrupt::install();
    let quiet = a.quiet;
    let kinds: Vec<MediaKind> = plan.made().collect();
    if !quiet && !kinds.is_empty() {
        eprintln!(
            "iolab: building {} ...",
            kinds
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let media = kinds
        .iter()
        .map(|&k| Medium::build(k, &plan.make_in, plan.size))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let targets = prepare(a, plan, &media)?;
    let results = measure(a, plan, &media, &targets)?;
    drop(targets);
    drop(media);
    if !quiet {
        if let Some(m) = &results.analysis.media {
            for line in table(m) {
                println!("{line}");
            }
        }
        if let Some(p) = &a.json {
            println!("results: {}", p.display());
        }
    }
    if results.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}

/// Every subject's target, in subject order: a built configuration's
/// scratch file or loop device, or a given target prepared by its kind's
/// rules (a scratch file in a directory, removed at the end).
fn prepare(a: &DeviceArgs, plan: &MediaPlan, media: &[Medium]) -> anyhow::Result<Vec<Target>> {
    let mut made = media.iter();
    let mut targets = Vec::new();
    for (i, s) in plan.subjects.iter().enumerate() {
        if interrupt::stop_requested() {
            return Err(crate::error::Interrupted.into());
        }
        let t = match s {
            Subject::Made(_) => {
                let m = made.next().expect("one medium per configuration");
                target_on(m, plan.size, plan.writes, a.seed)?
            }
            Subject::Given(t) => {
                if !a.quiet && t.path.is_dir() {
                    eprintln!(
                        "iolab: preparing a {} MiB scratch file in {} ...",
                        plan.size >> 20,
                        t.path.display()
                    );
                }
                dut::prepare(&plan.options(i, t, a), plan.writes, None, a.seed)
                    .map_err(|e| media_targets::name_target(t, e))?
            }
        };
        targets.push(t);
    }
    Ok(targets)
}

/// The jobs' target on a built configuration: a scratch file in its file
/// system, or its loop device (iolab's own, so writes are allowed).
fn target_on(m: &Medium, size: u64, writes: bool, seed: u64) -> anyhow::Result<Target> {
    let raw = m.kind == MediaKind::Raw;
    dut::prepare(
        &TargetOptions {
            path: Some(m.target.clone()),
            size: if raw { None } else { Some(size) },
            destroy_data: raw.then(|| m.target.clone()),
            ..Default::default()
        },
        writes,
        None,
        seed,
    )
}

/// `extra.media`: the baseline, the rounds, every target and how each
/// configuration was made.
fn extra(plan: &MediaPlan, media: &[Medium], targets: &[Target]) -> serde_json::Value {
    let described = plan.subjects.iter().zip(targets).map(|(s, t)| {
        let made = matches!(s, Subject::Made(_));
        json!({
            "label": s.label(),
            "path": t.path.display().to_string(),
            "kind": t.kind,
            "size_bytes": t.size,
            "made": made,
        })
    });
    json!({
        "baseline": plan.baseline,
        "rounds": plan.rounds,
        "targets": described.collect::<Vec<_>>(),
        "configurations": media
            .iter()
            .map(|m| json!({"name": m.kind.name(), "made": m.describe}))
            .collect::<Vec<_>>(),
    })
}

/// A warning when the targets address different amounts of data (a file
/// or a device used whole beside scratch files): the working sets differ.
fn size_warning(plan: &MediaPlan, targets: &[Target]) -> Option<String> {
    let first = targets.first()?.size;
    if targets.iter().all(|t| t.size == first) {
        return None;
    }
    let sizes: Vec<String> = plan
        .labels()
        .iter()
        .zip(targets)
        .map(|(l, t)| format!("{l} {} MiB", t.size >> 20))
        .collect();
    Some(format!(
        "the targets address different sizes ({}): give --size to compare equal working sets",
        sizes.join(", ")
    ))
}

fn measure(
    a: &DeviceArgs,
    plan: &MediaPlan,
    media: &[Medium],
    targets: &[Target],
) -> anyhow::Result<Results> {
    let mut provenance = Provenance::collect(a.seed);
    provenance.target = Some(targets[0].info());
    provenance.plan = serde_json::to_value(&plan.jobs[0])?;
    let mut results = Results::new("device", provenance);
    results.warnings.extend(results.provenance.busy_warning());
    results.warnings.extend(size_warning(plan, targets));
    results
        .extra
        .insert("media".into(), extra(plan, media, targets));
    let sink = ResultsSink::new(
        results,
        a.json.clone().filter(|p| p.as_os_str() != "-"),
        None,
        AnalysisOptions::default(),
    );
    let observer = Terminal::progress_only(a.quiet);
    let per_round: f64 = plan
        .jobs
        .iter()
        .flatten()
        .map(|j| (j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns) as f64 / 1e9)
        .sum();
    let points = plan.workloads.len() * plan.subjects.len() * plan.rounds as usize;
    let mut driver = Driver::new(
        &targets[0],
        sink,
        &observer,
        None,
        !a.quiet && std::io::stderr().is_terminal(),
        (points, per_round * plan.rounds as f64),
    );
    driver.save()?;
    let labels = plan.labels();
    'rounds: for r in 0..plan.rounds {
        for i in round_order(labels.len(), r) {
            let params = [
                ("medium", labels[i].clone()),
                ("round", (r + 1).to_string()),
                ("baseline", plan.baseline.clone()),
            ];
            let tags = Tags {
                experiment: "",
                params: &params,
                extra: &[],
            };
            for (j, workload) in plan.jobs[i].iter().zip(&plan.workloads) {
                if interrupt::stop_requested() {
                    break 'rounds;
                }
                let mut job = j.clone();
                job.name = format!("{} r{}: {workload}", labels[i], r + 1);
                driver.run_point_on(&targets[i], &job, &tags)?;
            }
        }
    }
    let mut results = driver.finish()?.results;
    // The rows in the shape extra.media.rows had before analysis.media.
    if let (Some(m), Some(extra)) = (
        &results.analysis.media,
        results
            .extra
            .get_mut("media")
            .and_then(|v| v.as_object_mut()),
    ) {
        extra.insert("rows".into(), legacy_rows(m));
    }
    if let Some(p) = a.json.as_deref().filter(|p| p.as_os_str() != "-") {
        results.write_atomic(p)?;
    }
    Ok(results)
}

/// The terminal table: per workload, each target's throughput and ratios.
pub fn table(m: &MediaAnalysis) -> Vec<String> {
    let width = m
        .rows
        .iter()
        .map(|r| r.workload.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let twidth = m
        .rows
        .iter()
        .map(|r| r.target.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut out = vec![format!(
        "{:<width$} {:<twidth$} {:>12} {:>26} {:>12}",
        "workload",
        "target",
        "throughput",
        format!("vs {} (range)", m.baseline),
        "mean lat vs"
    )];
    for r in &m.rows {
        let ratio = match (r.vs_baseline, r.vs_min, r.vs_max) {
            (Some(v), Some(lo), Some(hi)) => format!(
                "{v:.2}x ({lo:.2}..{hi:.2}){}",
                if r.noise { " ~noise" } else { "" }
            ),
            _ => "-".into(),
        };
        out.push(format!(
            "{:<width$} {:<twidth$} {:>12} {:>26} {:>12}",
            r.workload,
            r.target,
            format!("{:.0} {}", r.throughput, r.unit),
            ratio,
            r.lat_vs_baseline
                .map(|v| format!("{v:.2}x"))
                .unwrap_or_else(|| "-".into())
        ));
    }
    out
}
