//! New-Order (clause 2.4.2): the customer, warehouse and district (locked)
//! rows, the district's next order id taken, the order and its new-order
//! row inserted, the items read in one statement (a missing one is the
//! intended rollback), the stock rows read and locked in one statement in
//! (warehouse, item) order, each updated with the quantity rule (take the
//! quantity, add 91 when fewer than quantity + 10 would be left), and the
//! order lines inserted in one statement.

use super::input::NewOrderInput;
use super::TxnOutcome;
use crate::oltp::sql::{query_row, DbError, DbResult, Rows, SqlConn, Stmt, Value};

/// An item's price and its stock's dist info, per line.
struct Line {
    price: f64,
    dist_info: String,
    found: bool,
}

pub fn run(c: &mut dyn SqlConn, i: &NewOrderInput, rows: &mut Rows) -> DbResult<TxnOutcome> {
    let (w, d) = (Value::from(i.w), Value::from(i.d));
    let n = i.lines.len();
    c.begin(true)?;
    if !query_row(
        c,
        Stmt::NoCustomerWarehouse,
        &[w.clone(), d.clone(), i.c.into()],
        rows,
    )? {
        return Err(DbError::fatal(format!(
            "new-order: customer {}/{}/{} not found",
            i.w, i.d, i.c
        )));
    }
    if !query_row(c, Stmt::NoDistrict, &[w.clone(), d.clone()], rows)? {
        return Err(DbError::fatal(format!(
            "new-order: district {}/{} not found",
            i.w, i.d
        )));
    }
    let o_id = rows.int(0, 0);
    c.execute(
        Stmt::NoDistrictUpdate,
        &[Value::Int(o_id + 1), w.clone(), d.clone()],
    )?;
    c.execute(
        Stmt::NoOrderInsert,
        &[
            Value::Int(o_id),
            d.clone(),
            w.clone(),
            i.c.into(),
            Value::Int(n as i64),
            Value::Int(i.all_local() as i64),
        ],
    )?;
    c.execute(
        Stmt::NoNewOrderInsert,
        &[Value::Int(o_id), d.clone(), w.clone()],
    )?;
    let item_ids: Vec<Value> = i.lines.iter().map(|l| l.item.into()).collect();
    c.query(Stmt::NoItems(n as u8), &item_ids, rows)?;
    let mut lines: Vec<Line> = i
        .lines
        .iter()
        .map(|l| {
            let row = (0..rows.len()).find(|&r| rows.int(r, 0) == l.item as i64);
            Line {
                price: row.map_or(0.0, |r| rows.num(r, 1)),
                dist_info: String::new(),
                found: row.is_some(),
            }
        })
        .collect();
    if lines.iter().any(|l| !l.found) {
        if i.rollback {
            c.rollback()?;
            return Ok(TxnOutcome::RolledBack);
        }
        return Err(DbError::fatal("new-order: an item was not found"));
    }
    let keys: Vec<Value> = i
        .lines
        .iter()
        .flat_map(|l| [l.supply_w.into(), l.item.into()])
        .collect();
    c.query(Stmt::NoStock(n as u8), &keys, rows)?;
    let dist_col = 3 + i.d as usize;
    for (l, line) in i.lines.iter().zip(lines.iter_mut()) {
        let Some(r) = (0..rows.len())
            .find(|&r| rows.int(r, 0) == l.item as i64 && rows.int(r, 1) == l.supply_w as i64)
        else {
            return Err(DbError::fatal(format!(
                "new-order: no stock row for item {} of warehouse {}",
                l.item, l.supply_w
            )));
        };
        let q = rows.int(r, 2);
        let qty = l.quantity as i64;
        let new_q = if q >= qty + 10 { q - qty } else { q - qty + 91 };
        line.dist_info = rows.get(r, dist_col).as_text();
        c.execute(
            Stmt::NoStockUpdate,
            &[
                Value::Int(new_q),
                Value::Int(qty),
                Value::Int((l.supply_w != i.w) as i64),
                l.supply_w.into(),
                l.item.into(),
            ],
        )?;
    }
    let mut params = Vec::with_capacity(n * 9);
    for (k, (l, line)) in i.lines.iter().zip(lines).enumerate() {
        params.extend([
            Value::Int(o_id),
            d.clone(),
            w.clone(),
            Value::Int(k as i64 + 1),
            l.item.into(),
            l.supply_w.into(),
            l.quantity.into(),
            Value::Float(((l.quantity as f64 * line.price) * 100.0).round() / 100.0),
            Value::Text(line.dist_info),
        ]);
    }
    c.execute(Stmt::NoOrderLines(n as u8), &params)?;
    c.commit()?;
    Ok(TxnOutcome::Committed)
}
