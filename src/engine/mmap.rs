//! mmap engine: placeholder until the real engine lands.

use std::io;

use super::{Completion, Engine, EngineSetup, IoRequest};

pub struct MmapEngine;

impl MmapEngine {
    pub fn new(_setup: &EngineSetup) -> io::Result<MmapEngine> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "engine not built yet",
        ))
    }
}

impl Engine for MmapEngine {
    fn queue(&mut self, _req: IoRequest) -> io::Result<()> {
        unreachable!()
    }
    fn submit(&mut self) -> io::Result<usize> {
        unreachable!()
    }
    fn reap(&mut self, _min: usize, _out: &mut Vec<Completion>) -> io::Result<usize> {
        unreachable!()
    }
    fn fsync(&mut self) -> io::Result<()> {
        unreachable!()
    }
}
