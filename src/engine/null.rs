//! null: every request completes at once without touching anything (fio's
//! `null`). Measures iolab's own per-request overhead.

use std::io;

use super::{Completion, Engine, IoRequest};

pub struct NullEngine {
    staged: Vec<Completion>,
    ready: Vec<Completion>,
}

impl NullEngine {
    pub fn new(depth: u32) -> Self {
        NullEngine {
            staged: Vec::with_capacity(depth as usize),
            ready: Vec::with_capacity(depth as usize),
        }
    }
}

impl Engine for NullEngine {
    #[inline]
    fn queue(&mut self, req: IoRequest) -> io::Result<()> {
        self.staged.push(Completion {
            slot: req.slot,
            result: req.len as i64,
        });
        Ok(())
    }

    #[inline]
    fn submit(&mut self) -> io::Result<usize> {
        let n = self.staged.len();
        self.ready.append(&mut self.staged);
        Ok(n)
    }

    #[inline]
    fn reap(&mut self, _min: usize, out: &mut Vec<Completion>) -> io::Result<usize> {
        let n = self.ready.len();
        out.append(&mut self.ready);
        Ok(n)
    }

    fn fsync(&mut self) -> io::Result<()> {
        Ok(())
    }
}
