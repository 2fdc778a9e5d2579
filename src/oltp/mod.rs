//! `iolab oltp`: a TPC-C-derived OLTP workload (not audited TPC-C; it
//! reports NOPM, new orders per minute). The spec's random rules (`rand`),
//! tables (`schema`), a connection interface with SQLite, PostgreSQL and
//! MariaDB behind it (`sql`), the load (`load`), the five transactions
//! (`txn`), the terminal driver (`driver`), the consistency conditions
//! (`consistency`), the plan (`plan`), the results point (`point`) and the
//! run (`run`).

pub mod consistency;
pub mod driver;
pub mod gate;
pub mod load;
pub mod namespace;
pub mod plan;
pub mod point;
pub mod probe;
pub mod rand;
pub mod run;
pub mod schema;
pub mod settings;
pub mod sql;
pub mod txn;
