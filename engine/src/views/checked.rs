//! Reads the fields of a JSON object with their types and ranges checked, as kube-apiserver's
//! decoding and validation would have: a field that is absent (or `null`) takes its default, a
//! field present with the wrong type or out of range is recorded, and the caller turns the
//! record into [`Malformed`](crate::views::malformed::Malformed) instead of guessing a value.

use crate::views::malformed::{FieldError, Malformed};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// At most this many problems are kept per object (all are counted): a hostile object with a
/// million bad labels costs a few strings, not a million.
pub const MAX_KEPT_ERRORS: usize = 8;

/// A field of the object being read: its value, if present and not `null`, and its path
/// (`spec.template.metadata.labels`, `status.conditions[2].status`).
#[derive(Clone, Debug)]
pub struct Field<'v> {
    value: Option<&'v Value>,
    path: String,
}

impl<'v> Field<'v> {
    /// The whole object.
    pub fn root(value: &'v Value) -> Self {
        Self {
            value: Some(value),
            path: String::new(),
        }
    }

    /// The field's value, unchecked (for passing a sub-tree through whole).
    pub fn value(&self) -> Option<&'v Value> {
        self.value
    }

    /// The field's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the field is present and not `null`.
    pub fn is_present(&self) -> bool {
        self.value.is_some()
    }

    fn join(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        }
    }

    /// The child `name` (a dotted path such as `spec.replicas` walks several levels). A parent
    /// that is present but not an object is recorded as malformed; its children read as absent.
    pub fn get(&self, checker: &mut Checker, name: &str) -> Field<'v> {
        let mut field = self.clone();
        for part in name.split('.') {
            let value = match field.value {
                None => None,
                Some(Value::Object(map)) => map.get(part).filter(|v| !v.is_null()),
                Some(other) => {
                    checker.wrong(&field.path, other, "an object");
                    None
                }
            };
            field = Field {
                value,
                path: field.join(part),
            };
        }
        field
    }

    /// The elements of an array field, each with its path (`field[i]`); none if the field is
    /// absent or (recorded) not an array.
    pub fn items(&self, checker: &mut Checker) -> Vec<Field<'v>> {
        checker
            .array(self)
            .map(|items| {
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Field {
                        value: (!v.is_null()).then_some(v),
                        path: format!("{}[{i}]", self.path),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// [`Checker::object`] of this field.
    pub fn object(&self, c: &mut Checker) -> Option<&'v Map<String, Value>> {
        c.object(self)
    }
    /// [`Checker::array`] of this field.
    pub fn array(&self, c: &mut Checker) -> Option<&'v [Value]> {
        c.array(self)
    }
    /// [`Checker::string`] of this field.
    pub fn string(&self, c: &mut Checker) -> Option<&'v str> {
        c.string(self)
    }
    /// [`Checker::boolean`] of this field.
    pub fn boolean(&self, c: &mut Checker) -> Option<bool> {
        c.boolean(self)
    }
    /// [`Checker::int64`] of this field.
    pub fn int64(&self, c: &mut Checker, min: i64) -> Option<i64> {
        c.int64(self, min)
    }
    /// [`Checker::int32`] of this field.
    pub fn int32(&self, c: &mut Checker, min: i32) -> Option<i32> {
        c.int32(self, min)
    }
    /// [`Checker::one_of`] of this field.
    pub fn one_of(&self, c: &mut Checker, allowed: &[&str]) -> Option<&'v str> {
        c.one_of(self, allowed)
    }
    /// [`Checker::timestamp`] of this field.
    pub fn timestamp(&self, c: &mut Checker) -> Option<i64> {
        c.timestamp(self)
    }
    /// [`Checker::string_map`] of this field.
    pub fn string_map(&self, c: &mut Checker) -> BTreeMap<String, String> {
        c.string_map(self)
    }
    /// [`Checker::strings`] of this field.
    pub fn strings(&self, c: &mut Checker) -> Vec<String> {
        c.strings(self)
    }
    /// [`Checker::int_or_percent`] of this field.
    pub fn int_or_percent(&self, c: &mut Checker) -> Option<IntOrPercent> {
        c.int_or_percent(self)
    }
}

/// Collects the problems found while reading one object.
#[derive(Debug, Default)]
pub struct Checker {
    errors: Vec<FieldError>,
    total: usize,
}

/// `value` as shown in a message: its JSON, cut short.
fn shown(value: &Value) -> String {
    const LIMIT: usize = 64;
    let text = value.to_string();
    if text.len() <= LIMIT {
        return text;
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

impl Checker {
    /// Records that the field at `path` is unusable.
    pub fn record(&mut self, path: &str, problem: String) {
        if self.errors.iter().any(|e| e.path == path) {
            return;
        }
        self.total += 1;
        if self.errors.len() < MAX_KEPT_ERRORS {
            self.errors.push(FieldError {
                path: path.to_string(),
                problem,
            });
        }
    }

    fn wrong(&mut self, path: &str, value: &Value, expected: &str) {
        let path = if path.is_empty() { "<object>" } else { path };
        self.record(path, format!("must be {expected}, got {}", shown(value)));
    }

    /// Whether nothing was recorded.
    pub fn is_clean(&self) -> bool {
        self.total == 0
    }

    /// The problems found, if any, as one shared record.
    pub fn finish(self) -> Option<Arc<Malformed>> {
        (self.total > 0).then(|| Arc::new(Malformed::new(self.errors, self.total)))
    }

    /// An object field.
    pub fn object<'v>(&mut self, f: &Field<'v>) -> Option<&'v Map<String, Value>> {
        match f.value? {
            Value::Object(m) => Some(m),
            other => {
                self.wrong(&f.path, other, "an object");
                None
            }
        }
    }

    /// An array field.
    pub fn array<'v>(&mut self, f: &Field<'v>) -> Option<&'v [Value]> {
        match f.value? {
            Value::Array(a) => Some(a),
            other => {
                self.wrong(&f.path, other, "an array");
                None
            }
        }
    }

    /// A string field.
    pub fn string<'v>(&mut self, f: &Field<'v>) -> Option<&'v str> {
        match f.value? {
            Value::String(s) => Some(s),
            other => {
                self.wrong(&f.path, other, "a string");
                None
            }
        }
    }

    /// A boolean field.
    pub fn boolean(&mut self, f: &Field<'_>) -> Option<bool> {
        match f.value? {
            Value::Bool(b) => Some(*b),
            other => {
                self.wrong(&f.path, other, "a boolean");
                None
            }
        }
    }

    /// An int64 field of at least `min` (`3.0`, `"3"` and `1e3` are not integers, as in Go's
    /// decoder).
    pub fn int64(&mut self, f: &Field<'_>, min: i64) -> Option<i64> {
        self.integer(f, min, "an int64")
    }

    /// An int32 field of at least `min`.
    pub fn int32(&mut self, f: &Field<'_>, min: i32) -> Option<i32> {
        self.integer(f, min, "an int32")
    }

    fn integer<N>(&mut self, f: &Field<'_>, min: N, kind: &str) -> Option<N>
    where
        N: TryFrom<i64> + PartialOrd + std::fmt::Display,
    {
        let value = f.value?;
        let Some(n) = value.as_i64().and_then(|n| N::try_from(n).ok()) else {
            self.wrong(&f.path, value, kind);
            return None;
        };
        if n < min {
            self.record(
                &f.path,
                format!("{n}: must be greater than or equal to {min}"),
            );
            return None;
        }
        Some(n)
    }

    /// A string field that must be one of `allowed`.
    pub fn one_of<'v>(&mut self, f: &Field<'v>, allowed: &[&str]) -> Option<&'v str> {
        let s = self.string(f)?;
        if allowed.contains(&s) {
            Some(s)
        } else {
            self.record(
                &f.path,
                format!("unsupported value {s:?}: supported values: {allowed:?}"),
            );
            None
        }
    }

    /// An RFC 3339 timestamp field, as Unix seconds.
    pub fn timestamp(&mut self, f: &Field<'_>) -> Option<i64> {
        let text = self.string(f)?;
        let parsed = crate::time::parse_rfc3339(text);
        if parsed.is_none() {
            self.record(&f.path, format!("{text:?}: not an RFC 3339 time"));
        }
        parsed
    }

    /// A map of strings to strings (labels, annotations, a node selector).
    pub fn string_map(&mut self, f: &Field<'_>) -> BTreeMap<String, String> {
        let Some(map) = self.object(f) else {
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for (k, v) in map {
            match v {
                Value::String(s) => {
                    out.insert(k.clone(), s.clone());
                }
                other => self.wrong(&format!("{}[{k}]", f.path), other, "a string"),
            }
        }
        out
    }

    /// A list of strings.
    pub fn strings(&mut self, f: &Field<'_>) -> Vec<String> {
        f.items(self)
            .iter()
            .filter_map(|item| match item.value {
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => {
                    self.wrong(&item.path, other, "a string");
                    None
                }
                None => {
                    self.record(&item.path, "must be a string, got null".into());
                    None
                }
            })
            .collect()
    }

    /// An `IntOrString` field (`maxUnavailable`): a non-negative int32 or a percentage `N%`
    /// with `N` in 0..=100.
    pub fn int_or_percent(&mut self, f: &Field<'_>) -> Option<IntOrPercent> {
        let value = f.value?;
        match value {
            Value::String(s) => {
                let parsed = s
                    .strip_suffix('%')
                    .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|p| p.parse::<u32>().ok())
                    .filter(|p| *p <= 100);
                if parsed.is_none() {
                    self.record(
                        &f.path,
                        format!("{s:?}: must be an integer or a percentage between 0% and 100%"),
                    );
                }
                parsed.map(IntOrPercent::Percent)
            }
            _ => self
                .int32(f, 0)
                .map(|n| IntOrPercent::Int(n.unsigned_abs())),
        }
    }
}

/// An `IntOrString` count: absolute, or a percentage of a total.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    /// An absolute count.
    Int(u32),
    /// A percentage (0..=100).
    Percent(u32),
}

impl IntOrPercent {
    /// The count against `total`, a percentage rounded up (as upstream's `maxUnavailable`).
    pub fn scaled(self, total: usize) -> usize {
        match self {
            IntOrPercent::Int(n) => n as usize,
            IntOrPercent::Percent(p) => (total.saturating_mul(p as usize)).div_ceil(100),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_and_null_fields_are_absent_and_wrong_types_are_recorded_with_their_path() {
        let v = json!({"spec": {"replicas": "five", "minReadySeconds": null, "paused": 3}});
        let root = Field::root(&v);
        let mut c = Checker::default();
        assert_eq!(root.get(&mut c, "spec.replicas").int32(&mut c, 0), None);
        assert_eq!(
            root.get(&mut c, "spec.minReadySeconds").int32(&mut c, 0),
            None
        );
        assert_eq!(root.get(&mut c, "spec.absent").int32(&mut c, 0), None);
        assert_eq!(root.get(&mut c, "spec.paused").boolean(&mut c), None);
        let m = c.finish().expect("malformed");
        let text = m.to_string();
        assert!(text.contains("spec.replicas: must be an int32"), "{text}");
        assert!(text.contains("spec.paused: must be a boolean"), "{text}");
        assert_eq!(m.fields().len(), 2);
    }

    #[test]
    fn floats_numeric_strings_and_negatives_are_not_replica_counts() {
        for bad in [
            json!("five"),
            json!(3.0),
            json!("3"),
            json!(-2),
            json!(1u64 << 40),
        ] {
            let v = json!({"spec": {"replicas": bad}});
            let mut c = Checker::default();
            let f = Field::root(&v).get(&mut c, "spec.replicas");
            assert_eq!(c.int32(&f, 0), None, "{bad}");
            assert!(!c.is_clean(), "{bad}");
        }
    }

    #[test]
    fn a_parent_that_is_not_an_object_is_recorded_once() {
        let v = json!({"status": "not-an-object"});
        let mut c = Checker::default();
        let root = Field::root(&v);
        assert!(
            root.get(&mut c, "status.conditions")
                .items(&mut c)
                .is_empty()
        );
        assert!(!root.get(&mut c, "status.phase").is_present());
        let m = c.finish().expect("malformed");
        assert_eq!(m.fields().len(), 1);
        assert_eq!(m.fields()[0].path, "status");
    }

    #[test]
    fn a_flood_of_bad_fields_keeps_a_few_and_counts_all() {
        let labels: Map<String, Value> = (0..1000).map(|i| (format!("k{i}"), json!(i))).collect();
        let v = json!({"metadata": {"labels": labels}});
        let mut c = Checker::default();
        let f = Field::root(&v).get(&mut c, "metadata.labels");
        assert!(c.string_map(&f).is_empty());
        let m = c.finish().expect("malformed");
        assert_eq!(m.fields().len(), MAX_KEPT_ERRORS);
        assert_eq!(m.total(), 1000);
    }

    #[test]
    fn int_or_percent_takes_counts_and_percentages_only() {
        let mut c = Checker::default();
        for (v, want) in [
            (json!(2), Some(IntOrPercent::Int(2))),
            (json!("25%"), Some(IntOrPercent::Percent(25))),
            (json!("25"), None),
            (json!("101%"), None),
            (json!("-1%"), None),
            (json!(-1), None),
        ] {
            let doc = json!({ "m": v });
            let f = Field::root(&doc).get(&mut c, "m");
            assert_eq!(c.int_or_percent(&f), want, "{v}");
        }
        assert_eq!(IntOrPercent::Percent(25).scaled(10), 3);
    }
}
