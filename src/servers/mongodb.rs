//! MongoDB's wire protocol, the client side every user of it in iolab
//! shares: the official driver's blocking client for an endpoint (a
//! user's MongoDB by `--server-url`, or a private FerretDB, see
//! `ferretdb`), its readiness probe and what provenance says of it.

use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::options::ClientOptions;
use mongodb::sync::Client;

use super::endpoint::Endpoint;

/// How long a connection or the choice of a server may take, unless the
/// URL says (the driver's default is 30 s of silence on a wrong address).
const CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// What the driver makes of a URL; a reason when it refuses it.
pub(super) fn check_url(url: &str) -> Result<(), String> {
    options(url).map(|_| ()).map_err(|e| reason(&e))
}

/// The driver's error without its labels and empty sources.
fn reason(e: &mongodb::error::Error) -> String {
    use mongodb::error::ErrorKind;
    match e.kind.as_ref() {
        ErrorKind::InvalidArgument { message, .. }
        | ErrorKind::ServerSelection { message, .. }
        | ErrorKind::Authentication { message, .. } => message.clone(),
        _ => {
            let msg = e.to_string();
            let msg = msg.strip_prefix("Kind: ").unwrap_or(&msg);
            msg.split(", labels: ").next().unwrap_or(msg).to_string()
        }
    }
}

/// The driver's error as the cause of `what`.
fn failed(what: String) -> impl FnOnce(mongodb::error::Error) -> anyhow::Error {
    move |e| anyhow::anyhow!("{what}: {}", reason(&e))
}

fn options(url: &str) -> mongodb::error::Result<ClientOptions> {
    let mut o = ClientOptions::parse(url).run()?;
    o.app_name.get_or_insert_with(|| "iolab".into());
    o.connect_timeout.get_or_insert(CONNECT_WITHIN);
    o.server_selection_timeout.get_or_insert(CONNECT_WITHIN);
    Ok(o)
}

/// A client (a connection pool) for `ep`. It connects lazily: the first
/// command says whether the server is there.
pub fn connect(ep: &Endpoint) -> anyhow::Result<Client> {
    let o =
        options(&ep.mongodb_url()).map_err(failed(format!("--server-url {}", ep.display_url())))?;
    Client::with_options(o).map_err(failed(format!("connecting to {}", ep.display_url())))
}

/// Run `command` on the `admin` database.
pub fn admin(c: &Client, command: Document) -> anyhow::Result<Document> {
    let name = command.keys().next().cloned().unwrap_or_default();
    c.database("admin")
        .run_command(command)
        .run()
        .map_err(failed(format!("MongoDB command {name}")))
}

pub(super) fn ready(ep: &Endpoint) -> anyhow::Result<()> {
    let c = connect(ep)?;
    let r = admin(&c, doc! { "ping": 1 })?;
    anyhow::ensure!(ok(&r), "ping answered {r}");
    Ok(())
}

fn ok(r: &Document) -> bool {
    match r.get("ok") {
        Some(mongodb::bson::Bson::Double(v)) => *v == 1.0,
        Some(mongodb::bson::Bson::Int32(v)) => *v == 1,
        Some(mongodb::bson::Bson::Int64(v)) => *v == 1,
        _ => false,
    }
}

/// The version (FerretDB says so beside the MongoDB version it speaks as)
/// and the settings reported: the storage engine and the default write
/// and read concerns where the server tells them.
pub(super) fn describe(ep: &Endpoint) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let c = connect(ep)?;
    let info = admin(&c, doc! { "buildInfo": 1 })?;
    let mongo = info.get_str("version").unwrap_or("?").to_string();
    let version = match info.get_str("ferretdbVersion") {
        Ok(f) => format!("FerretDB {f} (MongoDB wire protocol {mongo})"),
        Err(_) => format!("MongoDB {mongo}"),
    };
    let mut config = Vec::new();
    if let Ok(status) = admin(&c, doc! { "serverStatus": 1 }) {
        if let Ok(engine) = status
            .get_document("storageEngine")
            .and_then(|e| e.get_str("name"))
        {
            config.push(("storage_engine".to_string(), engine.to_string()));
        }
    }
    // MongoDB 4.4+: the cluster-wide defaults; refused elsewhere (left out).
    if let Ok(d) = admin(&c, doc! { "getDefaultRWConcern": 1 }) {
        for (key, field) in [
            ("default_write_concern", "defaultWriteConcern"),
            ("default_read_concern", "defaultReadConcern"),
        ] {
            if let Ok(v) = d.get_document(field) {
                config.push((key.to_string(), v.to_string()));
            }
        }
    }
    let o = options(&ep.mongodb_url())?;
    config.push((
        "client.write_concern".into(),
        o.write_concern
            .map(|w| format!("{w:?}"))
            .unwrap_or_else(|| "server default".into()),
    ));
    config.push((
        "client.read_preference".into(),
        o.selection_criteria
            .map(|s| format!("{s:?}"))
            .unwrap_or_else(|| "primary".into()),
    ));
    Ok((version, config))
}
