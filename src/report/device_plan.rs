//! `iolab device --dry-run`: the experiments a run would measure, their
//! jobs, points and estimated time, on stdout (moved from
//! commands/device_flags.rs).

use crate::plan::device_args::DeviceSettings;
use crate::plan::experiment::{Experiment, Mode};
use crate::plan::parse::format_ns;
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

pub fn dry_run(exps: &[Experiment], a: &DeviceSettings) {
    let (mut points, mut total) = (0usize, 0.0);
    println!(
        "plan on {}:",
        a.target
            .first()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| ".".into())
    );
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
            let secs = j.stop.runtime_ns.map(|r| (r + j.ramp_ns) as f64 / 1e9);
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
                secs.map(|s| format!("runtime={s:.1}s"))
                    .unwrap_or_else(|| "until io limit".into()),
                j.open_loop
                    .map(|o| format!(" rate={:.0} ({})", o.rate_iops, o.arrival.name()))
                    .unwrap_or_default(),
                if j.verify { " verify" } else { "" }
            );
        }
    }
    println!("{points} point(s); estimated duration: {total:.0} s (plus scratch file layout and preconditioning)");
}
