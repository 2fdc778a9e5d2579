//! The initial database (clause 4.3.3.1) for W warehouses: item 100,000;
//! per warehouse stock 100,000 and district 10; per district customer
//! 3,000 (the first 1,000 last names in order, the rest NURand with
//! C_LOAD), history 3,000, orders 3,000 (O_C_ID a permutation; orders
//! below 2,101 delivered, with a carrier and OL_DELIVERY_D), new_order for
//! orders 2,101..3,000 and 5..15 order lines per order. Loader threads take
//! jobs (the items, a warehouse's stock, one district's customers and
//! orders) from a shared counter; each generates its rows in memory as
//! multi-row INSERTs and writes them in transactions of about 5,000 rows,
//! so threads generate in parallel and hold SQLite's write lock only to
//! write. Row counts are checked by query afterwards.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use anyhow::{bail, Context, Result};

use super::rand::{last_name, NuConstants, TpccRng};
use super::schema;
use super::sql::{DbConnect, DbError, Rows, SqlConn};
use crate::measure::clock::mono_now_ns;

/// Rows per INSERT statement.
const ROWS_PER_STATEMENT: usize = 500;
/// Rows per load transaction.
const ROWS_PER_TXN: usize = 5_000;

pub use crate::results::sections::db::LoadInfo;

/// Take what a probe measured over the load into `info`.
pub fn set_measured(info: &mut LoadInfo, m: super::probe::ProbeResult) {
    info.write_amplification =
        crate::measure::write_amp::ratio(m.device.as_ref(), info.logical_bytes).ok();
    info.device = m.device;
    info.server = m.server;
    info.timeline = m.timeline;
}

/// One unit of loading work.
#[derive(Debug, Clone, Copy)]
enum Job {
    Items,
    /// A warehouse row and its stock.
    Stock(u32),
    /// A district and its customers, history, orders, new orders, lines.
    District(u32, u32),
}

/// Rows a load of `w` warehouses writes (order lines estimated at 10 per
/// order), for progress.
pub fn planned_rows(w: u32) -> u64 {
    100_000 + w as u64 * (1 + 100_000 + 10 * (1 + 3 * 3_000 + 900 + 30_000))
}

/// SQLite bytes to ask for per warehouse in the free-space check: a load
/// measured 85 MiB for W = 1 and 164 MiB for W = 2 (docs/oltp.md); the rest
/// leaves room for what the runs add.
pub const SQLITE_BYTES_PER_WAREHOUSE: u64 = 110 << 20;

/// Multi-row INSERT text of one table, built row by row.
struct Insert {
    head: String,
    buf: String,
    rows: usize,
    first_field: bool,
}

impl Insert {
    fn new(table: &str, cols: &str) -> Insert {
        let head = format!("INSERT INTO {table} ({cols}) VALUES ");
        Insert {
            buf: String::with_capacity(256 * 1024),
            head,
            rows: 0,
            first_field: true,
        }
    }

    fn row(&mut self) -> &mut Self {
        if self.rows == 0 {
            self.buf.push_str(&self.head);
        } else {
            self.buf.push_str("),");
        }
        self.buf.push('(');
        self.rows += 1;
        self.first_field = true;
        self
    }

    fn sep(&mut self) {
        if !self.first_field {
            self.buf.push(',');
        }
        self.first_field = false;
    }

    fn int(&mut self, v: impl std::fmt::Display) -> &mut Self {
        self.sep();
        let _ = write!(self.buf, "{v}");
        self
    }

    fn num(&mut self, v: f64) -> &mut Self {
        self.sep();
        let _ = write!(self.buf, "{v:.4}");
        self
    }

    fn text(&mut self, s: &str) -> &mut Self {
        self.sep();
        super::sql::quote(s, &mut self.buf);
        self
    }

    fn raw(&mut self, s: &str) -> &mut Self {
        self.sep();
        self.buf.push_str(s);
        self
    }

    /// The statement, once it holds enough rows (or `force`).
    fn take(&mut self, force: bool) -> Option<(String, usize)> {
        if self.rows == 0 || (!force && self.rows < ROWS_PER_STATEMENT) {
            return None;
        }
        self.buf.push(')');
        let n = std::mem::replace(&mut self.rows, 0);
        Some((std::mem::take(&mut self.buf), n))
    }
}

/// A loader thread's connection and the statements of its next transaction.
struct Writer<'a> {
    conn: Box<dyn SqlConn>,
    pending: Vec<String>,
    pending_rows: usize,
    done: &'a AtomicU64,
    /// Bytes of the statements written.
    bytes: &'a AtomicU64,
}

impl Writer<'_> {
    fn add(&mut self, ins: &mut Insert, force: bool) -> Result<()> {
        if let Some((sql, n)) = ins.take(force) {
            self.pending.push(sql);
            self.pending_rows += n;
        }
        if self.pending_rows >= ROWS_PER_TXN {
            self.write()?;
        }
        Ok(())
    }

    /// Write the pending statements in one transaction (retried when the
    /// database says a retry may work).
    fn write(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if crate::interrupt::stop_requested() {
            return Err(crate::error::Interrupted.into());
        }
        let mut tries = 0;
        loop {
            match self.try_write() {
                Ok(()) => break,
                Err(e) if e.retryable && tries < 10 => {
                    let _ = self.conn.rollback();
                    tries += 1;
                }
                Err(e) => {
                    let _ = self.conn.rollback();
                    return Err(anyhow::Error::new(e).context("loading the database"));
                }
            }
        }
        self.done
            .fetch_add(self.pending_rows as u64, Ordering::Relaxed);
        let bytes: usize = self.pending.iter().map(String::len).sum();
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.pending.clear();
        self.pending_rows = 0;
        Ok(())
    }

    fn try_write(&mut self) -> Result<(), DbError> {
        self.conn.begin(true)?;
        for s in &self.pending {
            self.conn.batch(s)?;
        }
        self.conn.commit()
    }
}

fn address(i: &mut Insert, r: &mut TpccRng) {
    let (s1, s2, city, state, zip) = (
        r.astring(10, 20),
        r.astring(10, 20),
        r.astring(10, 20),
        r.astring(2, 2),
        r.zip(),
    );
    i.text(&s1).text(&s2).text(&city).text(&state).text(&zip);
}

fn load_items(w: &mut Writer<'_>, r: &mut TpccRng) -> Result<()> {
    let mut ins = Insert::new("item", "i_id, i_im_id, i_name, i_price, i_data");
    for id in 1..=100_000u32 {
        let (im, name, price, data) = (
            r.uniform(1, 10_000),
            r.astring(14, 24),
            r.money(100, 10_000),
            r.data_with_original(),
        );
        ins.row().int(id).int(im).text(&name).num(price).text(&data);
        w.add(&mut ins, false)?;
    }
    w.add(&mut ins, true)
}

fn load_stock(w: &mut Writer<'_>, r: &mut TpccRng, wid: u32) -> Result<()> {
    let mut wh = Insert::new(
        "warehouse",
        "w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd",
    );
    let name = r.astring(6, 10);
    wh.row().int(wid).text(&name);
    address(&mut wh, r);
    let tax = r.rate(0, 2000);
    wh.num(tax).num(300_000.0);
    w.add(&mut wh, true)?;
    let dists: String = (1..=10).map(|n| format!("s_dist_{n:02}, ")).collect();
    let mut ins = Insert::new(
        "stock",
        &format!("s_i_id, s_w_id, s_quantity, {dists}s_ytd, s_order_cnt, s_remote_cnt, s_data"),
    );
    for id in 1..=100_000u32 {
        let q = r.uniform(10, 100);
        ins.row().int(id).int(wid).int(q);
        for _ in 0..10 {
            let d = r.astring(24, 24);
            ins.text(&d);
        }
        let data = r.data_with_original();
        ins.int(0).int(0).int(0).text(&data);
        w.add(&mut ins, false)?;
    }
    w.add(&mut ins, true)
}

fn load_customers(w: &mut Writer<'_>, r: &mut TpccRng, wid: u32, did: u32) -> Result<()> {
    let mut cust = Insert::new(
        "customer",
        "c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
         c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data",
    );
    let mut hist = Insert::new(
        "history",
        "h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data",
    );
    for c in 1..=3_000u32 {
        let last = last_name(if c <= 1000 {
            c - 1
        } else {
            r.nurand(255, 0, 999)
        });
        let first = r.astring(8, 16);
        cust.row()
            .int(c)
            .int(did)
            .int(wid)
            .text(&first)
            .text("OE")
            .text(&last);
        address(&mut cust, r);
        let (phone, credit, discount, data) = (
            r.nstring(16, 16),
            r.credit(),
            r.rate(0, 5000),
            r.astring(300, 500),
        );
        cust.text(&phone)
            .raw("CURRENT_TIMESTAMP")
            .text(credit)
            .num(50_000.0)
            .num(discount)
            .num(-10.0)
            .num(10.0)
            .int(1)
            .int(0)
            .text(&data);
        w.add(&mut cust, false)?;
        let hdata = r.astring(12, 24);
        hist.row()
            .int(c)
            .int(did)
            .int(wid)
            .int(did)
            .int(wid)
            .raw("CURRENT_TIMESTAMP")
            .num(10.0)
            .text(&hdata);
        w.add(&mut hist, false)?;
    }
    w.add(&mut cust, true)?;
    w.add(&mut hist, true)
}

fn load_orders(w: &mut Writer<'_>, r: &mut TpccRng, wid: u32, did: u32) -> Result<()> {
    let mut ord = Insert::new(
        "orders",
        "o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local",
    );
    let mut lines = Insert::new(
        "order_line",
        "ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info",
    );
    let mut new = Insert::new("new_order", "no_o_id, no_d_id, no_w_id");
    let perm = r.permutation(3_000);
    for o in 1..=3_000u32 {
        let delivered = o < 2_101;
        let cnt = r.uniform(5, 15);
        ord.row()
            .int(o)
            .int(did)
            .int(wid)
            .int(perm[o as usize - 1])
            .raw("CURRENT_TIMESTAMP");
        if delivered {
            let carrier = r.uniform(1, 10);
            ord.int(carrier);
        } else {
            ord.raw("NULL");
        }
        ord.int(cnt).int(1);
        w.add(&mut ord, false)?;
        for n in 1..=cnt {
            let item = r.uniform(1, 100_000);
            let amount = if delivered { 0.0 } else { r.money(1, 999_999) };
            let info = r.astring(24, 24);
            lines
                .row()
                .int(o)
                .int(did)
                .int(wid)
                .int(n)
                .int(item)
                .int(wid)
                .raw(if delivered {
                    "CURRENT_TIMESTAMP"
                } else {
                    "NULL"
                })
                .int(5)
                .num(amount)
                .text(&info);
            w.add(&mut lines, false)?;
        }
        if !delivered {
            new.row().int(o).int(did).int(wid);
            w.add(&mut new, false)?;
        }
    }
    w.add(&mut ord, true)?;
    w.add(&mut lines, true)?;
    w.add(&mut new, true)
}

fn load_district(w: &mut Writer<'_>, r: &mut TpccRng, wid: u32, did: u32) -> Result<()> {
    let mut d = Insert::new(
        "district",
        "d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id",
    );
    let name = r.astring(6, 10);
    d.row().int(did).int(wid).text(&name);
    address(&mut d, r);
    let tax = r.rate(0, 2000);
    d.num(tax).num(30_000.0).int(3_001);
    w.add(&mut d, true)?;
    load_customers(w, r, wid, did)?;
    load_orders(w, r, wid, did)
}

fn run_job(w: &mut Writer<'_>, job: Job, seed: u64, c: NuConstants) -> Result<()> {
    let job_seed = match job {
        Job::Items => 0,
        Job::Stock(wid) => (wid as u64) << 8,
        Job::District(wid, did) => ((wid as u64) << 8) | did as u64,
    };
    let mut r = TpccRng::new(seed ^ job_seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), c);
    match job {
        Job::Items => load_items(w, &mut r)?,
        Job::Stock(wid) => load_stock(w, &mut r, wid)?,
        Job::District(wid, did) => load_district(w, &mut r, wid, did)?,
    }
    w.write()
}

/// Load `warehouses` into the (empty) database at `db` with `threads`
/// loader threads, counting the rows written in `done`;
/// `on_progress(rows written, rows planned)` about once a second from the
/// calling thread.
pub fn load(
    db: &DbConnect,
    warehouses: u32,
    threads: usize,
    seed: u64,
    done: &AtomicU64,
    on_progress: &dyn Fn(u64, u64),
) -> Result<LoadInfo> {
    let t0 = mono_now_ns();
    let c = NuConstants::for_load(seed);
    let mut conn = db.open_checked(true)?;
    if conn.dialect() != super::sql::Dialect::Sqlite {
        for s in schema::drop_tables() {
            conn.batch(&s).context("dropping old tables")?;
        }
    }
    for s in schema::create_tables(conn.dialect()) {
        conn.batch(&s)
            .with_context(|| format!("creating tables: {s}"))?;
    }
    let mut jobs = vec![Job::Items];
    for w in 1..=warehouses {
        jobs.push(Job::Stock(w));
        jobs.extend((1..=10).map(|d| Job::District(w, d)));
    }
    let threads = threads.clamp(1, jobs.len());
    let next = AtomicUsize::new(0);
    let bytes = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let planned = planned_rows(warehouses);
    let results: Vec<Result<()>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (jobs, next, bytes, failed) = (&jobs, &next, &bytes, &failed);
                sc.spawn(move || -> Result<()> {
                    let mut w = Writer {
                        conn: db.open(true).map_err(anyhow::Error::new)?,
                        pending: Vec::new(),
                        pending_rows: 0,
                        done,
                        bytes,
                    };
                    while !failed.load(Ordering::Relaxed) {
                        let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        if let Err(e) = run_job(&mut w, *job, seed, c) {
                            failed.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        let mut last = mono_now_ns();
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(std::time::Duration::from_millis(50));
            if mono_now_ns() - last >= 1_000_000_000 {
                last = mono_now_ns();
                on_progress(done.load(Ordering::Relaxed), planned);
            }
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a loader thread panicked")))
            })
            .collect()
    });
    // An interruption is the error to report, not what it caused elsewhere.
    if crate::interrupt::stop_requested() {
        return Err(crate::error::Interrupted.into());
    }
    for r in results {
        r?;
    }
    for s in schema::create_indexes() {
        conn.batch(&s)
            .with_context(|| format!("creating indexes: {s}"))?;
    }
    analyze(conn.as_mut())?;
    let rows = check_rows(conn.as_mut(), warehouses, false)?;
    Ok(LoadInfo {
        warehouses,
        rows,
        wall_ns: mono_now_ns() - t0,
        db_size_bytes: 0,
        loader_threads: threads,
        c_load: c.c_last,
        loaded: true,
        logical_bytes: Some(bytes.load(Ordering::Relaxed)),
        ..Default::default()
    })
}

/// Planner statistics after the load (and SQLite's WAL folded back).
fn analyze(conn: &mut dyn SqlConn) -> Result<()> {
    use super::sql::Dialect;
    let sql = match conn.dialect() {
        Dialect::Sqlite => "ANALYZE; PRAGMA wal_checkpoint(TRUNCATE);".to_string(),
        Dialect::Postgres => "ANALYZE".to_string(),
        Dialect::Mariadb => format!("ANALYZE TABLE {}", schema::TABLES.join(", ")),
    };
    if conn.dialect() == Dialect::Mariadb {
        let mut rows = Rows::default();
        conn.query_sql(&sql, &mut rows)
    } else {
        conn.batch(&sql)
    }
    .context("analyzing the loaded tables")
}

/// Rows per table, by query; an error when a count is not the spec's.
/// `after_runs`: the database was run on (reused with `--db`), so only the
/// tables no transaction inserts into or deletes from are held to the
/// load's counts.
pub fn check_rows(
    conn: &mut dyn SqlConn,
    warehouses: u32,
    after_runs: bool,
) -> Result<BTreeMap<String, u64>> {
    let mut rows = Rows::default();
    let mut out = BTreeMap::new();
    let mut count = |sql: &str| -> Result<u64> {
        conn.query_sql(sql, &mut rows)
            .with_context(|| format!("counting rows: {sql}"))?;
        Ok(rows.int(0, 0).max(0) as u64)
    };
    let lines_expected = count("SELECT SUM(o_ol_cnt) FROM orders")?;
    let mut wrong = Vec::new();
    for (table, expected) in schema::expected_rows(warehouses as u64) {
        let n = count(&format!("SELECT COUNT(*) FROM {table}"))?;
        let want = expected.unwrap_or(lines_expected);
        let grows = matches!(table, "history" | "orders" | "new_order");
        if n != want && !(after_runs && grows) {
            wrong.push(format!("{table}: {n} rows, expected {want}"));
        }
        out.insert(table.to_string(), n);
    }
    if !wrong.is_empty() {
        bail!(
            "the database does not hold a TPC-C-derived load of {warehouses} warehouse(s): {}",
            wrong.join("; ")
        );
    }
    Ok(out)
}

/// The number of warehouses a loaded database holds.
pub fn warehouses_in(conn: &mut dyn SqlConn) -> Result<u32> {
    let mut rows = Rows::default();
    conn.query_sql("SELECT COUNT(*) FROM warehouse", &mut rows)
        .context("reading the warehouse count (is this a loaded database?)")?;
    Ok(rows.int(0, 0).max(0) as u32)
}

/// The database's size as the server reports it (servers only).
pub fn server_db_size(conn: &mut dyn SqlConn) -> Option<u64> {
    use super::sql::Dialect;
    let sql = match conn.dialect() {
        Dialect::Postgres => "SELECT pg_database_size(current_database())",
        Dialect::Mariadb => "SELECT SUM(data_length + index_length) FROM information_schema.tables WHERE table_schema = DATABASE()",
        Dialect::Sqlite => return None,
    };
    let mut rows = Rows::default();
    conn.query_sql(sql, &mut rows).ok()?;
    rows.get(0, 0).as_i64().map(|v| v.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_are_multi_row_and_quoted() {
        let mut i = Insert::new("t", "a, b");
        i.row().int(1).text("x'y");
        i.row().num(2.5).raw("NULL");
        let (sql, n) = i.take(true).unwrap();
        assert_eq!(n, 2);
        assert_eq!(sql, "INSERT INTO t (a, b) VALUES (1,'x''y'),(2.5000,NULL)");
        assert!(i.take(true).is_none());
    }
}
