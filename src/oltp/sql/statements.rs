//! Every statement the five transactions run, named by `Stmt`, with its SQL
//! written once with `?` placeholders and rewritten per dialect: `$n` for
//! PostgreSQL, no `FOR UPDATE` on SQLite (its write transactions hold the
//! database's write lock from `BEGIN IMMEDIATE`). New-Order reads its items
//! and stock rows in one statement each and inserts its order lines in one,
//! as go-tpc does, so there is one statement per line count (5..15).

use super::Dialect;

/// A statement of the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stmt {
    NoCustomerWarehouse,
    NoDistrict,
    NoDistrictUpdate,
    NoOrderInsert,
    NoNewOrderInsert,
    /// Items of an order of this many lines.
    NoItems(u8),
    /// Stock rows (locked) of an order of this many lines.
    NoStock(u8),
    NoStockUpdate,
    /// Order lines of an order of this many lines, in one INSERT.
    NoOrderLines(u8),
    PayWarehouseUpdate,
    PayWarehouse,
    PayDistrictUpdate,
    PayDistrict,
    CustomersByLast,
    PayCustomer,
    PayCustomerUpdate,
    PayCustomerData,
    PayCustomerUpdateData,
    PayHistory,
    OsCustomer,
    OsLastOrder,
    OsLines,
    DlvOldest,
    DlvDeleteNewOrder,
    DlvOrderCustomer,
    DlvOrderCarrier,
    DlvLines,
    DlvSum,
    DlvCustomer,
    SlNextOrder,
    SlCount,
}

/// The statement's SQL with `?` placeholders (the dialect-neutral text).
fn neutral(s: Stmt) -> String {
    use Stmt::*;
    let fixed = match s {
        NoCustomerWarehouse => "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?",
        NoDistrict => "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ? FOR UPDATE",
        NoDistrictUpdate => "UPDATE district SET d_next_o_id = ? WHERE d_w_id = ? AND d_id = ?",
        NoOrderInsert => "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)",
        NoNewOrderInsert => "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)",
        NoItems(n) => return format!(
            "SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({})",
            vec!["?"; n as usize].join(", ")
        ),
        NoStock(n) => return format!(
            "SELECT s_i_id, s_w_id, s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, \
             s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE {} ORDER BY s_w_id, s_i_id FOR UPDATE",
            vec!["(s_w_id = ? AND s_i_id = ?)"; n as usize].join(" OR ")
        ),
        NoStockUpdate => "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ? WHERE s_w_id = ? AND s_i_id = ?",
        NoOrderLines(n) => return format!(
            "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES {}",
            vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?)"; n as usize].join(", ")
        ),
        PayWarehouseUpdate => "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?",
        PayWarehouse => "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?",
        PayDistrictUpdate => "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?",
        PayDistrict => "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ? AND d_id = ?",
        CustomersByLast => "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first",
        PayCustomer => "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, \
                        c_credit, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE",
        PayCustomerUpdate => "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1 \
                              WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
        PayCustomerData => "SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
        PayCustomerUpdateData => "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1, \
                                  c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
        PayHistory => "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)",
        OsCustomer => "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
        OsLastOrder => "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1",
        OsLines => "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
        DlvOldest => "SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id LIMIT 1 FOR UPDATE",
        DlvDeleteNewOrder => "DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?",
        DlvOrderCustomer => "SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
        DlvOrderCarrier => "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
        DlvLines => "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
        DlvSum => "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
        DlvCustomer => "UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
        SlNextOrder => "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?",
        SlCount => "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? \
                    AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?",
    };
    fixed.to_string()
}

/// The statement's SQL in `dialect`.
pub fn text(s: Stmt, dialect: Dialect) -> String {
    let sql = neutral(s);
    match dialect {
        Dialect::Sqlite => sql.replace(" FOR UPDATE", ""),
        Dialect::Mariadb => sql,
        Dialect::Postgres => numbered_placeholders(&sql),
    }
}

/// `?` -> `$1`, `$2` ... (outside string literals).
pub fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let (mut n, mut in_str) = (0, false);
    for ch in sql.chars() {
        match ch {
            '\'' => {
                in_str = !in_str;
                out.push(ch);
            }
            '?' if !in_str => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        let pg = text(Stmt::NoDistrict, Dialect::Postgres);
        assert!(pg.contains("d_w_id = $1 AND d_id = $2 FOR UPDATE"), "{pg}");
        let lite = text(Stmt::NoDistrict, Dialect::Sqlite);
        assert!(!lite.contains("FOR UPDATE") && lite.contains("d_id = ?"));
        assert_eq!(
            numbered_placeholders("a = '?' AND b = ?"),
            "a = '?' AND b = $1"
        );
        let items = text(Stmt::NoItems(5), Dialect::Postgres);
        assert!(items.ends_with("($1, $2, $3, $4, $5)"), "{items}");
        let lines = text(Stmt::NoOrderLines(15), Dialect::Mariadb);
        assert_eq!(lines.matches('?').count(), 15 * 9);
    }
}
