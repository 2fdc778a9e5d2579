//! The database half of `iolab remote` (`--db`): RocksDB on ext4 on each
//! transport's volume, db_bench's fillseq and then readrandomwriterandom
//! (80% reads by default) at each value size, and the same through the same
//! loop device and filesystem on the local scratch file (DAS), so the only
//! difference is the transport. RocksDB reads with O_DIRECT through a small
//! block cache and every phase ends with a flush, so reads reach the volume
//! instead of the page cache or the memtable.

use crate::results::sections::remote::RemoteDbRecord;
use std::path::Path;

use super::remote_plan::RemoteSettings;
use crate::error::usage;
use crate::kv::dbbench::{Bench, DbBenchConfig};
use crate::kv::engine::{EngineOptions, KvEngineKind};
use crate::kv::plan::{BenchReads, KvPlace, KvPlan, Step};
use crate::plan::parse::format_size;
use crate::remote::volume::{self, Volume};
use crate::results::Point;
use crate::servers::storage::{DbVolume, Transport};
use crate::session::{Driver, Tags};

/// The database runs of a remote comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct DbPlan {
    /// Value sizes in bytes, one database per size.
    pub values: Vec<u64>,
    /// Keys loaded (fillseq).
    pub num: u64,
    /// Operations of readrandomwriterandom.
    pub ops: u64,
    /// Reads per 100 operations.
    pub read_percent: u8,
}

/// The engine settings of every database run (recorded with the results).
pub fn engine_options() -> EngineOptions {
    EngineOptions {
        direct_io: true,
        cache_size: 8 << 20,
        write_buffer_size: 16 << 20,
        ..EngineOptions::default()
    }
}

/// `--db` and its companions, checked; `None` when no database runs.
pub fn plan(a: &RemoteSettings, volume_size: u64) -> anyhow::Result<Option<DbPlan>> {
    let spec = a.db.text();
    if spec.is_empty() || spec == "none" {
        return Ok(None);
    }
    let values = a.db.bytes().to_vec();
    if let Some(n) = values.iter().find(|n| !(16..=1 << 20).contains(*n)) {
        return Err(usage(
            "--db",
            format!("value size {} must be 16 bytes to 1 MiB", format_size(*n)),
        ));
    }
    if values.is_empty() {
        return Err(usage("--db", "give value sizes (e.g. 800,10k) or none"));
    }
    if !(1..=100_000_000).contains(&a.db_num) {
        return Err(usage("--db-num", "must be 1 to 100000000"));
    }
    if !(1..=1_000_000_000).contains(&a.db_ops) {
        return Err(usage("--db-ops", "must be 1 to 1000000000"));
    }
    if a.db_read_percent > 100 {
        return Err(usage("--db-read-percent", "must be 0 to 100"));
    }
    // Twice the data (old versions wait for compaction), and ext4's own
    // (journal and inode tables: a few MiB on a small volume).
    let largest = values.iter().max().copied().unwrap_or(0);
    let need = a.db_num * (largest + 16) * 2 + volume_size / 16 + (4 << 20);
    if need > volume_size {
        return Err(usage(
            "--db-num",
            format!(
                "{} keys of {largest}-byte values need about {} MiB on the volume; --size is {} MiB",
                a.db_num,
                need >> 20,
                volume_size >> 20
            ),
        ));
    }
    Ok(Some(DbPlan {
        values,
        num: a.db_num,
        ops: a.db_ops,
        read_percent: a.db_read_percent,
    }))
}

/// The kv plan of one value size in `dir` (the mounted volume).
fn kv_plan(db: &DbPlan, dir: &Path, value: u64, seed: u64) -> KvPlan {
    let mut place = KvPlace::scratch(dir.to_path_buf());
    place.flush_between = true;
    KvPlan {
        engine: KvEngineKind::reference(),
        options: engine_options(),
        steps: vec![
            Step::Bench(Bench::FillSeq, None),
            Step::Bench(Bench::ReadRandomWriteRandom, None),
        ],
        threads: 1,
        target_ops: None,
        bench: DbBenchConfig {
            num: db.num,
            key_size: 16,
            key_format: crate::kv::keys::KeyFormat::Decimal,
            value_size: value as usize,
            read_percent: db.read_percent,
            check_values: crate::kv::value::CheckValues::All,
        },
        reads: BenchReads {
            reads: Some(db.ops),
            writer_rate: None,
        },
        place,
        server: Default::default(),
        under_ns: 1_000_000,
        seed,
        output: None,
        status_interval_s: None,
        notices: Vec::new(),
    }
}

/// What the plan looks like in the results (`extra.remote.db`).
pub fn describe(db: &DbPlan) -> RemoteDbRecord {
    let o = engine_options();
    RemoteDbRecord {
        engine: KvEngineKind::reference().name().to_string(),
        workload: "readrandomwriterandom".into(),
        read_percent: db.read_percent,
        num: db.num,
        ops: db.ops,
        values: db.values.clone(),
        direct_io: o.direct_io,
        cache_size: o.cache_size,
        write_buffer_size: o.write_buffer_size,
        filesystem: format!(
            "ext4 -E {} -o {}",
            volume::MKFS_OPTIONS,
            volume::MOUNT_OPTIONS
        ),
        kernel_nbd: volume::kernel_nbd(),
        volumes: Default::default(),
    }
}

/// Why transport `t` gets no database run here, if it gets none.
pub fn skipped(t: Transport) -> Option<String> {
    let kind = match t.facts().db_volume {
        DbVolume::Unreachable(why) => return Some(why.into()),
        DbVolume::Block(Some((module, why)))
            if crate::testbed::kernel_modules::module_state(module)
                == crate::testbed::kernel_modules::ModuleState::Absent =>
        {
            return Some(why.into())
        }
        DbVolume::Local => volume::VolumeKind::Local,
        DbVolume::Block(_) => volume::VolumeKind::Block,
        DbVolume::Nbd => volume::VolumeKind::Nbd,
    };
    volume::unavailable(kind)
}

/// Build the volume of transport `label` (DAS: the local file; otherwise
/// the NBD export), its mount points in a scratch directory under `dir`
/// (the storage under test), run every value size on it, and record its chain.
pub fn run_on(
    driver: &mut Driver,
    db: &DbPlan,
    label: &str,
    source: Source<'_>,
    dir: &Path,
    seed: u64,
) -> anyhow::Result<()> {
    let vol = match source {
        Source::Local(file) => Volume::local(file, dir),
        Source::Nbd(url) => Volume::nbd(url, dir),
        Source::Block(device) => Volume::block(device, dir),
        Source::Nvme(url) => Volume::nvme(url, dir),
    };
    let vol = match vol {
        Ok(v) => v,
        Err(e) => {
            driver.warn(format!("database on {label} skipped: the volume: {e:#}"));
            return Ok(());
        }
    };
    if let Some(Some(db)) = driver
        .results_mut()
        .extra
        .remote
        .as_mut()
        .map(|r| r.db.as_mut().and_then(Option::as_mut))
    {
        db.volumes.insert(label.to_string(), vol.chain.to_string());
    }
    let params = [("transport", label.to_string())];
    let tags = Tags {
        experiment: "",
        params: &params,
        extra: &[],
        pass: None,
    };
    for &value in &db.values {
        if crate::interrupt::stop_requested() {
            break;
        }
        let plan = kv_plan(db, vol.dir(), value, seed);
        let name = format!("{label}: db {value}B");
        let r = driver.run_external(&name, 0.0, &tags, |results| {
            let done = crate::kv::run::run(&plan, &crate::session::Silent)?;
            done.verified()?;
            for (k, v) in done.results.provenance.tools {
                results.provenance.tools.entry(k).or_insert(v);
            }
            results.warnings.extend(done.results.warnings);
            Ok(done
                .results
                .points
                .into_iter()
                .map(|p| renamed(p, label, value))
                .collect())
        });
        if let Err(e) = r {
            if crate::interrupt::stop_requested() {
                break;
            }
            driver.warn(format!("database on {label} ({value}-byte values): {e:#}"));
        }
    }
    drop(vol);
    Ok(())
}

/// Where a volume comes from.
pub enum Source<'a> {
    Local(&'a Path),
    Nbd(&'a str),
    /// A block device iolab connected for this run (a kernel initiator's).
    Block(&'a Path),
    /// An NVMe/TCP namespace, through the kernel's initiator.
    Nvme(&'a str),
}

/// A kv point named for the remote comparison: `LABEL: db BENCH VALUEB`.
fn renamed(mut p: Point, label: &str, value: u64) -> Point {
    p.name = format!("{label}: db {} {value}B", p.name);
    p.params.insert("role".into(), "db".into());
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: crate::cli::remote::RemoteArgs,
    }

    fn args(extra: &[&str]) -> RemoteSettings {
        let mut v = vec!["remote", "-t", "/tmp"];
        v.extend_from_slice(extra);
        crate::commands::remote_flags::remote_settings(&Cli::try_parse_from(v).unwrap().a)
    }

    #[test]
    fn db_values_are_parsed_and_checked() {
        assert_eq!(plan(&args(&[]), 1 << 30).unwrap(), None);
        let p = plan(&args(&["--db", "800,10k"]), 1 << 30).unwrap().unwrap();
        assert_eq!(p.values, vec![800, 10240]);
        assert_eq!(p.read_percent, 80);
        for (bad, field) in [
            (vec!["--db", "8"], "--db"),
            (vec!["--db", "800,x"], "--db"),
            (vec!["--db", "800", "--db-num", "0"], "--db-num"),
            (
                vec!["--db", "800", "--db-read-percent", "101"],
                "--db-read-percent",
            ),
            (vec!["--db", "10k", "--db-num", "1000000"], "--db-num"),
        ] {
            // A value that is no size is refused by the flag's parser.
            let mut v = vec!["remote", "-t", "/tmp"];
            v.extend_from_slice(&bad);
            let e = match Cli::try_parse_from(v) {
                Err(e) => e.to_string(),
                Ok(c) => {
                    let a = crate::commands::remote_flags::remote_settings(&c.a);
                    format!("{:#}", plan(&a, 1 << 30).unwrap_err())
                }
            };
            assert!(e.contains(field), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_kv_plan_loads_then_mixes_with_direct_reads() {
        let db = plan(&args(&["--db", "800"]), 1 << 30).unwrap().unwrap();
        let k = kv_plan(&db, Path::new("/mnt"), 800, 1);
        assert!(k.options.direct_io && k.place.flush_between);
        assert_eq!(k.bench.value_size, 800);
        assert_eq!(k.reads.reads, Some(db.ops));
        assert!(matches!(
            k.steps[..],
            [
                Step::Bench(Bench::FillSeq, None),
                Step::Bench(Bench::ReadRandomWriteRandom, None)
            ]
        ));
        k.validate().unwrap();
    }
}
