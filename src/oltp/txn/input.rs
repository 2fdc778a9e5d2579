//! The inputs of each transaction, generated from a terminal's random
//! source apart from their execution (clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1,
//! 2.8.1): New-Order's 5..15 lines with NURand items (distinct within an
//! order), 1% of orders ending on an unused item (100,001: the intended
//! rollback), 1% of lines supplied by another warehouse when W > 1;
//! Payment's 85% home / 15% remote customer and 60% selection by last
//! name; Order-Status's 60% by last name; Delivery's carrier; Stock-Level's
//! threshold 10..20 on the terminal's own district.

use crate::oltp::rand::TpccRng;

use super::TxnKind;

/// The item number no item has: New-Order's intended rollback.
pub const UNUSED_ITEM: u32 = 100_001;

/// How a customer is chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerSel {
    Id(u32),
    LastName(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderLineInput {
    pub item: u32,
    pub supply_w: u32,
    pub quantity: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewOrderInput {
    pub w: u32,
    pub d: u32,
    pub c: u32,
    /// Sorted by (supply warehouse, item): rows are locked in that order.
    pub lines: Vec<OrderLineInput>,
    /// One line names `UNUSED_ITEM`: the transaction must roll back.
    pub rollback: bool,
}

impl NewOrderInput {
    pub fn all_local(&self) -> bool {
        self.lines.iter().all(|l| l.supply_w == self.w)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PaymentInput {
    pub w: u32,
    pub d: u32,
    pub c_w: u32,
    pub c_d: u32,
    pub customer: CustomerSel,
    pub amount: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderStatusInput {
    pub w: u32,
    pub d: u32,
    pub customer: CustomerSel,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryInput {
    pub w: u32,
    pub carrier: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StockLevelInput {
    pub w: u32,
    pub d: u32,
    pub threshold: u32,
}

/// The inputs of one transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    NewOrder(NewOrderInput),
    Payment(PaymentInput),
    OrderStatus(OrderStatusInput),
    Delivery(DeliveryInput),
    StockLevel(StockLevelInput),
}

/// A terminal: its home warehouse and district (Stock-Level's), and the
/// number of warehouses.
#[derive(Debug, Clone, Copy)]
pub struct TpccTerminal {
    pub w: u32,
    pub d: u32,
    pub warehouses: u32,
}

impl TpccTerminal {
    /// Inputs for a transaction of `kind`.
    pub fn input(&self, kind: TxnKind, r: &mut TpccRng) -> Input {
        match kind {
            TxnKind::NewOrder => Input::NewOrder(self.new_order(r)),
            TxnKind::Payment => Input::Payment(self.payment(r)),
            TxnKind::OrderStatus => Input::OrderStatus(OrderStatusInput {
                w: self.w,
                d: r.uniform(1, 10),
                customer: customer(r),
            }),
            TxnKind::Delivery => Input::Delivery(DeliveryInput {
                w: self.w,
                carrier: r.uniform(1, 10),
            }),
            TxnKind::StockLevel => Input::StockLevel(StockLevelInput {
                w: self.w,
                d: self.d,
                threshold: r.uniform(10, 20),
            }),
        }
    }

    /// A warehouse other than the home one (W > 1).
    fn other_warehouse(&self, r: &mut TpccRng) -> u32 {
        let o = r.uniform(1, self.warehouses - 1);
        if o >= self.w {
            o + 1
        } else {
            o
        }
    }

    pub fn new_order(&self, r: &mut TpccRng) -> NewOrderInput {
        let d = r.uniform(1, 10);
        let c = r.customer_id();
        let n = r.uniform(5, 15) as usize;
        let rollback = r.uniform(1, 100) == 1;
        let mut lines: Vec<OrderLineInput> = Vec::with_capacity(n);
        for i in 0..n {
            let item = if rollback && i == n - 1 {
                UNUSED_ITEM
            } else {
                loop {
                    let it = r.item_id();
                    if !lines.iter().any(|l| l.item == it) {
                        break it;
                    }
                }
            };
            let supply_w = if self.warehouses > 1 && r.uniform(1, 100) == 1 {
                self.other_warehouse(r)
            } else {
                self.w
            };
            lines.push(OrderLineInput {
                item,
                supply_w,
                quantity: r.uniform(1, 10),
            });
        }
        lines.sort_by_key(|l| (l.supply_w, l.item));
        NewOrderInput {
            w: self.w,
            d,
            c,
            lines,
            rollback,
        }
    }

    pub fn payment(&self, r: &mut TpccRng) -> PaymentInput {
        let d = r.uniform(1, 10);
        let home = self.warehouses == 1 || r.uniform(1, 100) <= 85;
        let (c_w, c_d) = if home {
            (self.w, d)
        } else {
            (self.other_warehouse(r), r.uniform(1, 10))
        };
        PaymentInput {
            w: self.w,
            d,
            c_w,
            c_d,
            customer: customer(r),
            amount: r.money(100, 500_000),
        }
    }
}

/// 60% by last name (NURand(255) with C_RUN), 40% by id (NURand(1023)).
fn customer(r: &mut TpccRng) -> CustomerSel {
    if r.uniform(1, 100) <= 60 {
        CustomerSel::LastName(r.last_name_run())
    } else {
        CustomerSel::Id(r.customer_id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oltp::rand::NuConstants;

    fn rng() -> TpccRng {
        TpccRng::new(11, NuConstants::for_run(NuConstants::for_load(11), 11))
    }

    #[test]
    fn new_order_lines_and_rollbacks() {
        let mut r = rng();
        let t1 = TpccTerminal {
            w: 1,
            d: 1,
            warehouses: 1,
        };
        let mut rollbacks = 0;
        let draws = 20_000;
        for _ in 0..draws {
            let i = t1.new_order(&mut r);
            assert!((5..=15).contains(&i.lines.len()));
            assert!(
                i.lines.iter().all(|l| l.supply_w == 1),
                "W = 1: no remote lines"
            );
            assert!(i.lines.iter().all(|l| (1..=10).contains(&l.quantity)));
            let unused = i.lines.iter().filter(|l| l.item == UNUSED_ITEM).count();
            assert_eq!(unused, i.rollback as usize);
            rollbacks += i.rollback as u32;
        }
        // 1% of 20,000 = 200; binomial sd ~14.
        assert!((140..=260).contains(&rollbacks), "{rollbacks}");
    }

    #[test]
    fn remote_lines_only_with_several_warehouses() {
        let mut r = rng();
        let t = TpccTerminal {
            w: 3,
            d: 1,
            warehouses: 5,
        };
        let (mut lines, mut remote) = (0u32, 0u32);
        for _ in 0..5_000 {
            let i = t.new_order(&mut r);
            for l in &i.lines {
                lines += 1;
                if l.supply_w != 3 {
                    remote += 1;
                    assert!((1..=5).contains(&l.supply_w));
                }
            }
            assert_eq!(i.all_local(), i.lines.iter().all(|l| l.supply_w == 3));
        }
        let pct = remote as f64 * 100.0 / lines as f64;
        assert!((0.6..1.4).contains(&pct), "{pct}% remote lines");
    }

    #[test]
    fn payment_by_last_name_share() {
        let mut r = rng();
        let t = TpccTerminal {
            w: 1,
            d: 1,
            warehouses: 4,
        };
        let (mut by_name, mut remote) = (0, 0);
        let n = 20_000;
        for _ in 0..n {
            let p = t.payment(&mut r);
            by_name += matches!(p.customer, CustomerSel::LastName(_)) as u32;
            remote += (p.c_w != p.w) as u32;
            assert!((1.0..=5000.0).contains(&p.amount));
        }
        let name_pct = by_name as f64 * 100.0 / n as f64;
        let remote_pct = remote as f64 * 100.0 / n as f64;
        assert!((58.0..62.0).contains(&name_pct), "{name_pct}");
        assert!((13.5..16.5).contains(&remote_pct), "{remote_pct}");
    }
}
