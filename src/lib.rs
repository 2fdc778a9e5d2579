//! iolab: a storage performance lab in one command.
//!
//! The library holds every part of the tool; `main.rs` only parses the command
//! line and dispatches to `commands`. See docs/ARCHITECTURE.md for the map.

pub mod analysis;
pub mod campaign;
pub mod cli;
pub mod commands;
pub mod dut;
pub mod engine;
pub mod error;
pub mod figures;
pub mod fleet;
pub mod input;
pub mod interrupt;
pub mod kv;
pub mod lock;
pub mod measure;
pub mod native;
pub mod oltp;
pub mod plan;
pub mod proto;
pub mod remote;
pub mod report;
pub mod results;
pub mod runner;
pub mod servers;
pub mod session;
pub mod target;
pub mod testbed;
pub mod trace;

/// The signal handling's hooks (`interrupt::Hooks`: testbed's teardown and
/// the results files' interrupted mark), given once before anything runs;
/// `install`: also install the Ctrl-C handler. `interrupt` stays a leaf
/// that names neither module.
pub fn wire_signals(install: bool) {
    interrupt::set_hooks(interrupt::Hooks {
        teardown: testbed::teardown_all,
        mark_interrupted: results::written::mark_interrupted,
    });
    if install {
        interrupt::install();
    }
}
