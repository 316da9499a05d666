//! Reading and writing the `metadata` of JSON objects, and the random names and UIDs the server
//! generates.

use serde_json::{Map, Value};

/// Five random lowercase alphanumerics, as the real server appends to `generateName`.
/// (The real alphabet leaves out vowels and look-alikes; so does this one.)
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())]))
        .collect()
}

/// A random UUID-shaped string (version 4 layout).
pub fn random_uid() -> String {
    let v = fastrand::u128(..);
    let v = (v & !(0xf << 76)) | (0x4 << 76);
    let v = (v & !(0x3 << 62)) | (0x2 << 62);
    let hex = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// `metadata` as a mutable map, creating it (and replacing a non-object) when needed.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = match obj {
        Value::Object(m) => m,
        _ => unreachable!("replaced above"),
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        _ => unreachable!("replaced above"),
    }
}

/// A string field of `metadata`, or `""`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

/// Whether `name` is a valid DNS subdomain name (what most kinds require).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

/// The uid of the controlling owner (`ownerReferences[].controller == true`), if any.
pub fn controller_uid(obj: &Value) -> Option<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"].as_bool() == Some(true))
        .and_then(|o| o["uid"].as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_uids_look_like_uuids_and_differ() {
        let a = random_uid();
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
        assert_ne!(a, random_uid());
    }

    #[test]
    fn names_are_validated_as_dns_subdomains() {
        assert!(valid_name("web-1.x"));
        assert!(!valid_name("Web"));
        assert!(!valid_name("-a"));
        assert!(!valid_name(""));
    }
}
