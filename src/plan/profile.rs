//! Built-in sets of jobs. Each takes the user's base job (target, engine,
//! runtime, ...) and varies what the profile is about.

use crate::error::usage;
use crate::plan::job::{JobSpec, Pattern};

pub const PROFILES: [&str; 1] = ["quick"];

/// Expand a profile name into jobs derived from `base`.
pub fn expand(name: &str, base: &JobSpec) -> anyhow::Result<Vec<JobSpec>> {
    match name {
        "quick" => Ok(quick(base)),
        other => Err(usage(
            "--profile",
            format!("unknown profile '{other}' (known: {})", PROFILES.join(", ")),
        )),
    }
}

/// The short default characterization: unloaded 4k random-read latency,
/// 4k random-read IOPS at QD32, and 1 MiB sequential read and write bandwidth.
fn quick(base: &JobSpec) -> Vec<JobSpec> {
    let job = |name: &str, pattern: Pattern, bs: u64, qd: u32| JobSpec {
        name: name.into(),
        pattern,
        bs: vec![(bs, 100)],
        qd,
        batch: None,
        ..base.clone()
    };
    vec![
        job("qd1-4k-randread-latency", Pattern::RandRead, 4096, 1),
        job("qd32-4k-randread-iops", Pattern::RandRead, 4096, 32),
        job("1m-seqread-bandwidth", Pattern::Read, 1 << 20, 8),
        job("1m-seqwrite-bandwidth", Pattern::Write, 1 << 20, 8),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_has_four_valid_jobs() {
        let jobs = expand("quick", &JobSpec::default()).unwrap();
        assert_eq!(jobs.len(), 4);
        for j in &jobs {
            j.validate().unwrap();
        }
        assert!(expand("nope", &JobSpec::default()).is_err());
    }
}
