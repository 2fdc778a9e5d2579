//! JSON with its object keys in sorted order, whatever serde_json was
//! built with. The results file's typed sections are written through
//! `serde_json::Value`, whose maps were sorted; a dependency (bson, under
//! the mongodb driver) turns on serde_json's `preserve_order`, which keeps
//! insertion (field) order instead. Sorting here keeps every file byte for
//! byte what earlier versions wrote.

use serde::Serialize;
use serde_json::{Map, Value};

/// `v` with the keys of every object, at every depth, in sorted order.
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<String, Value>>(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// `v` as JSON with sorted keys (`Null` if it does not serialize).
pub fn to_sorted_value<T: Serialize + ?Sized>(v: &T) -> Value {
    sorted(serde_json::to_value(v).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Fields {
        zeta: u8,
        alpha: u8,
        inner: Inner,
    }
    #[derive(Serialize)]
    struct Inner {
        y: u8,
        b: u8,
    }

    #[test]
    fn keys_come_out_sorted_at_every_depth() {
        let v = to_sorted_value(&[Fields {
            zeta: 1,
            alpha: 2,
            inner: Inner { y: 3, b: 4 },
        }]);
        assert_eq!(
            v.to_string(),
            r#"[{"alpha":2,"inner":{"b":4,"y":3},"zeta":1}]"#
        );
    }
}
