//! Small helpers for reading and writing the `metadata` of JSON objects, timestamps and random names.

use serde_json::{Map, Value};

thread_local! {
    /// A wall clock this thread's writes stamp instead of the system's (Unix seconds): the
    /// deterministic simulation (`sim/`) runs the store on virtual time.
    static WALL_CLOCK: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
    /// A monotonic clock the oracle reads on this thread instead of the system's, for the
    /// same reason.
    static MONOTONIC_CLOCK: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Makes the oracle on this thread read `now` as the monotonic time (`None`: the system's).
pub fn set_monotonic_clock(now: Option<std::time::Instant>) {
    MONOTONIC_CLOCK.with(|c| c.set(now));
}

/// The monotonic time as the oracle reads it: the system's, or the one
/// [`set_monotonic_clock`] set.
pub fn monotonic_now() -> std::time::Instant {
    MONOTONIC_CLOCK
        .with(std::cell::Cell::get)
        .unwrap_or_else(std::time::Instant::now)
}

/// Stamps timestamps written on this thread with `unix_secs` instead of the system clock
/// (`None`: the system clock again). For a simulation that runs the store on virtual time, so
/// that decisions reading timestamps (a Pod's age, how long it has been ready) replay exactly.
pub fn set_wall_clock(unix_secs: Option<i64>) {
    WALL_CLOCK.with(|c| c.set(unix_secs));
}

/// Now, as timestamps are written: the system clock, or the one [`set_wall_clock`] set.
pub fn now_timestamp() -> jiff::Timestamp {
    WALL_CLOCK
        .with(std::cell::Cell::get)
        .and_then(|secs| jiff::Timestamp::from_second(secs).ok())
        .unwrap_or_else(jiff::Timestamp::now)
}

/// The current UTC time as an RFC 3339 timestamp with seconds precision, e.g. `2026-01-01T00:00:00Z`.
pub fn now_rfc3339() -> String {
    now_timestamp().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

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

    #[test]
    fn timestamps_are_rfc3339_utc_seconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20);
        assert!(t.ends_with('Z'));
    }
}
