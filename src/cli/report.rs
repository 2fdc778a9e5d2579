//! Arguments of `iolab report`: re-render a results file (iolab's or fio's JSON).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(after_help = "EXAMPLES:
  iolab report iolab-20261121T060000Z/results.json -o report.html
  iolab report results.json --format text
  iolab report fio-output.json --format html -o fio.html     (fio --output-format=json or json+)
  iolab report results.json --export fio-json out.json       (fio's JSON shape: fio_jsonplus_clat2csv, fio-plot -H)
  iolab report results.json --export fio-json fio-dir/       (one file per point, the layout fio-plot's graphs read)")]
pub struct ReportArgs {
    /// An iolab results file, or fio JSON output (json, json+, client/server)
    #[arg(value_name = "RESULTS.json")]
    pub results: PathBuf,
    /// Output file (default: stdout; for html, RESULTS.html next to the input)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace an existing output file iolab did not write (iolab's own
    /// results and reports are replaced without it)
    #[arg(long)]
    pub force: bool,
    /// html, text, markdown, csv or fio-json
    #[arg(long, default_value = "html", value_name = "FORMAT")]
    pub format: String,
    /// The same as --format FORMAT -o FILE, in the syntax of `device
    /// --export` (without FILE: -o or stdout); fio-json into a directory
    /// writes one file per point
    #[arg(long, num_args = 1..=2, value_names = ["FORMAT", "FILE"])]
    pub export: Option<Vec<String>>,
}
