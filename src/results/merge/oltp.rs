//! The oltp sections (`extra.oltp`) of points measured at the same time
//! on several hosts, as one: counts, NOPM and TPM summed (each host its
//! own warehouses and users), p90s from the merged histograms, new orders
//! per second added by second, the consistency verdicts combined (a
//! condition passes when it passed on every host).

use std::collections::BTreeMap;

use crate::measure::histogram::LatencyHistogram;
use crate::results::ext::oltp::{ConsistencyResult, OltpInfo, TxnCounts};

/// The parts' sections (`(label, info)`, parts of `kind`: `host`) as one,
/// when every part has one; `histograms` are the merged point's
/// (`KIND.lat`).
pub fn merge(
    parts: &[(&str, Option<&OltpInfo>)],
    kind: &str,
    histograms: &BTreeMap<String, LatencyHistogram>,
) -> Option<OltpInfo> {
    let parts: Vec<(&str, &OltpInfo)> = parts
        .iter()
        .map(|(l, i)| i.map(|i| (*l, i)))
        .collect::<Option<_>>()?;
    let parts = parts.as_slice();
    let first = parts.first()?.1;
    let warehouses: u32 = parts.iter().map(|(_, i)| i.warehouses).sum();
    let nopm: f64 = parts.iter().map(|(_, i)| i.nopm).sum();
    let mut transactions: BTreeMap<String, TxnCounts> = BTreeMap::new();
    for (_, i) in parts {
        for (k, c) in &i.transactions {
            let t = transactions.entry(k.clone()).or_default();
            t.commits += c.commits;
            t.rollbacks += c.rollbacks;
            t.retries += c.retries;
            t.failures += c.failures;
        }
    }
    for (k, t) in transactions.iter_mut() {
        t.p90_ns = histograms
            .get(&format!("{k}.lat"))
            .filter(|h| !h.is_empty())
            .map(|h| h.value_at_percentile(90.0));
    }
    let seconds = parts.iter().map(|(_, i)| i.new_orders_per_s.len()).max();
    let new_orders_per_s = (0..seconds.unwrap_or(0))
        .map(|s| {
            parts
                .iter()
                .filter_map(|(_, i)| i.new_orders_per_s.get(s))
                .sum()
        })
        .collect();
    Some(OltpInfo {
        engine: first.engine.clone(),
        engine_version: first.engine_version.clone(),
        warehouses,
        users: parts.iter().map(|(_, i)| i.users).sum(),
        wait: first.wait,
        nopm,
        tpm: parts.iter().map(|(_, i)| i.tpm).sum(),
        // Each part's NOPM against its own warehouses' maximum, weighted.
        efficiency_pct: parts
            .iter()
            .map(|(_, i)| i.efficiency_pct * i.warehouses as f64)
            .sum::<f64>()
            / warehouses.max(1) as f64,
        transactions,
        new_orders_per_s,
        delivery_skipped: parts.iter().map(|(_, i)| i.delivery_skipped).sum(),
        consistency: consistency(parts, kind),
        errors: parts
            .iter()
            .flat_map(|(h, i)| i.errors.iter().map(move |e| format!("{kind} {h}: {e}")))
            .take(16)
            .collect(),
    })
}

/// One verdict per condition: checked and violations summed, passed on
/// every host, the first violation named with its host.
fn consistency(parts: &[(&str, &OltpInfo)], kind: &str) -> Vec<ConsistencyResult> {
    let mut out: Vec<ConsistencyResult> = Vec::new();
    for (host, info) in parts {
        for c in &info.consistency {
            let at = match out.iter().position(|o| o.condition == c.condition) {
                Some(at) => at,
                None => {
                    out.push(ConsistencyResult {
                        passed: true,
                        checked: 0,
                        violations: 0,
                        first_violation: None,
                        ..c.clone()
                    });
                    out.len() - 1
                }
            };
            let o = &mut out[at];
            o.passed &= c.passed;
            o.checked += c.checked;
            o.violations += c.violations;
            if o.first_violation.is_none() {
                o.first_violation = c
                    .first_violation
                    .as_ref()
                    .map(|v| format!("{kind} {host}: {v}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(new_orders: u64, passed: bool) -> OltpInfo {
        let mut h = LatencyHistogram::new();
        h.record(1000);
        OltpInfo {
            warehouses: 1,
            users: 2,
            nopm: new_orders as f64,
            efficiency_pct: new_orders as f64,
            tpm: 2.0 * new_orders as f64,
            transactions: BTreeMap::from([(
                "new_order".to_string(),
                TxnCounts {
                    commits: new_orders,
                    ..Default::default()
                },
            )]),
            new_orders_per_s: vec![1.0, 2.0],
            consistency: vec![ConsistencyResult {
                condition: 1,
                passed,
                checked: 1,
                violations: u64::from(!passed),
                first_violation: (!passed).then(|| "w 1".into()),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn oltp_sections_of_hosts_add_up_and_a_failed_condition_fails_the_whole() {
        let (a, b) = (info(10, true), info(30, false));
        let mut h = LatencyHistogram::new();
        for v in [1000, 2000, 3000] {
            h.record(v);
        }
        let hists = BTreeMap::from([("new_order.lat".to_string(), h)]);
        let m = merge(&[("a", Some(&a)), ("b", Some(&b))], "host", &hists).unwrap();
        assert_eq!((m.warehouses, m.users, m.nopm, m.tpm), (2, 4, 40.0, 80.0));
        assert_eq!(m.efficiency_pct, 20.0);
        assert_eq!(m.transactions["new_order"].commits, 40);
        assert!(m.transactions["new_order"].p90_ns.unwrap() >= 2900);
        assert_eq!(m.new_orders_per_s, vec![2.0, 4.0]);
        let c = &m.consistency[0];
        assert_eq!((c.passed, c.checked, c.violations), (false, 2, 1));
        assert_eq!(c.first_violation.as_deref(), Some("host b: w 1"));
        assert_eq!(m.consistency_failures(), 1);
        assert!(merge(&[("a", Some(&a)), ("c", None)], "host", &hists).is_none());
    }
}
