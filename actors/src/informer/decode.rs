//! One object of a list page or watch event decoded into the engine's view of its resource, and
//! the namespace/name of one that cannot be, for the log line that reports it.

use serde_json::value::RawValue;
use tidemark_engine::{DecodeError, Object, Resource};

/// Decodes one object of `resource` from its JSON. The flag is true when it had to be read
/// leniently (a field of the wrong type).
pub fn decode(resource: Resource, raw: &RawValue) -> Result<(Object, bool), DecodeError> {
    Object::decode(resource, raw.get().as_bytes())
}

/// The namespace/name of an object that could not be decoded, for the error log: the only
/// part of the object a log line shows.
pub fn describe(raw: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(default)]
        metadata: serde_json::Map<String, serde_json::Value>,
    }
    serde_json::from_str::<Meta>(raw).map_or_else(
        |_| "<unreadable>".to_string(),
        |m| {
            let get = |k: &str| {
                m.metadata
                    .get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or("?")
                    .to_string()
            };
            format!("{}/{}", get("namespace"), get("name"))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undecodable_object_is_named_by_its_key_only() {
        let raw = r#"{"metadata":{"namespace":"demo","name":"web"},"spec":{"x":"hunter2"}}"#;
        assert_eq!(describe(raw), "demo/web");
        assert_eq!(describe("not json"), "<unreadable>");
    }
}
