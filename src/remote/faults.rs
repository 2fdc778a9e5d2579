//! Injected errors for `iolab remote --inject-errors RATE`: the rate read
//! as nbdkit's error filter reads it (`5%` or `0.05`), which transports can
//! inject (the nbdkit ones), and how the results and the plan say so.

use crate::results::sections::remote::InjectedErrors;
use crate::results::sections::RemoteRecord;

use crate::error::usage;
use crate::servers::storage::Transport;

/// The errno every injected error carries (nbdkit's `error=`).
pub const ERRNO: &str = "EIO";

/// The transports whose server can inject errors, as `--transports` names them.
pub const INJECTING: &str = "nbdkit-file, nbdkit-memory";

/// Errors injected into a share of a server's requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Injection {
    /// The share of requests that fail, above 0 and at most 1.
    pub rate: f64,
}

impl Injection {
    /// `--inject-errors`'s value: a percentage (`5%`) or a share (`0.05`),
    /// above 0 and at most 100%.
    pub fn parse(s: &str) -> anyhow::Result<Injection> {
        let t = s.trim();
        let rate = match t.strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
            None => t.parse::<f64>(),
        };
        match rate {
            Ok(r) if r.is_finite() && r > 0.0 && r <= 1.0 => Ok(Injection { rate: r }),
            _ => Err(usage(
                "--inject-errors",
                format!("'{s}' is not an error rate: give a percentage above 0 up to 100% (1%) or a share above 0 up to 1 (0.01)"),
            )),
        }
    }

    /// The rate as a percentage, for people.
    pub fn percent(&self) -> String {
        let pct = self.rate * 100.0;
        format!("{}%", (pct * 1e6).round() / 1e6)
    }

    /// What the results record on a transport and its points.
    pub fn describe(&self) -> InjectedErrors {
        InjectedErrors {
            errno: ERRNO.to_string(),
            rate: self.rate,
            by: "nbdkit error filter".into(),
        }
    }

    /// The plan's and the report's phrase.
    pub fn phrase(&self) -> String {
        format!(
            "{ERRNO} injected into {} of requests (nbdkit's error filter)",
            self.percent()
        )
    }
}

/// Whether `t`'s server can inject errors.
pub fn can_inject(t: Transport) -> bool {
    t.facts().injects_errors
}

/// `--inject-errors` checked against the transports: refused when none of
/// them can inject.
pub fn check(inject: Option<&str>, transports: &[Transport]) -> anyhow::Result<Option<Injection>> {
    let Some(s) = inject else {
        return Ok(None);
    };
    let i = Injection::parse(s)?;
    if !transports.iter().any(|t| can_inject(*t)) {
        return Err(usage(
            "--inject-errors",
            format!("no transport in --transports can inject errors: only {INJECTING} can (nbdkit's error filter)"),
        ));
    }
    Ok(Some(i))
}

/// The transports' injected errors, from `extra.remote.transports` (label,
/// phrase); none in results written before `--inject-errors`.
pub fn injected_in(remote: Option<&RemoteRecord>) -> Vec<(String, String)> {
    remote
        .into_iter()
        .flat_map(|r| &r.transports)
        .filter_map(|t| {
            let e = t.injected_errors.as_ref()?;
            Some((
                t.label.clone(),
                format!(
                    "{} injected into {} of requests ({})",
                    e.errno,
                    Injection { rate: e.rate }.percent(),
                    e.by
                ),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::sections::RemoteTransport;

    #[test]
    fn rates_read_as_nbdkit_reads_them() {
        for (s, r) in [
            ("1%", 0.01),
            ("0.01", 0.01),
            ("5 %", 0.05),
            ("100%", 1.0),
            ("1", 1.0),
        ] {
            assert_eq!(Injection::parse(s).unwrap().rate, r, "{s}");
        }
        for bad in [
            "", "0", "0%", "-1%", "101%", "1.5", "abc", "5%%", "nan", "inf",
        ] {
            let e = format!("{:#}", Injection::parse(bad).unwrap_err());
            assert!(e.contains("--inject-errors"), "{bad}: {e}");
        }
        assert_eq!(Injection { rate: 0.05 }.percent(), "5%");
        assert_eq!(Injection { rate: 0.001 }.percent(), "0.1%");
    }

    #[test]
    fn only_nbdkit_transports_inject() {
        let e = check(
            Some("1%"),
            &[
                Transport::parse("das").unwrap(),
                Transport::parse("qemu-nbd").unwrap(),
            ],
        )
        .unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("--inject-errors") && e.contains(INJECTING),
            "{e}"
        );
        let ok = check(
            Some("1%"),
            &[
                Transport::parse("das").unwrap(),
                Transport::parse("nbdkit-memory").unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(ok, Some(Injection { rate: 0.01 }));
        assert_eq!(
            check(None, &[Transport::parse("das").unwrap()]).unwrap(),
            None
        );
    }

    #[test]
    fn the_record_reads_back() {
        let remote = RemoteRecord {
            transports: vec![
                RemoteTransport {
                    label: "das".into(),
                    ..RemoteTransport::default()
                },
                RemoteTransport {
                    label: "nbd-nbdkit-file".into(),
                    injected_errors: Some(Injection { rate: 0.05 }.describe()),
                    ..RemoteTransport::default()
                },
            ],
            ..RemoteRecord::default()
        };
        assert_eq!(
            injected_in(Some(&remote)),
            vec![(
                "nbd-nbdkit-file".to_string(),
                "EIO injected into 5% of requests (nbdkit error filter)".to_string()
            )]
        );
        assert!(injected_in(None).is_empty());
    }
}
