//! Where a server engine keeps its records: on a private server (iolab's
//! own instance) the whole `iolab` database is iolab's; on an existing
//! server (`--server-url`) only a namespace named after this process is:
//! a PostgreSQL schema, a MariaDB or MongoDB database, a Cassandra
//! keyspace or a Redis key prefix `iolab_<pid>`, created at open and
//! dropped at the end of the run. On a host of `--hosts` (`iolab agent`)
//! the name also holds the host's name, `iolab_<pid>_<host>`: the hosts
//! share the server, and two hosts' processes may have one pid.

use std::sync::OnceLock;

use crate::servers::Server;

/// This host's name in namespaces, when set (`iolab agent`).
static HOST_TAG: OnceLock<String> = OnceLock::new();

/// Name this process's namespaces after host `name` too.
pub fn name_namespaces_after_host(name: &str) {
    let _ = HOST_TAG.set(host_tag(name));
}

/// A host name as a namespace's part: lower-case letters, digits and
/// `_` (what every server takes unquoted), at most 20 of them.
fn host_tag(name: &str) -> String {
    let tag: String = name
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(20)
        .collect();
    if tag.is_empty() {
        "host".into()
    } else {
        tag
    }
}

/// iolab's own namespace on `server`: `None` on a private server.
pub fn owned_namespace(server: &Server) -> Option<String> {
    (!server.is_private()).then(|| namespace(std::process::id(), HOST_TAG.get()))
}

/// This process's namespace on a shared server: `iolab_<pid>`, with the
/// host's name on a host of `--hosts` (what `oltp --hosts` loads into).
pub fn process_namespace() -> String {
    namespace(std::process::id(), HOST_TAG.get())
}

fn namespace(pid: u32, host: Option<&String>) -> String {
    match host {
        Some(h) => format!("iolab_{pid}_{h}"),
        None => format!("iolab_{pid}"),
    }
}

/// The settings every server engine reports besides its server's.
pub fn layout_settings(
    server: &Server,
    fields: usize,
    ns: &Option<String>,
    shape: &str,
) -> Vec<(String, String)> {
    let mut s = vec![
        ("server".to_string(), server.endpoint().display_url()),
        (
            "private_server".to_string(),
            server.is_private().to_string(),
        ),
        ("layout".to_string(), shape.to_string()),
        ("fieldcount".to_string(), fields.to_string()),
    ];
    if let Some(n) = ns {
        s.push(("namespace".to_string(), n.clone()));
    }
    s.extend(
        server
            .info()
            .config
            .into_iter()
            .map(|(k, v)| (format!("server.{k}"), v)),
    );
    s
}

/// A key as the text servers store (YCSB's keys are ASCII).
pub fn key_text(key: &[u8]) -> anyhow::Result<&str> {
    std::str::from_utf8(key).map_err(|_| anyhow::anyhow!("key is not text: {key:?}"))
}

/// The length of each of the `fields` equal fields of `record`.
pub fn field_len(record: &[u8], fields: usize) -> anyhow::Result<usize> {
    anyhow::ensure!(
        fields > 0 && !record.is_empty() && record.len().is_multiple_of(fields),
        "a record of {} bytes does not split into {fields} fields",
        record.len()
    );
    Ok(record.len() / fields)
}

/// The `fields` equal fields of a record, as the text servers store.
pub fn field_texts(record: &[u8], fields: usize) -> anyhow::Result<Vec<&str>> {
    record
        .chunks(field_len(record, fields)?)
        .map(|f| std::str::from_utf8(f).map_err(|_| anyhow::anyhow!("field is not text")))
        .collect()
}

/// `index` checked against the `fields` fields of a record (`name` is the
/// field as the server calls it).
pub fn known_field(index: usize, fields: usize, name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        index < fields,
        "{name}{index} is not a field of the records"
    );
    Ok(())
}

/// The statement that updates field `index` alone, prepared on first use
/// (`prepare` gets the index) and kept in `cache` (one slot per field).
pub fn field_statement<S: Clone>(
    cache: &mut [Option<S>],
    index: usize,
    name: &str,
    prepare: impl FnOnce(usize) -> anyhow::Result<S>,
) -> anyhow::Result<S> {
    known_field(index, cache.len(), name)?;
    if let Some(st) = &cache[index] {
        return Ok(st.clone());
    }
    let st = prepare(index)?;
    cache[index] = Some(st.clone());
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_statement_is_prepared_once_and_only_for_a_field() {
        let mut cache: Vec<Option<String>> = vec![None; 3];
        let mut prepared = 0;
        for _ in 0..2 {
            let st = field_statement(&mut cache, 2, "field", |i| {
                prepared += 1;
                Ok(format!("SET field{i}"))
            })
            .unwrap();
            assert_eq!(st, "SET field2");
        }
        assert_eq!(prepared, 1);
        let e = field_statement(&mut cache, 3, "FIELD", |_| Ok(String::new())).unwrap_err();
        assert_eq!(e.to_string(), "FIELD3 is not a field of the records");
        assert_eq!(field_len(b"aabbcc", 3).unwrap(), 2);
        assert!(field_len(b"aabbc", 3).is_err());
        assert!(field_len(b"", 3).is_err());
        assert_eq!(field_texts(b"aabb", 2).unwrap(), ["aa", "bb"]);
    }

    /// A host's namespace holds its name as every server takes it unquoted.
    #[test]
    fn a_hosts_namespace_holds_its_name() {
        assert_eq!(namespace(42, None), "iolab_42");
        let tag = host_tag("Web-1.Example.COM");
        assert_eq!(tag, "web_1_example_com");
        assert_eq!(namespace(42, Some(&tag)), "iolab_42_web_1_example_com");
        assert_eq!(host_tag("a-very-long-host-name-indeed").len(), 20);
        assert_eq!(host_tag(""), "host");
    }
}
