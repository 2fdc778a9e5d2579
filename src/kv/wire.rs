//! The kv enums by their names on the wire (the settings a fleet's hosts
//! are sent, `fleet::proto::KvWork`): the names the flags take, parsed
//! back with the flags' own parsers, so an unknown name is an error.

use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};

use super::engine::{Compression, KvEngineKind, WtTable};
use super::value::CheckValues;

macro_rules! by_name {
    ($t:ty, $what:literal) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                <$t>::parse(&name)
                    .ok_or_else(|| D::Error::custom(format!("unknown {} {name:?}", $what)))
            }
        }
    };
}

by_name!(KvEngineKind, "engine");
by_name!(Compression, "compression");
by_name!(WtTable, "wiredtiger table type");
by_name!(CheckValues, "value check");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for k in KvEngineKind::all() {
            let j = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<KvEngineKind>(&j).unwrap(), k);
        }
        let e = serde_json::from_str::<KvEngineKind>("\"nosuch\"").unwrap_err();
        assert!(e.to_string().contains("unknown engine"), "{e}");
    }
}
