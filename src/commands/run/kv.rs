//! The database step of `iolab run`: YCSB workloads A (50/50 read/update)
//! and C (read only) on RocksDB in a scratch directory under DIR, through
//! `iolab kv` (`kv::run::run`), with a record count sized from the step's
//! share of the budget. Its points carry `extra.kv` like `iolab kv` output.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::Parser;

use crate::cli::kv::KvArgs;
use crate::results::{Point, Results};

/// The embedded engine of the step.
pub const ENGINE: &str = "rocksdb";
/// The YCSB workloads of the step (one budget slot each).
pub const WORKLOADS: [&str; 2] = ["a", "c"];
/// Records (and operations per workload) per second of the step's slot:
/// load + A + C stay well inside the slot on a slow machine (debug build).
const RECORDS_PER_SLOT_S: f64 = 10_000.0;

#[derive(Parser)]
struct KvCli {
    #[command(flatten)]
    args: KvArgs,
}

/// Records (= operations per workload) for a slot of `slot_ns` per workload.
pub fn records(slot_ns: u64) -> u64 {
    ((slot_ns as f64 / 1e9 * RECORDS_PER_SLOT_S) as u64).clamp(1_000, 200_000)
}

/// Silence stdout (the kv verb prints its own tables) while `f` runs.
fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let _ = std::io::stdout().flush();
    // SAFETY: dup/dup2/open/close on fd 1 and fds we own; restored below.
    let saved = unsafe { libc::dup(1) };
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY) };
    if saved >= 0 && null >= 0 {
        unsafe { libc::dup2(null, 1) };
    }
    let out = f();
    let _ = std::io::stdout().flush();
    if saved >= 0 && null >= 0 {
        // SAFETY: restoring the saved stdout.
        unsafe { libc::dup2(saved, 1) };
    }
    for fd in [saved, null] {
        if fd >= 0 {
            // SAFETY: closing fds opened above.
            unsafe { libc::close(fd) };
        }
    }
    out
}

/// Run YCSB A and C with `records` records in a scratch database under
/// `dir`; returns the points and the engine's version.
pub fn run(dir: &Path, out_dir: &Path, records: u64, seed: u64) -> Result<(Vec<Point>, Results)> {
    let json = out_dir.join(".kv-step.json");
    let argv: Vec<String> = [
        "kv",
        &WORKLOADS.join(","),
        "--engine",
        ENGINE,
        "-p",
        &format!("recordcount={records}"),
        "-p",
        &format!("operationcount={records}"),
        "--dir",
        &dir.display().to_string(),
        "--seed",
        &seed.to_string(),
        "-o",
        &json.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cli = KvCli::try_parse_from(&argv).context("arguments of the kv step")?;
    let res = quietly(|| crate::kv::run::run(cli.args));
    let r = Results::read(&json).with_context(|| format!("reading {}", json.display()));
    let _ = std::fs::remove_file(&json);
    res?;
    let r = r?;
    Ok((r.points.clone(), r))
}
