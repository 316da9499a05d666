//! The metadata every projection reads (identity, resourceVersion, generation, deletion, the
//! controlling ownerReference), decoded from JSON, and why an object cannot be decoded at all.

use crate::intern;
use crate::key::{ObjectKey, Uid};
use crate::rv::ResourceVersion;
use crate::views::checked::{Checker, Field};
use serde_json::Value;
use std::sync::Arc;

/// Why a JSON object could not be projected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A field every object must carry is absent.
    #[error("object has no {0}")]
    Missing(&'static str),
    /// The JSON does not have the shape of the resource.
    #[error("malformed object: {0}")]
    Malformed(String),
}

/// A controller ownerReference, trimmed to what routing and ownership need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    /// The owner's kind (`ReplicaSet`, `Job`, ...).
    pub kind: Arc<str>,
    /// The owner's name, in the dependent's namespace.
    pub name: Arc<str>,
    /// The owner's UID.
    pub uid: Uid,
}

/// The metadata every projection reads.
pub(crate) struct Meta {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion as sent, if present.
    pub resource_version_text: Option<String>,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.generation (0 if absent).
    pub generation: i64,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
}

/// Parses JSON bytes, a syntax error being [`DecodeError::Malformed`].
pub(crate) fn parse_json(bytes: &[u8]) -> Result<Value, DecodeError> {
    serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))
}

/// Reads an object's identity (an error if it has none) and the metadata every projection
/// keeps (recorded in `c` if unusable).
pub(crate) fn read_meta(value: &Value, c: &mut Checker) -> Result<Meta, DecodeError> {
    let Value::Object(root) = value else {
        return Err(DecodeError::Malformed(
            "the object is not a JSON object".into(),
        ));
    };
    let meta = match root.get("metadata") {
        None | Some(Value::Null) => return Err(DecodeError::Missing("metadata.name")),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(DecodeError::Malformed("metadata is not an object".into())),
    };
    let text = |field: &'static str, missing: DecodeError| match meta.get(field) {
        None | Some(Value::Null) => Err(missing),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(_) => Err(DecodeError::Malformed(format!(
            "metadata.{field} is not a string"
        ))),
    };
    let name = text("name", DecodeError::Missing("metadata.name"))?;
    let uid = text("uid", DecodeError::Missing("metadata.uid"))?;
    let namespace = match text("namespace", DecodeError::Missing("metadata.namespace")) {
        Ok(ns) => ns,
        Err(DecodeError::Missing(_)) => "",
        Err(e) => return Err(e),
    };
    let root_field = Field::root(value);
    let resource_version_text = root_field
        .get(c, "metadata.resourceVersion")
        .string(c)
        .map(str::to_string);
    let generation = root_field
        .get(c, "metadata.generation")
        .int64(c, 0)
        .unwrap_or(0);
    let deletion = root_field.get(c, "metadata.deletionTimestamp");
    c.timestamp(&deletion);
    Ok(Meta {
        key: ObjectKey::new(intern::string(namespace), name),
        uid: Uid::new(uid),
        resource_version: resource_version_text
            .as_deref()
            .and_then(|v| ResourceVersion::parse(v).ok()),
        resource_version_text,
        generation,
        terminating: deletion.is_present(),
    })
}

/// The ownerReference with `controller: true`, every reference checked (upstream allows at most
/// one controller).
pub(crate) fn controller_ref(root: &Field<'_>, c: &mut Checker) -> Option<OwnerRef> {
    let mut found: Option<OwnerRef> = None;
    for r in root.get(c, "metadata.ownerReferences").items(c) {
        c.object(&r);
        let mut required = |name: &str| {
            let field = r.get(c, name);
            let value = c.string(&field);
            if value.is_none() && !field.is_present() && r.is_present() {
                c.record(field.path(), "Required value".into());
            }
            value
        };
        let (kind, name, uid) = (required("kind"), required("name"), required("uid"));
        let controller_field = r.get(c, "controller");
        if c.boolean(&controller_field) != Some(true) {
            continue;
        }
        if found.is_some() {
            c.record(
                controller_field.path(),
                "Only one reference can have Controller set to true".into(),
            );
            continue;
        }
        if let (Some(kind), Some(name), Some(uid)) = (kind, name, uid) {
            found = Some(OwnerRef {
                kind: intern::string(kind),
                name: intern::string(name),
                uid: Uid::new(uid),
            });
        }
    }
    found
}
