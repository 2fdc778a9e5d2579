//! db_bench's chain steps that measure nothing but change the LSM's state
//! between benchmarks (`--benchmarks=fillrandom,waitforcompaction,readrandom`):
//! `waitforcompaction`, `flush` and `compact`, with db_bench 7.8.3's
//! semantics, so a phase can start on a quiet LSM in both tools the same way.

/// One chain step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainStep {
    /// Wait until no memtable flush is pending or running and no compaction
    /// is pending or running (db_bench checks every 10 s; iolab every 20 ms,
    /// so it resumes sooner from the same quiet state).
    WaitForCompaction,
    /// Flush the memtable to an SST file and wait for it (`DB::Flush`).
    Flush,
    /// Compact the whole key range (`CompactRange(nullptr, nullptr)` with
    /// bottommost compaction `kForceOptimized`, as db_bench's `compact`).
    Compact,
}

impl ChainStep {
    pub const ALL: [ChainStep; 3] = [
        ChainStep::WaitForCompaction,
        ChainStep::Flush,
        ChainStep::Compact,
    ];

    pub fn parse(s: &str) -> Option<ChainStep> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            ChainStep::WaitForCompaction => "waitforcompaction",
            ChainStep::Flush => "flush",
            ChainStep::Compact => "compact",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_db_bench_names_only() {
        for c in ChainStep::ALL {
            assert_eq!(ChainStep::parse(c.name()), Some(c));
        }
        assert_eq!(
            ChainStep::parse("waitforcompaction"),
            Some(ChainStep::WaitForCompaction)
        );
        assert_eq!(ChainStep::parse("compactall"), None);
        assert_eq!(ChainStep::parse("Flush"), None);
        assert_eq!(ChainStep::parse(""), None);
    }
}
