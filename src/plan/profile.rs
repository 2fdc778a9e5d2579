//! Built-in sets of jobs. Each takes the user's base job (target, engine,
//! runtime, depth, jobs ...) and varies what the profile is about.

use crate::error::usage;
use crate::plan::job::{JobSpec, Pattern};
use crate::plan::sweep;

pub const PROFILES: [&str; 9] = [
    "quick",
    "snia-iops",
    "snia-throughput",
    "snia-latency",
    "batched-scan",
    "batched-random",
    "qd1-latency",
    "max",
    "act",
];

/// Budget of the batched profiles when none is given.
pub const DEFAULT_BATCHED_BUDGET_NS: u64 = 300_000_000_000;
/// Shortest measurement a batched point gets before the grid is thinned.
pub const MIN_BATCHED_POINT_NS: u64 = 1_000_000_000;
/// Largest k x B a batched point may use (its buffer pool).
pub const MAX_BATCH_BYTES: u64 = 256 << 20;

/// SNIA PTS block sizes and read/write mixes.
pub const SNIA_BS: [u64; 8] = [512, 4096, 8192, 16384, 32768, 65536, 131_072, 1 << 20];
pub const SNIA_MIXES: [u8; 7] = [100, 95, 65, 50, 35, 5, 0];

/// Expand a profile name into jobs derived from `base`. `budget_ns` is the
/// total time for profiles that trim themselves to a budget (batched-*).
pub fn expand(name: &str, base: &JobSpec, budget_ns: Option<u64>) -> anyhow::Result<Vec<JobSpec>> {
    let jobs = match name {
        "quick" => quick(base),
        "snia-iops" => snia_iops(base),
        "snia-throughput" => snia_throughput(base),
        "snia-latency" => snia_latency(base),
        "batched-scan" => batched(base, false, 128, budget_ns)?,
        "batched-random" => batched(base, true, 4096, budget_ns)?,
        "qd1-latency" => qd1_latency(base),
        "max" => max(base),
        "act" => vec![super::act::job(base, 1.0)],
        other => {
            return Err(usage(
                "--profile",
                format!("unknown profile '{other}' (known: {})", PROFILES.join(", ")),
            ))
        }
    };
    Ok(jobs)
}

fn job(base: &JobSpec, name: String, pattern: Pattern, bs: u64, qd: u32) -> JobSpec {
    JobSpec {
        name,
        pattern,
        bs: vec![(bs, 100)],
        qd,
        batch: None,
        ..base.clone()
    }
}

fn bs_name(b: u64) -> String {
    crate::plan::parse::format_size(b)
}

/// The short default characterization: unloaded 4k random-read latency,
/// 4k random-read IOPS at QD32, and 1 MiB sequential read and write bandwidth.
fn quick(base: &JobSpec) -> Vec<JobSpec> {
    vec![
        job(
            base,
            "qd1-4k-randread-latency".into(),
            Pattern::RandRead,
            4096,
            1,
        ),
        job(
            base,
            "qd32-4k-randread-iops".into(),
            Pattern::RandRead,
            4096,
            32,
        ),
        job(
            base,
            "1m-seqread-bandwidth".into(),
            Pattern::Read,
            1 << 20,
            8,
        ),
        job(
            base,
            "1m-seqwrite-bandwidth".into(),
            Pattern::Write,
            1 << 20,
            8,
        ),
    ]
}

/// SNIA IOPS test: 8 block sizes x 7 mixes, random, at the user's QD and
/// jobs; the mix is the outer loop like the specification's rounds.
fn snia_iops(base: &JobSpec) -> Vec<JobSpec> {
    let mut out = Vec::new();
    for mix in SNIA_MIXES {
        for bs in SNIA_BS {
            let mut j = job(
                base,
                format!("snia-iops-{mix}-{}-{}", 100 - mix, bs_name(bs)),
                Pattern::RandRw,
                bs,
                base.qd,
            );
            j.mix = mix;
            out.push(j);
        }
    }
    out
}

/// SNIA throughput test: sequential 128 KiB and 1 MiB, read and write.
fn snia_throughput(base: &JobSpec) -> Vec<JobSpec> {
    let mut out = Vec::new();
    for bs in [131_072u64, 1 << 20] {
        for p in [Pattern::Read, Pattern::Write] {
            out.push(job(
                base,
                format!("snia-tp-{}-{}", bs_name(bs), p.name()),
                p,
                bs,
                base.qd,
            ));
        }
    }
    out
}

/// SNIA latency test: {0.5, 4, 8} KiB x {100/0, 65/35, 0/100}, QD 1, one job.
fn snia_latency(base: &JobSpec) -> Vec<JobSpec> {
    let mut out = Vec::new();
    for mix in [100u8, 65, 0] {
        for bs in [512u64, 4096, 8192] {
            let mut j = job(
                base,
                format!("snia-lat-{mix}-{}-{}", 100 - mix, bs_name(bs)),
                Pattern::RandRw,
                bs,
                1,
            );
            j.mix = mix;
            j.jobs = 1;
            out.push(j);
        }
    }
    out
}

/// Unloaded latency of the four basic patterns at 4 KiB (SYSTOR'15).
fn qd1_latency(base: &JobSpec) -> Vec<JobSpec> {
    [
        Pattern::RandRead,
        Pattern::RandWrite,
        Pattern::Read,
        Pattern::Write,
    ]
    .into_iter()
    .map(|p| {
        let mut j = job(base, format!("qd1-4k-{}", p.name()), p, 4096, 1);
        j.jobs = 1;
        j
    })
    .collect()
}

/// Maximum 4 KiB random-read IOPS and maximum 1 MiB sequential bandwidth.
fn max(base: &JobSpec) -> Vec<JobSpec> {
    let qd = base.qd.max(128);
    vec![
        job(
            base,
            "max-4k-randread-iops".into(),
            Pattern::RandRead,
            4096,
            qd,
        ),
        job(
            base,
            "max-1m-read-bw".into(),
            Pattern::Read,
            1 << 20,
            base.qd.max(32),
        ),
        job(
            base,
            "max-1m-write-bw".into(),
            Pattern::Write,
            1 << 20,
            base.qd.max(32),
        ),
    ]
}

/// Keep the first, the last and every other value in between.
fn thin<T: Copy>(v: &[T]) -> Vec<T> {
    let n = v.len();
    v.iter()
        .enumerate()
        .filter(|(i, _)| i % 2 == 0 || *i == n - 1)
        .map(|(_, x)| *x)
        .collect()
}

/// Batched access (Bingmann): B = 4k..64m x k = 1..kmax (powers of two),
/// with k x B <= 256 MiB, thinned (alternately k and B) until every point
/// gets at least 1 s of the budget. Reads, or writes when the base job writes.
fn batched(
    base: &JobSpec,
    random: bool,
    kmax: u32,
    budget_ns: Option<u64>,
) -> anyhow::Result<Vec<JobSpec>> {
    let writes = base.read_percent() == 0;
    let pattern = match (random, writes) {
        (true, false) => Pattern::RandRead,
        (true, true) => Pattern::RandWrite,
        (false, false) => Pattern::Read,
        (false, true) => Pattern::Write,
    };
    let mut bss: Vec<u64> = (12..=26).map(|s| 1u64 << s).collect();
    let mut ks: Vec<u32> = (0..=kmax.ilog2()).map(|s| 1u32 << s).collect();
    let budget = budget_ns.unwrap_or(DEFAULT_BATCHED_BUDGET_NS);
    let grid = |bss: &[u64], ks: &[u32]| -> Vec<(u64, u32)> {
        bss.iter()
            .flat_map(|&b| ks.iter().map(move |&k| (b, k)))
            .filter(|&(b, k)| b * k as u64 <= MAX_BATCH_BYTES)
            .collect()
    };
    let mut turn_k = true;
    while (grid(&bss, &ks).len() as u64) * MIN_BATCHED_POINT_NS > budget {
        let (nb, nk) = (bss.len(), ks.len());
        if nb <= 2 && nk <= 2 {
            break;
        }
        if (turn_k && nk > 2) || nb <= 2 {
            ks = thin(&ks);
        } else {
            bss = thin(&bss);
        }
        turn_k = !turn_k;
    }
    let name = if random {
        "batched-random"
    } else {
        "batched-scan"
    };
    let mut jobs: Vec<JobSpec> = grid(&bss, &ks)
        .into_iter()
        .map(|(b, k)| {
            let mut j = job(
                base,
                format!("{name}-{}-{}-k{k}", pattern.name(), bs_name(b)),
                pattern,
                b,
                base.qd,
            );
            j.batch = Some(k);
            j
        })
        .collect();
    let per_point_min = MIN_BATCHED_POINT_NS
        .min(budget / jobs.len().max(1) as u64)
        .max(1);
    sweep::apply_budget(&mut jobs, budget, per_point_min)?;
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_expands_to_valid_jobs() {
        let base = JobSpec::default();
        for p in PROFILES {
            let jobs = expand(p, &base, None).unwrap();
            assert!(!jobs.is_empty(), "{p}");
            let mut names = std::collections::HashSet::new();
            for j in &jobs {
                j.validate().unwrap();
                assert!(names.insert(j.name.clone()), "{p}: duplicate {}", j.name);
            }
        }
        assert_eq!(expand("quick", &base, None).unwrap().len(), 4);
        assert_eq!(expand("snia-iops", &base, None).unwrap().len(), 56);
        assert_eq!(expand("snia-latency", &base, None).unwrap().len(), 9);
        assert!(expand("nope", &base, None).is_err());
    }

    #[test]
    fn batched_fits_its_budget() {
        let base = JobSpec::default();
        for budget in [30u64, 120, 600, 3600] {
            let ns = budget * 1_000_000_000;
            let jobs = expand("batched-random", &base, Some(ns)).unwrap();
            let total: u64 = jobs.iter().map(|j| j.stop.runtime_ns.unwrap()).sum();
            assert!(total <= ns, "{budget}s: {total}");
            assert!(jobs
                .iter()
                .all(|j| j.max_bs() * j.batch.unwrap() as u64 <= MAX_BATCH_BYTES));
            // k = 1 is always kept (the speedup reference), and 4k too.
            assert!(jobs
                .iter()
                .any(|j| j.batch == Some(1) && j.max_bs() == 4096));
        }
        let full = expand("batched-random", &base, Some(3_600_000_000_000)).unwrap();
        assert!(full.iter().any(|j| j.batch == Some(4096)));
        assert!(full.iter().any(|j| j.max_bs() == 64 << 20));
    }
}
