//! MongoDB's wire protocol as a YCSB store, with YCSB's MongoDB binding's
//! layout: one document per record in the collection `usertable`, `_id`
//! the key and `field0..n` binary fields. Insert is `insertOne`, read
//! `findOne` by `_id` (all fields: iolab reads whole records), update
//! `updateOne` with `$set` of the fields written, scan `find({_id: {$gte:
//! start}})` sorted by `_id` with a limit, delete `deleteOne`. The database
//! is `ycsb` on a private FerretDB; on an existing server it is
//! `iolab_<pid>`, refused if it exists already and dropped at the end.
//! All threads share one client (the driver's connection pool): see
//! docs/benchmarks.md for its cost against a client per thread.

use anyhow::{Context, Result};
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{doc, Binary, Document, RawBinaryRef, RawBsonRef, RawDocument, RawDocumentBuf};
use mongodb::sync::{Client, Collection};

use super::redis::field_index;
use super::server_ns::{field_len, key_text, known_field, layout_settings, owned_namespace};
use crate::kv::engine::{KvEngine, KvSession};
use crate::servers::{mongodb as srv, Server};

/// YCSB's database and collection names.
const DATABASE: &str = "ycsb";
const COLLECTION: &str = "usertable";

pub struct MongoKv {
    client: Client,
    coll: Collection<RawDocumentBuf>,
    /// `ycsb`, or `iolab_<pid>` on an existing server.
    database: String,
    /// The database is iolab's own on a server it did not start: dropped
    /// at the end.
    drop_database: bool,
    fields: usize,
    version: String,
    settings: Vec<(String, String)>,
}

impl MongoKv {
    pub fn open(server: &Server, fields: usize) -> Result<MongoKv> {
        let ns = owned_namespace(server);
        let database = ns.clone().unwrap_or_else(|| DATABASE.to_string());
        let client = srv::connect(server.endpoint())?;
        if ns.is_some() {
            let names = client
                .list_database_names()
                .run()
                .context("listing the server's databases")?;
            anyhow::ensure!(
                !names.contains(&database),
                "the server already has a database {database}: iolab keeps its records in a \
                 database of its own, which it creates and drops"
            );
        }
        let mut settings = layout_settings(
            server,
            fields,
            &ns,
            "a document per record: _id = the key, field0..n binary (YCSB's MongoDB binding)",
        );
        settings.extend([
            ("database".to_string(), database.clone()),
            ("collection".to_string(), COLLECTION.to_string()),
            (
                "clients".to_string(),
                "one client (connection pool) shared by all threads".to_string(),
            ),
        ]);
        let e = MongoKv {
            coll: client.database(&database).collection(COLLECTION),
            client,
            drop_database: ns.is_some(),
            database,
            fields,
            version: format!(
                "{} (rust mongodb {})",
                server.version(),
                crate::kv::engine::locked_version("mongodb")
            ),
            settings,
        };
        e.reset().context("emptying iolab's collection")?;
        Ok(e)
    }
}

impl KvEngine for MongoKv {
    fn name(&self) -> &'static str {
        "mongodb"
    }
    fn version(&self) -> String {
        self.version.clone()
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(MongoSession {
            coll: self.coll.clone(),
            fields: self.fields,
            names: (0..self.fields).map(|i| format!("field{i}")).collect(),
        }))
    }
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    fn field_count(&self) -> Option<usize> {
        Some(self.fields)
    }
    fn reset(&self) -> Result<()> {
        self.coll.drop().run()?;
        Ok(())
    }
    fn cleanup(&self) -> Result<()> {
        if !self.drop_database {
            return Ok(());
        }
        self.client.database(&self.database).drop().run()?;
        Ok(())
    }
}

struct MongoSession {
    coll: Collection<RawDocumentBuf>,
    fields: usize,
    names: Vec<String>,
}

fn id_filter(key: &[u8]) -> Result<Document> {
    Ok(doc! { "_id": key_text(key)? })
}

fn binary(bytes: &[u8]) -> RawBinaryRef<'_> {
    RawBinaryRef {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// A document's `fields` fields placed in index order into `out`. Fields
/// of unequal length, not binary, missing or unknown leave a record that
/// fails its check.
fn record_of(d: &RawDocument, fields: usize, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    let mut len = None;
    let mut seen = 0;
    for el in d {
        let (name, value) = el?;
        if name == "_id" {
            continue;
        }
        let bytes = match value {
            RawBsonRef::Binary(b) => b.bytes,
            _ => {
                out.clear();
                return Ok(());
            }
        };
        let len = *len.get_or_insert_with(|| {
            out.resize(fields * bytes.len(), 0);
            bytes.len()
        });
        match field_index(name.as_bytes()) {
            Some(i) if i < fields && bytes.len() == len => {
                out[i * len..(i + 1) * len].copy_from_slice(bytes);
                seen += 1;
            }
            _ => {
                out.clear();
                return Ok(());
            }
        }
    }
    if seen != fields {
        out.truncate(seen * len.unwrap_or(0));
    }
    Ok(())
}

impl MongoSession {
    /// `updateOne` of `key` with `$set` of `fields`.
    fn set<'a>(
        &mut self,
        key: &[u8],
        fields: impl Iterator<Item = (usize, &'a [u8])>,
    ) -> Result<()> {
        let mut set = Document::new();
        for (i, f) in fields {
            set.insert(
                self.names[i].as_str(),
                Binary {
                    subtype: BinarySubtype::Generic,
                    bytes: f.to_vec(),
                },
            );
        }
        // A key that is not there is left so, as YCSB's binding does.
        self.coll
            .update_one(id_filter(key)?, doc! { "$set": set })
            .run()
            .context("updateOne")?;
        Ok(())
    }
}

impl KvSession for MongoSession {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let len = field_len(value, self.fields)?;
        let mut d = RawDocumentBuf::new();
        d.append_ref("_id", key_text(key)?);
        for (i, f) in value.chunks(len).enumerate() {
            d.append_ref(&self.names[i], binary(f));
        }
        self.coll.insert_one(&d).run().context("insertOne")?;
        Ok(())
    }
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let len = field_len(value, self.fields)?;
        self.set(key, value.chunks(len).enumerate())
    }
    fn update_field(&mut self, key: &[u8], index: usize, value: &[u8]) -> Result<()> {
        known_field(index, self.fields, "field")?;
        self.set(key, std::iter::once((index, value)))
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let Some(d) = self
            .coll
            .find_one(id_filter(key)?)
            .run()
            .context("findOne")?
        else {
            return Ok(false);
        };
        record_of(&d, self.fields, out)?;
        Ok(true)
    }
    fn scan(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let cursor = self
            .coll
            .find(doc! { "_id": { "$gte": key_text(start)? } })
            .sort(doc! { "_id": 1 })
            .limit(count as i64)
            .run()
            .context("find")?;
        let mut rec = Vec::new();
        let mut n = 0;
        for d in cursor {
            let d = d.context("find")?;
            let key = d.get_str("_id").context("a document's _id")?;
            record_of(&d, self.fields, &mut rec)?;
            visit(key.as_bytes(), &rec);
            n += 1;
        }
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let r = self
            .coll
            .delete_one(id_filter(key)?)
            .run()
            .context("deleteOne")?;
        Ok(r.deleted_count > 0)
    }
    fn next_in_order(&mut self, _visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        anyhow::bail!("db_bench's readseq does not run on servers")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_of(fields: &[(&str, &[u8])]) -> RawDocumentBuf {
        let mut d = RawDocumentBuf::new();
        d.append_ref("_id", "user1");
        for (n, v) in fields {
            d.append_ref(*n, binary(v));
        }
        d
    }

    #[test]
    fn documents_become_records_in_field_order() {
        let mut out = Vec::new();
        let d = doc_of(&[("field1", b"bb"), ("field0", b"aa")]);
        record_of(&d, 2, &mut out).unwrap();
        assert_eq!(out, b"aabb");
        // A field missing: shorter, so the check fails.
        record_of(&doc_of(&[("field0", b"aa")]), 2, &mut out).unwrap();
        assert_eq!(out, b"aa");
        // Unknown, uneven or non-binary fields: nothing.
        for d in [
            doc_of(&[("field0", b"aa"), ("other", b"bb")]),
            doc_of(&[("field0", b"aa"), ("field1", b"b")]),
        ] {
            record_of(&d, 2, &mut out).unwrap();
            assert!(out.is_empty());
        }
        let mut d = doc_of(&[("field0", b"aa")]);
        d.append("field1", "text");
        record_of(&d, 2, &mut out).unwrap();
        assert!(out.is_empty());
    }
}
