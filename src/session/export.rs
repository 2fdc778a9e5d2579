//! The formats a run's results are also kept in besides the results file,
//! behind one trait (hyperfine's `Exporter` model: one exporter per
//! format). The `ResultsSink` calls every exporter it was given; the
//! exporters themselves live in `report/` (fio JSON:
//! `report::fio_json::export::FioJsonExporter`; fio-format logs:
//! `report::fio_log::LogPlan`) and `commands/` hands them to the sink, so
//! the session never imports a presentation format.

use std::path::Path;

use crate::results::{Point, Results};

/// One output format written alongside the results file (`Send`: a sink
/// may be shared by the observers of parallel passes).
pub trait Exporter: Send {
    /// A device point was just measured, before it joins the results.
    fn point_measured(&mut self, _point: &Point) -> anyhow::Result<()> {
        Ok(())
    }

    /// The results were re-analysed and the results file written; `last`
    /// is the run's final save (a stream is written then, and only then).
    fn saved(&mut self, _results: &Results, _last: bool) -> anyhow::Result<()> {
        Ok(())
    }

    /// The file written and what it is ("report", "csv"), said at the end
    /// of a run; `None` for exporters of several files.
    fn file(&self) -> Option<(&'static str, &Path)> {
        None
    }
}

/// "csv:     out.csv": a file written at a run's end, aligned with
/// "results: ".
pub fn written(what: &str, path: &Path) -> String {
    format!("{:<8} {}", format!("{what}:"), path.display())
}

/// The exporters of a campaign given its output directory.
pub type ExportersIn = Box<dyn Fn(&Path) -> Vec<Box<dyn Exporter>>>;

/// How a campaign is shown, chosen by `commands/` (campaigns import no
/// presentation format): the observer of its points (`O`: a device
/// observer, or kv's and oltp's, which see phases and users; `quiet`:
/// progress only where asked), the formats its results are also written
/// in, given its output directory (`iolab run`'s report.html among them),
/// and the summary printed last, given the results and the seconds taken.
pub struct Presenter<O: ?Sized = dyn super::Observer> {
    pub progress: fn(bool) -> Box<O>,
    pub exports: ExportersIn,
    pub summary: fn(&Results, f64) -> String,
}

impl<O: ?Sized> Presenter<O> {
    /// The campaign's end: every export written from the final `results`
    /// (into `dir` where a format goes there), then, unless `quiet`, the
    /// summary, the results file and each file written.
    pub fn close(
        &self,
        results: &Results,
        (dir, json): (&Path, Option<&Path>),
        secs: f64,
        quiet: bool,
    ) -> anyhow::Result<()> {
        let mut exports = (self.exports)(dir);
        for e in &mut exports {
            e.saved(results, true)?;
        }
        if quiet {
            return Ok(());
        }
        println!("{}", (self.summary)(results, secs));
        if let Some(p) = json {
            println!("results: {}", p.display());
        }
        for (what, path) in exports.iter().filter_map(|e| e.file()) {
            println!("{}", written(what, path));
        }
        Ok(())
    }
}
