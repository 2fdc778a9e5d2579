//! The hosts a pass runs on: `[user@]host[:port]` entries, comma-separated
//! or `@FILE` with one per line (blank lines and `#` comments skipped).
//! `host` is what ssh resolves, so a Host alias of the ssh config works;
//! an IPv6 address is written in brackets (`[::1]:22`).

use std::path::Path;

use crate::error::usage;

/// One host as the user named it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostSpec {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

impl std::fmt::Display for HostSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            write!(f, "{}", self.host)?;
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// Letters a host name, alias or address is made of; nothing a shell or
/// ssh would read as an option.
fn plausible_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && !h.starts_with('-')
        && h.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '%'))
}

fn plausible_user(u: &str) -> bool {
    !u.is_empty()
        && u.len() <= 64
        && !u.starts_with('-')
        && u.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// Parse one entry; errors name `field` and the entry.
pub fn parse_host(entry: &str, field: &str) -> anyhow::Result<HostSpec> {
    let e = entry.trim();
    let bad = |why: &str| usage(field, format!("'{e}': {why}"));
    let (user, rest) = match e.rsplit_once('@') {
        Some((u, r)) => {
            if !plausible_user(u) {
                return Err(bad("the user name is not plausible"));
            }
            (Some(u.to_string()), r)
        }
        None => (None, e),
    };
    let (host, port) = if let Some(r) = rest.strip_prefix('[') {
        let (h, after) = r
            .split_once(']')
            .ok_or_else(|| bad("an unclosed '[' (an IPv6 address is written [ADDR]:PORT)"))?;
        match after {
            "" => (h, None),
            p => (
                h,
                Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| bad("text after ']' that is not :PORT"))?,
                ),
            ),
        }
    } else {
        match rest.split_once(':') {
            Some((_, p)) if p.contains(':') => {
                return Err(bad("an IPv6 address is written in brackets: [ADDR]:PORT"))
            }
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        }
    };
    if !plausible_host(host) {
        return Err(bad("not a host name or address"));
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(bad("the port is not a number from 1 to 65535")),
        },
    };
    Ok(HostSpec {
        user,
        host: host.to_string(),
        port,
    })
}

/// Parse a plain host list: `a,b,c` or `@FILE` with one per line.
/// Duplicates and an empty list are errors naming `field`.
pub fn parse_host_list(list: &str, field: &str) -> anyhow::Result<Vec<HostSpec>> {
    let text;
    let entries: Vec<&str> = if let Some(file) = list.strip_prefix('@') {
        text = crate::input::read_text(Path::new(file), field, Some(1 << 20))?;
        text.lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .collect()
    } else {
        list.split(',').map(str::trim).collect()
    };
    let mut hosts: Vec<HostSpec> = Vec::new();
    for e in entries {
        if e.is_empty() {
            return Err(usage(field, format!("an empty entry in '{list}'")));
        }
        let h = parse_host(e, field)?;
        if hosts.contains(&h) {
            return Err(usage(field, format!("{h} is named twice")));
        }
        hosts.push(h);
    }
    if hosts.is_empty() {
        return Err(usage(field, "no hosts"));
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> HostSpec {
        parse_host(s, "--hosts").unwrap()
    }

    #[test]
    fn entries_parse() {
        assert_eq!(
            one("alice@db1:2222"),
            HostSpec {
                user: Some("alice".into()),
                host: "db1".into(),
                port: Some(2222)
            }
        );
        assert_eq!(one("10.0.0.2").port, None);
        assert_eq!(one("[fe80::1]:22").host, "fe80::1");
        assert_eq!(one("[fe80::1]:22").to_string(), "[fe80::1]:22");
        assert_eq!(one("bob@h").to_string(), "bob@h");
    }

    #[test]
    fn bad_entries_name_the_field() {
        for bad in [
            "",
            "-oProxyCommand=x",
            "h:0",
            "h:70000",
            "h:x",
            "fe80::1",
            "a b",
            "@h",
            "[::1",
            "u;rm@h",
            "h;ls",
        ] {
            let e = parse_host(bad, "--hosts").unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
            assert!(format!("{e:#}").contains("--hosts"), "{bad}: {e:#}");
        }
    }

    #[test]
    fn lists_and_files() {
        assert_eq!(parse_host_list("a, b,c:23", "--hosts").unwrap().len(), 3);
        assert!(parse_host_list("a,,b", "--hosts").is_err());
        assert!(parse_host_list("a,a", "--hosts").is_err());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("hosts");
        std::fs::write(&f, "# fleet\nu@a\n\nb:2200 # second\n").unwrap();
        let hs = parse_host_list(&format!("@{}", f.display()), "--hosts").unwrap();
        assert_eq!(hs.len(), 2);
        assert_eq!(hs[1].port, Some(2200));
        std::fs::write(&f, "# nothing\n").unwrap();
        assert!(parse_host_list(&format!("@{}", f.display()), "--hosts").is_err());
    }
}
