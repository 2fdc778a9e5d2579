//! Payment (clause 2.5.2): the warehouse's and the district's year-to-date
//! amounts raised, the customer found by id or by last name (the one at
//! position ceil(n/2) ordered by C_FIRST) and locked, its balance and
//! payment counters updated, a bad-credit ("BC") customer's C_DATA
//! prefixed with the payment's ids and amount and cut to 500 characters,
//! and a history row inserted.

use super::input::{CustomerSel, PaymentInput};
use super::{middle_customer, TxnOutcome};
use crate::oltp::sql::{query_row, DbError, DbResult, Rows, SqlConn, Stmt, Value};

/// The customer id of a selection (by name: the middle one).
pub fn customer_id(
    c: &mut dyn SqlConn,
    w: u32,
    d: u32,
    sel: &CustomerSel,
    rows: &mut Rows,
) -> DbResult<i64> {
    match sel {
        CustomerSel::Id(id) => Ok(*id as i64),
        CustomerSel::LastName(last) => {
            c.query(
                Stmt::CustomersByLast,
                &[w.into(), d.into(), last.as_str().into()],
                rows,
            )?;
            middle_customer(rows).ok_or_else(|| {
                DbError::fatal(format!("no customer named {last} in district {w}/{d}"))
            })
        }
    }
}

/// C_DATA of a bad-credit customer after a payment.
pub fn bad_credit_data(i: &PaymentInput, c_id: i64, old: &str) -> String {
    let mut s = format!(
        "{c_id} {} {} {} {} {:.2} | {old}",
        i.c_d, i.c_w, i.d, i.w, i.amount
    );
    if let Some((cut, _)) = s.char_indices().nth(500) {
        s.truncate(cut);
    }
    s
}

pub fn run(c: &mut dyn SqlConn, i: &PaymentInput, rows: &mut Rows) -> DbResult<TxnOutcome> {
    let amount = Value::Float(i.amount);
    c.begin(true)?;
    c.execute(Stmt::PayWarehouseUpdate, &[amount.clone(), i.w.into()])?;
    query_row(c, Stmt::PayWarehouse, &[i.w.into()], rows)?;
    let w_name = rows.get(0, 0).as_text();
    c.execute(
        Stmt::PayDistrictUpdate,
        &[amount.clone(), i.w.into(), i.d.into()],
    )?;
    query_row(c, Stmt::PayDistrict, &[i.w.into(), i.d.into()], rows)?;
    let d_name = rows.get(0, 0).as_text();
    let c_id = customer_id(c, i.c_w, i.c_d, &i.customer, rows)?;
    let key = [i.c_w.into(), i.c_d.into(), Value::Int(c_id)];
    if !query_row(c, Stmt::PayCustomer, &key, rows)? {
        return Err(DbError::fatal(format!(
            "payment: customer {}/{}/{c_id} not found",
            i.c_w, i.c_d
        )));
    }
    if rows.get(0, 10).as_text() == "BC" {
        query_row(c, Stmt::PayCustomerData, &key, rows)?;
        let data = bad_credit_data(i, c_id, &rows.get(0, 0).as_text());
        c.execute(
            Stmt::PayCustomerUpdateData,
            &[
                amount.clone(),
                amount.clone(),
                data.into(),
                key[0].clone(),
                key[1].clone(),
                key[2].clone(),
            ],
        )?;
    } else {
        let mut p = vec![amount.clone(), amount.clone()];
        p.extend(key.iter().cloned());
        c.execute(Stmt::PayCustomerUpdate, &p)?;
    }
    c.execute(
        Stmt::PayHistory,
        &[
            Value::Int(c_id),
            i.c_d.into(),
            i.c_w.into(),
            i.d.into(),
            i.w.into(),
            amount,
            format!("{w_name}    {d_name}").into(),
        ],
    )?;
    c.commit()?;
    Ok(TxnOutcome::Committed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_credit_data_is_prefixed_and_cut() {
        let i = PaymentInput {
            w: 1,
            d: 2,
            c_w: 3,
            c_d: 4,
            customer: CustomerSel::Id(5),
            amount: 12.5,
        };
        let s = bad_credit_data(&i, 5, &"x".repeat(500));
        assert!(s.starts_with("5 4 3 2 1 12.50 | xxx"), "{s}");
        assert_eq!(s.len(), 500);
    }
}
