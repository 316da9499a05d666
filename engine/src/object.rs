//! What the shard caches: compact projections of each resource, decoded straight from JSON, and
//! the metadata every projection reads.
//!
//! Controllers declare what they read; everything else in the object is skipped while decoding.
//! A field they read that is present with the wrong type or out of range does not fail the
//! decode: the object is cached [malformed](crate::malformed) and no controller acts on it.
//! Only an object without a readable identity (name, uid) is a [`DecodeError`].

use crate::checked::{Checker, Field};
use crate::key::{ObjectKey, Uid};
use crate::malformed::Malformed;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use serde_json::Value;
use std::sync::Arc;

pub use crate::pod_view::{COMPLETION_INDEX_ANNOTATION, JOB_TRACKING_FINALIZER, PodPhase, PodView};
pub use crate::replicaset_view::{ReplicaSetStatus, ReplicaSetView};

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
        key: ObjectKey::new(namespace, name),
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
                kind: kind.into(),
                name: name.into(),
                uid: Uid::new(uid),
            });
        }
    }
    found
}

/// A cached object of any resource.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    /// A Pod.
    Pod(PodView),
    /// A ReplicaSet.
    ReplicaSet(ReplicaSetView),
    /// A Node.
    Node(crate::node_views::NodeView),
    /// A Lease.
    Lease(crate::node_views::LeaseView),
    /// A StatefulSet.
    StatefulSet(crate::statefulset_view::StatefulSetView),
    /// A Job.
    Job(crate::job_view::JobView),
    /// A DaemonSet.
    DaemonSet(crate::daemonset_view::DaemonSetView),
}

impl Object {
    /// The resource this object belongs to.
    pub fn resource(&self) -> Resource {
        match self {
            Object::Pod(_) => Resource::Pods,
            Object::ReplicaSet(_) => Resource::ReplicaSets,
            Object::Node(_) => Resource::Nodes,
            Object::Lease(_) => Resource::Leases,
            Object::StatefulSet(_) => Resource::StatefulSets,
            Object::Job(_) => Resource::Jobs,
            Object::DaemonSet(_) => Resource::DaemonSets,
        }
    }
    /// namespace/name.
    pub fn key(&self) -> &ObjectKey {
        match self {
            Object::Pod(p) => &p.key,
            Object::ReplicaSet(r) => &r.key,
            Object::Node(n) => &n.key,
            Object::Lease(l) => &l.key,
            Object::StatefulSet(s) => &s.key,
            Object::Job(j) => &j.key,
            Object::DaemonSet(d) => &d.key,
        }
    }
    /// metadata.uid.
    pub fn uid(&self) -> &Uid {
        match self {
            Object::Pod(p) => &p.uid,
            Object::ReplicaSet(r) => &r.uid,
            Object::Node(n) => &n.uid,
            Object::Lease(l) => &l.uid,
            Object::StatefulSet(s) => &s.uid,
            Object::Job(j) => &j.uid,
            Object::DaemonSet(d) => &d.uid,
        }
    }
    /// metadata.resourceVersion, when comparable.
    pub fn resource_version(&self) -> Option<ResourceVersion> {
        match self {
            Object::Pod(p) => p.resource_version,
            Object::ReplicaSet(r) => r.resource_version,
            Object::Node(n) => n.resource_version,
            Object::Lease(l) => l.resource_version,
            Object::StatefulSet(s) => s.resource_version,
            Object::Job(j) => j.resource_version,
            Object::DaemonSet(d) => d.resource_version,
        }
    }
    /// metadata.deletionTimestamp is set: the object is going away.
    pub fn is_terminating(&self) -> bool {
        match self {
            Object::Pod(p) => p.terminating,
            Object::ReplicaSet(r) => r.terminating,
            Object::Node(n) => n.terminating,
            Object::Lease(l) => l.terminating,
            Object::StatefulSet(s) => s.terminating,
            Object::Job(j) => j.terminating,
            Object::DaemonSet(d) => d.terminating,
        }
    }

    /// Why no controller may act on this object, if a field one reads is unusable. The informer
    /// counts and logs these; the object is cached all the same, so it is neither forgotten nor
    /// replaced.
    pub fn malformed(&self) -> Option<&Arc<Malformed>> {
        match self {
            Object::Pod(p) => p.malformed.as_ref(),
            Object::ReplicaSet(r) => r.malformed.as_ref(),
            Object::Node(n) => n.malformed.as_ref(),
            Object::Lease(l) => l.malformed.as_ref(),
            Object::StatefulSet(s) => s.malformed.as_ref(),
            Object::Job(j) => j.malformed.as_ref(),
            Object::DaemonSet(d) => d.malformed.as_ref(),
        }
    }

    /// `metadata.generation`, for objects whose spec changes bump it.
    pub fn generation(&self) -> Option<i64> {
        match self {
            Object::ReplicaSet(r) => Some(r.generation),
            Object::StatefulSet(s) => Some(s.generation),
            Object::DaemonSet(d) => Some(d.generation),
            Object::Pod(_) | Object::Node(_) | Object::Lease(_) | Object::Job(_) => None,
        }
    }

    /// The controlling ownerReference, if any.
    pub fn controller_ref(&self) -> Option<&OwnerRef> {
        match self {
            Object::Pod(p) => p.controller.as_ref(),
            Object::ReplicaSet(_)
            | Object::Node(_)
            | Object::Lease(_)
            | Object::StatefulSet(_)
            | Object::Job(_)
            | Object::DaemonSet(_) => None,
        }
    }
}

/// Builders for tests across the crate.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::labels::Labels;
    use serde_json::json;

    /// A ReplicaSet `name` with `replicas`, selector `app=name`, at resourceVersion 1.
    pub fn replicaset(namespace: &str, name: &str, replicas: i32) -> ReplicaSetView {
        replicaset_json(namespace, name, replicas, 1)
    }

    /// A ReplicaSet as JSON decodes it, at `rv`.
    pub fn replicaset_json(namespace: &str, name: &str, replicas: i32, rv: u64) -> ReplicaSetView {
        ReplicaSetView::from_value(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"),
                         "resourceVersion": rv.to_string(), "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .expect("valid replicaset")
    }

    /// A running, ready Pod `name` controlled by `rs`.
    pub fn pod_owned_by(rs: &ReplicaSetView, name: &str) -> PodView {
        pod(rs, name, 1, true)
    }

    /// A Pod controlled by `rs` at `rv`.
    pub fn pod(rs: &ReplicaSetView, name: &str, rv: u64, ready: bool) -> PodView {
        PodView {
            key: ObjectKey::new(rs.key.namespace(), name),
            uid: Uid::new(format!("uid-{name}")),
            resource_version: ResourceVersion::new(rv),
            labels: Labels::default(),
            controller: Some(OwnerRef {
                kind: "ReplicaSet".into(),
                name: rs.key.name().into(),
                uid: rs.uid.clone(),
            }),
            node_name: Some("node-0".into()),
            phase: PodPhase::Running,
            ready,
            ready_since: Some(0),
            restarts: 0,
            created: rv as i64,
            terminating: false,
            job_tracking: false,
            completion_index: None,
            malformed: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_without_identity_is_a_decode_error_and_odd_metadata_is_malformed() {
        let mut c = Checker::default();
        assert_eq!(
            read_meta(&json!([1]), &mut c).err(),
            Some(DecodeError::Malformed(
                "the object is not a JSON object".into()
            ))
        );
        assert_eq!(
            read_meta(&json!({"metadata": {"uid": "u"}}), &mut c).err(),
            Some(DecodeError::Missing("metadata.name"))
        );
        assert!(read_meta(&json!({"metadata": {"name": 5, "uid": "u"}}), &mut c).is_err());
        let meta = read_meta(
            &json!({"metadata": {"name": "a", "uid": "u", "generation": -1,
                                  "deletionTimestamp": "yesterday"}}),
            &mut c,
        )
        .expect("identity is readable");
        assert!(
            meta.terminating,
            "a deletionTimestamp is there, readable or not"
        );
        let m = c.finish().expect("malformed");
        let paths: Vec<_> = m.fields().iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["metadata.generation", "metadata.deletionTimestamp"]);
    }

    #[test]
    fn two_controller_references_make_a_pod_malformed() {
        let value = json!({"metadata": {"ownerReferences": [
            {"kind": "ReplicaSet", "name": "a", "uid": "1", "controller": true},
            {"kind": "ReplicaSet", "name": "b", "uid": "2", "controller": true}]}});
        let mut c = Checker::default();
        let owner = controller_ref(&Field::root(&value), &mut c).expect("the first one");
        assert_eq!(&*owner.name, "a");
        assert!(!c.is_clean());
    }
}
