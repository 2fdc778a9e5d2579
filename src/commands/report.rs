//! `iolab report`: load a results file (iolab's, or fio's JSON converted to
//! the iolab model) and render it as HTML, text, Markdown or CSV, or export
//! it in fio's JSON shape.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::report::ReportArgs;
use crate::error::usage;
use crate::report::fio_json;
use crate::report::formats::Format;
use crate::results::{output, write_atomic, Results};

/// Read an iolab results file or fio JSON output.
pub fn load(path: &Path) -> anyhow::Result<Results> {
    let text = crate::input::read_text(path, "RESULTS", None)?;
    if fio_json::looks_like_fio(&text) {
        return fio_json::from_fio_text(&text)
            .map_err(|e| usage("RESULTS", format!("{}: {e:#}", path.display())));
    }
    Results::read(path).map(Results::with_analysis)
}

fn write_out(path: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    match path {
        Some(p) if p.as_os_str() != "-" => write_atomic(p, bytes),
        _ => match std::io::stdout().write_all(bytes) {
            // A closed pipe (`| head`) is the reader's choice, not an error.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => Ok(r?),
        },
    }
}

/// `--export FORMAT [FILE]` with its file folded into `-o` (one syntax with
/// `device --export`): the format, checked.
fn export_format(a: &mut ReportArgs) -> anyhow::Result<Option<String>> {
    let Some(v) = a.export.clone() else {
        return Ok(None);
    };
    let fmt = v[0].clone();
    if Format::parse(&fmt).is_none() {
        return Err(usage(
            "--export",
            format!("unknown export format '{fmt}' ({})", Format::names()),
        ));
    }
    if let Some(file) = v.get(1) {
        let file = PathBuf::from(file);
        if a.output.as_ref().is_some_and(|o| *o != file) {
            return Err(usage(
                "--export",
                "give the export file once: --export FORMAT FILE, or -o FILE",
            ));
        }
        a.output = Some(file);
    }
    Ok(Some(fmt))
}

/// A path written with a trailing '/' names a directory.
fn names_a_directory(p: &Path) -> bool {
    p.as_os_str().as_encoded_bytes().ends_with(b"/")
}

/// Where the report goes: `-o`, or for HTML the input's name with .html;
/// `None` for stdout.
fn destination(a: &ReportArgs) -> Option<PathBuf> {
    let default_html = a.export.is_none() && a.format == "html";
    match &a.output {
        Some(p) if p.as_os_str() == "-" => None,
        Some(p) => Some(p.clone()),
        None if default_html => Some(a.results.with_extension("html")),
        None => None,
    }
}

pub fn run(mut a: ReportArgs) -> anyhow::Result<()> {
    let export = export_format(&mut a)?;
    // Checked before reading: the input itself is never an output.
    match destination(&a) {
        Some(d)
            if export.as_deref() == Some("fio-json") && (d.is_dir() || names_a_directory(&d)) => {}
        Some(d) => {
            output::check(&d, "--output", a.force, &[&a.results])?;
        }
        None => {}
    }
    let r = load(&a.results)?;
    if export.as_deref() == Some("fio-json") {
        if let Some(dir) = fio_json_dir(&a)? {
            for (name, v) in fio_json::to_fio_json_files(&r) {
                write_atomic(
                    &dir.join(name),
                    serde_json::to_string_pretty(&v)?.as_bytes(),
                )?;
            }
            eprintln!("fio JSON: {} file(s) in {}", r.points.len(), dir.display());
            return Ok(());
        }
    }
    let source = a
        .results
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = export.unwrap_or_else(|| a.format.clone());
    let format = Format::parse(&name).ok_or_else(|| {
        usage(
            "--format",
            format!("unknown format '{name}' ({})", Format::names()),
        )
    })?;
    let out = match format {
        Format::Html => destination(&a),
        _ => a.output.clone().filter(|p| p.as_os_str() != "-"),
    };
    write_out(out.as_deref(), &format.render(&r, &source)?)?;
    if let (Format::Html, Some(out)) = (format, out) {
        eprintln!("report: {}", out.display());
    }
    Ok(())
}

/// `--export fio-json DIR`: one file per point into DIR (fio-plot reads one
/// job per file); a name ending in '/' is a directory, made if missing.
fn fio_json_dir(a: &ReportArgs) -> anyhow::Result<Option<PathBuf>> {
    let named_dir = a
        .output
        .as_deref()
        .filter(|d| names_a_directory(d) && !d.exists());
    if let Some(d) = named_dir {
        std::fs::create_dir_all(d)
            .map_err(|e| usage("--output", format!("cannot create {}: {e}", d.display())))?;
    }
    Ok(a.output.clone().filter(|d| d.is_dir()))
}
