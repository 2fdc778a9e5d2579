//! `iolab device --make ext4,xfs,raw --rounds N --baseline NAME`: the same
//! job list on several storage configurations iolab builds
//! (`testbed::media`) on the storage under test, interleaved by rounds
//! (A B C, then C B A, ...) so that drift on a shared machine hits every
//! configuration alike, in one results file: every point carries
//! `medium` and `round`; `extra.media` holds how each configuration was
//! made and, per job, each configuration's IOPS and its ratio to the
//! baseline (median over rounds and the range, marked as noise when the
//! range straddles 1.0).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::json;

use super::device_args::experiments_from_args;
use crate::analysis::AnalysisOptions;
use crate::cli::device::DeviceArgs;
use crate::dut::{self, Target, TargetOptions};
use crate::error::usage;
use crate::interrupt;
use crate::plan::experiment::Mode;
use crate::plan::job::JobSpec;
use crate::plan::parse::parse_size;
use crate::report::observer::Terminal;
use crate::results::{Point, Provenance, Results};
use crate::session::{Driver, ResultsSink, Tags};
use crate::testbed::media::{MediaKind, Medium, MEDIA_NAMES};

/// The checked settings of a media run.
pub struct MediaPlan {
    pub kinds: Vec<MediaKind>,
    pub baseline: String,
    pub rounds: u32,
    pub jobs: Vec<JobSpec>,
    pub under: PathBuf,
    pub size: u64,
}

/// Check everything `--make` needs before anything is built.
pub fn plan(a: &DeviceArgs) -> anyhow::Result<MediaPlan> {
    let list = a.make.as_deref().unwrap_or_default();
    let mut kinds = Vec::new();
    for name in list.split(',').map(str::trim) {
        let k = MediaKind::parse(name)
            .ok_or_else(|| usage("--make", format!("'{name}' is not one of {MEDIA_NAMES}")))?;
        if kinds.contains(&k) {
            return Err(usage("--make", format!("{name} is named twice")));
        }
        kinds.push(k);
    }
    if !(1..=100).contains(&a.rounds) {
        return Err(usage("--rounds", "must be 1 to 100"));
    }
    let baseline = a.baseline.clone().unwrap_or_else(|| kinds[0].name());
    if !kinds.iter().any(|k| k.name() == baseline) {
        return Err(usage(
            "--baseline",
            format!("'{baseline}' is not one of the --make configurations"),
        ));
    }
    let under = a.target.clone().unwrap_or_else(|| PathBuf::from("."));
    if !under.is_dir() {
        return Err(usage(
            "--target",
            format!(
                "with --make, --target is the directory the configurations are built in; {} is not one",
                under.display()
            ),
        ));
    }
    if a.destroy_data.is_some() || a.overwrite {
        return Err(usage(
            "--make",
            "iolab builds the configurations' devices itself: --destroy-data and --overwrite do not apply",
        ));
    }
    let exps = experiments_from_args(a)?;
    if exps
        .iter()
        .any(|e| e.mode != Mode::Plain || e.precondition.is_some() || e.purge)
    {
        return Err(usage(
            "--make",
            "runs plain job lists (sweeps included); open-loop rates, latency targets, steady state, precondition and purge are not combined with it yet",
        ));
    }
    let size = match &a.size {
        Some(s) => parse_size("--size", s)?,
        None => 256 << 20,
    };
    Ok(MediaPlan {
        kinds,
        baseline,
        rounds: a.rounds,
        jobs: exps.into_iter().flat_map(|e| e.jobs).collect(),
        under,
        size,
    })
}

/// `--rounds` and `--baseline` mean nothing without `--make`.
pub fn refuse_without_make(a: &DeviceArgs) -> anyhow::Result<()> {
    if a.rounds != 1 || a.baseline.is_some() {
        let field = if a.rounds != 1 {
            "--rounds"
        } else {
            "--baseline"
        };
        return Err(usage(field, "applies to --make only"));
    }
    Ok(())
}

/// The order of round `r` (0-based): forward, then backward, ...
pub fn round_order(n: usize, r: u32) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    if r % 2 == 1 {
        v.reverse();
    }
    v
}

pub fn run(a: DeviceArgs) -> anyhow::Result<()> {
    let plan = plan(&a)?;
    for k in &plan.kinds {
        if let Some(why) = k.unavailable() {
            return Err(usage(
                "--make",
                format!("{} cannot be built here: {why}", k.name()),
            ));
        }
    }
    if a.dry_run {
        print_plan(&plan);
        return Ok(());
    }
    interrupt::install();
    let quiet = a.quiet;
    if !quiet {
        eprintln!(
            "iolab: building {} ...",
            plan.kinds
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let media = plan
        .kinds
        .iter()
        .map(|&k| Medium::build(k, &plan.under, plan.size))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let writes = plan.jobs.iter().any(|j| j.writes());
    let targets = media
        .iter()
        .map(|m| target_on(m, plan.size, writes, a.seed))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let results = measure(&a, &plan, &media, &targets)?;
    drop(targets);
    drop(media);
    if !quiet {
        for line in table(&results) {
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

fn measure(
    a: &DeviceArgs,
    plan: &MediaPlan,
    media: &[Medium],
    targets: &[Target],
) -> anyhow::Result<Results> {
    let mut provenance = Provenance::collect(a.seed);
    provenance.target = Some(targets[0].info());
    provenance.plan = serde_json::to_value(&plan.jobs)?;
    let mut results = Results::new("device", provenance);
    results.warnings.extend(results.provenance.busy_warning());
    results.extra.insert(
        "media".into(),
        json!({
            "baseline": plan.baseline,
            "rounds": plan.rounds,
            "configurations": media.iter().map(|m| json!({"name": m.kind.name(), "made": m.describe})).collect::<Vec<_>>(),
        }),
    );
    let sink = ResultsSink::new(
        results,
        a.json.clone().filter(|p| p.as_os_str() != "-"),
        None,
        AnalysisOptions::default(),
    );
    let observer = Terminal::progress_only(a.quiet);
    let per_job: f64 = plan
        .jobs
        .iter()
        .map(|j| (j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns) as f64 / 1e9)
        .sum();
    let n = media.len() * plan.rounds as usize;
    let mut driver = Driver::new(
        &targets[0],
        sink,
        &observer,
        None,
        !a.quiet && std::io::stderr().is_terminal(),
        (n * plan.jobs.len(), n as f64 * per_job),
    );
    'rounds: for r in 0..plan.rounds {
        for i in round_order(media.len(), r) {
            let name = media[i].kind.name();
            let params = [("medium", name.clone()), ("round", (r + 1).to_string())];
            let tags = Tags {
                experiment: "",
                params: &params,
                extra: &[],
            };
            for j in &plan.jobs {
                if interrupt::stop_requested() {
                    break 'rounds;
                }
                let mut job = j.clone();
                job.name = format!("{name} r{}: {}", r + 1, j.name);
                driver.run_point_on(&targets[i], &job, &tags)?;
            }
        }
    }
    let mut results = driver.finish()?.results;
    let rows = normalize(&results.points, &plan.baseline);
    if let Some(m) = results
        .extra
        .get_mut("media")
        .and_then(|v| v.as_object_mut())
    {
        m.insert("rows".into(), serde_json::to_value(&rows)?);
    }
    if let Some(p) = a.json.as_deref().filter(|p| p.as_os_str() != "-") {
        crate::results::write_atomic(p, &serde_json::to_vec_pretty(&results)?)?;
    }
    Ok(results)
}

/// One job on one configuration, over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MediaRow {
    pub job: String,
    pub medium: String,
    /// Median IOPS over the rounds.
    pub iops: f64,
    /// Per-round IOPS over the baseline's in the same round: median and range.
    pub vs_baseline: f64,
    pub vs_min: f64,
    pub vs_max: f64,
    /// The range straddles 1.0: not told apart from the baseline.
    pub noise: bool,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The normalized rows of a media run's points (by `medium`, `round` and
/// the job's name after the "MEDIUM rN: " prefix).
pub fn normalize(points: &[Point], baseline: &str) -> Vec<MediaRow> {
    // (job, medium) -> round -> IOPS
    let mut by: BTreeMap<(String, String), BTreeMap<String, f64>> = BTreeMap::new();
    for p in points {
        let (Some(m), Some(r)) = (p.params.get("medium"), p.params.get("round")) else {
            continue;
        };
        let job = p.name.split_once(": ").map_or(p.name.as_str(), |x| x.1);
        by.entry((job.to_string(), m.clone()))
            .or_default()
            .insert(r.clone(), p.total.iops);
    }
    let mut rows = Vec::new();
    for ((job, medium), rounds) in &by {
        let Some(base) = by.get(&(job.clone(), baseline.to_string())) else {
            continue;
        };
        let ratios: Vec<f64> = rounds
            .iter()
            .filter_map(|(r, iops)| base.get(r).filter(|b| **b > 0.0).map(|b| iops / b))
            .collect();
        if ratios.is_empty() {
            continue;
        }
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        rows.push(MediaRow {
            job: job.clone(),
            medium: medium.clone(),
            iops: median(rounds.values().copied().collect()),
            vs_baseline: median(ratios),
            vs_min: lo,
            vs_max: hi,
            noise: medium != baseline && lo < 1.0 && hi > 1.0,
        });
    }
    rows
}

/// The terminal table: per job, each configuration's IOPS and its ratio.
fn table(results: &Results) -> Vec<String> {
    let Some(rows) = results
        .extra
        .get("media")
        .and_then(|m| m.get("rows"))
        .and_then(|r| serde_json::from_value::<Vec<serde_json::Value>>(r.clone()).ok())
    else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "{:<40} {:<16} {:>10} {:>22}",
        "job", "configuration", "IOPS", "vs baseline (range)"
    )];
    for r in rows {
        out.push(format!(
            "{:<40} {:<16} {:>10.0} {:>8.2}x ({:.2}..{:.2}){}",
            r["job"].as_str().unwrap_or(""),
            r["medium"].as_str().unwrap_or(""),
            r["iops"].as_f64().unwrap_or(0.0),
            r["vs_baseline"].as_f64().unwrap_or(0.0),
            r["vs_min"].as_f64().unwrap_or(0.0),
            r["vs_max"].as_f64().unwrap_or(0.0),
            if r["noise"].as_bool() == Some(true) {
                " ~noise"
            } else {
                ""
            }
        ));
    }
    out
}

fn print_plan(plan: &MediaPlan) {
    println!(
        "iolab device --make: {} round(s) over {} in {} (room for {} MiB each), baseline {}",
        plan.rounds,
        plan.kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", "),
        plan.under.display(),
        plan.size >> 20,
        plan.baseline
    );
    for r in 0..plan.rounds {
        let order: Vec<String> = round_order(plan.kinds.len(), r)
            .into_iter()
            .map(|i| plan.kinds[i].name())
            .collect();
        println!("  round {}: {}", r + 1, order.join(" "));
    }
    for j in &plan.jobs {
        println!("      {}", j.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_direction() {
        assert_eq!(round_order(3, 0), vec![0, 1, 2]);
        assert_eq!(round_order(3, 1), vec![2, 1, 0]);
        assert_eq!(round_order(3, 2), vec![0, 1, 2]);
    }

    fn point(medium: &str, round: u32, iops: f64) -> Point {
        let spec = JobSpec::default();
        let mut p = crate::analysis::testutil::point(&spec, iops, 50_000.0, 90_000);
        p.name = format!("{medium} r{round}: randread-4k-qd1");
        p.params.insert("medium".into(), medium.into());
        p.params.insert("round".into(), round.to_string());
        p.total.iops = iops;
        p
    }

    #[test]
    fn ratios_are_per_round_with_their_range_and_noise_marked() {
        let pts = vec![
            point("ext4", 1, 100.0),
            point("xfs", 1, 110.0),
            point("raw", 1, 200.0),
            point("ext4", 2, 100.0),
            point("xfs", 2, 95.0),
            point("raw", 2, 210.0),
            point("ext4", 3, 90.0),
            point("xfs", 3, 99.0),
            point("raw", 3, 180.0),
        ];
        let rows = normalize(&pts, "ext4");
        let row = |m: &str| rows.iter().find(|r| r.medium == m).unwrap().clone();
        let xfs = row("xfs");
        assert!((xfs.vs_baseline - 1.1).abs() < 1e-9, "{xfs:?}");
        assert!((xfs.vs_min - 0.95).abs() < 1e-9 && (xfs.vs_max - 1.1).abs() < 1e-9);
        assert!(xfs.noise);
        let raw = row("raw");
        assert!(
            (raw.vs_baseline - 2.0).abs() < 1e-9 && !raw.noise,
            "{raw:?}"
        );
        assert_eq!(raw.iops, 200.0);
        let base = row("ext4");
        assert_eq!((base.vs_baseline, base.noise), (1.0, false));
    }
}
