//! Order-Status (clause 2.6.2), read-only: the customer by id or by last
//! name, its most recent order and that order's lines.

use super::input::OrderStatusInput;
use super::payment::customer_id;
use super::TxnOutcome;
use crate::oltp::sql::{query_row, DbResult, Rows, SqlConn, Stmt, Value};

pub fn run(c: &mut dyn SqlConn, i: &OrderStatusInput, rows: &mut Rows) -> DbResult<TxnOutcome> {
    c.begin(false)?;
    let c_id = customer_id(c, i.w, i.d, &i.customer, rows)?;
    let key = [i.w.into(), i.d.into(), Value::Int(c_id)];
    query_row(c, Stmt::OsCustomer, &key, rows)?;
    if query_row(c, Stmt::OsLastOrder, &key, rows)? {
        let o_id = rows.int(0, 0);
        c.query(
            Stmt::OsLines,
            &[i.w.into(), i.d.into(), Value::Int(o_id)],
            rows,
        )?;
    }
    c.commit()?;
    Ok(TxnOutcome::Committed)
}
