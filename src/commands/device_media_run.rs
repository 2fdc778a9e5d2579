//! Running a checked media plan (`device_media::plan`): build the
//! configurations, prepare the given targets, measure every job on every
//! target round by round in alternating order through one `Driver`, and
//! print the comparison (`analysis.media`). Everything built or created
//! is a guard, dropped at the end, on an error and after Ctrl-C.

use std::io::IsTerminal;

use super::device_media::MediaPlan;
use super::media_set::{round_order, Overhead, Subject};
use super::media_targets;
use crate::analysis::media::legacy_rows;
use crate::analysis::AnalysisOptions;
use crate::cli::device::DeviceArgs;
use crate::dut::{self, Target, TargetOptions};
use crate::interrupt;
use crate::report::media_terminal;
use crate::report::observer::Terminal;
use crate::results::{Provenance, Results};
use crate::session::{Driver, ResultsSink, Tags};
use crate::testbed::media::{MediaKind, Medium};

pub fn run(a: &DeviceArgs, plan: &MediaPlan) -> anyhow::Result<()> {
    interrupt::install();
    let quiet = a.quiet;
    let mut overhead = Overhead::start();
    let media = plan.set.build(plan.size, quiet)?;
    let targets = prepare(a, plan, &media)?;
    overhead.rounds_start();
    let mut results = measure(a, plan, &media, &targets)?;
    overhead.rounds_end();
    drop(targets);
    drop(media);
    overhead.save_into(&mut results);
    if let Some(p) = a.json.as_deref().filter(|p| p.as_os_str() != "-") {
        results.write_atomic(p)?;
    }
    if !quiet {
        for line in media_terminal::summary(&results) {
            println!("{line}");
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
    for (i, s) in plan.set.subjects.iter().enumerate() {
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
pub(crate) fn target_on(m: &Medium, size: u64, writes: bool, seed: u64) -> anyhow::Result<Target> {
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

/// A warning when the targets address different amounts of data (a file
/// or a device used whole beside scratch files): the working sets differ.
fn size_warning(plan: &MediaPlan, targets: &[Target]) -> Option<String> {
    let first = targets.first()?.size;
    if targets.iter().all(|t| t.size == first) {
        return None;
    }
    let sizes: Vec<String> = plan
        .set
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
        .insert("media".into(), plan.set.record_targets(targets, media));
    let sink = ResultsSink::new(
        results,
        a.json.clone().filter(|p| p.as_os_str() != "-"),
        AnalysisOptions::default(),
    );
    let observer = Terminal::progress_only(a.quiet);
    let per_round: f64 = plan
        .jobs
        .iter()
        .flatten()
        .map(|j| (j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns) as f64 / 1e9)
        .sum();
    let points = plan.workloads.len() * plan.set.subjects.len() * plan.set.rounds as usize;
    let mut driver = Driver::new(
        &targets[0],
        sink,
        &observer,
        None,
        !a.quiet && std::io::stderr().is_terminal(),
        (points, per_round * plan.set.rounds as f64),
    );
    driver.save()?;
    let n = plan.set.subjects.len();
    'rounds: for r in 0..plan.set.rounds {
        for i in round_order(n, r) {
            let pass = plan.set.tag(i, r);
            let params = pass.params();
            for (j, workload) in plan.jobs[i].iter().zip(&plan.workloads) {
                if interrupt::stop_requested() {
                    break 'rounds;
                }
                let id = pass.id(workload);
                let tags = Tags {
                    experiment: "",
                    params: &params,
                    extra: &[],
                    pass: Some(&id),
                };
                let mut job = j.clone();
                job.name = id.name();
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
    Ok(results)
}
