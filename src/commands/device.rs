//! `iolab device`: turn arguments into validated jobs, prepare the target
//! safely, run each job, print its table and keep the results file current.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use crate::cli::device::DeviceArgs;
use crate::engine::fake::FakeScript;
use crate::engine::{EngineKind, UringOptions};
use crate::error::{usage, Interrupted, VerifyFailed};
use crate::interrupt;
use crate::plan::job::{JobSpec, Pattern, RegionMode, StopCondition};
use crate::plan::parse::{parse_bs_split, parse_cpu_list, parse_duration_ns, parse_size};
use crate::plan::profile;
use crate::report::terminal;
use crate::results::{Provenance, Results};
use crate::runner::job::{run_job, RunOptions};
use crate::target::{self, TargetOptions};

/// Parse a count with optional k/m/g suffix (powers of 1000 would surprise
/// fio users less than 1024 here? fio uses 1024 for sizes; counts use 1000).
fn parse_count(field: &str, s: &str) -> anyhow::Result<u64> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1_000),
        Some('m') => (&t[..t.len() - 1], 1_000_000),
        Some('g') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t.as_str(), 1),
    };
    let n: u64 = num.parse().map_err(|_| {
        usage(
            field,
            format!("'{s}' is not a count (examples: 1000, 10k, 2m)"),
        )
    })?;
    n.checked_mul(mult)
        .ok_or_else(|| usage(field, format!("'{s}' is too large")))
}

fn parse_u32(field: &str, s: &str) -> anyhow::Result<u32> {
    s.trim()
        .parse()
        .map_err(|_| usage(field, format!("'{s}' is not a whole number")))
}

/// The job the flags describe (before any profile expands it).
pub fn base_spec(a: &DeviceArgs) -> anyhow::Result<JobSpec> {
    let pattern = Pattern::parse(&a.rw).ok_or_else(|| {
        usage(
            "--rw",
            format!(
                "unknown pattern '{}' (read, write, randread, randwrite, readwrite, randrw)",
                a.rw
            ),
        )
    })?;
    let engine = EngineKind::parse(&a.engine)
        .filter(|e| *e != EngineKind::Fake || a.fake_latency.is_some())
        .ok_or_else(|| {
            usage(
                "--engine",
                format!(
                    "unknown engine '{}' (psync, aio, io_uring, mmap, null)",
                    a.engine
                ),
            )
        })?;
    let mix: u32 = parse_u32("--mix", &a.mix)?;
    if mix > 100 {
        return Err(usage("--mix", format!("read percentage {mix} is over 100")));
    }
    let runtime = a
        .runtime
        .as_deref()
        .map(|r| parse_duration_ns("--runtime", r))
        .transpose()?;
    let io_count = a
        .io_count
        .as_deref()
        .map(|c| parse_count("--io-count", c))
        .transpose()?;
    let io_bytes = a
        .io_bytes
        .as_deref()
        .map(|b| parse_size("--io-bytes", b))
        .transpose()?;
    let default_runtime = if io_count.is_none() && io_bytes.is_none() {
        Some(10_000_000_000)
    } else {
        None
    };
    let region = match a.region.as_str() {
        "shared" => RegionMode::Shared,
        "split" => RegionMode::Split,
        other => {
            return Err(usage(
                "--region",
                format!("'{other}' is not shared or split"),
            ))
        }
    };
    let fake = a
        .fake_latency
        .as_deref()
        .map(|l| -> anyhow::Result<FakeScript> {
            let lat = l
                .split(',')
                .map(|x| parse_duration_ns("--fake-latency", x))
                .collect::<anyhow::Result<Vec<_>>>()?;
            Ok(FakeScript {
                latencies_ns: lat,
                servers: a.fake_servers.max(1),
            })
        })
        .transpose()?;
    let spec = JobSpec {
        name: a.name.clone().unwrap_or_default(),
        pattern,
        mix: mix as u8,
        bs: parse_bs_split("--bs", &a.bs)?,
        qd: parse_u32("--qd", &a.qd)?,
        jobs: parse_u32("--jobs", &a.jobs)?,
        region,
        cpus: a
            .cpus
            .as_deref()
            .map(|c| parse_cpu_list("--cpus", c))
            .transpose()?,
        engine,
        uring: UringOptions {
            fixed_buffers: a.uring_fixed_buffers,
            fixed_files: a.uring_fixed_files,
            sqpoll: a.uring_sqpoll,
            iopoll: a.uring_iopoll,
        },
        direct: !a.buffered && engine != EngineKind::Mmap,
        stop: StopCondition {
            runtime_ns: runtime.or(default_runtime),
            io_count,
            io_bytes,
        },
        ramp_ns: a
            .ramp
            .as_deref()
            .map(|r| parse_duration_ns("--ramp", r))
            .transpose()?
            .unwrap_or(0),
        seed: a.seed,
        fsync_every: a.fsync_every,
        batch: a
            .batch
            .as_deref()
            .map(|b| parse_u32("--batch", b))
            .transpose()?,
        verify: a.verify,
        size: None,
        fake,
    };
    if engine == EngineKind::Mmap && a.direct {
        return Err(usage("--direct", "mmap always goes through the page cache"));
    }
    if a.uring_fixed_buffers || a.uring_fixed_files || a.uring_sqpoll || a.uring_iopoll {
        if engine != EngineKind::IoUring {
            return Err(usage(
                "--uring-*",
                format!(
                    "io_uring options need --engine io_uring (not {})",
                    engine.name()
                ),
            ));
        }
        if a.uring_iopoll && !spec.direct {
            return Err(usage(
                "--uring-iopoll",
                "completion polling needs O_DIRECT (drop --buffered)",
            ));
        }
    }
    Ok(spec)
}

/// Every job to run, validated.
pub fn specs_from_args(a: &DeviceArgs) -> anyhow::Result<Vec<JobSpec>> {
    let base = base_spec(a)?;
    let mut jobs = match &a.profile {
        Some(p) => profile::expand(p, &base)?,
        None => vec![base],
    };
    for j in &mut jobs {
        if j.name.is_empty() {
            j.name = j.default_name();
        }
        j.validate()?;
    }
    Ok(jobs)
}

fn dry_run(jobs: &[JobSpec], a: &DeviceArgs) {
    let mut total = 0.0;
    println!(
        "{} job(s) on {}:",
        jobs.len(),
        a.target
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| ".".into())
    );
    for j in jobs {
        let secs = j.stop.runtime_ns.map(|r| (r + j.ramp_ns) as f64 / 1e9);
        total += secs.unwrap_or(0.0);
        println!(
            "  {:<36} rw={} bs={} qd={} jobs={} engine={} direct={} {}{}",
            j.name,
            j.pattern.name(),
            j.bs_label(),
            j.depth(),
            j.jobs,
            j.engine.name(),
            j.direct,
            secs.map(|s| format!("runtime={s:.1}s"))
                .unwrap_or_else(|| "until io limit".into()),
            if j.verify { " verify" } else { "" }
        );
    }
    println!("estimated duration: {total:.0} s (plus scratch file layout)");
}

pub fn run(a: DeviceArgs) -> anyhow::Result<()> {
    let jobs = specs_from_args(&a)?;
    if a.dry_run {
        dry_run(&jobs, &a);
        return Ok(());
    }
    interrupt::install();
    let needs_file = jobs.iter().any(|j| j.engine.needs_file());
    let size = a
        .size
        .as_deref()
        .map(|s| parse_size("--size", s))
        .transpose()?;
    if size == Some(0) {
        return Err(usage("--size", "size must be greater than 0"));
    }
    let verify_bs = jobs.iter().find(|j| j.verify).map(|j| j.max_bs());
    let topts = TargetOptions {
        path: if needs_file {
            Some(a.target.clone().unwrap_or_else(|| PathBuf::from(".")))
        } else {
            None
        },
        size,
        overwrite: a.overwrite,
        destroy_data: a.destroy_data.clone(),
        keep: a.keep,
    };
    let quiet = a.quiet || a.json.as_deref() == Some(std::path::Path::new("-"));
    let mut provenance = Provenance::collect(a.seed);
    let mut run_warnings = Vec::new();
    let ncpu = provenance.cpu_count as f64;
    if provenance.load_average[0] > 0.5 * ncpu {
        run_warnings.push(format!(
            "the machine was busy at start (load average {:.2} on {} CPUs): numbers may be noisy; rerun when idle",
            provenance.load_average[0], provenance.cpu_count
        ));
    }
    if !quiet && needs_file && a.target.as_ref().is_none_or(|p| p.is_dir()) {
        eprintln!(
            "iolab: preparing a {} MiB scratch file...",
            size.unwrap_or(target::DEFAULT_SCRATCH_SIZE) >> 20
        );
    }
    let writes = jobs.iter().any(|j| j.writes());
    let target = target::prepare(&topts, writes, verify_bs, a.seed)?;
    provenance.target = Some(target.info());
    provenance.plan = serde_json::to_value(&jobs)?;
    let mut results = Results::new("device", provenance);
    results.warnings = run_warnings;
    let json_path = a.json.clone().filter(|p| p.as_os_str() != "-");
    let save = |r: &Results| -> anyhow::Result<()> {
        if let Some(p) = &json_path {
            r.write_atomic(p)?;
        }
        Ok(())
    };
    save(&results)?;
    if !quiet {
        for w in &results.warnings {
            eprintln!("warning: {w}");
        }
    }

    let show_progress = !quiet && std::io::stderr().is_terminal();
    let n = jobs.len();
    for (i, job) in jobs.iter().enumerate() {
        if interrupt::stop_requested() {
            break;
        }
        let label = format!("[{}/{}] {}", i + 1, n, job.name);
        let progress = move |elapsed: f64, total: Option<f64>| {
            let eta = total
                .map(|t| format!(" ETA {:.0}s", (t - elapsed).max(0.0)))
                .unwrap_or_default();
            eprint!(
                "\r\x1b[2K{label}: {elapsed:.0}s{}{eta}",
                total.map(|t| format!("/{t:.0}s")).unwrap_or_default()
            );
            let _ = std::io::stderr().flush();
        };
        let opts = RunOptions {
            record_requests: None,
            on_progress: if show_progress { Some(&progress) } else { None },
        };
        let outcome = run_job(job, &target, &opts);
        if show_progress {
            eprint!("\r\x1b[2K");
        }
        let mut outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                results
                    .warnings
                    .push(format!("job {} failed: {e:#}", job.name));
                save(&results)?;
                return Err(e);
            }
        };
        if interrupt::stop_requested() {
            outcome
                .point
                .warnings
                .push("interrupted before the end of the job: this point is partial".into());
            outcome
                .point
                .extra
                .insert("interrupted".into(), serde_json::Value::Bool(true));
        }
        for f in outcome.features {
            if !results.provenance.engine_features.contains(&f) {
                results.provenance.engine_features.push(f);
            }
        }
        if !quiet {
            println!("{}", terminal::point_block(&outcome.point));
        }
        results.points.push(outcome.point);
        save(&results)?;
    }
    results.interrupted = interrupt::stop_requested();
    results.complete = !results.interrupted;
    save(&results)?;
    if a.json.as_deref() == Some(std::path::Path::new("-")) {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else if let (Some(p), false) = (&json_path, quiet) {
        println!("results: {}", p.display());
    }
    drop(target);
    if results.interrupted {
        return Err(Interrupted.into());
    }
    let mismatches: u64 = results
        .points
        .iter()
        .filter_map(|p| p.verify.as_ref())
        .map(|v| v.mismatches)
        .sum();
    if mismatches > 0 {
        return Err(VerifyFailed { mismatches }.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("--io-count", "10k").unwrap(), 10_000);
        assert_eq!(parse_count("--io-count", "2M").unwrap(), 2_000_000);
        assert!(parse_count("--io-count", "x").is_err());
        assert!(parse_count("--io-count", "99999999999999999999g").is_err());
    }
}
