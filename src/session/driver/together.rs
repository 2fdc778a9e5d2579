//! The driver's concurrent jobs (`Mode::Concurrent`: a fio job file's jobs
//! between two stonewalls): run at once through `runner::together`, then
//! one point per reporting group, merged exactly when the group holds
//! several jobs (fio's `group_reporting`); each point says which jobs ran
//! beside it.

use super::{run_options, Driver};
use crate::interrupt;
use crate::plan::job::JobSpec;
use crate::results::merge::{merge_points, CpuOf};
use crate::results::Point;
use crate::runner::together;
use crate::session::Tags;

impl Driver<'_> {
    pub(super) fn run_together(
        &mut self,
        jobs: &[JobSpec],
        exp: &str,
        reports: &[Vec<usize>],
    ) -> anyhow::Result<()> {
        if interrupt::stop_requested() {
            return Ok(());
        }
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        let label = self.next_label(&names.join(" + "));
        let progress = self.reporter(label);
        let opts = run_options(
            self.clock,
            self.peers.as_ref(),
            self.reports_progress().then_some(&progress),
        );
        let outcomes = together::run_together(jobs, self.target, &opts);
        if self.show_progress {
            self.observer.progress_done();
        }
        let mut points: Vec<Option<Point>> = Vec::with_capacity(jobs.len());
        for (job, out) in jobs.iter().zip(outcomes) {
            match out {
                Ok(o) => {
                    self.sink.results.provenance.merge_features(o.features);
                    points.push(Some(o.point));
                }
                Err(e) => {
                    let cannot_run = crate::error::point_cannot_run(&e);
                    self.skip(job, exp, format!("{e:#}"), !cannot_run)?;
                    points.push(None);
                }
            }
        }
        let ran_with = names.join(",");
        for report in reports {
            let parts: Vec<(&str, &Point)> = report
                .iter()
                .filter_map(|&k| Some((names[k], points.get(k)?.as_ref()?)))
                .collect();
            let Some(mut p) = merge_points(&parts, "job", CpuOf::OneProcess) else {
                continue;
            };
            if parts.len() == 1 {
                p = parts[0].1.clone();
            } else {
                let merged: Vec<&str> = parts.iter().map(|(n, _)| *n).collect();
                p.params.insert("group_of".into(), merged.join(","));
            }
            p.params.insert("ran_with".into(), ran_with.clone());
            if jobs.len() > 1 {
                p.warnings.push(format!(
                    "ran at once with {ran_with}: its cpu is the whole process's, shared by them"
                ));
            }
            super::super::mark_if_interrupted(&mut p);
            Tags {
                experiment: exp,
                ..Tags::default()
            }
            .apply(&mut p);
            self.observer.point_done(&p);
            self.sink.export_point(&p)?;
            self.sink.results.points.push(p);
            self.save()?;
        }
        Ok(())
    }
}
