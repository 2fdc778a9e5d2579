//! `iolab device --dry-run`: the experiments a run would measure, their
//! jobs, points and estimated time, on stdout (moved from
//! commands/device_flags.rs).

use crate::plan::experiment::{Experiment, Mode};
use crate::plan::job::JobSpec;
use crate::plan::parse::{format_ns, format_size};
use crate::plan::sweep::RateAxis;

fn mode_text(m: &Mode) -> String {
    match m {
        Mode::Plain => String::new(),
        Mode::Rates { rates, arrival } => match rates {
            RateAxis::Iops(v) => format!(
                "open loop ({}) at {} IOPS",
                arrival.name(),
                v.iter()
                    .map(|r| format!("{r:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            RateAxis::PercentOfMax(v) => format!(
                "closed-loop maximum, then open loop ({}) at {}% of it",
                arrival.name(),
                v.iter()
                    .map(|r| format!("{r:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        Mode::LatencyTarget {
            target_ns,
            percentile,
            open_loop,
        } => format!(
            "largest {} with p{percentile} <= {} (doubling, then bisection)",
            if open_loop.is_some() { "rate" } else { "QD" },
            format_ns(*target_ns as f64)
        ),
        Mode::Steady(s) => format!(
            "rounds until steady on {:?} ({:?}, window {}, at most {} rounds)",
            s.metric, s.criterion, s.window, s.max_rounds
        ),
        Mode::Concurrent { reports } => format!(
            "all {} jobs at once (fio runs the jobs between two stonewalls together), {} point(s)",
            reports.iter().map(Vec::len).sum::<usize>(),
            reports.len()
        ),
    }
}

/// What stops a job and what it does between requests: runtime (ramp
/// included), request count, bytes, think time, fsyncs.
fn limits_text(j: &JobSpec) -> String {
    let mut out = Vec::new();
    if let Some(r) = j.stop.runtime_ns {
        out.push(format!("runtime={:.1}s", (r + j.ramp_ns) as f64 / 1e9));
    }
    if j.ramp_ns > 0 {
        out.push(format!("ramp={}", format_ns(j.ramp_ns as f64)));
    }
    if let Some(n) = j.stop.io_count {
        out.push(format!("io_count={n} (all workers)"));
    }
    if let Some(n) = j.numa_node {
        out.push(format!("numa_node={n}"));
    }
    if let Some(n) = j.buffer_node() {
        out.push(format!("mem_node={n}"));
    }
    if let Some(b) = j.stop.io_bytes {
        out.push(format!("io_bytes={} (all workers)", format_size(b)));
    }
    if let Some(t) = j.think.filter(|t| t.ns > 0) {
        let spin = if t.spin_ns > 0 {
            format!(", {} of it spinning", format_ns(t.spin_ns as f64))
        } else {
            String::new()
        };
        out.push(format!(
            "thinktime={} every {} request(s){spin}",
            format_ns(t.ns as f64),
            t.blocks.max(1)
        ));
    }
    if j.fsync_every > 0 {
        out.push(format!("fsync every {} write(s)", j.fsync_every));
    }
    out.join(" ")
}

pub fn dry_run(exps: &[Experiment], target: &str) {
    let (mut points, mut total) = (0usize, 0.0);
    println!("plan on {target}:");
    for e in exps {
        let (n, secs) = e.estimate();
        points += n;
        total += secs;
        let title = if e.name.is_empty() {
            "experiment".to_string()
        } else {
            e.name.clone()
        };
        println!(
            "{title}: {} job(s), ~{n} point(s), ~{secs:.0} s",
            e.jobs.len()
        );
        if e.purge {
            println!("  purge the target");
        }
        if let Some(p) = e.precondition {
            println!("  precondition: {p}x capacity of 128k sequential writes");
        }
        let m = mode_text(&e.mode);
        if !m.is_empty() {
            println!("  {m}");
        }
        for j in &e.jobs {
            println!(
                "  {:<40} rw={} bs={} qd={} jobs={} engine={} direct={} {}{}{}",
                j.name,
                j.pattern.name(),
                j.bs_label(),
                match j.batch.filter(|&k| k > 0) {
                    Some(k) => format!("{} (batches of {k}: submit {k}, wait for all)", j.depth()),
                    None => j.depth().to_string(),
                },
                j.jobs,
                j.engine.name(),
                j.direct,
                limits_text(j),
                j.open_loop
                    .map(|o| format!(" rate={:.0} ({})", o.rate_iops, o.arrival.name()))
                    .unwrap_or_default(),
                if j.verify { " verify" } else { "" }
            );
        }
    }
    println!("{points} point(s); estimated duration: {total:.0} s (plus scratch file layout and preconditioning)");
}
