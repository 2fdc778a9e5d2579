//! Stock-Level (clause 2.8.2), read-only: the district's next order id,
//! then the number of distinct items of its last 20 orders whose stock in
//! the warehouse is below the threshold.

use super::input::StockLevelInput;
use super::TxnOutcome;
use crate::oltp::sql::{query_row, DbResult, Rows, SqlConn, Stmt, Value};

pub fn run(c: &mut dyn SqlConn, i: &StockLevelInput, rows: &mut Rows) -> DbResult<TxnOutcome> {
    c.begin(false)?;
    query_row(c, Stmt::SlNextOrder, &[i.w.into(), i.d.into()], rows)?;
    let next = rows.int(0, 0);
    c.query(
        Stmt::SlCount,
        &[
            i.w.into(),
            i.d.into(),
            Value::Int(next),
            Value::Int(next - 20),
            i.w.into(),
            i.threshold.into(),
        ],
        rows,
    )?;
    c.commit()?;
    Ok(TxnOutcome::Committed)
}
