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
}

impl ExportFile {
    pub fn exporter(&self) -> Box<dyn Exporter> {
        self.format.exporter(self.path.clone(), "results.json")
    }
}

/// The pairs of `--export FORMAT FILE` (given once or more), checked:
/// formats known, files not `-`, each a place iolab may write (`force`:
/// replace a file iolab did not write), none of them one of `inputs`.
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
        out.push(ExportFile { format, path });
    }
    Ok(out)
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
