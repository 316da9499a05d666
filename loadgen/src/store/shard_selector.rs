//! KEP-5866's server-side sharded list and watch (alpha in Kubernetes v1.36, feature gate
//! `ShardedListAndWatch`): the `shardSelector` parameter,
//! `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`, several joined
//! by `||`. An object is selected when the 64-bit FNV-1a hash of the named field (its UID or its
//! namespace, `""` for a cluster-scoped object) lies in one range, start inclusive, end
//! exclusive; an end of `0x10000000000000000` closes the ring. The list echoes the selector in
//! `metadata.shardInfo.selector`, which tells a client the server filtered.

use serde_json::Value;

use crate::apiserver::status::ApiError;

/// The fields a range may hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardField {
    /// `object.metadata.uid`.
    Uid,
    /// `object.metadata.namespace`.
    Namespace,
}

impl ShardField {
    fn value(self, object: &Value) -> &str {
        let key = match self {
            ShardField::Uid => "uid",
            ShardField::Namespace => "namespace",
        };
        object["metadata"][key].as_str().unwrap_or("")
    }
}

/// One `shardRange(field, start, end)`: hashes in `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardRange {
    /// What is hashed.
    pub field: ShardField,
    /// The first hash selected.
    pub start: u64,
    /// The first hash past the range (up to 2^64).
    pub end: u128,
}

/// A parsed `shardSelector`: the ranges, ORed, and the text as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSelector {
    text: String,
    ranges: Vec<ShardRange>,
}

/// 64-bit FNV-1a, the hash KEP-5866 names.
pub fn fnv1a64(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn invalid(text: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("shardSelector: Invalid value: \"{text}\": {why}"))
}

/// `'0x…'` or `"0x…"`: one to 16 hex digits, or exactly 2^64 (the ring's end).
fn bound(token: &str, text: &str) -> Result<u128, ApiError> {
    let token = token.trim();
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| token.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
        .ok_or_else(|| {
            invalid(
                text,
                "a bound must be a quoted hex string such as '0x8000000000000000'",
            )
        })?;
    let digits = unquoted
        .strip_prefix("0x")
        .ok_or_else(|| invalid(text, "a bound must start with 0x"))?;
    if digits.is_empty() || digits.len() > 17 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(invalid(text, "a bound must be 64-bit hex"));
    }
    let value = u128::from_str_radix(digits, 16)
        .map_err(|_| invalid(text, "a bound must be 64-bit hex"))?;
    if value > 1u128 << 64 {
        return Err(invalid(text, "a bound must not pass 0x10000000000000000"));
    }
    Ok(value)
}

fn range(call: &str, text: &str) -> Result<ShardRange, ApiError> {
    let args = call
        .trim()
        .strip_prefix("shardRange")
        .map(str::trim_start)
        .and_then(|c| c.strip_prefix('('))
        .and_then(|c| c.strip_suffix(')'))
        .ok_or_else(|| invalid(text, "expected shardRange(field, start, end) joined by ||"))?;
    let parts: Vec<&str> = args.split(',').collect();
    let [field, start, end] = parts.as_slice() else {
        return Err(invalid(text, "shardRange takes a field and two bounds"));
    };
    let field = match field.trim() {
        "object.metadata.uid" => ShardField::Uid,
        "object.metadata.namespace" => ShardField::Namespace,
        other => {
            return Err(invalid(
                text,
                &format!(
                    "unsupported field {other}: object.metadata.uid or object.metadata.namespace"
                ),
            ));
        }
    };
    let start = bound(start, text)?;
    let end = bound(end, text)?;
    let start = u64::try_from(start).map_err(|_| invalid(text, "the start must be below 2^64"))?;
    if u128::from(start) >= end {
        return Err(invalid(text, "the start must be below the end"));
    }
    Ok(ShardRange { field, start, end })
}

impl ShardSelector {
    /// Parses the parameter; anything else than ranges joined by `||` is a 400.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        if text.trim().is_empty() {
            return Err(invalid(text, "must not be empty"));
        }
        let ranges = text
            .split("||")
            .map(|call| range(call, text))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            text: text.to_string(),
            ranges,
        })
    }

    /// Whether `object` falls in one of the ranges.
    pub fn matches(&self, object: &Value) -> bool {
        self.ranges.iter().any(|r| {
            let hash = u128::from(fnv1a64(r.field.value(object)));
            u128::from(r.start) <= hash && hash < r.end
        })
    }

    /// The selector as the client sent it (echoed in `metadata.shardInfo.selector`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The ranges, ORed.
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ns: &str, uid: &str) -> Value {
        json!({"metadata": {"namespace": ns, "name": "p", "uid": uid}})
    }

    #[test]
    fn fnv1a_of_the_empty_string_is_its_offset_basis_and_of_a_is_the_published_value() {
        assert_eq!(fnv1a64(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn two_halves_of_the_ring_split_every_object_between_them_exactly_once() {
        let low = ShardSelector::parse(
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
        )
        .expect("low half");
        let high = ShardSelector::parse(
            "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
        )
        .expect("high half");
        let mut in_low = 0;
        for i in 0..200 {
            let object = pod(&format!("ns-{i}"), &format!("uid-{i}"));
            assert_ne!(low.matches(&object), high.matches(&object), "ns-{i}");
            in_low += usize::from(low.matches(&object));
        }
        assert!(
            (60..140).contains(&in_low),
            "{in_low} of 200 in the low half"
        );
    }

    #[test]
    fn ranges_joined_by_or_select_the_union_and_uid_ranges_hash_the_uid() {
        let object = pod("ns", "4f1c7a0e-1d2b-4c3d-9e8f-0a1b2c3d4e5f");
        let hash = fnv1a64("4f1c7a0e-1d2b-4c3d-9e8f-0a1b2c3d4e5f");
        let around = format!(
            "shardRange(object.metadata.uid, '0x{:016x}', '0x{:016x}')",
            hash,
            u128::from(hash) + 1
        );
        let elsewhere = if hash >= 1 << 63 {
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')"
        } else {
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
        };
        assert!(
            ShardSelector::parse(&around)
                .expect("one hash")
                .matches(&object)
        );
        assert!(
            !ShardSelector::parse(elsewhere)
                .expect("the other half")
                .matches(&object)
        );
        let both = format!("{elsewhere} || {around}");
        assert!(ShardSelector::parse(&both).expect("union").matches(&object));
    }

    #[test]
    fn malformed_selectors_are_bad_requests_that_say_what_is_wrong() {
        for (text, says) in [
            ("", "empty"),
            (
                "shardRange(object.metadata.name, '0x0', '0x1')",
                "unsupported field",
            ),
            ("shardRange(object.metadata.uid, 0x0, '0x1')", "quoted"),
            ("shardRange(object.metadata.uid, '0', '0x1')", "0x"),
            (
                "shardRange(object.metadata.uid, '0xzz', '0x1')",
                "64-bit hex",
            ),
            (
                "shardRange(object.metadata.uid, '0x8', '0x8')",
                "below the end",
            ),
            (
                "shardRange(object.metadata.uid, '0x0', '0x10000000000000001')",
                "must not pass",
            ),
            ("shardRange(object.metadata.uid, '0x0')", "two bounds"),
            (
                "shardRange(object.metadata.uid, '0x0', '0x1') && x",
                "expected shardRange",
            ),
        ] {
            let error = ShardSelector::parse(text).expect_err(text);
            assert_eq!(error.code(), 400, "{text}");
            assert!(error.to_string().contains(says), "{text}: {error}");
        }
    }
}
