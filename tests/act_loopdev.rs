//! Writing a raw block device (a loop device; root only, skipped with a
//! message elsewhere) with several descriptors: iolab holds the device's
//! exclusive claim once for the job and opens the others beside it. So
//! `--profile act`'s large-block writer no longer fails on iolab's own
//! claim after the whole runtime (a short run with `--destroy-data` keeps
//! its point), nor do `--jobs 2` writers; and ACT on 4 KiB sectors reads
//! whole sectors, as act_storage does.

use std::fs::File;

mod common;
use common::loopdev::LoopDev;
use common::{iolab, results, text, workdir};

/// A loop device over a new file of `size` bytes in `dir`; `None` (the
/// test skipped, saying why) where loop devices cannot be made.
fn loop_device(
    dir: &std::path::Path,
    name: &str,
    size: u64,
    args: &[&str],
    test: &str,
) -> Option<LoopDev> {
    let backing = dir.join(name);
    File::create(&backing).unwrap().set_len(size).unwrap();
    LoopDev::attach(&backing, args)
        .map_err(|why| eprintln!("SKIP {test}: {why}"))
        .ok()
}

#[test]
fn act_on_a_loop_device_with_destroy_data_keeps_its_point() {
    let dir = workdir();
    let Some(lo) = loop_device(
        dir.path(),
        "act.img",
        64 << 20,
        &["--direct-io=on"],
        "act_on_a_loop_device_with_destroy_data_keeps_its_point",
    ) else {
        return;
    };
    let dev = lo.dev.to_str().unwrap();
    let json = dir.path().join("act.json");
    let o = iolab(&[
        "device",
        "--profile",
        "act",
        "--act-scale",
        "0.5",
        "--runtime",
        "2s",
        "--target",
        dev,
        "--destroy-data",
        dev,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = results(&json);
    let points = r["points"].as_array().expect("points");
    assert_eq!(points.len(), 1, "{r}");
    let act = &points[0]["extra"]["act"];
    for s in ["large_block_writes", "large_block_reads"] {
        assert!(act[s]["ops"].as_u64().unwrap_or(0) > 0, "{s}: {act}");
    }
}

/// A device of 4 KiB logical sectors: ACT's 1536-byte reads are rounded up
/// to 4096 bytes (as act_storage does), with a warning, not refused.
#[test]
fn act_on_4k_sectors_reads_whole_sectors() {
    let dir = workdir();
    let Some(lo) = loop_device(
        dir.path(),
        "act4k.img",
        64 << 20,
        &["--direct-io=on", "--sector-size", "4096"],
        "act_on_4k_sectors_reads_whole_sectors",
    ) else {
        return;
    };
    let dev = lo.dev.to_str().unwrap();
    let json = dir.path().join("act.json");
    let o = iolab(&[
        "device",
        "--profile",
        "act",
        "--act-scale",
        "0.5",
        "--runtime",
        "1s",
        "--target",
        dev,
        "--destroy-data",
        dev,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = results(&json);
    let p = &r["points"][0];
    assert_eq!(p["job"]["bs"][0][0], 4096, "{}", p["job"]);
    let warned = r.to_string().contains("rounded up to the sector");
    assert!(warned, "the rounding is said: {}", text(&o));
}

/// Several workers writing one block device: the first descriptor holds the
/// exclusive claim, the others open beside it (each used to ask for it
/// again and the second was refused as busy).
#[test]
fn two_writing_jobs_on_a_loop_device_share_the_claim() {
    let dir = workdir();
    let Some(lo) = loop_device(
        dir.path(),
        "jobs.img",
        32 << 20,
        &["--direct-io=on"],
        "two_writing_jobs_on_a_loop_device_share_the_claim",
    ) else {
        return;
    };
    let dev = lo.dev.to_str().unwrap();
    let json = dir.path().join("jobs.json");
    let o = iolab(&[
        "device",
        "--rw",
        "randwrite",
        "--jobs",
        "2",
        "--io-count",
        "64",
        "--target",
        dev,
        "--destroy-data",
        dev,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(results(&json)["points"].as_array().map(Vec::len), Some(1));
}
