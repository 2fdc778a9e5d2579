//! Delivery (clause 2.7.4), run inline in one transaction: for each of the
//! ten districts of the warehouse, the oldest new order (locked) is
//! deleted, its order gets the carrier, its lines the delivery date, and
//! the sum of their amounts goes to the customer's balance with one more
//! delivery. A district with no new order (or whose oldest one another
//! terminal delivered first) is skipped and counted.

use super::input::DeliveryInput;
use super::{TxnNotes, TxnOutcome};
use crate::oltp::sql::{query_row, DbResult, Rows, SqlConn, Stmt, Value};

pub fn run(
    c: &mut dyn SqlConn,
    i: &DeliveryInput,
    rows: &mut Rows,
    notes: &mut TxnNotes,
) -> DbResult<TxnOutcome> {
    c.begin(true)?;
    let mut skipped = 0;
    for d in 1..=10u32 {
        let (w, dv) = (Value::from(i.w), Value::from(d));
        if !query_row(c, Stmt::DlvOldest, &[w.clone(), dv.clone()], rows)? {
            skipped += 1;
            continue;
        }
        let o = Value::Int(rows.int(0, 0));
        let key = [w.clone(), dv.clone(), o.clone()];
        if c.execute(Stmt::DlvDeleteNewOrder, &key)? == 0 {
            skipped += 1;
            continue;
        }
        query_row(c, Stmt::DlvOrderCustomer, &key, rows)?;
        let c_id = rows.int(0, 0);
        c.execute(
            Stmt::DlvOrderCarrier,
            &[i.carrier.into(), w.clone(), dv.clone(), o],
        )?;
        c.execute(Stmt::DlvLines, &key)?;
        query_row(c, Stmt::DlvSum, &key, rows)?;
        let sum = rows.num(0, 0);
        c.execute(
            Stmt::DlvCustomer,
            &[Value::Float(sum), w, dv, Value::Int(c_id)],
        )?;
    }
    c.commit()?;
    notes.delivery_skipped += skipped;
    Ok(TxnOutcome::Committed)
}
