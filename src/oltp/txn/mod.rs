//! The five transactions: their kinds and mix (a shuffled deck of 100
//! cards: 45 New-Order, 43 Payment, 4 each of the others, clause 5.2.4.2),
//! their inputs (generated apart from execution in `input`, so they can be
//! tested without a database), and their execution against a `Conn` (one
//! file each). A transaction returns `Committed` or, for New-Order's 1%
//! with an unused item, `RolledBack`; a database error leaves the rollback
//! and the retry to the driver.

pub mod delivery;
pub mod input;
pub mod new_order;
pub mod order_status;
pub mod payment;
pub mod stock_level;

use rand::RngExt;

use super::rand::TpccRng;
use super::sql::{DbResult, Rows, SqlConn};
pub use input::{CustomerSel, Input};

/// A transaction type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TxnKind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl TxnKind {
    pub const ALL: [TxnKind; 5] = [
        TxnKind::NewOrder,
        TxnKind::Payment,
        TxnKind::OrderStatus,
        TxnKind::Delivery,
        TxnKind::StockLevel,
    ];

    /// Its key in results (`ops`, `extra.oltp`).
    pub fn name(self) -> &'static str {
        match self {
            TxnKind::NewOrder => "new_order",
            TxnKind::Payment => "payment",
            TxnKind::OrderStatus => "order_status",
            TxnKind::Delivery => "delivery",
            TxnKind::StockLevel => "stock_level",
        }
    }

    pub fn idx(self) -> usize {
        self as usize
    }

    /// Cards of this kind in a deck of 100.
    pub fn cards(self) -> usize {
        match self {
            TxnKind::NewOrder => 45,
            TxnKind::Payment => 43,
            _ => 4,
        }
    }

    /// Keying time in seconds (clause 5.2.5.7).
    pub fn keying_s(self) -> f64 {
        match self {
            TxnKind::NewOrder => 18.0,
            TxnKind::Payment => 3.0,
            _ => 2.0,
        }
    }

    /// Mean think time in seconds (clause 5.2.5.7).
    pub fn think_mean_s(self) -> f64 {
        match self {
            TxnKind::NewOrder | TxnKind::Payment => 12.0,
            TxnKind::OrderStatus => 10.0,
            _ => 5.0,
        }
    }

    /// Whether it writes (SQLite: `BEGIN IMMEDIATE`).
    pub fn writes(self) -> bool {
        matches!(
            self,
            TxnKind::NewOrder | TxnKind::Payment | TxnKind::Delivery
        )
    }
}

/// The shuffled deck the transaction types are drawn from; reshuffled
/// when used up.
pub struct Deck {
    cards: Vec<TxnKind>,
    next: usize,
}

impl Default for Deck {
    fn default() -> Self {
        Self::new()
    }
}

impl Deck {
    pub fn new() -> Deck {
        let cards = TxnKind::ALL
            .iter()
            .flat_map(|k| std::iter::repeat_n(*k, k.cards()))
            .collect::<Vec<_>>();
        let next = cards.len();
        Deck { cards, next }
    }

    pub fn draw(&mut self, r: &mut TpccRng) -> TxnKind {
        if self.next >= self.cards.len() {
            for i in (1..self.cards.len()).rev() {
                let j = r.r.random_range(0..=i);
                self.cards.swap(i, j);
            }
            self.next = 0;
        }
        self.next += 1;
        self.cards[self.next - 1]
    }
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOutcome {
    Committed,
    /// New-Order's intended rollback (an unused item number).
    RolledBack,
}

/// What Delivery found: districts with no new order to deliver.
#[derive(Debug, Default, Clone, Copy)]
pub struct TxnNotes {
    pub delivery_skipped: u32,
}

/// Run one transaction with its inputs; `rows` is a reusable buffer.
pub fn execute(
    c: &mut dyn SqlConn,
    input: &Input,
    rows: &mut Rows,
    notes: &mut TxnNotes,
) -> DbResult<TxnOutcome> {
    match input {
        Input::NewOrder(i) => new_order::run(c, i, rows),
        Input::Payment(i) => payment::run(c, i, rows),
        Input::OrderStatus(i) => order_status::run(c, i, rows),
        Input::Delivery(i) => delivery::run(c, i, rows, notes),
        Input::StockLevel(i) => stock_level::run(c, i, rows),
    }
}

/// The customer a by-name lookup picks: position ceil(n/2) of those with
/// the name ordered by C_FIRST (clause 2.5.2.2); None when there are none.
pub fn middle_customer(rows: &Rows) -> Option<i64> {
    let n = rows.len();
    (n > 0).then(|| rows.int(n.div_ceil(2) - 1, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oltp::rand::NuConstants;

    #[test]
    fn deck_has_the_mix() {
        let mut d = Deck::new();
        let mut r = TpccRng::new(3, NuConstants::for_load(3));
        for _round in 0..3 {
            let mut counts = [0usize; 5];
            for _ in 0..100 {
                counts[d.draw(&mut r).idx()] += 1;
            }
            assert_eq!(counts, [45, 43, 4, 4, 4]);
        }
    }

    #[test]
    fn middle_of_the_names() {
        use crate::oltp::sql::Value;
        let rows = |n: i64| Rows {
            ncols: 1,
            vals: (1..=n).map(Value::Int).collect(),
        };
        assert_eq!(middle_customer(&rows(0)), None);
        assert_eq!(middle_customer(&rows(1)), Some(1));
        assert_eq!(middle_customer(&rows(4)), Some(2));
        assert_eq!(middle_customer(&rows(5)), Some(3));
    }
}
