//! What the shard caches: compact projections of each resource, decoded straight from JSON, and
//! the metadata every projection reads.
//!
//! Controllers declare what they read; everything else in the object is skipped while decoding.
//! A field they read that is present with the wrong type or out of range does not fail the
//! decode: the object is cached [malformed](crate::views::malformed) and no controller acts on it.
//! Only an object without a readable identity (name, uid) is a [`DecodeError`].

use crate::key::{ObjectKey, Uid};
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::views::malformed::Malformed;
use std::sync::Arc;

pub use crate::views::custom::CustomObject;
pub use crate::views::meta::{DecodeError, OwnerRef};
pub use crate::views::pod::{
    COMPLETION_INDEX_ANNOTATION, INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, IndexFailures, JOB_TRACKING_FINALIZER, PodPhase,
    PodView,
};
pub use crate::views::replicaset::{ReplicaSetStatus, ReplicaSetView};

/// A cached object of any resource.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    /// A Pod.
    Pod(PodView),
    /// A ReplicaSet.
    ReplicaSet(ReplicaSetView),
    /// A Node.
    Node(crate::views::nodes::NodeView),
    /// A Lease.
    Lease(crate::views::nodes::LeaseView),
    /// A StatefulSet.
    StatefulSet(crate::views::statefulset::StatefulSetView),
    /// A Job.
    Job(crate::views::job::JobView),
    /// A DaemonSet.
    DaemonSet(crate::views::daemonset::DaemonSetView),
    /// An object of a resource a user registered.
    Custom(CustomObject),
}

impl Object {
    /// Decodes one object of `resource` from its JSON, as the informer reads list pages and
    /// watch events. The flag is true when it had to be read leniently (a Pod field of the
    /// wrong type).
    pub fn decode(resource: Resource, bytes: &[u8]) -> Result<(Object, bool), DecodeError> {
        use crate::views::{daemonset, job, nodes, statefulset};
        let strict = |o: Object| (o, false);
        match resource {
            Resource::Pods => PodView::decode(bytes).map(|(p, lenient)| (Object::Pod(p), lenient)),
            Resource::ReplicaSets => {
                ReplicaSetView::from_json(bytes).map(|r| strict(Object::ReplicaSet(r)))
            }
            Resource::Nodes => nodes::NodeView::from_json(bytes).map(|n| strict(Object::Node(n))),
            Resource::Leases => {
                nodes::LeaseView::from_json(bytes).map(|l| strict(Object::Lease(l)))
            }
            Resource::StatefulSets => statefulset::StatefulSetView::from_json(bytes)
                .map(|s| strict(Object::StatefulSet(s))),
            Resource::Jobs => job::JobView::from_json(bytes).map(|j| strict(Object::Job(j))),
            Resource::DaemonSets => {
                daemonset::DaemonSetView::from_json(bytes).map(|d| strict(Object::DaemonSet(d)))
            }
            _ => CustomObject::from_json(resource, bytes).map(|o| strict(Object::Custom(o))),
        }
    }

    /// Decodes one object of `resource` from its protobuf message. Pods only: the other
    /// resources are listed and watched as JSON (see [`Object::reads_protobuf`]).
    pub fn decode_protobuf(
        resource: Resource,
        bytes: &[u8],
    ) -> Result<(Object, bool), DecodeError> {
        match resource {
            Resource::Pods => {
                PodView::from_protobuf(bytes).map(|(p, flagged)| (Object::Pod(p), flagged))
            }
            other => Err(DecodeError::Malformed(format!(
                "{other} is not read from protobuf"
            ))),
        }
    }

    /// Whether objects of `resource` can be read from protobuf: the Pods, which are most of a
    /// cluster's objects and events.
    pub fn reads_protobuf(resource: Resource) -> bool {
        resource == Resource::Pods
    }

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
            Object::Custom(o) => o.resource,
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
            Object::Custom(o) => &o.key,
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
            Object::Custom(o) => &o.uid,
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
            Object::Custom(o) => o.resource_version,
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
            Object::Custom(o) => o.terminating,
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
            Object::Custom(o) => o.malformed.as_ref(),
        }
    }

    /// `metadata.generation`, for objects whose spec changes bump it.
    pub fn generation(&self) -> Option<i64> {
        match self {
            Object::ReplicaSet(r) => Some(r.generation),
            Object::StatefulSet(s) => Some(s.generation),
            Object::DaemonSet(d) => Some(d.generation),
            Object::Custom(o) => Some(o.generation),
            Object::Pod(_) | Object::Node(_) | Object::Lease(_) | Object::Job(_) => None,
        }
    }

    /// The controlling ownerReference, if any.
    pub fn controller_ref(&self) -> Option<&OwnerRef> {
        match self {
            Object::Pod(p) => p.controller.as_ref(),
            Object::Custom(o) => o.controller.as_ref(),
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
            labels: labels(&[("app", rs.key.name())]),
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
            index_failures: Default::default(),
            failure: None,
            malformed: None,
        }
    }

    /// Labels from pairs.
    pub fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// A running, ready Pod `name` with `pairs` as labels and no controller, at resourceVersion 1.
    pub fn orphan_pod(namespace: &str, name: &str, pairs: &[(&str, &str)]) -> PodView {
        let rs = replicaset(namespace, "nobody", 1);
        PodView {
            labels: labels(pairs),
            controller: None,
            ..pod(&rs, name, 1, true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::checked::{Checker, Field};
    use crate::views::meta::{controller_ref, read_meta};
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
