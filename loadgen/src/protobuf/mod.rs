//! Kubernetes protobuf as the simulated API servers write it: a Pod's JSON written as its
//! `k8s.io.api.core.v1.Pod` message field by field from [`schema`], the `k8s\0` +
//! `runtime.Unknown` envelope, lists and length-delimited watch frames. Written apart from the
//! manager's reader (which lives in the engine) so each checks the other; the tests check both
//! against k8s-pb, kube-rs's types generated from Kubernetes' own `.proto` files.
//!
//! A Pod with a field the schema has no number for, or a field of the wrong JSON type, is not
//! written (an error names the field): an API server never holds such a Pod, and the
//! simulated one then answers in JSON, as a real one does for what it cannot write in protobuf.

pub mod schema;

use schema::{Field, Kind};
use serde_json::{Map, Value};

/// The media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a watch.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a JSON object could not be written as protobuf.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A field without a protobuf number in the schema.
    #[error("{0}: no protobuf field number for it")]
    UnknownField(String),
    /// A value of the wrong JSON type.
    #[error("{path}: expected {expected}")]
    WrongType {
        /// Where.
        path: String,
        /// What the schema wants.
        expected: &'static str,
    },
}

#[derive(Default)]
struct Writer(Vec<u8>);

/// Appends `v` as a varint.
pub(crate) fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many bytes `v` takes as a varint.
pub(crate) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

impl Writer {
    fn varint(&mut self, v: u64) {
        write_varint(&mut self.0, v);
    }
    fn int(&mut self, tag: u32, v: i64) {
        self.varint(u64::from(tag) << 3);
        self.varint(v as u64);
    }
    fn bytes(&mut self, tag: u32, b: &[u8]) {
        self.varint((u64::from(tag) << 3) | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
}

/// Where a field sits, built into text only for an error.
#[derive(Clone, Copy)]
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    name: &'a str,
    index: Option<usize>,
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(parent) = self.parent {
            write!(f, "{parent}.")?;
        }
        f.write_str(self.name)?;
        match self.index {
            Some(i) => write!(f, "[{i}]"),
            None => Ok(()),
        }
    }
}

impl<'a> Path<'a> {
    const ROOT: Path<'static> = Path {
        parent: None,
        name: "",
        index: None,
    };

    fn child(&'a self, name: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            name,
            index: None,
        }
    }

    fn item(self, index: usize) -> Path<'a> {
        Path {
            index: Some(index),
            ..self
        }
    }
}

fn wrong(path: &Path<'_>, expected: &'static str) -> EncodeError {
    EncodeError::WrongType {
        path: path.to_string(),
        expected,
    }
}

fn knows(schema: &[Field], key: &str) -> bool {
    schema.iter().any(|(name, _, kind)| match kind {
        Kind::Inline(inner) => knows(inner, key),
        _ => *name == key,
    })
}

/// The message of `object` by `schema`; keys in `ignored` are left out (a Pod's `apiVersion`
/// and `kind`, which its `runtime.Unknown` carries).
fn message(
    object: &Map<String, Value>,
    schema: &[Field],
    path: &Path<'_>,
    ignored: &[&str],
) -> Result<Vec<u8>, EncodeError> {
    if let Some(key) = object
        .keys()
        .find(|k| !knows(schema, k) && !ignored.contains(&k.as_str()))
    {
        return Err(EncodeError::UnknownField(path.child(key).to_string()));
    }
    let mut w = Writer::default();
    fields(object, schema, path, &mut w)?;
    Ok(w.0)
}

fn fields(
    object: &Map<String, Value>,
    schema: &[Field],
    path: &Path<'_>,
    w: &mut Writer,
) -> Result<(), EncodeError> {
    for (name, tag, kind) in schema {
        if let Kind::Inline(inner) = kind {
            if inner
                .iter()
                .any(|(n, ..)| object.get(*n).is_some_and(|v| !v.is_null()))
            {
                let mut nested = Writer::default();
                fields(object, inner, path, &mut nested)?;
                w.bytes(*tag, &nested.0);
            }
            continue;
        }
        match object.get(*name) {
            None | Some(Value::Null) => {}
            Some(value) => field(value, *tag, *kind, &path.child(name), w)?,
        }
    }
    Ok(())
}

fn time(value: &Value, path: &Path<'_>) -> Result<Vec<u8>, EncodeError> {
    let stamp: jiff::Timestamp = value
        .as_str()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| wrong(path, "an RFC 3339 time"))?;
    let mut w = Writer::default();
    w.int(1, stamp.as_second());
    w.int(2, i64::from(stamp.subsec_nanosecond()));
    Ok(w.0)
}

fn map_entries(
    value: &Value,
    tag: u32,
    path: &Path<'_>,
    w: &mut Writer,
    quantity: bool,
) -> Result<(), EncodeError> {
    let map = value.as_object().ok_or_else(|| wrong(path, "an object"))?;
    for (key, v) in map {
        let text = v.as_str().ok_or_else(|| wrong(path, "string values"))?;
        let mut entry = Writer::default();
        entry.bytes(1, key.as_bytes());
        if quantity {
            let mut q = Writer::default();
            q.bytes(1, text.as_bytes());
            entry.bytes(2, &q.0);
        } else {
            entry.bytes(2, text.as_bytes());
        }
        w.bytes(tag, &entry.0);
    }
    Ok(())
}

fn field(
    value: &Value,
    tag: u32,
    kind: Kind,
    path: &Path<'_>,
    w: &mut Writer,
) -> Result<(), EncodeError> {
    match kind {
        Kind::Str => w.bytes(
            tag,
            value
                .as_str()
                .ok_or_else(|| wrong(path, "a string"))?
                .as_bytes(),
        ),
        Kind::Int => w.int(
            tag,
            value.as_i64().ok_or_else(|| wrong(path, "an integer"))?,
        ),
        Kind::Bool => w.int(
            tag,
            i64::from(value.as_bool().ok_or_else(|| wrong(path, "a bool"))?),
        ),
        Kind::Time => w.bytes(tag, &time(value, path)?),
        Kind::Strings => {
            for item in value.as_array().ok_or_else(|| wrong(path, "an array"))? {
                w.bytes(
                    tag,
                    item.as_str()
                        .ok_or_else(|| wrong(path, "strings"))?
                        .as_bytes(),
                );
            }
        }
        Kind::StrMap => map_entries(value, tag, path, w, false)?,
        Kind::QuantityMap => map_entries(value, tag, path, w, true)?,
        Kind::RawJson => {
            // FieldsV1's Raw: the JSON object's bytes, as the API server keeps them.
            let raw = serde_json::to_vec(value).map_err(|_| wrong(path, "JSON"))?;
            let mut fields_v1 = Writer::default();
            fields_v1.bytes(1, &raw);
            w.bytes(tag, &fields_v1.0);
        }
        Kind::Msg(schema) => {
            let object = value.as_object().ok_or_else(|| wrong(path, "an object"))?;
            w.bytes(tag, &message(object, schema, path, &[])?);
        }
        Kind::Msgs(schema) => {
            let items = value.as_array().ok_or_else(|| wrong(path, "an array"))?;
            for (i, item) in items.iter().enumerate() {
                let path = path.item(i);
                let object = item.as_object().ok_or_else(|| wrong(&path, "an object"))?;
                w.bytes(tag, &message(object, schema, &path, &[])?);
            }
        }
        Kind::Inline(_) => {}
    }
    Ok(())
}

/// A Pod's message (without envelope: as a list item), from its JSON.
pub fn encode_pod(pod: &Value) -> Result<Vec<u8>, EncodeError> {
    let object = pod
        .as_object()
        .ok_or_else(|| wrong(&Path::ROOT, "an object"))?;
    message(object, schema::POD, &Path::ROOT, &["apiVersion", "kind"])
}

/// `k8s\0` and a `runtime.Unknown` of `api_version`/`kind` around `raw`.
pub fn wrap(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Writer::default();
    type_meta.bytes(1, api_version.as_bytes());
    type_meta.bytes(2, kind.as_bytes());
    let mut unknown = Writer::default();
    unknown.bytes(1, &type_meta.0);
    unknown.bytes(2, raw);
    unknown.bytes(3, b"");
    unknown.bytes(4, b"");
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&unknown.0);
    out
}

/// A list (`PodList`): its ListMeta and the items' messages.
pub fn list(resource_version: &str, continue_token: Option<&str>, items: &[&[u8]]) -> Vec<u8> {
    let mut meta = Writer::default();
    meta.bytes(1, b"");
    meta.bytes(2, resource_version.as_bytes());
    meta.bytes(3, continue_token.unwrap_or("").as_bytes());
    let mut list = Writer(Vec::with_capacity(
        items.iter().map(|i| i.len() + 4).sum::<usize>() + 64,
    ));
    list.bytes(1, &meta.0);
    for item in items {
        list.bytes(2, item);
    }
    list.0
}

/// One watch frame: the 4-byte length, then a `WatchEvent` of `kind` around `object` (an
/// object as [`wrap`] writes it).
pub fn watch_frame(kind: &str, object: &[u8]) -> Vec<u8> {
    let mut extension = Writer::default();
    extension.bytes(1, object);
    let mut event = Writer::default();
    event.bytes(1, kind.as_bytes());
    event.bytes(2, &extension.0);
    let mut out = (event.0.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&event.0);
    out
}

/// The bytes of a length-delimited field of `len` bytes, key and length included.
fn field_len(tag: u32, len: usize) -> usize {
    varint_len(u64::from(tag) << 3 | 2) + varint_len(len as u64) + len
}

/// [`watch_frame`] of `kind` around [`wrap`]`("v1", "Pod", pod)`, written in one buffer with
/// one copy of the Pod's message (the bench server's churn writes one per event).
pub fn pod_watch_frame(kind: &str, pod: &[u8]) -> Vec<u8> {
    let type_meta_len = field_len(1, 2) + field_len(2, 3);
    let unknown_len = field_len(1, type_meta_len) + field_len(2, pod.len()) + 2 * field_len(3, 0);
    let raw_len = MAGIC.len() + unknown_len;
    let extension_len = field_len(1, raw_len);
    let event_len = field_len(1, kind.len()) + field_len(2, extension_len);
    let mut w = Writer(Vec::with_capacity(4 + event_len));
    w.0.extend_from_slice(&(event_len as u32).to_be_bytes());
    w.bytes(1, kind.as_bytes());
    w.varint(2 << 3 | 2);
    w.varint(extension_len as u64);
    w.varint(1 << 3 | 2);
    w.varint(raw_len as u64);
    w.0.extend_from_slice(MAGIC);
    w.varint(1 << 3 | 2);
    w.varint(type_meta_len as u64);
    w.bytes(1, b"v1");
    w.bytes(2, b"Pod");
    w.bytes(2, pod);
    w.bytes(3, b"");
    w.bytes(4, b"");
    w.0
}

/// A Pod carrying only a resourceVersion: what a protobuf BOOKMARK carries.
pub fn bookmark_pod(resource_version: &str) -> Vec<u8> {
    let mut meta = Writer::default();
    meta.bytes(6, resource_version.as_bytes());
    let mut pod = Writer::default();
    pod.bytes(1, &meta.0);
    wrap("v1", "Pod", &pod.0)
}

/// A `metav1.Status` wrapped as an object.
pub fn status(code: u16, reason: &str, message: &str) -> Vec<u8> {
    let mut w = Writer::default();
    w.bytes(1, b"");
    w.bytes(2, b"Failure");
    w.bytes(3, message.as_bytes());
    w.bytes(4, reason.as_bytes());
    w.int(6, i64::from(code));
    wrap("v1", "Status", &w.0)
}

/// A JSON watch event (`{"type":..,"object":..}`, one line) as one protobuf watch frame: a
/// Status stays a Status, any other object is written as a Pod.
pub fn frame_from_json_event(line: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let event: Value =
        serde_json::from_slice(line).map_err(|_| wrong(&Path::ROOT.child("event"), "JSON"))?;
    let kind = event["type"]
        .as_str()
        .ok_or_else(|| wrong(&Path::ROOT.child("type"), "a string"))?;
    let object = &event["object"];
    let wrapped = if object["kind"] == "Status" {
        let code = object["code"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(500);
        let text = |k: &str| object[k].as_str().unwrap_or("").to_string();
        status(code, &text("reason"), &text("message"))
    } else {
        wrap("v1", "Pod", &encode_pod(object)?)
    };
    Ok(watch_frame(kind, &wrapped))
}

/// Whether an `Accept` header asks for protobuf before JSON (KCM sends
/// `application/vnd.kubernetes.protobuf, application/json`).
pub fn prefers_protobuf(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept
            .split(',')
            .next()
            .is_some_and(|first| first.trim().starts_with(MEDIA_TYPE))
    })
}

/// Whether an `Accept` header takes JSON at all (a client asking for protobuf only gets 406
/// for what cannot be written in protobuf).
pub fn accepts_json(accept: Option<&str>) -> bool {
    accept.is_none_or(|accept| {
        accept.split(',').any(|t| {
            let t = t.trim();
            t.starts_with("application/json")
                || t.starts_with("*/*")
                || t.starts_with("application/*")
        })
    })
}

#[cfg(test)]
mod tests;
