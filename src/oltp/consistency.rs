//! The consistency conditions 1-4 of clause 3.3.2, checked by query after
//! the run: (1) W_YTD = sum(D_YTD) per warehouse; (2) D_NEXT_O_ID - 1 =
//! max(O_ID) = max(NO_O_ID) per district; (3) max(NO_O_ID) minus
//! min(NO_O_ID) plus one = the number of new_order rows per district; (4)
//! sum(O_OL_CNT) = the number of order_line rows per district. Each is
//! reported pass or fail with the first violation.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use super::sql::{Rows, SqlConn};
pub use crate::results::ext::oltp::ConsistencyResult;

/// Money sums may differ by rounding (SQLite stores REAL).
const MONEY_TOLERANCE: f64 = 0.01;

impl ConsistencyResult {
    fn new(condition: u8, description: &str) -> ConsistencyResult {
        ConsistencyResult {
            condition,
            description: description.into(),
            passed: true,
            ..Default::default()
        }
    }

    fn verdict(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.passed = false;
            self.violations += 1;
            if self.first_violation.is_none() {
                self.first_violation = Some(what());
            }
        }
    }
}

fn query(conn: &mut dyn SqlConn, sql: &str, rows: &mut Rows) -> Result<()> {
    conn.query_sql(sql, rows)
        .with_context(|| format!("consistency check: {sql}"))
}

/// Rows of a (w, d, value) query as a map.
fn per_district(conn: &mut dyn SqlConn, sql: &str) -> Result<BTreeMap<(i64, i64), i64>> {
    let mut rows = Rows::default();
    query(conn, sql, &mut rows)?;
    Ok((0..rows.len())
        .map(|r| ((rows.int(r, 0), rows.int(r, 1)), rows.int(r, 2)))
        .collect())
}

fn condition_1(conn: &mut dyn SqlConn, rows: &mut Rows) -> Result<ConsistencyResult> {
    let mut c = ConsistencyResult::new(1, "W_YTD = sum(D_YTD)");
    query(
        conn,
        "SELECT w_id, w_ytd, (SELECT SUM(d_ytd) FROM district WHERE d_w_id = w_id) FROM warehouse ORDER BY w_id",
        rows,
    )?;
    for r in 0..rows.len() {
        let (w, ytd, sum) = (rows.int(r, 0), rows.num(r, 1), rows.num(r, 2));
        c.verdict((ytd - sum).abs() <= MONEY_TOLERANCE, || {
            format!("warehouse {w}: W_YTD {ytd:.2} but sum(D_YTD) {sum:.2}")
        });
    }
    Ok(c)
}

fn condition_2(conn: &mut dyn SqlConn, rows: &mut Rows) -> Result<ConsistencyResult> {
    let mut c = ConsistencyResult::new(2, "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)");
    query(
        conn,
        "SELECT d_w_id, d_id, d_next_o_id, \
         (SELECT MAX(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id), \
         (SELECT MAX(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id) \
         FROM district ORDER BY d_w_id, d_id",
        rows,
    )?;
    for r in 0..rows.len() {
        let (w, d, next) = (rows.int(r, 0), rows.int(r, 1), rows.int(r, 2));
        let max_o = rows.get(r, 3).as_i64();
        // A district whose new orders were all delivered has no max(NO_O_ID).
        let max_no = rows.get(r, 4).as_i64();
        let ok = max_o == Some(next - 1) && max_no.is_none_or(|m| m == next - 1);
        c.verdict(ok, || {
            format!(
                "district {w}/{d}: D_NEXT_O_ID - 1 = {}, max(O_ID) = {max_o:?}, max(NO_O_ID) = {max_no:?}",
                next - 1
            )
        });
    }
    Ok(c)
}

fn condition_3(conn: &mut dyn SqlConn, rows: &mut Rows) -> Result<ConsistencyResult> {
    let mut c = ConsistencyResult::new(3, "max(NO_O_ID) - min(NO_O_ID) + 1 = count(new_order)");
    query(
        conn,
        "SELECT no_w_id, no_d_id, MAX(no_o_id) - MIN(no_o_id) + 1, COUNT(*) FROM new_order GROUP BY no_w_id, no_d_id ORDER BY no_w_id, no_d_id",
        rows,
    )?;
    for r in 0..rows.len() {
        let (w, d, span, n) = (
            rows.int(r, 0),
            rows.int(r, 1),
            rows.int(r, 2),
            rows.int(r, 3),
        );
        c.verdict(span == n, || {
            format!("district {w}/{d}: max - min + 1 = {span} but {n} new_order rows")
        });
    }
    Ok(c)
}

fn condition_4(conn: &mut dyn SqlConn) -> Result<ConsistencyResult> {
    let mut c = ConsistencyResult::new(4, "sum(O_OL_CNT) = count(order_line)");
    let ol_cnt = per_district(
        conn,
        "SELECT o_w_id, o_d_id, SUM(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id",
    )?;
    let lines = per_district(
        conn,
        "SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line GROUP BY ol_w_id, ol_d_id",
    )?;
    for ((w, d), cnt) in &ol_cnt {
        let n = lines.get(&(*w, *d)).copied().unwrap_or(0);
        c.verdict(*cnt == n, || {
            format!("district {w}/{d}: sum(O_OL_CNT) = {cnt} but {n} order_line rows")
        });
    }
    Ok(c)
}

/// Check conditions 1-4.
pub fn check(conn: &mut dyn SqlConn) -> Result<Vec<ConsistencyResult>> {
    let mut rows = Rows::default();
    Ok(vec![
        condition_1(conn, &mut rows)?,
        condition_2(conn, &mut rows)?,
        condition_3(conn, &mut rows)?,
        condition_4(conn)?,
    ])
}
