//! Batched block access (Bingmann): per (B, k) per-block time and bandwidth,
//! the batching speedup relative to k = 1, the effective parallelism (the
//! largest speedup) with the smallest k reaching 90% of it, and for each k
//! the smallest B reaching 90% of the largest bandwidth.

use std::collections::BTreeMap;

use super::types::{BandwidthAtK, BatchingAtBs, BatchingGroup, Parallelism, SpeedupAtK};

use super::{key_text, key_without, single_bs};
use crate::results::Point;

/// Share of the maximum that counts as "reaching" it.
pub const REACH: f64 = 0.9;

#[derive(Debug, Clone, Copy)]
struct Cell {
    per_block_ns: f64,
    mib_s: f64,
}

type Grid = BTreeMap<u64, BTreeMap<u32, Cell>>;

/// Smallest key whose value reaches `REACH` of the maximum, with the maximum.
fn reach<K: Copy + Ord>(vals: &BTreeMap<K, f64>) -> Option<(f64, K, K)> {
    let (&kmax, &max) = vals
        .iter()
        .max_by(|a, b| a.1.partial_cmp(b.1).unwrap_or(std::cmp::Ordering::Equal))?;
    let k90 = vals
        .iter()
        .find(|(_, &v)| v >= REACH * max)
        .map(|(&k, _)| k)?;
    Some((max, kmax, k90))
}

pub fn analyze(points: &[&Point]) -> Vec<BatchingGroup> {
    let mut groups: BTreeMap<BTreeMap<String, String>, Grid> = BTreeMap::new();
    for p in points {
        let (Some(b), Some(bs)) = (&p.batch, single_bs(p)) else {
            continue;
        };
        if b.per_block_mean_ns <= 0.0 {
            continue;
        }
        let g = key_without(p, &["bs", "batch", "qd"]);
        groups.entry(g).or_default().entry(bs).or_default().insert(
            b.k,
            Cell {
                per_block_ns: b.per_block_mean_ns,
                mib_s: p.total.mib_s,
            },
        );
    }
    let mut out = Vec::new();
    for (g, grid) in &groups {
        let mut per_bs = Vec::new();
        let mut best: Option<(f64, u64, u32, u32)> = None;
        for (&bs, ks) in grid {
            let Some(t1) = ks.get(&1).map(|c| c.per_block_ns) else {
                continue;
            };
            let speedups: BTreeMap<u32, f64> =
                ks.iter().map(|(&k, c)| (k, t1 / c.per_block_ns)).collect();
            let Some((max, kmax, k90)) = reach(&speedups) else {
                continue;
            };
            if best.is_none_or(|b| max > b.0) {
                best = Some((max, bs, kmax, k90));
            }
            per_bs.push(BatchingAtBs {
                bs,
                speedup: ks
                    .iter()
                    .map(|(&k, c)| SpeedupAtK {
                        k,
                        speedup: t1 / c.per_block_ns,
                        per_block_ns: c.per_block_ns,
                        mib_s: c.mib_s,
                    })
                    .collect(),
                max_speedup: max,
                k_at_max: kmax,
                k_reaching_90pct: k90,
            });
        }
        let mut by_k: BTreeMap<u32, BTreeMap<u64, f64>> = BTreeMap::new();
        for (&bs, ks) in grid {
            for (&k, c) in ks {
                by_k.entry(k).or_default().insert(bs, c.mib_s);
            }
        }
        let bandwidth: Vec<BandwidthAtK> = by_k
            .iter()
            .filter_map(|(&k, bws)| {
                let (max, bmax, b90) = reach(bws)?;
                Some(BandwidthAtK {
                    k,
                    max_mib_s: max,
                    bs_at_max: bmax,
                    bs_reaching_90pct: b90,
                })
            })
            .collect();
        out.push(BatchingGroup {
            group: key_text(g),
            per_bs,
            parallelism: best.map(|(max, bs, kmax, k90)| Parallelism {
                max_speedup: max,
                bs,
                k_at_max: kmax,
                k_reaching_90pct: k90,
            }),
            bandwidth_by_k: bandwidth,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::engines::EngineKind;
    use crate::plan::job::{JobSpec, Pattern};

    /// A device with 8 parallel units: per-block time falls as 1/min(k, 8)
    /// (speedup 8 from k = 8 on), and bandwidth saturates at 256k blocks.
    #[test]
    fn known_speedup_and_bandwidth() {
        let mut pts = Vec::new();
        for bs in [4096u64, 65536, 262_144, 1 << 20] {
            for k in [1u32, 2, 4, 8, 16, 32] {
                let spec = JobSpec {
                    pattern: Pattern::RandRead,
                    bs: vec![(bs, 100)],
                    batch: Some(k),
                    engine: EngineKind::parse("null").unwrap(),
                    ..Default::default()
                };
                let par = k.min(8) as f64;
                // Block time: 100 us + transfer at 1 GiB/s, overlapped par ways.
                let t1 = 100_000.0 + bs as f64 / 1.073_741_824;
                let iops_dev = par * 1e9 / t1;
                let cap = (1u64 << 30) as f64 / bs as f64 * 2.0;
                let iops = iops_dev.min(cap);
                pts.push(point(&spec, iops, t1, t1 as u64));
            }
        }
        let refs: Vec<&Point> = pts.iter().collect();
        let v = serde_json::to_value(analyze(&refs)).unwrap();
        let g = &v[0];
        let par = &g["parallelism"];
        assert!(
            (par["max_speedup"].as_f64().unwrap() - 8.0).abs() < 1e-6,
            "{par}"
        );
        assert_eq!(par["bs"], 4096);
        assert_eq!(par["k_reaching_90pct"], 8);
        let b4k = &g["per_bs"][0];
        assert_eq!(b4k["bs"], 4096);
        assert!((b4k["speedup"][1]["speedup"].as_f64().unwrap() - 2.0).abs() < 1e-6);
        // With k = 1 bandwidth rises with B all the way to 1m.
        let k1 = g["bandwidth_by_k"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["k"] == 1)
            .unwrap();
        assert_eq!(k1["bs_at_max"], 1 << 20);
        // With k = 32 the 2 GiB/s cap is hit from 64k on.
        let k32 = g["bandwidth_by_k"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["k"] == 32)
            .unwrap();
        assert_eq!(k32["bs_reaching_90pct"], 65536, "{k32}");
    }

    #[test]
    fn nothing_batched_is_null() {
        let p = point(&JobSpec::default(), 1000.0, 1e6, 2_000_000);
        assert!(analyze(&[&p]).is_empty());
    }
}
