//! Where a run's results go: the `Results` being built, re-analysed and
//! written atomically after every point (so Ctrl-C or a crash keeps what
//! was measured), and the exporters given to it (`session::export`: fio
//! JSON, fio-format logs), called at the same moments.

use std::path::{Path, PathBuf};

use super::export::Exporter;
use crate::analysis::{self, AnalysisOptions};
use crate::results::output::is_stream;
use crate::results::{Point, Results};

/// The results of a run and the files they are kept in.
pub struct ResultsSink {
    pub results: Results,
    path: Option<PathBuf>,
    /// Other formats, written after the results file at every save.
    exporters: Vec<Box<dyn Exporter>>,
    /// The results file is a FIFO or character device (decided once: a
    /// stream is written once, at the end).
    path_is_stream: bool,
    analysis: AnalysisOptions,
}

impl ResultsSink {
    /// `path`: the results file (none: kept in memory only).
    pub fn new(results: Results, path: Option<PathBuf>, analysis: AnalysisOptions) -> ResultsSink {
        ResultsSink {
            results,
            path_is_stream: path.as_deref().is_some_and(is_stream),
            path,
            exporters: Vec::new(),
            analysis,
        }
    }

    /// Also write the results in another format, at every save.
    pub fn add_exporter(&mut self, exporter: Box<dyn Exporter>) {
        self.exporters.push(exporter);
    }

    /// Tell the exporters of a device point just measured (fio-format
    /// logs are written from it).
    pub fn export_point(&mut self, p: &Point) -> anyhow::Result<()> {
        for e in &mut self.exporters {
            e.point_measured(p)?;
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
        for e in &mut self.exporters {
            e.saved(&self.results, last)?;
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
