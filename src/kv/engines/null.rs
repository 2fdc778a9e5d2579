//! The null engine: every operation succeeds at once and nothing is stored.
//! Measures the driver's own per-operation overhead.

use crate::kv::engine::{KvEngine, KvSession};
use anyhow::Result;

pub struct Null;

struct NullSession;

impl KvSession for NullSession {
    fn insert(&mut self, _key: &[u8], _value: &[u8]) -> Result<()> {
        Ok(())
    }
    fn read(&mut self, _key: &[u8], _out: &mut Vec<u8>) -> Result<bool> {
        Ok(false)
    }
    fn scan(&mut self, _s: &[u8], _c: usize, _v: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        Ok(0)
    }
    fn delete(&mut self, _key: &[u8]) -> Result<bool> {
        Ok(true)
    }
    fn next_in_order(&mut self, _visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        Ok(false)
    }
}

impl KvEngine for Null {
    fn name(&self) -> &'static str {
        "null"
    }
    fn version(&self) -> String {
        format!("iolab {}", env!("CARGO_PKG_VERSION"))
    }
    fn settings(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(NullSession))
    }
    fn space_reserve(&self) -> Option<u64> {
        None
    }
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    fn stores_data(&self) -> bool {
        false
    }
}
