//! Runners: execute a job on a target with N workers and merge what they measured.

pub mod act_table;
pub mod buffers;
pub mod job;
pub mod large_blocks;
pub mod openloop;
pub mod pattern;
pub mod point;
pub mod recorder;
pub mod steady;
pub mod together;
pub mod wake;
pub mod worker;

#[cfg(test)]
pub(crate) mod test_support {
    //! What the loop tests on the fake device share: a loop spec, a 4 KiB
    //! random-read generator and a buffer pool.

    use super::buffers::BufferPool;
    use super::pattern::{PatternSpec, RequestGen};
    use super::worker::LoopSpec;

    /// A closed-loop spec at `depth` measured from `t0`, stopping at
    /// `deadline` or after `max_ops`.
    pub fn loop_spec(depth: u32, t0: u64, deadline: u64, max_ops: u64) -> LoopSpec {
        LoopSpec {
            depth,
            batch: false,
            sync_engine: false,
            measure_start: t0,
            deadline,
            max_ops,
            max_bytes: u64::MAX,
            fsync_every: 0,
            submit_batch: 1,
            verify_bs: None,
            region_start: 0,
            region_len: 1 << 30,
            think: None,
            continue_on_error: false,
        }
    }

    /// 4 KiB random reads over 1 GiB, and a pool of `depth` buffers.
    pub fn reads(depth: u32) -> (RequestGen, BufferPool) {
        let gen = RequestGen::new(&PatternSpec {
            read_pct: 100,
            random: true,
            bs: vec![(4096, 1)],
            align: 4096,
            region_start: 0,
            region_len: 1 << 30,
            seed: 1,
            cover: false,
        })
        .unwrap();
        (gen, BufferPool::new(depth as usize, 4096, 1).unwrap())
    }
}
