//! The types of the results file's `analysis` section, owned by
//! `results::analysis` (the schema imports no computation); kept under
//! this name for the code that computes and reads them.

pub use crate::results::analysis::*;
