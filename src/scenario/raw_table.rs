//! One entry of a mechanism array as the file wrote it, its values unread. The scenario layer
//! knows which arrays hold mechanisms (`[[policy.p.circuit_breaker]]`) but not their fields: the
//! mechanism that owns a table reads it (`scenario::read_table`), so adding a mechanism never
//! touches the file format's types. Values are kept as TOML values whatever the file's format,
//! since only they hold `inf` and `nan`.

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::{Table, Value};

/// One entry of a mechanism array: a table (never a positional array), its values unread.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawTable(pub Table);

impl<'de> Deserialize<'de> for RawTable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TableOnly;
        impl<'de> Visitor<'de> for TableOnly {
            type Value = RawTable;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table with named fields (a JSON object)")
            }
            // Only an array is told it is positional: a string or a number is not.
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<RawTable, A::Error> {
                Err(<A::Error as serde::de::Error>::invalid_type(
                    serde::de::Unexpected::Seq,
                    &"a table with named fields (a JSON object), not a positional array",
                ))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawTable, A::Error> {
                let mut fields = toml::Table::new();
                // A JSON null is an absent field, as for every other table of the file.
                while let Some((key, value)) = map.next_entry::<String, Option<Value>>()? {
                    if let Some(value) = value {
                        fields.insert(key, value);
                    }
                }
                Ok(RawTable(fields))
            }
        }
        // `any`, not `map`: a JSON array reaches `visit_seq` too.
        deserializer.deserialize_any(TableOnly)
    }
}

impl Serialize for RawTable {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_null_is_absent_and_toml_infinity_survives() {
        let json: RawTable = serde_json::from_str(r#"{"a": null, "b": 1.5}"#).unwrap();
        assert_eq!(json.0.len(), 1, "{json:?}");
        assert_eq!(json.0["b"].as_float(), Some(1.5));
        let toml: RawTable = toml::from_str("x = inf\ny = { z = -inf }").unwrap();
        assert_eq!(toml.0["x"].as_float(), Some(f64::INFINITY), "serde_json's Value would have made it null");
        assert!(serde_json::from_str::<RawTable>("[1, 2]").is_err(), "a table, never a positional array");
    }
}
