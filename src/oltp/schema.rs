//! The nine TPC-C tables (clause 1.3) with the spec's columns and primary
//! keys, and the two secondary indexes the transactions need: customer by
//! (w, d, last, first) for the by-name lookups and orders by (w, d, c, o_id)
//! for Order-Status, per dialect. Money and rates are DECIMAL on the
//! servers; SQLite stores them as REAL (binary floating point: sums of
//! many payments may differ from exact decimal arithmetic in the last
//! cent, which the consistency checks allow for). Timestamps are TIMESTAMP
//! (PostgreSQL), DATETIME (MariaDB) and ISO text (SQLite's CURRENT_TIMESTAMP).

use super::sql::Dialect;

/// The tables, in load order.
pub const TABLES: [&str; 9] = [
    "item",
    "warehouse",
    "stock",
    "district",
    "customer",
    "history",
    "orders",
    "new_order",
    "order_line",
];

/// Column type names of a dialect.
struct Types {
    int: &'static str,
    time: &'static str,
    suffix: &'static str,
}

fn types(d: Dialect) -> Types {
    match d {
        Dialect::Sqlite => Types {
            int: "INTEGER",
            time: "TIMESTAMP",
            suffix: "",
        },
        Dialect::Postgres => Types {
            int: "INTEGER",
            time: "TIMESTAMP",
            suffix: "",
        },
        Dialect::Mariadb => Types {
            int: "INT",
            time: "DATETIME",
            suffix: " ENGINE=InnoDB",
        },
    }
}

/// DECIMAL(p, s) on servers, REAL on SQLite.
fn dec(d: Dialect, p: u8, s: u8) -> String {
    match d {
        Dialect::Sqlite => "REAL".into(),
        _ => format!("DECIMAL({p},{s})"),
    }
}

/// `CREATE TABLE` statements of the nine tables.
pub fn create_tables(d: Dialect) -> Vec<String> {
    let t = types(d);
    let (i, ts) = (t.int, t.time);
    let addr = |p: &str| {
        format!(
            "{p}_street_1 VARCHAR(20), {p}_street_2 VARCHAR(20), {p}_city VARCHAR(20), {p}_state VARCHAR(2), {p}_zip VARCHAR(9)"
        )
    };
    let dists: String = (1..=10)
        .map(|n| format!("s_dist_{n:02} VARCHAR(24), "))
        .collect();
    let tables = [
        format!("CREATE TABLE item (i_id {i} NOT NULL, i_im_id {i}, i_name VARCHAR(24), i_price {}, i_data VARCHAR(50), PRIMARY KEY (i_id))", dec(d, 5, 2)),
        format!("CREATE TABLE warehouse (w_id {i} NOT NULL, w_name VARCHAR(10), {}, w_tax {}, w_ytd {}, PRIMARY KEY (w_id))", addr("w"), dec(d, 4, 4), dec(d, 12, 2)),
        format!("CREATE TABLE stock (s_i_id {i} NOT NULL, s_w_id {i} NOT NULL, s_quantity {i}, {dists}s_ytd {i}, s_order_cnt {i}, s_remote_cnt {i}, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))"),
        format!("CREATE TABLE district (d_id {i} NOT NULL, d_w_id {i} NOT NULL, d_name VARCHAR(10), {}, d_tax {}, d_ytd {}, d_next_o_id {i}, PRIMARY KEY (d_w_id, d_id))", addr("d"), dec(d, 4, 4), dec(d, 12, 2)),
        format!("CREATE TABLE customer (c_id {i} NOT NULL, c_d_id {i} NOT NULL, c_w_id {i} NOT NULL, c_first VARCHAR(16), c_middle VARCHAR(2), c_last VARCHAR(16), {}, \
                 c_phone VARCHAR(16), c_since {ts}, c_credit VARCHAR(2), c_credit_lim {m}, c_discount {}, c_balance {m}, c_ytd_payment {m}, c_payment_cnt {i}, \
                 c_delivery_cnt {i}, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id))", addr("c"), dec(d, 4, 4), m = dec(d, 12, 2)),
        format!("CREATE TABLE history (h_c_id {i}, h_c_d_id {i}, h_c_w_id {i}, h_d_id {i}, h_w_id {i}, h_date {ts}, h_amount {}, h_data VARCHAR(24))", dec(d, 6, 2)),
        format!("CREATE TABLE orders (o_id {i} NOT NULL, o_d_id {i} NOT NULL, o_w_id {i} NOT NULL, o_c_id {i}, o_entry_d {ts}, o_carrier_id {i} NULL, o_ol_cnt {i}, \
                 o_all_local {i}, PRIMARY KEY (o_w_id, o_d_id, o_id))"),
        format!("CREATE TABLE new_order (no_o_id {i} NOT NULL, no_d_id {i} NOT NULL, no_w_id {i} NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id))"),
        format!("CREATE TABLE order_line (ol_o_id {i} NOT NULL, ol_d_id {i} NOT NULL, ol_w_id {i} NOT NULL, ol_number {i} NOT NULL, ol_i_id {i}, ol_supply_w_id {i}, \
                 ol_delivery_d {ts} NULL, ol_quantity {i}, ol_amount {}, ol_dist_info VARCHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))", dec(d, 6, 2)),
    ];
    tables
        .into_iter()
        .map(|s| format!("{s}{}", t.suffix))
        .collect()
}

/// The secondary indexes, made after the load (faster than maintaining
/// them row by row).
pub fn create_indexes() -> Vec<String> {
    vec![
        "CREATE INDEX idx_customer_name ON customer (c_w_id, c_d_id, c_last, c_first)".into(),
        "CREATE INDEX idx_orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)".into(),
    ]
}

/// Drop the tables (a fresh load on a server database).
pub fn drop_tables() -> Vec<String> {
    TABLES
        .iter()
        .map(|t| format!("DROP TABLE IF EXISTS {t}"))
        .collect()
}

/// Rows each table holds right after loading `w` warehouses; order_line
/// is `None`: 5..15 lines per order, checked against SUM(o_ol_cnt).
pub fn expected_rows(w: u64) -> [(&'static str, Option<u64>); 9] {
    [
        ("item", Some(100_000)),
        ("warehouse", Some(w)),
        ("stock", Some(100_000 * w)),
        ("district", Some(10 * w)),
        ("customer", Some(30_000 * w)),
        ("history", Some(30_000 * w)),
        ("orders", Some(30_000 * w)),
        ("new_order", Some(9_000 * w)),
        ("order_line", None),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_per_dialect() {
        let lite = create_tables(Dialect::Sqlite).join("\n");
        assert!(lite.contains("c_balance REAL") && !lite.contains("DECIMAL"));
        let pg = create_tables(Dialect::Postgres).join("\n");
        assert!(pg.contains("c_balance DECIMAL(12,2)"));
        let my = create_tables(Dialect::Mariadb);
        assert!(my.iter().all(|s| s.ends_with("ENGINE=InnoDB")));
        assert_eq!(my.len(), TABLES.len());
        for (t, ddl) in TABLES.iter().zip(create_tables(Dialect::Sqlite)) {
            assert!(ddl.starts_with(&format!("CREATE TABLE {t} (")), "{ddl}");
        }
    }
}
