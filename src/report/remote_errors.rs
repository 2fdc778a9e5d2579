//! What `iolab remote`'s table and report say about errors: the errors a
//! transport's server injected (`--inject-errors`) and the failed requests
//! the points counted (`--continue-on-error`), so neither hides them.

use crate::results::Param;
use std::collections::BTreeMap;

use crate::remote::faults;
use crate::results::Results;

/// Whether any row of the remote table counted errors (its errors column).
pub fn any_in_rows(r: &Results) -> bool {
    r.analysis.remote.iter().any(|x| !x.errors.is_empty())
}

/// A row's errors column: the total, blank without errors.
pub fn count(errors: &BTreeMap<String, u64>) -> String {
    let n: u64 = errors.values().sum();
    if n == 0 {
        String::new()
    } else {
        n.to_string()
    }
}

/// One sentence per transport that had errors injected or counted, in
/// the transports' order: what was injected, and how many requests failed
/// over how many of its points, per kind.
pub fn notes(r: &Results) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (label, phrase) in faults::injected_in(r.extra.remote().as_deref()) {
        out.push(format!("{label}: {phrase}"));
    }
    let mut counted: Vec<(String, usize, BTreeMap<String, u64>)> = Vec::new();
    for p in r.points.iter().filter(|p| !p.errors.is_empty()) {
        let Some(t) = p.param(Param::Transport) else {
            continue;
        };
        let i = match counted.iter().position(|(l, _, _)| l == t) {
            Some(i) => i,
            None => {
                counted.push((t.to_string(), 0, BTreeMap::new()));
                counted.len() - 1
            }
        };
        counted[i].1 += 1;
        for (k, n) in &p.errors {
            *counted[i].2.entry(k.clone()).or_insert(0) += n;
        }
    }
    for (label, points, kinds) in counted {
        let total: u64 = kinds.values().sum();
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} x {k}")).collect();
        out.push(format!(
            "{label}: {total} request(s) failed over {points} point(s), counted and the points kept: {}",
            kinds.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::charts::remote::local_vs_remote;
    use crate::report::remote_terminal::remote_table;
    use crate::results::sections::RemoteTransport;

    fn fixture() -> Results {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report/remote-nbd.json"
        );
        Results::read(std::path::Path::new(path)).unwrap()
    }

    /// Results without errors (all of them before --continue-on-error)
    /// show no errors column and no note.
    #[test]
    fn no_errors_no_column() {
        let r = fixture();
        assert!(notes(&r).is_empty());
        assert!(!remote_table(&r).contains("errors"));
        let s = local_vs_remote(&r).unwrap();
        assert!(!s.table.headers.iter().any(|h| h == "errors"));
    }

    /// Issue 31 item 13: a point that counted errors shows them in the
    /// terminal table and the report's table, and the transport that had
    /// them injected says so.
    #[test]
    fn counted_and_injected_errors_are_shown() {
        let mut r = fixture();
        let label = "nbd-nbdkit-memory";
        let kind = "Input/output error (os error 5)";
        let remote = r.extra.remote.as_mut().unwrap();
        remote.transports = vec![
            RemoteTransport {
                label: "das".into(),
                ..RemoteTransport::default()
            },
            RemoteTransport {
                label: label.into(),
                injected_errors: Some(faults::Injection { rate: 0.05 }.describe()),
                ..RemoteTransport::default()
            },
        ];
        let p = r
            .points
            .iter_mut()
            .find(|p| p.param(Param::Transport) == Some(label))
            .unwrap();
        p.errors.insert(kind.into(), 42);
        let name = p.name.clone();
        let row = r.analysis.remote.iter_mut().find(|x| x.point == name);
        row.unwrap().errors.insert(kind.into(), 42);
        let t = remote_table(&r);
        assert!(t.contains("errors"), "{t}");
        assert!(
            t.lines().any(|l| l.contains(label) && l.contains(" 42 ")),
            "{t}"
        );
        let injected = format!("note: {label}: EIO injected into 5% of requests");
        assert!(t.contains(&injected), "{t}");
        let counted = format!("note: {label}: 42 request(s) failed over 1 point(s)");
        assert!(
            t.contains(&counted) && t.contains(&format!("42 x {kind}")),
            "{t}"
        );
        let s = local_vs_remote(&r).unwrap();
        let col = s.table.headers.iter().position(|h| h == "errors").unwrap();
        assert!(s.table.rows.iter().any(|row| row[col] == "42"));
        assert!(
            s.note.contains("EIO injected into 5% of requests"),
            "{}",
            s.note
        );
    }
}
