//! aio engine: placeholder until the real engine lands.

use std::io;

use super::{Completion, Engine, EngineSetup, IoRequest};

pub struct AioEngine;

impl AioEngine {
    pub fn new(_setup: &EngineSetup) -> io::Result<AioEngine> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "engine not built yet",
        ))
    }
}

impl Engine for AioEngine {
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
