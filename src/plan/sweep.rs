//! Sweeps: flag values that are lists (`4k,64k,1m`) or ranges (`1k..64m`,
//! doubling; `0..100/10`, linear step), and the cross product of every axis
//! as a list of jobs. A block size *split* (`4k:70,64k:30`) is one value;
//! several splits are separated by `;` (`4k:70,64k:30;8k:50,1m:50`).

use crate::error::usage;
use crate::plan::engines::EngineKind;
use std::path::Path;

use crate::measure::{numa, sysfs};
use crate::plan::job::{JobSpec, Pattern, PlacementSide};
use crate::plan::parse::{parse_bs_split, parse_size};

/// A built-in sweep of `--sweep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepKind {
    /// Each job on the device's NUMA node and off it.
    Placement,
}

impl SweepKind {
    pub fn parse(s: &str) -> Option<SweepKind> {
        match s.trim() {
            "placement" => Some(SweepKind::Placement),
            _ => None,
        }
    }
}

/// The NUMA node of the disk under `target` (a file, directory or block
/// device; a file not made yet is looked up by its directory), if the
/// device reports one.
pub fn device_node(target: &Path, root: &Path) -> Option<u32> {
    let at = std::iter::successors(Some(target), |p| p.parent())
        .find(|p| p.exists())
        .unwrap_or(Path::new("."));
    let (_, disk) = sysfs::device_names(sysfs::devnum_of_path(at)?)?;
    u32::try_from(numa::device(root, &disk)?.node).ok()
}

/// `--sweep placement`: every job twice, its workers and buffers on
/// `device_node` (the device's node; node 0 when it reports none) and on
/// the next other node, tagged `placement=on-node|off-node`.
pub fn placement(
    jobs: Vec<JobSpec>,
    device_node: Option<u32>,
    root: &Path,
) -> anyhow::Result<Vec<JobSpec>> {
    if jobs
        .iter()
        .any(|j| j.cpus.is_some() || j.numa_node.is_some() || j.mem_node.is_some())
    {
        return Err(usage(
            "--sweep",
            "placement decides where workers and memory go: drop --cpus, --numa-node and --mem-node",
        ));
    }
    let ids = numa::node_ids(root);
    if ids.len() < 2 {
        return Err(usage(
            "--sweep",
            "placement compares a job on the device's NUMA node with one off it, and this machine has one NUMA node",
        ));
    }
    let on = device_node.filter(|n| ids.contains(n)).unwrap_or(ids[0]);
    let off = *ids.iter().find(|&&n| n != on).unwrap_or(&ids[0]);
    let mut out = Vec::with_capacity(jobs.len() * 2);
    for j in jobs {
        for (side, node) in [(PlacementSide::OnNode, on), (PlacementSide::OffNode, off)] {
            let mut p = j.clone();
            p.numa_node = Some(node);
            p.mem_node = Some(node);
            p.placement = Some(side);
            if !p.name.is_empty() {
                p.name = format!("{}-{}", j.name, side.name());
            }
            out.push(p);
        }
    }
    Ok(out)
}

/// Refuse plans larger than this (a typo like `1..4g` would never finish).
pub const MAX_POINTS: usize = 100_000;

/// Every axis a sweep can vary. One value on an axis means it is fixed.
#[derive(Debug, Clone, PartialEq)]
pub struct Axes {
    pub bs: Vec<Vec<(u64, u32)>>,
    pub qd: Vec<u32>,
    /// `None` = closed loop at `qd`; `Some(k)` = batches of k.
    pub batch: Vec<Option<u32>>,
    pub jobs: Vec<u32>,
    pub mix: Vec<u8>,
    pub rw: Vec<Pattern>,
    pub engine: Vec<EngineKind>,
}

impl Axes {
    /// The axes of a single job (every axis fixed to its value).
    pub fn of(base: &JobSpec) -> Axes {
        Axes {
            bs: vec![base.bs.clone()],
            qd: vec![base.qd],
            batch: vec![base.batch],
            jobs: vec![base.jobs],
            mix: vec![base.mix],
            rw: vec![base.pattern],
            engine: vec![base.engine],
        }
    }

    /// Upper bound of the number of points (before de-duplication).
    pub fn len(&self) -> usize {
        [
            self.bs.len(),
            self.qd.len(),
            self.batch.len(),
            self.jobs.len(),
            self.mix.len(),
            self.rw.len(),
            self.engine.len(),
        ]
        .iter()
        .fold(1usize, |a, &n| a.saturating_mul(n))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Split `a..b` or `a..b/step` into its parts.
fn split_range(item: &str) -> Option<(&str, &str, Option<&str>)> {
    let (a, rest) = item.split_once("..")?;
    match rest.split_once('/') {
        Some((b, s)) => Some((a, b, Some(s))),
        None => Some((a, rest, None)),
    }
}

/// Expand `a..b` (doubling from a) or `a..b/s` (linear step s) over u64.
fn expand_range(
    field: &str,
    item: &str,
    a: u64,
    b: u64,
    step: Option<u64>,
) -> anyhow::Result<Vec<u64>> {
    if a > b {
        return Err(usage(field, format!("range '{item}' is backwards")));
    }
    let mut out = Vec::new();
    match step {
        Some(0) => return Err(usage(field, format!("range '{item}' has a zero step"))),
        Some(s) => {
            let mut v = a;
            while v <= b {
                out.push(v);
                if out.len() > MAX_POINTS {
                    return Err(usage(field, format!("range '{item}' has too many values")));
                }
                v = match v.checked_add(s) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
        None => {
            if a == 0 {
                return Err(usage(
                    field,
                    format!("range '{item}' doubles from 0; start at 1 or give a step (0..100/10)"),
                ));
            }
            let mut v = a;
            while v <= b {
                out.push(v);
                v = match v.checked_mul(2) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
    }
    Ok(out)
}

fn dedup<T: PartialEq + Clone>(v: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

fn parse_whole(field: &str, s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('k') | Some('K') => (&t[..t.len() - 1], 1024u64),
        Some('m') | Some('M') => (&t[..t.len() - 1], 1 << 20),
        _ => (t, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| usage(field, format!("'{s}' is not a whole number")))
}

/// A list of whole numbers: `1,2,8`, `1..4096` (powers of two from the
/// start), `0..100/10` (linear step); `k`/`m` suffixes are 1024/1048576.
pub fn parse_u64_axis(field: &str, s: &str) -> anyhow::Result<Vec<u64>> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(usage(field, format!("empty value in '{s}'")));
        }
        match split_range(item) {
            Some((a, b, step)) => {
                let a = parse_whole(field, a)?;
                let b = parse_whole(field, b)?;
                let step = step.map(|x| parse_whole(field, x)).transpose()?;
                out.extend(expand_range(field, item, a, b, step)?);
            }
            None => out.push(parse_whole(field, item)?),
        }
    }
    Ok(dedup(out))
}

/// Like `parse_u64_axis` with values checked against `lo..=hi`.
pub fn parse_u32_axis(field: &str, s: &str, lo: u32, hi: u32) -> anyhow::Result<Vec<u32>> {
    parse_u64_axis(field, s)?
        .into_iter()
        .map(|v| {
            if v < lo as u64 || v > hi as u64 {
                Err(usage(field, format!("{v} is out of range {lo}..{hi}")))
            } else {
                Ok(v as u32)
            }
        })
        .collect()
}

/// Block sizes: a list or range of sizes (`4k,64k`, `1k..64m`, `4k..64k/4k`),
/// or splits separated by `;` (`4k:70,64k:30;8k`).
pub fn parse_bs_axis(field: &str, s: &str) -> anyhow::Result<Vec<Vec<(u64, u32)>>> {
    if s.contains(':') {
        return s
            .split(';')
            .map(|part| parse_bs_split(field, part.trim()))
            .collect::<anyhow::Result<Vec<_>>>()
            .map(dedup);
    }
    let mut out = Vec::new();
    for item in s.split([',', ';']).map(str::trim) {
        match split_range(item) {
            Some((a, b, step)) => {
                let a = parse_size(field, a)?;
                let b = parse_size(field, b)?;
                let step = step.map(|x| parse_size(field, x)).transpose()?;
                out.extend(expand_range(field, item, a, b, step)?);
            }
            None => out.push(parse_size(field, item)?),
        }
    }
    if let Some(0) = out.iter().copied().find(|&b| b == 0) {
        return Err(usage(field, "block size must be greater than 0"));
    }
    Ok(dedup(out).into_iter().map(|b| vec![(b, 100)]).collect())
}

/// Patterns: `randread,randwrite`.
pub fn parse_rw_axis(field: &str, s: &str) -> anyhow::Result<Vec<Pattern>> {
    s.split(',')
        .map(|p| {
            Pattern::parse(p.trim()).ok_or_else(|| {
                usage(
                    field,
                    format!(
                        "unknown pattern '{}' (read, write, randread, randwrite, readwrite, randrw)",
                        p.trim()
                    ),
                )
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .map(dedup)
}

/// Engines: `psync,io_uring`. `fake` only when `allow_fake`.
pub fn parse_engine_axis(
    field: &str,
    s: &str,
    allow_fake: bool,
) -> anyhow::Result<Vec<EngineKind>> {
    s.split(',')
        .map(|e| {
            EngineKind::parse(e.trim())
                .filter(|k| !k.facts().hidden || allow_fake)
                .ok_or_else(|| {
                    usage(
                        field,
                        format!(
                            "unknown engine '{}' (psync, aio, io_uring, mmap, null, nbd, iscsi)",
                            e.trim()
                        ),
                    )
                })
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .map(dedup)
}

/// Open-loop rates: absolute IOPS (`1000,5000`, `1000..64000`, `10k`) or
/// percentages of the measured closed-loop maximum (`10%..100%/10`, `50%,90%`).
#[derive(Debug, Clone, PartialEq)]
pub enum RateAxis {
    Iops(Vec<f64>),
    PercentOfMax(Vec<f64>),
}

pub fn parse_rate_axis(field: &str, s: &str) -> anyhow::Result<RateAxis> {
    let pct = s.contains('%');
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim) {
        if pct != item.contains('%') {
            return Err(usage(
                field,
                format!("'{s}' mixes percentages and absolute rates"),
            ));
        }
        let num = |x: &str| -> anyhow::Result<f64> {
            let t = x.trim().trim_end_matches('%');
            let (n, m) = match t.chars().last() {
                Some('k') => (&t[..t.len() - 1], 1e3),
                Some('m') => (&t[..t.len() - 1], 1e6),
                _ => (t, 1.0),
            };
            n.parse::<f64>()
                .ok()
                .map(|v| v * m)
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| usage(field, format!("'{x}' is not a positive rate")))
        };
        match split_range(item) {
            Some((a, b, step)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(usage(field, format!("range '{item}' is backwards")));
                }
                let step = step.map(&num).transpose()?;
                let mut v = a;
                while v <= b * (1.0 + 1e-9) {
                    out.push(v);
                    if out.len() > 10_000 {
                        return Err(usage(field, format!("range '{item}' has too many values")));
                    }
                    v = match step {
                        Some(st) => v + st,
                        None => v * 2.0,
                    };
                }
            }
            None => out.push(num(item)?),
        }
    }
    if pct && out.iter().any(|&p| p > 1000.0) {
        return Err(usage(
            field,
            "a percentage of the maximum over 1000% makes no sense",
        ));
    }
    Ok(if pct {
        RateAxis::PercentOfMax(out)
    } else {
        RateAxis::Iops(out)
    })
}

/// The cross product of `axes` around `base`: engine, pattern, mix, jobs,
/// depth, batch, then block size (innermost). Axes that do not apply to a
/// combination are not multiplied (mix for unmixed patterns, qd for batches).
pub fn expand(base: &JobSpec, axes: &Axes) -> anyhow::Result<Vec<JobSpec>> {
    if axes.len() > MAX_POINTS {
        return Err(usage(
            "--bs",
            format!(
                "the sweep has {} points (more than {MAX_POINTS}); narrow a list or range",
                axes.len()
            ),
        ));
    }
    if axes.is_empty() {
        return Err(usage("--bs", "an axis of the sweep has no values"));
    }
    let mut out: Vec<JobSpec> = Vec::new();
    for &engine in &axes.engine {
        for &rw in &axes.rw {
            let mixes: &[u8] = if rw.is_mixed() {
                &axes.mix
            } else {
                &axes.mix[..1]
            };
            for &mix in mixes {
                for &jobs in &axes.jobs {
                    for &batch in &axes.batch {
                        let qds: &[u32] = if batch.is_some() {
                            &axes.qd[..1]
                        } else {
                            &axes.qd
                        };
                        for &qd in qds {
                            for bs in &axes.bs {
                                out.push(JobSpec {
                                    pattern: rw,
                                    mix,
                                    bs: bs.clone(),
                                    qd,
                                    jobs,
                                    engine,
                                    batch,
                                    ..base.clone()
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    let many = out.len() > 1;
    for j in &mut out {
        j.name = if base.name.is_empty() {
            j.default_name()
        } else if many {
            format!("{}-{}", base.name, j.default_name())
        } else {
            base.name.clone()
        };
    }
    Ok(out)
}

/// Share `budget_ns` among `jobs` evenly (ramps included); every point must
/// get at least `min_point_ns` of measurement.
pub fn apply_budget(jobs: &mut [JobSpec], budget_ns: u64, min_point_ns: u64) -> anyhow::Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let ramps: u64 = jobs.iter().map(|j| j.ramp_ns).sum();
    let left = budget_ns.saturating_sub(ramps);
    let per = left / jobs.len() as u64;
    if per < min_point_ns {
        return Err(usage(
            "--budget",
            format!(
                "{} points in {:.0} s leave {:.2} s each (at least {:.2} s needed); raise the budget or narrow the sweep",
                jobs.len(),
                budget_ns as f64 / 1e9,
                per as f64 / 1e9,
                min_point_ns as f64 / 1e9
            ),
        ));
    }
    for j in jobs {
        j.stop.runtime_ns = Some(per);
        j.stop.io_count = None;
        j.stop.io_bytes = None;
    }
    Ok(())
}

/// Estimated wall time of a plan in seconds (runtime + ramp, plus a small
/// per-point setup allowance). Points limited only by I/O counts add 0.
pub fn estimate_secs(jobs: &[JobSpec]) -> f64 {
    jobs.iter()
        .map(|j| {
            j.stop
                .runtime_ns
                .map_or(0.0, |r| (r + j.ramp_ns) as f64 / 1e9)
                + 0.02
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::UsageError;

    fn field(e: anyhow::Error) -> String {
        e.downcast::<UsageError>().unwrap().field
    }

    #[test]
    fn numeric_axes() {
        assert_eq!(parse_u64_axis("--qd", "1,2,8").unwrap(), vec![1, 2, 8]);
        assert_eq!(
            parse_u64_axis("--qd", "1..16").unwrap(),
            vec![1, 2, 4, 8, 16]
        );
        assert_eq!(parse_u64_axis("--qd", "1..4096").unwrap().len(), 13);
        assert_eq!(parse_u64_axis("--qd", "3..20").unwrap(), vec![3, 6, 12]);
        assert_eq!(
            parse_u64_axis("--mix", "0..100/25").unwrap(),
            vec![0, 25, 50, 75, 100]
        );
        assert_eq!(parse_u64_axis("--batch", "1k").unwrap(), vec![1024]);
        assert_eq!(parse_u64_axis("--qd", "1,1,2").unwrap(), vec![1, 2]);
        assert_eq!(field(parse_u64_axis("--qd", "8..1").unwrap_err()), "--qd");
        assert!(parse_u64_axis("--qd", "0..8").is_err());
        assert!(parse_u64_axis("--qd", "1..8/0").is_err());
        assert!(parse_u64_axis("--qd", "").is_err());
        assert!(parse_u64_axis("--qd", "x").is_err());
        assert_eq!(
            parse_u32_axis("--mix", "100,95,65,50,35,5,0", 0, 100).unwrap(),
            vec![100, 95, 65, 50, 35, 5, 0]
        );
        assert!(parse_u32_axis("--mix", "101", 0, 100).is_err());
        assert!(parse_u32_axis("--qd", "0", 1, 65536).is_err());
    }

    #[test]
    fn bs_axes_and_splits() {
        let v = parse_bs_axis("--bs", "1k..64m").unwrap();
        assert_eq!(v.len(), 17);
        assert_eq!(v[0], vec![(1024, 100)]);
        assert_eq!(v[16], vec![(64 << 20, 100)]);
        assert_eq!(
            parse_bs_axis("--bs", "4k,64k,1m").unwrap(),
            vec![vec![(4096, 100)], vec![(65536, 100)], vec![(1 << 20, 100)]]
        );
        assert_eq!(parse_bs_axis("--bs", "4k..16k/4k").unwrap().len(), 4);
        assert_eq!(
            parse_bs_axis("--bs", "4k:70,64k:30").unwrap(),
            vec![vec![(4096, 70), (65536, 30)]]
        );
        assert_eq!(
            parse_bs_axis("--bs", "4k:70,64k:30;8k").unwrap(),
            vec![vec![(4096, 70), (65536, 30)], vec![(8192, 100)]]
        );
        assert!(parse_bs_axis("--bs", "0").is_err());
        assert!(parse_bs_axis("--bs", "4k:70,64k").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(
            parse_rate_axis("--rate", "1000,5k").unwrap(),
            RateAxis::Iops(vec![1000.0, 5000.0])
        );
        match parse_rate_axis("--rate", "10%..100%/10").unwrap() {
            RateAxis::PercentOfMax(v) => {
                assert_eq!(v.len(), 10);
                assert!((v[9] - 100.0).abs() < 1e-6);
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_rate_axis("--rate", "10%,1000").is_err());
        assert!(parse_rate_axis("--rate", "0").is_err());
        assert!(parse_rate_axis("--rate", "-5").is_err());
    }

    #[test]
    fn cross_product_skips_axes_that_do_not_apply() {
        let base = JobSpec::default();
        let axes = Axes {
            bs: parse_bs_axis("--bs", "4k,64k").unwrap(),
            qd: vec![1, 32],
            batch: vec![None, Some(8)],
            jobs: vec![1],
            mix: vec![100, 50],
            rw: vec![Pattern::RandRead, Pattern::RandRw],
            engine: vec![EngineKind::parse("null").unwrap()],
        };
        let jobs = expand(&base, &axes).unwrap();
        // randread: mix fixed -> (2 qd + 1 batch) x 2 bs = 6; randrw: x2 mixes = 12.
        assert_eq!(jobs.len(), 18);
        let names: std::collections::HashSet<_> = jobs.iter().map(|j| j.name.clone()).collect();
        assert_eq!(names.len(), 18, "names are unique");
        for j in &jobs {
            j.validate().unwrap();
        }
    }

    #[test]
    fn budget_is_shared() {
        let base = JobSpec::default();
        let mut axes = Axes::of(&base);
        axes.qd = vec![1, 2, 4, 8];
        let mut jobs = expand(&base, &axes).unwrap();
        apply_budget(&mut jobs, 8_000_000_000, 500_000_000).unwrap();
        assert!(jobs
            .iter()
            .all(|j| j.stop.runtime_ns == Some(2_000_000_000)));
        assert!((estimate_secs(&jobs) - 8.08).abs() < 1e-9);
        assert_eq!(
            field(apply_budget(&mut jobs, 1_000_000_000, 500_000_000).unwrap_err()),
            "--budget"
        );
    }

    proptest::proptest! {
        #[test]
        fn axes_never_panic(s in ".{0,16}") {
            let _ = parse_u64_axis("--qd", &s);
            let _ = parse_bs_axis("--bs", &s);
            let _ = parse_rate_axis("--rate", &s);
        }

        #[test]
        fn doubling_range_is_powers(a in 0u32..10, b in 0u32..20) {
            let (lo, hi) = (1u64 << a, 1u64 << b);
            let r = parse_u64_axis("--qd", &format!("{lo}..{hi}"));
            if lo > hi {
                proptest::prop_assert!(r.is_err());
            } else {
                let v = r.unwrap();
                proptest::prop_assert_eq!(v.len() as u32, b - a + 1);
                proptest::prop_assert!(v.windows(2).all(|w| w[1] == 2 * w[0]));
            }
        }

        #[test]
        fn product_size(nb in 1usize..5, nq in 1usize..5, nj in 1usize..3) {
            let base = JobSpec::default();
            let mut axes = Axes::of(&base);
            axes.bs = (0..nb).map(|i| vec![(4096u64 << i, 100)]).collect();
            axes.qd = (0..nq).map(|i| 1u32 << i).collect();
            axes.jobs = (1..=nj as u32).collect();
            let jobs = expand(&base, &axes).unwrap();
            proptest::prop_assert_eq!(jobs.len(), nb * nq * nj);
        }
    }
}

#[cfg(test)]
mod placement_tests {
    use super::*;
    use crate::error::UsageError;

    fn nodes(root: &Path, n: u32) {
        for i in 0..n {
            let d = root.join(format!("sys/devices/system/node/node{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cpulist"), format!("{i}\n")).unwrap();
        }
    }

    #[test]
    fn each_job_on_the_device_node_and_off_it() {
        let t = tempfile::tempdir().unwrap();
        nodes(t.path(), 2);
        let jobs = placement(vec![JobSpec::default()], Some(1), t.path()).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].placement, Some(PlacementSide::OnNode));
        assert_eq!((jobs[0].numa_node, jobs[0].mem_node), (Some(1), Some(1)));
        assert_eq!(jobs[1].placement, Some(PlacementSide::OffNode));
        assert_eq!((jobs[1].numa_node, jobs[1].mem_node), (Some(0), Some(0)));
        // A device without a node: the lowest node is taken as its node.
        let jobs = placement(vec![JobSpec::default()], None, t.path()).unwrap();
        assert_eq!((jobs[0].numa_node, jobs[1].numa_node), (Some(0), Some(1)));
    }

    #[test]
    fn one_node_cannot_sweep_placement() {
        let t = tempfile::tempdir().unwrap();
        nodes(t.path(), 1);
        let e = placement(vec![JobSpec::default()], None, t.path()).unwrap_err();
        let e = e.downcast::<UsageError>().unwrap();
        assert_eq!(e.field, "--sweep");
        assert!(
            e.to_string().contains("this machine has one NUMA node"),
            "{e}"
        );
    }

    #[test]
    fn a_node_that_does_not_exist_names_the_flag_and_the_nodes() {
        let t = tempfile::tempdir().unwrap();
        nodes(t.path(), 2);
        crate::plan::job::check_node("--mem-node", Some(1), t.path()).unwrap();
        let e = crate::plan::job::check_node("--mem-node", Some(4), t.path()).unwrap_err();
        let e = e.downcast::<UsageError>().unwrap();
        assert_eq!(e.field, "--mem-node");
        assert!(e.to_string().contains("NUMA nodes 0, 1"), "{e}");
    }
}
