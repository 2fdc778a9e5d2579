//! When an oltp point may start: at once on this machine (`Now`), or at a
//! fleet's common instant on a host of `oltp --hosts`
//! (`fleet::agent_oltp`). The run asks its gate after the load and before
//! each point, off the measured path; the measured point goes to the gate
//! once saved.

use anyhow::Result;

use crate::results::Point;

/// Where an oltp run waits before each point, and where its points go.
pub trait PointGate: Sync {
    /// The database is loaded and point `index` (`users` virtual users,
    /// counted from 0) is next: return at the instant it starts; an error
    /// ends the run.
    fn ready(&self, _index: usize, _users: usize) -> Result<()> {
        Ok(())
    }
    /// Point `index` as saved.
    fn done(&self, _index: usize, _point: &Point) {}
}

/// Every point starts as soon as the one before it ended.
pub struct Now;
impl PointGate for Now {}
