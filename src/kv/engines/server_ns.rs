//! Where a server engine keeps its records: on a private server (iolab's
//! own instance) the whole `iolab` database is iolab's; on an existing
//! server (`--server-url`) only a namespace named after this process is:
//! a PostgreSQL schema, a MariaDB or MongoDB database or a Redis key
//! prefix `iolab_<pid>`, created at open and dropped at the end of the run.

use crate::servers::Server;

/// iolab's own namespace on `server`: `None` on a private server.
pub fn owned_namespace(server: &Server) -> Option<String> {
    (!server.is_private()).then(|| format!("iolab_{}", std::process::id()))
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

/// The `fields` equal fields of a record, as the text servers store.
pub fn field_texts(record: &[u8], fields: usize) -> anyhow::Result<Vec<&str>> {
    anyhow::ensure!(
        fields > 0 && record.len().is_multiple_of(fields),
        "a record of {} bytes does not split into {fields} fields",
        record.len()
    );
    record
        .chunks(record.len() / fields)
        .map(|f| std::str::from_utf8(f).map_err(|_| anyhow::anyhow!("field is not text")))
        .collect()
}
