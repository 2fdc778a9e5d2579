//! Every format a results file can also be written in, by name: what
//! `--export FORMAT FILE` (device, run, remote) and `iolab report --format`
//! accept. Each is a `session::Exporter` handed to a run's sink by
//! `commands/`, so a campaign never renders a format itself. fio's JSON is
//! kept up to date after every point (`fio_json::export`); the others are
//! written at the run's last save, Ctrl-C included, and `iolab report`
//! renders any of them from the results file at any time.

use std::path::PathBuf;

use crate::report::fio_json::export::FioJsonExporter;
use crate::report::{csv, fio_json, html, markdown, terminal};
use crate::results::{write_atomic, Results};
use crate::session::Exporter;

/// One output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The self-contained report with its charts.
    Html,
    /// The terminal's point blocks.
    Text,
    /// Headlines, warnings, points and each chart's data table.
    Markdown,
    /// One row per point, operation type and latency basis.
    Csv,
    /// fio's JSON shape (fio-plot, fio_jsonplus_clat2csv).
    FioJson,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Html,
        Format::Text,
        Format::Markdown,
        Format::Csv,
        Format::FioJson,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::FioJson => "fio-json",
        }
    }

    /// The format a name (or `md`) asks for.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "md" => Some(Format::Markdown),
            _ => Format::ALL.into_iter().find(|f| f.name() == s),
        }
    }

    /// "html, text, markdown, csv, fio-json", for help and errors.
    pub fn names() -> String {
        Format::ALL.map(Format::name).join(", ")
    }

    /// `r` in this format; `source` is the results file's name the HTML
    /// report cites.
    pub fn render(self, r: &Results, source: &str) -> anyhow::Result<Vec<u8>> {
        Ok(match self {
            Format::Html => html::render(r, source).into_bytes(),
            Format::Text => terminal::results_text(r).into_bytes(),
            Format::Markdown => markdown::render(r).into_bytes(),
            Format::Csv => csv::results_csv(r).into_bytes(),
            Format::FioJson => serde_json::to_vec_pretty(&fio_json::to_fio_json(r))?,
        })
    }

    /// This format written to `path` as one of a run's exporters.
    pub fn exporter(self, path: PathBuf, source: &str) -> Box<dyn Exporter> {
        match self {
            Format::FioJson => Box::new(FioJsonExporter::new(path)),
            _ => Box::new(RenderedFile {
                format: self,
                path,
                source: source.to_string(),
            }),
        }
    }
}

/// A format rendered whole from the results at the run's last save.
struct RenderedFile {
    format: Format,
    path: PathBuf,
    source: String,
}

impl Exporter for RenderedFile {
    fn saved(&mut self, r: &Results, last: bool) -> anyhow::Result<()> {
        if !last {
            return Ok(());
        }
        // write_atomic also writes a FIFO or character device, with its
        // reader deadline and the stop signal's grace.
        write_atomic(&self.path, &self.format.render(r, &self.source)?)
    }

    fn file(&self) -> Option<(&'static str, &std::path::Path)> {
        let what = match self.format {
            Format::Html => "report",
            f => f.name(),
        };
        Some((what, &self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Provenance;

    #[test]
    fn every_name_parses_back_and_md_is_markdown() {
        for f in Format::ALL {
            assert_eq!(Format::parse(f.name()), Some(f));
        }
        assert_eq!(Format::parse("md"), Some(Format::Markdown));
        assert_eq!(Format::parse("pdf"), None);
        assert_eq!(Format::names(), "html, text, markdown, csv, fio-json");
    }

    /// A rendered format is written once, at the last save, with what
    /// `iolab report --format` writes for the same results.
    #[test]
    fn a_rendered_file_is_written_at_the_last_save_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.md");
        let mut e = Format::Markdown.exporter(path.clone(), "results.json");
        let r = Results::new("device", Provenance::minimal());
        e.saved(&r, false).unwrap();
        assert!(!path.exists());
        e.saved(&r, true).unwrap();
        let want = Format::Markdown.render(&r, "results.json").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }
}
