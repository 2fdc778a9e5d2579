//! Where a run's results go: the `Results` being built, re-analysed and
//! written atomically after every point (so Ctrl-C or a crash keeps what
//! was measured), and the optional fio-JSON export kept with it (one job
//! appended per point: `FioExportFile`).

use std::path::{Path, PathBuf};

use crate::analysis::{self, AnalysisOptions};
use crate::report::fio_json::export::FioExportFile;
use crate::report::fio_json::to_fio_json;
use crate::report::fio_log::{file_prefix, write_logs, LogRequest};
use crate::results::output::is_stream;
use crate::results::{write_atomic, Point, Results};

/// fio-format logs to write after every point (`--log-dir`, or a fio job
/// file's `write_*_log`).
#[derive(Debug, Clone, Default)]
pub struct LogPlan {
    pub dir: PathBuf,
    /// Every point, all three logs named after the point (`--log-dir`).
    pub every_point: bool,
    /// Points by name (fio jobs) with the logs their job asked for.
    pub by_name: Vec<(String, LogRequest)>,
}

/// The results of a run and the files they are kept in.
pub struct ResultsSink {
    logs: Option<LogPlan>,
    pub results: Results,
    path: Option<PathBuf>,
    fio_export: Option<FioExportFile>,
    /// Which of the two is a FIFO or character device (decided once: a
    /// stream is written once, at the end).
    path_is_stream: bool,
    export_is_stream: bool,
    analysis: AnalysisOptions,
}

impl ResultsSink {
    /// `path`: the results file (none: kept in memory only);
    /// `fio_export`: also write fio's JSON shape there.
    pub fn new(
        results: Results,
        path: Option<PathBuf>,
        fio_export: Option<PathBuf>,
        analysis: AnalysisOptions,
    ) -> ResultsSink {
        ResultsSink {
            results,
            path_is_stream: path.as_deref().is_some_and(is_stream),
            export_is_stream: fio_export.as_deref().is_some_and(is_stream),
            path,
            fio_export: fio_export.map(FioExportFile::new),
            analysis,
            logs: None,
        }
    }

    /// Also write fio-format logs after every point.
    pub fn with_logs(mut self, logs: Option<LogPlan>) -> ResultsSink {
        self.logs = logs;
        self
    }

    /// The fio-format logs of a point just measured, if asked for.
    pub fn write_point_logs(&self, p: &Point) -> anyhow::Result<()> {
        let Some(plan) = &self.logs else {
            return Ok(());
        };
        let req = if plan.every_point {
            Some(LogRequest::all(&file_prefix(&p.name)))
        } else {
            plan.by_name
                .iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, r)| r.clone())
        };
        if let Some(req) = req {
            write_logs(&plan.dir, &req, p)?;
        }
        Ok(())
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Add a measured point and save.
    /// Options of the analysis run at every save (per experiment).
    pub fn set_analysis(&mut self, analysis: AnalysisOptions) {
        self.analysis = analysis;
    }

    pub fn push(&mut self, point: Point) -> anyhow::Result<()> {
        self.results.points.push(point);
        self.save()
    }

    /// Recompute the analysis and rewrite every file (a stream, such as a
    /// FIFO or /dev/stdout, is written once, at the end: `finish`).
    pub fn save(&mut self) -> anyhow::Result<()> {
        self.write(false)
    }

    /// The last save of a run whose end state the caller sets itself.
    pub fn save_last(&mut self) -> anyhow::Result<()> {
        self.write(true)
    }

    fn write(&mut self, last: bool) -> anyhow::Result<()> {
        self.results.analysis = analysis::analyze(&self.results.points, &self.analysis);
        if let Some(p) = self
            .path
            .as_deref()
            .filter(|_| last || !self.path_is_stream)
        {
            self.results.write_atomic(p)?;
        }
        if let Some(export) = &mut self.fio_export {
            if !self.export_is_stream {
                export.update(&self.results)?;
            } else if last {
                let text = serde_json::to_string_pretty(&to_fio_json(&self.results))?;
                write_atomic(export.path(), text.as_bytes())?;
            }
        }
        Ok(())
    }

    /// Mark the run complete or interrupted, save a last time and hand the
    /// results back.
    pub fn finish(mut self, interrupted: bool) -> anyhow::Result<Results> {
        self.results.interrupted = interrupted;
        self.results.complete = !interrupted;
        self.write(true)?;
        Ok(self.results)
    }
}
