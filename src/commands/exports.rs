//! `--export FORMAT FILE`, one syntax in every verb that measures into a
//! results file (device, run, remote): the pairs checked before anything
//! runs (an unknown format or an output that would overwrite a target or a
//! file iolab did not write is exit 2 naming `--export`), then handed to
//! the run as exporters (`report::formats`), in the campaign's presenter
//! (`presenter`: progress, report.html, the exports and the summary).

use std::path::{Path, PathBuf};

use crate::error::usage;
use crate::report::formats::Format;
use crate::results::{output, Results};
use crate::session::{Exporter, Presenter};

/// One `--export` pair.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportFile {
    pub format: Format,
    pub path: PathBuf,
    /// The results file's name, which the HTML report cites.
    pub source: String,
}

impl ExportFile {
    /// "csv:     FILE", as a run's end says it.
    pub fn said(&self) -> String {
        crate::session::export::written(self.format.name(), &self.path)
    }

    pub fn exporter(&self) -> Box<dyn Exporter> {
        self.format.exporter(self.path.clone(), &self.source)
    }
}

/// The pairs of `--export FORMAT FILE` (given once or more), checked:
/// formats known, files not `-`, each a place iolab may write (`force`:
/// replace a file iolab did not write), none of them one of `inputs`.
/// Their HTML cites the results file `results.json`; `with_source` names
/// another.
pub fn parse(
    pairs: Option<&[String]>,
    force: bool,
    inputs: &[&Path],
) -> anyhow::Result<Vec<ExportFile>> {
    let mut out: Vec<ExportFile> = Vec::new();
    for pair in pairs.unwrap_or_default().chunks(2) {
        let [name, file] = pair else {
            return Err(usage("--export", "use --export FORMAT FILE"));
        };
        let format = Format::parse(name).ok_or_else(|| {
            usage(
                "--export",
                format!("unknown export format '{name}' ({})", Format::names()),
            )
        })?;
        if file.is_empty() || file == "-" {
            return Err(usage(
                "--export",
                format!("give a file name for {name} (stdout holds the tables)"),
            ));
        }
        let path = PathBuf::from(file);
        if out.iter().any(|e| e.path == path) {
            return Err(usage("--export", format!("{file} is given twice")));
        }
        output::check(&path, "--export", force, inputs)?;
        let source = "results.json".to_string();
        out.push(ExportFile {
            format,
            path,
            source,
        });
    }
    Ok(out)
}

/// `exports` citing the results file `json` (its name) where one is
/// written.
pub fn with_source(mut exports: Vec<ExportFile>, json: Option<&Path>) -> Vec<ExportFile> {
    let name = json
        .filter(|p| p.as_os_str() != "-")
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().to_string());
    if let Some(name) = name {
        for e in &mut exports {
            e.source = name.clone();
        }
    }
    exports
}

/// The end of a campaign that writes into an output directory (`run`,
/// `remote`): report.html there, the `--export` files, and `summary`.
pub fn presenter(exports: Vec<ExportFile>, summary: fn(&Results, f64) -> String) -> Presenter {
    Presenter {
        progress: |quiet| Box::new(crate::report::observer::Terminal::progress_only(quiet)),
        exports: Box::new(move |dir: &Path| {
            let html = Format::Html.exporter(dir.join("report.html"), "results.json");
            std::iter::once(html)
                .chain(exports.iter().map(ExportFile::exporter))
                .collect()
        }),
        summary,
    }
}

/// The presenter of a media run (`device`, `kv`, `oltp` over several
/// setups): `progress`'s observer, the `--export` files and the media
/// table (`report::media_terminal`).
pub fn media_presenter<O: ?Sized>(
    exports: Vec<ExportFile>,
    progress: fn(bool) -> Box<O>,
) -> Presenter<O> {
    Presenter {
        progress,
        exports: Box::new(move |_| exports.iter().map(ExportFile::exporter).collect()),
        summary: crate::report::media_terminal::closing_summary,
    }
}

/// A single run's exports, written from its final results (`kv`, `oltp`:
/// their sinks are the workload's own), each said unless `quiet`.
pub fn write_all(exports: &[ExportFile], results: &Results, quiet: bool) -> anyhow::Result<()> {
    for e in exports {
        e.exporter().saved(results, true)?;
        if !quiet {
            println!("{}", e.said());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pairs_parse_and_bad_ones_name_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("r.csv").display().to_string();
        let md = dir.path().join("r.md").display().to_string();
        let got = parse(Some(&strings(&["csv", &csv, "md", &md])), false, &[]).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].format, Format::Markdown);
        for bad in [
            strings(&["pdf", &csv]),
            strings(&["csv", "-"]),
            strings(&["csv", &csv, "html", &csv]),
        ] {
            let e = parse(Some(&bad), false, &[]).unwrap_err();
            assert!(format!("{e:#}").contains("--export"), "{e:#}");
        }
    }
}
