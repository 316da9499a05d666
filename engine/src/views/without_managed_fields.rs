//! An owner's JSON parsed into a `Value` with `metadata.managedFields` skipped while parsing: a
//! cluster's ReplicaSet carries kilobytes of managedFields that no projection reads and
//! [`OwnerJson`](super::owner_json::OwnerJson) leaves out, and building their tree only to
//! drop it cost as much as decoding the ten Pods the ReplicaSet owns.

use super::meta::DecodeError;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Parses `bytes` as JSON, leaving out `metadata.managedFields`.
pub(crate) fn parse_owner_json(bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Object {
        skip: Skip::Metadata,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value))
    .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok(value)
}

/// Which key of this object is special.
#[derive(Clone, Copy)]
enum Skip {
    /// The object's `metadata` is parsed skipping its `managedFields`.
    Metadata,
    /// This is the metadata: `managedFields` is skipped.
    ManagedFields,
}

/// Parses an object, or any other value as it is: an owner or a metadata of the wrong type
/// reaches the checks that name it.
struct Object {
    skip: Skip,
}

impl<'de> DeserializeSeed<'de> for Object {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Object {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match (self.skip, key.as_str()) {
                (Skip::Metadata, "metadata") => {
                    let metadata = map.next_value_seed(Object {
                        skip: Skip::ManagedFields,
                    })?;
                    object.insert(key, metadata);
                }
                (Skip::ManagedFields, "managedFields") => {
                    map.next_value::<IgnoredAny>()?;
                    object.remove(&key);
                }
                _ => {
                    let value = map.next_value::<Value>()?;
                    object.insert(key, value);
                }
            }
        }
        Ok(Value::Object(object))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(value: &Value) -> Value {
        parse_owner_json(value.to_string().as_bytes()).expect("parses")
    }

    #[test]
    fn the_object_is_whole_but_for_its_managed_fields() {
        let object = json!({
            "apiVersion": "apps/v1",
            "metadata": {"name": "web", "resourceVersion": "7", "labels": {"app": "web"},
                         "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": {"replicas": 3, "ratio": 0.1, "big": u64::MAX, "neg": -4,
                     "template": {"metadata": {"managedFields": "kept: not the object's"}}},
            "status": {"replicas": 2, "conditions": [], "observed": null, "ok": true}
        });
        let mut wanted = object.clone();
        if let Some(meta) = wanted["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
        assert_eq!(parsed(&object), wanted);
    }

    #[test]
    fn the_same_as_a_plain_parse_when_there_are_no_managed_fields() {
        let object =
            json!({"metadata": {"name": "a", "uid": "u"}, "spec": {"x": [1, 2.5, "three"]}});
        assert_eq!(parsed(&object), object);
    }

    #[test]
    fn a_metadata_of_the_wrong_type_is_kept_for_the_checks_to_name() {
        for odd in [
            json!("text"),
            json!([1]),
            json!(5),
            json!(null),
            json!(true),
        ] {
            let object = json!({"metadata": odd});
            assert_eq!(parsed(&object), object);
        }
    }

    #[test]
    fn a_value_that_is_not_an_object_is_parsed_as_it_is_for_the_checks_to_refuse() {
        for odd in [json!([1, 2]), json!("x"), json!(3)] {
            assert_eq!(parsed(&odd), odd);
        }
    }

    #[test]
    fn what_is_not_json_is_malformed() {
        for bad in [
            &b"{\"metadata\":"[..],
            b"{} trailing",
            b"{\"metadata\":{\"managedFields\":[}}",
        ] {
            assert!(matches!(
                parse_owner_json(bad),
                Err(DecodeError::Malformed(_))
            ));
        }
    }

    #[test]
    fn a_later_duplicate_key_wins_as_in_a_plain_parse() {
        let text = br#"{"metadata":{"name":"a","managedFields":[],"name":"b"},"spec":1,"spec":2}"#;
        let plain: Value = serde_json::from_slice(text).expect("parses");
        let mut wanted = plain;
        if let Some(meta) = wanted["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
        assert_eq!(parse_owner_json(text).expect("parses"), wanted);
    }
}
