//! Arguments of `iolab compare`: several results files side by side.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(after_help = "EXAMPLES:
  iolab compare ssd.json nvme.json
      points matched by their parameters, with ratios to the first file (the baseline)
  iolab compare a.json b.json c.json --html cmp.html
  iolab compare iolab.json fio-output.json --metric mean
      iolab's and fio's numbers for the same jobs (a latency row names its basis:
      \"(clat)\" is fio's completion latency, fio's default percentiles)
  iolab compare oltp-a.json oltp-b.json
      NOPM, TPM and each transaction's p90
  iolab compare main.json branch.json --metric iops,p99 --fail-if-slower 10
      exit 1 if the branch lost more than 10% IOPS or p99 outside the noise (CI)
  iolab compare a.json b.json --format csv
      the comparison as CSV (also json, markdown)
  iolab compare a.json b.json --format json -o cmp.json
      the comparison written to a file")]
pub struct CompareArgs {
    /// Results files (iolab or fio JSON); the first is the baseline
    #[arg(value_name = "RESULTS.json", num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// Also write an HTML comparison here
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the comparison (in --format) to this file instead of stdout
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace an existing output file iolab did not write (iolab's own
    /// results and reports are replaced without it)
    #[arg(long)]
    pub force: bool,
    /// Which figures to compare, comma-separated: iops, mib_s, avg_block,
    /// in_flight (device points); ops_s (kv); txn_s, nopm, tpm (oltp);
    /// mean, p50, p90, p99, p99.9, max (latency per operation type, any
    /// point). Default per kind of point: device iops, mib_s, avg_block,
    /// mean, p99, in_flight; kv ops_s, mean, p99; oltp nopm, tpm, p90.
    /// docs/results.md defines each
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// Match points by these params only (comma-separated, e.g. rw,bs,qd); default: all params they share
    #[arg(long, value_name = "KEYS")]
    pub by: Option<String>,
    /// Differences smaller than this share are called noise when no rounds give a spread (default 5%)
    #[arg(long, default_value = "5", value_name = "PERCENT")]
    pub noise: f64,
    /// Output on stdout: text (a table), csv, json or markdown
    #[arg(long, default_value = "text", value_name = "FORMAT")]
    pub format: String,
    /// Exit 1 when a run is worse than the baseline by more than PCT percent
    /// outside the noise (lower IOPS or MiB/s, higher latency): a CI gate
    #[arg(long, value_name = "PCT")]
    pub fail_if_slower: Option<f64>,
}
