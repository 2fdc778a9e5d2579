//! `iolab compare`: load several results files (iolab or fio JSON), match
//! their points and print ratios to the first; optionally write HTML.

use std::collections::BTreeSet;
use std::io::Write;

use crate::cli::compare::CompareArgs;
use crate::commands::report::load;
use crate::error::usage;
use crate::figures::{self, FigureId};
use crate::report::compare::{self, Run};

pub fn run(a: CompareArgs) -> anyhow::Result<()> {
    let inputs: Vec<&std::path::Path> = a.files.iter().map(|f| f.as_path()).collect();
    for (path, field) in [(&a.output, "--output"), (&a.html, "--html")] {
        if let Some(p) = path {
            crate::results::output::check(p, field, a.force, &inputs)?;
        }
    }
    if a.files.len() < 2 {
        return Err(usage("RESULTS", "give at least two results files"));
    }
    if !(a.noise >= 0.0 && a.noise < 100.0) {
        return Err(usage("--noise", "give a percentage between 0 and 100"));
    }
    if !["text", "csv", "json", "markdown", "md"].contains(&a.format.as_str()) {
        return Err(usage(
            "--format",
            format!("unknown format '{}' (text, csv, json, markdown)", a.format),
        ));
    }
    if a.fail_if_slower.is_some_and(|p| !(0.0..100.0).contains(&p)) {
        return Err(usage(
            "--fail-if-slower",
            "give a percentage between 0 and 100",
        ));
    }
    let figures = parse_figures(a.metric.as_deref())?;
    let mut runs = Vec::new();
    for f in &a.files {
        let results = load(f)?;
        let mut label = f
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| f.display().to_string());
        if label == "results" {
            // iolab-<time>/results.json: the directory says more.
            if let Some(d) = f.parent().and_then(|d| d.file_name()) {
                label = d.to_string_lossy().to_string();
            }
        }
        if runs.iter().any(|r: &Run| r.label == label) {
            label = format!("{label}#{}", runs.len() + 1);
        }
        runs.push(Run { label, results });
    }
    let by: Option<Vec<String>> =
        a.by.as_ref()
            .map(|b| b.split(',').map(|s| s.trim().to_string()).collect());
    for k in by.iter().flatten() {
        let known = runs
            .iter()
            .any(|r| r.results.points.iter().any(|p| p.params.contains_key(k)));
        if !known {
            return Err(crate::error::usage(
                "--by",
                format!("no point has a parameter '{k}'"),
            ));
        }
    }
    let keys = compare::match_keys(&runs, by.as_deref());
    let rows = compare::compare(&runs, &keys, figures.as_deref());
    if let (Some(f), true) = (&figures, rows.is_empty()) {
        return Err(nothing_selected(&runs, f));
    }
    let mut out = match a.format.as_str() {
        "csv" => crate::report::csv::table_csv(&compare::table(&runs, &rows, a.noise)),
        "json" => format!(
            "{}\n",
            serde_json::to_string_pretty(&compare::json(&runs, &rows, a.noise))?
        ),
        "markdown" | "md" => {
            crate::report::markdown::table_md(&compare::table(&runs, &rows, a.noise))
        }
        _ => {
            let mut t = compare::terminal(&runs, &rows, a.noise);
            if !keys.is_empty() {
                t.push_str(&format!("matched by: {}\n", keys.join(", ")));
            }
            if rows.iter().any(|r| r.measure.figure == FigureId::InFlight) {
                t.push_str("in flight = IOPS x mean latency (Little's law): a side whose figure is above its slots (qd x jobs) counts time no request was in flight\n");
            }
            t
        }
    };
    if let Some(h) = &a.html {
        crate::results::write_atomic(h, compare::html(&runs, &rows, &keys, a.noise).as_bytes())?;
        if a.format == "text" {
            out.push_str(&format!("html: {}\n", h.display()));
        }
    }
    match &a.output {
        Some(o) => {
            crate::results::write_atomic(o, out.as_bytes())?;
            println!("comparison: {}", o.display());
        }
        // A closed pipe (`| head`) is not an error worth a panic.
        None => {
            let _ = std::io::stdout().write_all(out.as_bytes());
        }
    }
    if let Some(pct) = a.fail_if_slower {
        if compare::matched(&rows) == 0 {
            anyhow::bail!(
                "--fail-if-slower: nothing matched between the runs, so nothing was checked"
            );
        }
        let worse = compare::slower(&runs, &rows, a.noise, pct);
        if !worse.is_empty() {
            anyhow::bail!(
                "{} comparison(s) worse than the baseline by more than {pct}%: {}",
                worse.len(),
                worse.join("; ")
            );
        }
    }
    Ok(())
}

/// `--metric`'s figures, by key or alias.
fn parse_figures(metric: Option<&str>) -> anyhow::Result<Option<Vec<FigureId>>> {
    let Some(m) = metric else {
        return Ok(None);
    };
    m.split(',')
        .map(|s| {
            FigureId::parse(s.trim()).ok_or_else(|| {
                usage(
                    "--metric",
                    format!("unknown metric '{}' (one of {})", s.trim(), figures::keys()),
                )
            })
        })
        .collect::<anyhow::Result<_>>()
        .map(Some)
}

/// The error for a `--metric` none of the files' points has: which kinds
/// of point they hold, and the figures those have.
fn nothing_selected(runs: &[Run], wanted: &[FigureId]) -> anyhow::Error {
    let have: BTreeSet<crate::results::Family> = runs
        .iter()
        .flat_map(|r| &r.results.points)
        .map(|p| p.family())
        .collect();
    let can: Vec<&str> = figures::CATALOGUE
        .iter()
        .filter(|d| d.families.iter().any(|f| have.contains(f)))
        .map(|d| d.key)
        .collect();
    usage(
        "--metric",
        format!(
            "no point in these files has {} (their points are {}: {})",
            wanted
                .iter()
                .map(|x| x.def().key)
                .collect::<Vec<_>>()
                .join(", "),
            have.iter().map(|f| f.name()).collect::<Vec<_>>().join(", "),
            can.join(", ")
        ),
    )
}
