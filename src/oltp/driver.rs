//! The terminal driver: one thread per virtual user, each bound to a home
//! warehouse (user i -> warehouse i % W + 1, its Stock-Level district
//! (i / W) % 10 + 1) with its own connection and seeded random source,
//! drawing transaction types from a shuffled deck. Keying and think times
//! only with `wait` (negative exponential think times truncated at 10x the
//! mean). A ramp that is not counted, then the measured time: per type an
//! HDR histogram of the whole transaction's latency (retries included),
//! commits, intended rollbacks, retries and failures (retryable errors are
//! retried up to 10 times, then the transaction counts as failed); a
//! per-second series of transactions and new orders. Ctrl-C stops every
//! user after its current transaction, keeping what was measured.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;

use anyhow::{anyhow, Result};

use super::rand::{NuConstants, TpccRng};
use super::sql::{DbConnect, DbError, Rows, SqlConn};
use super::txn::input::TpccTerminal;
use super::txn::{self, Deck, TxnKind, TxnNotes, TxnOutcome};
use crate::interrupt;
use crate::measure::clock::mono_now_ns;
use crate::measure::histogram::LatencyHistogram;
use crate::measure::rusage::{CpuStats, RusageSnapshot};
use crate::results::SeriesPoint;

/// Retries of a transaction after a retryable error before it counts as failed.
pub const MAX_RETRIES: u32 = 10;

/// How the users run.
#[derive(Debug, Clone)]
pub struct DriverSpec {
    pub users: usize,
    pub warehouses: u32,
    pub ramp_ns: u64,
    pub time_ns: u64,
    /// Keying and think times (the spec's terminal pacing).
    pub wait: bool,
    pub seed: u64,
    pub constants: NuConstants,
}

/// Measurements of one user, then of all (merged).
#[derive(Clone)]
pub struct TxnStats {
    pub latency: Vec<LatencyHistogram>,
    pub commits: [u64; 5],
    pub rollbacks: [u64; 5],
    pub retries: [u64; 5],
    pub failures: [u64; 5],
    pub delivery_skipped: u64,
    /// The first error of each failed transaction type, kept for the results.
    pub first_errors: Vec<String>,
}

impl Default for TxnStats {
    fn default() -> Self {
        TxnStats {
            latency: (0..5).map(|_| LatencyHistogram::new()).collect(),
            commits: [0; 5],
            rollbacks: [0; 5],
            retries: [0; 5],
            failures: [0; 5],
            delivery_skipped: 0,
            first_errors: Vec::new(),
        }
    }
}

impl TxnStats {
    pub fn merge(&mut self, o: &TxnStats) {
        for k in 0..5 {
            self.latency[k].merge(&o.latency[k]);
            self.commits[k] += o.commits[k];
            self.rollbacks[k] += o.rollbacks[k];
            self.retries[k] += o.retries[k];
            self.failures[k] += o.failures[k];
        }
        self.delivery_skipped += o.delivery_skipped;
        for e in &o.first_errors {
            if self.first_errors.len() < 8 {
                self.first_errors.push(e.clone());
            }
        }
    }

    /// Transactions that finished (committed or rolled back as intended).
    pub fn finished(&self) -> u64 {
        self.commits.iter().sum::<u64>() + self.rollbacks.iter().sum::<u64>()
    }
}

/// What a driven point produced.
pub struct DriverOutcome {
    pub stats: TxnStats,
    /// Transactions per second, one entry a second of the measured time.
    pub series: Vec<SeriesPoint>,
    /// New orders committed per second, aligned with `series`.
    pub new_orders_per_s: Vec<f64>,
    pub measured_ns: u64,
    pub cpu: CpuStats,
    pub interrupted: bool,
}

/// Live counters of one user, read by the sampler.
#[repr(align(64))]
#[derive(Default)]
struct Live {
    txns: AtomicU64,
    new_orders: AtomicU64,
    lat_sum: AtomicU64,
}

/// Called about once a second: (seconds since the start, in the ramp,
/// measured transactions, measured new orders).
pub type OnTick<'a> = &'a dyn Fn(f64, bool, u64, u64);

/// What the supervising thread tells about the measured time, for probes
/// that measure it too (the server, the device, the timeline).
pub trait MeasuredWindow {
    /// The measured time starts now (the ramp is over).
    fn begin(&mut self) {}
    /// Transactions finished in the measured time so far (every 20 ms).
    fn progress(&mut self, _txns: u64) {}
    /// Every user has finished: the measured time is over.
    fn end(&mut self) {}
}

/// No probe.
pub struct Unprobed;

impl MeasuredWindow for Unprobed {}

struct Shared {
    live: Vec<Live>,
    barrier: Barrier,
    abort: AtomicBool,
    t0: AtomicU64,
}

/// Sleep `secs`, waking early on Ctrl-C, an abort or `until`.
fn pause(secs: f64, until: u64, shared: &Shared) {
    let end = mono_now_ns().saturating_add((secs * 1e9) as u64).min(until);
    while !interrupt::stop_requested() && !shared.abort.load(Ordering::Relaxed) {
        let now = mono_now_ns();
        if now >= end {
            break;
        }
        std::thread::sleep(std::time::Duration::from_nanos((end - now).min(50_000_000)));
    }
}

/// One transaction with its retries: the outcome, or the error that ended it.
fn attempt(
    conn: &mut dyn SqlConn,
    input: &txn::Input,
    rows: &mut Rows,
    notes: &mut TxnNotes,
    retries: &mut u32,
) -> Result<TxnOutcome, DbError> {
    loop {
        match txn::execute(conn, input, rows, notes) {
            Ok(o) => return Ok(o),
            Err(e) => {
                let _ = conn.rollback();
                if !e.retryable || *retries >= MAX_RETRIES {
                    return Err(e);
                }
                *retries += 1;
            }
        }
    }
}

fn user(db: &DbConnect, spec: &DriverSpec, id: usize, shared: &Shared) -> Result<TxnStats> {
    let conn = db.open(false);
    shared.barrier.wait();
    let mut conn = conn.map_err(|e| anyhow!("virtual user {id}: {e}"))?;
    let w = spec.warehouses;
    let term = TpccTerminal {
        w: (id as u32 % w) + 1,
        d: ((id as u32 / w) % 10) + 1,
        warehouses: w,
    };
    let mut r = TpccRng::new(
        spec.seed ^ (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        spec.constants,
    );
    let mut deck = Deck::new();
    let mut rows = Rows::default();
    let mut notes = TxnNotes::default();
    let mut st = TxnStats::default();
    let live = &shared.live[id];
    let t0 = shared.t0.load(Ordering::Acquire);
    let measure_from = t0 + spec.ramp_ns;
    let end = measure_from + spec.time_ns;
    let mut lat_sum = 0u64;
    while !interrupt::stop_requested() && !shared.abort.load(Ordering::Relaxed) {
        let kind = deck.draw(&mut r);
        let input = term.input(kind, &mut r);
        if spec.wait {
            pause(kind.keying_s(), end, shared);
        }
        let start = mono_now_ns();
        if start >= end || interrupt::stop_requested() {
            break;
        }
        let mut retries = 0;
        let skipped_before = notes.delivery_skipped;
        let outcome = attempt(conn.as_mut(), &input, &mut rows, &mut notes, &mut retries);
        let done = mono_now_ns();
        if start < measure_from {
            if let Err(e) = outcome {
                if !e.retryable {
                    shared.abort.store(true, Ordering::Relaxed);
                    return Err(anyhow!("{}: {e}", kind.name()));
                }
            }
            if spec.wait {
                pause(r.think_time_s(kind.think_mean_s()), end, shared);
            }
            continue;
        }
        let k = kind.idx();
        st.retries[k] += retries as u64;
        st.delivery_skipped += (notes.delivery_skipped - skipped_before) as u64;
        match outcome {
            Ok(o) => {
                st.latency[k].record(done - start);
                if o == TxnOutcome::Committed {
                    st.commits[k] += 1;
                } else {
                    st.rollbacks[k] += 1;
                }
                lat_sum += done - start;
                live.txns.fetch_add(1, Ordering::Relaxed);
                live.lat_sum.store(lat_sum, Ordering::Relaxed);
                if kind == TxnKind::NewOrder && o == TxnOutcome::Committed {
                    live.new_orders.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) if e.retryable => {
                st.failures[k] += 1;
                if st.first_errors.len() < 4 {
                    st.first_errors.push(format!(
                        "{} failed after {MAX_RETRIES} retries: {e}",
                        kind.name()
                    ));
                }
            }
            Err(e) => {
                shared.abort.store(true, Ordering::Relaxed);
                return Err(anyhow!("{}: {e}", kind.name()));
            }
        }
        if spec.wait {
            pause(r.think_time_s(kind.think_mean_s()), end, shared);
        }
    }
    Ok(st)
}

/// Run `spec.users` virtual users against `db`; `on_tick` about once a
/// second; `window` told when the measured time starts and ends.
pub fn run(
    db: &DbConnect,
    spec: &DriverSpec,
    on_tick: OnTick<'_>,
    window: &mut dyn MeasuredWindow,
) -> Result<DriverOutcome> {
    let shared = Shared {
        live: (0..spec.users).map(|_| Live::default()).collect(),
        barrier: Barrier::new(spec.users + 1),
        abort: AtomicBool::new(false),
        t0: AtomicU64::new(0),
    };
    let mut series = Vec::new();
    let mut new_orders = Vec::new();
    let mut cpu_start = RusageSnapshot::now();
    let mut measured = (0u64, 0u64);
    let results: Vec<Result<TxnStats>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..spec.users)
            .map(|id| {
                let shared = &shared;
                sc.spawn(move || user(db, spec, id, shared))
            })
            .collect();
        shared.t0.store(mono_now_ns(), Ordering::Release);
        shared.barrier.wait();
        let t0 = shared.t0.load(Ordering::Relaxed);
        let measure_from = t0 + spec.ramp_ns;
        let (mut last_t, mut last) = (measure_from, (0u64, 0u64, 0u64));
        let mut in_ramp = spec.ramp_ns > 0;
        if !in_ramp {
            window.begin();
        }
        let mut last_tick = t0;
        loop {
            let finished = handles.iter().all(|h| h.is_finished());
            let now = mono_now_ns();
            if in_ramp && now >= measure_from {
                in_ramp = false;
                window.begin();
                cpu_start = RusageSnapshot::now();
                last_t = now;
            }
            let sum = |f: fn(&Live) -> u64| shared.live.iter().map(f).sum::<u64>();
            let cur = (
                sum(|l| l.txns.load(Ordering::Relaxed)),
                sum(|l| l.new_orders.load(Ordering::Relaxed)),
                sum(|l| l.lat_sum.load(Ordering::Relaxed)),
            );
            if !in_ramp {
                window.progress(cur.0);
            }
            if !in_ramp && (finished || now - last_t >= 1_000_000_000) {
                let len = (now - last_t) as f64 / 1e9;
                if len > 0.05 && (cur.0 > last.0 || !finished) {
                    let d = cur.0 - last.0;
                    series.push(SeriesPoint {
                        t_s: (last_t - measure_from) as f64 / 1e9,
                        len_s: len,
                        iops: d as f64 / len,
                        mib_s: 0.0,
                        mean_ns: if d > 0 {
                            (cur.2 - last.2) as f64 / d as f64
                        } else {
                            0.0
                        },
                        p99_ns: None,
                        clat_hist: None,
                    });
                    new_orders.push((cur.1 - last.1) as f64 / len);
                }
                last_t = now;
                last = cur;
            }
            if !finished && now - last_tick >= 1_000_000_000 {
                last_tick = now;
                on_tick((now - t0) as f64 / 1e9, in_ramp, cur.0, cur.1);
            }
            if finished {
                measured = (measure_from, now.max(measure_from));
                if !in_ramp {
                    window.end();
                }
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a virtual user panicked")))
            })
            .collect()
    });
    let measured_ns = measured.1 - measured.0;
    let cpu = RusageSnapshot::now().since(&cpu_start, measured_ns.max(1));
    let mut stats = TxnStats::default();
    for r in results {
        stats.merge(&r?);
    }
    Ok(DriverOutcome {
        stats,
        series,
        new_orders_per_s: new_orders,
        measured_ns: measured_ns.min(spec.time_ns.max(1)).max(1),
        cpu,
        interrupted: interrupt::stop_requested(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oltp::sql::{Dialect, Stmt, Value};
    use crate::oltp::txn::input::StockLevelInput;

    /// Fails `begin` with a retryable error `fail` times, then answers every
    /// query with one row holding 100.
    struct Flaky {
        fail: u32,
        begins: u32,
        rollbacks: u32,
    }

    impl SqlConn for Flaky {
        fn dialect(&self) -> Dialect {
            Dialect::Sqlite
        }
        fn begin(&mut self, _w: bool) -> Result<(), DbError> {
            self.begins += 1;
            if self.begins <= self.fail {
                return Err(DbError {
                    retryable: true,
                    msg: "deadlock".into(),
                });
            }
            Ok(())
        }
        fn commit(&mut self) -> Result<(), DbError> {
            Ok(())
        }
        fn rollback(&mut self) -> Result<(), DbError> {
            self.rollbacks += 1;
            Ok(())
        }
        fn execute(&mut self, _s: Stmt, _p: &[Value]) -> Result<u64, DbError> {
            Ok(1)
        }
        fn query(&mut self, _s: Stmt, _p: &[Value], out: &mut Rows) -> Result<(), DbError> {
            out.ncols = 1;
            out.vals = vec![Value::Int(100)];
            Ok(())
        }
        fn batch(&mut self, _sql: &str) -> Result<(), DbError> {
            Ok(())
        }
        fn query_sql(&mut self, _sql: &str, out: &mut Rows) -> Result<(), DbError> {
            out.clear();
            Ok(())
        }
        fn version(&mut self) -> String {
            String::new()
        }
    }

    fn stock_level() -> txn::Input {
        txn::Input::StockLevel(StockLevelInput {
            w: 1,
            d: 1,
            threshold: 15,
        })
    }

    #[test]
    fn retryable_errors_are_retried_then_fail() {
        let (mut rows, mut notes) = (Rows::default(), TxnNotes::default());
        let mut c = Flaky {
            fail: 3,
            begins: 0,
            rollbacks: 0,
        };
        let mut retries = 0;
        let o = attempt(&mut c, &stock_level(), &mut rows, &mut notes, &mut retries);
        assert_eq!(o.unwrap(), TxnOutcome::Committed);
        assert_eq!((retries, c.rollbacks), (3, 3));
        let mut c = Flaky {
            fail: u32::MAX,
            begins: 0,
            rollbacks: 0,
        };
        let mut retries = 0;
        let e = attempt(&mut c, &stock_level(), &mut rows, &mut notes, &mut retries).unwrap_err();
        assert!(e.retryable);
        assert_eq!(retries, MAX_RETRIES);
        assert_eq!(c.begins, MAX_RETRIES + 1);
    }
}
