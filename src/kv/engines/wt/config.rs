//! WiredTiger's configuration strings from iolab's engine options: the
//! connection's (cache, journal, sync, checkpoints, sessions, eviction
//! threads) and the table's (btree or LSM, raw byte keys and values).

use crate::kv::engine::{EngineOptions, WtTable};

/// The table every session opens.
pub const URI: &str = "table:iolab";

/// Sessions the connection allows: one per worker (readers sweeps go up to
/// 1024 threads), the engine's own, and WiredTiger's internal threads.
pub const SESSION_MAX: u32 = 1100;

/// `wiredtiger_open`'s configuration.
pub fn connection(o: &EngineOptions) -> String {
    let mut c = format!(
        "create,cache_size={},session_max={SESSION_MAX},log=(enabled={}),transaction_sync=(enabled={}",
        o.cache_size, o.wal, o.sync
    );
    if o.sync {
        c += ",method=fsync";
    }
    c += ")";
    if o.checkpoint_interval_s > 0 {
        c += &format!(",checkpoint=(wait={})", o.checkpoint_interval_s);
    }
    if let Some(n) = o.wt_eviction_threads {
        c += &format!(",eviction=(threads_min={n},threads_max={n})");
    }
    c
}

/// `WT_SESSION::create`'s configuration for the table.
pub fn table(o: &EngineOptions) -> String {
    let mut c = "key_format=u,value_format=u".to_string();
    if o.wt_table == WtTable::Lsm {
        c += ",type=lsm";
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_configuration_strings() {
        let o = EngineOptions::default();
        assert_eq!(
            connection(&o),
            "create,cache_size=67108864,session_max=1100,log=(enabled=true),\
             transaction_sync=(enabled=false),checkpoint=(wait=60),\
             eviction=(threads_min=4,threads_max=4)"
        );
        assert_eq!(table(&o), "key_format=u,value_format=u");
        let o = EngineOptions {
            sync: true,
            wal: true,
            checkpoint_interval_s: 0,
            wt_table: WtTable::Lsm,
            wt_eviction_threads: None,
            ..EngineOptions::default()
        };
        assert_eq!(
            connection(&o),
            "create,cache_size=67108864,session_max=1100,log=(enabled=true),\
             transaction_sync=(enabled=true,method=fsync)"
        );
        assert_eq!(table(&o), "key_format=u,value_format=u,type=lsm");
    }
}
