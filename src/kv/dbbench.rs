//! db_bench-style benchmarks: fillseq, fillrandom, overwrite, readrandom,
//! readseq, seekrandom, readwhilewriting, readrandomwriterandom. Keys are the
//! record number (0..num) in `--key-size` bytes, as decimal digits or as
//! db_bench's binary keys (`--key-format`), values `--value-size` bytes with
//! the integrity header. An operation's latency is, as in db_bench, the time
//! since the previous one ended (key choice and value checks included): one
//! clock read per operation.

use super::clock::now_ns;
use super::generator::Counter;
use super::keys::KeyFormat;
use super::phase::{Work, Worker};
use super::recorder::{KvOp, ScanTally};
use super::value::{self, BodyPool, CheckValues, HEADER};
use crate::error::usage;
use anyhow::Result;
use rand::RngExt;

/// readseq times one step in this many (`DbBench::next_in_order`).
pub const READSEQ_TIME_EVERY: u64 = 16;

/// One db_bench benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bench {
    FillSeq,
    FillRandom,
    Overwrite,
    ReadRandom,
    ReadSeq,
    SeekRandom,
    ReadWhileWriting,
    /// Every thread reads and writes random keys: per 100 operations,
    /// `--readwritepercent` reads first, then the writes (db_bench's order).
    ReadRandomWriteRandom,
}

impl Bench {
    pub fn parse(s: &str) -> Option<Bench> {
        Some(match s {
            "fillseq" => Bench::FillSeq,
            "fillrandom" => Bench::FillRandom,
            "overwrite" => Bench::Overwrite,
            "readrandom" => Bench::ReadRandom,
            "readseq" => Bench::ReadSeq,
            "seekrandom" => Bench::SeekRandom,
            "readwhilewriting" => Bench::ReadWhileWriting,
            "readrandomwriterandom" => Bench::ReadRandomWriteRandom,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Bench::FillSeq => "fillseq",
            Bench::FillRandom => "fillrandom",
            Bench::Overwrite => "overwrite",
            Bench::ReadRandom => "readrandom",
            Bench::ReadSeq => "readseq",
            Bench::SeekRandom => "seekrandom",
            Bench::ReadWhileWriting => "readwhilewriting",
            Bench::ReadRandomWriteRandom => "readrandomwriterandom",
        }
    }

    /// Whether the benchmark needs an existing database.
    pub fn needs_data(self) -> bool {
        !matches!(self, Bench::FillSeq | Bench::FillRandom)
    }

    /// Whether the benchmark writes `num` keys.
    pub fn loads(self) -> bool {
        matches!(self, Bench::FillSeq | Bench::FillRandom | Bench::Overwrite)
    }
}

/// Sizes shared by the benchmarks.
#[derive(Debug, Clone, Copy)]
pub struct DbBenchConfig {
    pub num: u64,
    pub key_size: usize,
    pub value_size: usize,
    /// readrandomwriterandom: reads per 100 operations (db_bench's
    /// --readwritepercent, default 90).
    pub read_percent: u8,
    /// Which values reads check (`--check-values`).
    pub check_values: CheckValues,
    /// How record numbers become keys (`--key-format`).
    pub key_format: KeyFormat,
}

impl DbBenchConfig {
    pub fn validate(&self) -> Result<()> {
        if self.num == 0 {
            return Err(usage("--num", "must be >= 1"));
        }
        if !(1..=1024).contains(&self.key_size) {
            return Err(usage("--key-size", "must be 1..=1024"));
        }
        if !self.key_format.holds(self.key_size, self.num) {
            let unit = match self.key_format {
                KeyFormat::Decimal => "digits",
                KeyFormat::Binary => "binary bytes",
            };
            return Err(usage(
                "--key-size",
                format!("{} {unit} cannot hold --num {}", self.key_size, self.num),
            ));
        }
        if self.read_percent > 100 {
            return Err(usage("--readwritepercent", "must be 0..=100"));
        }
        if self.value_size < HEADER || self.value_size > 64 << 20 {
            return Err(usage(
                "--value-size",
                format!("must be {HEADER}..=64MiB (values carry a {HEADER}-byte checksum header)"),
            ));
        }
        Ok(())
    }
}

/// A db_bench benchmark as a `Work`.
pub struct DbBench {
    bench: Bench,
    cfg: DbBenchConfig,
    seq: Counter,
    pool: BodyPool,
}

impl DbBench {
    pub fn new(bench: Bench, cfg: DbBenchConfig, seed: u64) -> DbBench {
        DbBench {
            bench,
            cfg,
            seq: Counter::new(0),
            pool: BodyPool::new(cfg.value_size, seed),
        }
    }

    fn write(&self, w: &mut Worker<'_>, num: u64) -> Result<()> {
        self.cfg
            .key_format
            .write(num, self.cfg.key_size, &mut w.key);
        // The version is the writer's op counter: unique enough for the checksum.
        value::build(
            &self.pool,
            &mut w.bodies,
            &w.key,
            w.n,
            self.cfg.value_size,
            &mut w.val,
        );
        let t0 = w.op_start;
        w.s.insert(&w.key, &w.val)?;
        let t1 = w.end_op();
        let bytes = (w.key.len() + w.val.len()) as u64;
        w.rec.logical_written += bytes;
        w.record(KvOp::Write, t0, t1, 1, bytes);
        Ok(())
    }

    fn read(&self, w: &mut Worker<'_>) -> Result<()> {
        let num = w.rng.random_range(0..self.cfg.num);
        self.cfg
            .key_format
            .write(num, self.cfg.key_size, &mut w.key);
        let check = self.cfg.check_values.due(w.n);
        let (mut len, mut checked) = (0, None);
        let key = &w.key;
        let t0 = w.op_start;
        let found = w.s.read_with(key, &mut w.buf, &mut |v| {
            len = v.len();
            if check {
                checked = Some(value::verify(key, v));
            }
        })?;
        let t1 = w.end_op();
        w.record(KvOp::Read, t0, t1, 1, (w.key.len() + len) as u64);
        if !found {
            w.rec.not_found += 1;
        }
        if let Some(result) = checked {
            w.rec.verified += 1;
            if let Err(e) = result {
                let k = KeyFormat::show(&w.key);
                w.rec.mismatch(|| format!("{k}: {e}"));
            }
        }
        Ok(())
    }

    /// seekrandom: seek to a random key and read one record.
    fn seek(&self, w: &mut Worker<'_>) -> Result<()> {
        let num = w.rng.random_range(0..self.cfg.num);
        self.cfg
            .key_format
            .write(num, self.cfg.key_size, &mut w.key);
        let mut tally = ScanTally {
            skip_check: !self.cfg.check_values.due(w.n),
            ..ScanTally::default()
        };
        let t0 = w.op_start;
        w.s.scan(&w.key, 1, &mut |k, v| tally.visit(k, v))?;
        let t1 = w.end_op();
        tally.settle(&mut w.rec);
        w.record(KvOp::Seek, t0, t1, 1, tally.bytes);
        Ok(())
    }

    /// readseq: the next record of the worker's one iterator (the first
    /// one includes opening the iterator, as in db_bench). At
    /// the end of the database the worker is done, as db_bench's is.
    /// One step in `READSEQ_TIME_EVERY` is timed (a step costs about what
    /// a clock read and a histogram record cost): its latency stands for
    /// the untimed steps after it; paced walks time every step.
    fn next_in_order(&self, w: &mut Worker<'_>) -> Result<()> {
        let mut tally = ScanTally {
            skip_check: !self.cfg.check_values.due_in_order(w.n),
            ..ScanTally::default()
        };
        let paced = w.intended.is_some();
        let sampled = !paced && w.n.is_multiple_of(READSEQ_TIME_EVERY);
        let t0 = if sampled { now_ns() } else { 0 };
        let more = w.s.next_in_order(&mut |k, v| tally.visit(k, v))?;
        if !more {
            w.exhausted = true;
            return Ok(());
        }
        tally.settle(&mut w.rec);
        if paced {
            let t1 = w.end_op();
            w.record(KvOp::ReadSeq, w.op_start, t1, 1, tally.bytes);
        } else if sampled {
            let t1 = w.end_op();
            w.sampled(KvOp::ReadSeq, t0, t1, tally.bytes);
        } else {
            w.untimed(KvOp::ReadSeq, tally.bytes);
        }
        Ok(())
    }
}

impl Work for DbBench {
    fn kinds(&self) -> Vec<KvOp> {
        match self.bench {
            Bench::FillSeq | Bench::FillRandom | Bench::Overwrite => vec![KvOp::Write],
            Bench::ReadRandom => vec![KvOp::Read],
            Bench::ReadSeq => vec![KvOp::ReadSeq],
            Bench::SeekRandom => vec![KvOp::Seek],
            Bench::ReadWhileWriting | Bench::ReadRandomWriteRandom => {
                vec![KvOp::Write, KvOp::Read]
            }
        }
    }

    fn op(&self, w: &mut Worker<'_>) -> Result<()> {
        match self.bench {
            Bench::FillSeq => {
                let n = self.seq.next() as u64;
                self.write(w, n)
            }
            Bench::FillRandom | Bench::Overwrite => {
                let n = w.rng.random_range(0..self.cfg.num);
                self.write(w, n)
            }
            Bench::ReadRandom => self.read(w),
            Bench::ReadSeq => self.next_in_order(w),
            Bench::SeekRandom => self.seek(w),
            Bench::ReadWhileWriting => {
                if w.id == 0 {
                    let n = w.rng.random_range(0..self.cfg.num);
                    self.write(w, n)
                } else {
                    self.read(w)
                }
            }
            Bench::ReadRandomWriteRandom => {
                if w.n % 100 < u64::from(self.cfg.read_percent) {
                    self.read(w)
                } else {
                    let n = w.rng.random_range(0..self.cfg.num);
                    self.write(w, n)
                }
            }
        }
    }
}
