//! What the shard caches: compact projections of Pods and ReplicaSets, decoded straight from JSON.
//!
//! Controllers declare what they read; everything else in the object is skipped while decoding.
//! A ReplicaSet also keeps its whole JSON, because status updates send the full object back (as
//! upstream does) and ReplicaSets are few next to their Pods.

use crate::key::{ObjectKey, Uid};
use crate::labels::{LabelSelector, Labels};
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::time::parse_rfc3339;
use serde::Deserialize;
use std::collections::BTreeMap;
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

/// A Pod phase.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodPhase {
    /// Accepted, not all containers running.
    Pending,
    /// The node lost contact.
    Unknown,
    /// Bound to a node, containers started.
    Running,
    /// All containers exited with success.
    Succeeded,
    /// All containers exited, at least one failed.
    Failed,
}

/// The part of a Pod the onboarded controllers read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodView {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.labels.
    pub labels: Labels,
    /// The ownerReference with `controller: true`.
    pub controller: Option<OwnerRef>,
    /// spec.nodeName.
    pub node_name: Option<Arc<str>>,
    /// status.phase.
    pub phase: PodPhase,
    /// The Ready condition is True.
    pub ready: bool,
    /// When the Ready condition last changed to its current value (Unix seconds).
    pub ready_since: Option<i64>,
    /// Sum of container restart counts.
    pub restarts: i32,
    /// metadata.creationTimestamp (Unix seconds, 0 if unreadable).
    pub created: i64,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// It carries the Job controller's `batch.kubernetes.io/job-tracking` finalizer.
    pub job_tracking: bool,
    /// Its `batch.kubernetes.io/job-completion-index` annotation, for Indexed Jobs.
    pub completion_index: Option<u32>,
}

/// The finalizer that keeps a finished Job Pod until its Job has counted it.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The annotation naming an Indexed Job Pod's completion index.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";

impl PodView {
    /// The key of this Pod's controlling owner, if it is of `kind` (owners of namespaced
    /// dependents live in the same namespace): the key a controller of `kind` reconciles.
    pub fn owner_key(&self, kind: &str) -> Option<ObjectKey> {
        self.controller
            .as_ref()
            .filter(|o| &*o.kind == kind)
            .map(|o| ObjectKey::new(self.key.namespace_arc().clone(), o.name.clone()))
    }

    /// Active as the ReplicaSet controller counts it: not terminal, not being deleted.
    pub fn is_active(&self) -> bool {
        !self.terminating && !matches!(self.phase, PodPhase::Succeeded | PodPhase::Failed)
    }

    /// Decodes a Pod from JSON bytes, skipping fields no controller reads.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::decode(bytes).map(|(pod, _)| pod)
    }

    /// Decodes a Pod; the flag is true when the fast strict decode failed and the object was read
    /// leniently (a field of the wrong type taken as absent). Only a Pod without a readable
    /// identity (name, uid, resourceVersion) is an error: one odd field must not hide a live Pod
    /// from its controller, which would then create a replacement.
    pub fn decode(bytes: &[u8]) -> Result<(Self, bool), DecodeError> {
        match serde_json::from_slice::<PodView>(bytes) {
            Ok(pod) => Ok((pod, false)),
            Err(strict) => {
                let value: serde_json::Value = serde_json::from_slice(bytes)
                    .map_err(|_| DecodeError::Malformed(strict.to_string()))?;
                lenient_pod(&value).map(|pod| (pod, true))
            }
        }
    }
}

/// The ReplicaSet status fields the controller writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicaSetStatus {
    /// status.replicas.
    pub replicas: i32,
    /// status.fullyLabeledReplicas.
    pub fully_labeled_replicas: i32,
    /// status.readyReplicas.
    pub ready_replicas: i32,
    /// status.availableReplicas.
    pub available_replicas: i32,
    /// status.observedGeneration.
    pub observed_generation: i64,
}

/// A ReplicaSet: the fields the controller reads, and the whole object for status writes.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicaSetView {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.resourceVersion as sent, for optimistic concurrency on writes.
    pub resource_version_text: Arc<str>,
    /// metadata.generation.
    pub generation: i64,
    /// spec.replicas (defaults to 1).
    pub replicas: i32,
    /// spec.minReadySeconds.
    pub min_ready_seconds: i64,
    /// spec.selector.
    pub selector: LabelSelector,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The current status.
    pub status: ReplicaSetStatus,
    /// The whole object as last observed.
    pub raw: Arc<serde_json::Value>,
}

impl ReplicaSetView {
    /// Decodes a ReplicaSet from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
        Self::try_from(value)
    }
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

// ---- wire shapes: only what the projections keep; serde skips every other field ----

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetaWire {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    owner_references: Option<Vec<OwnerRefWire>>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<String>,
    deletion_timestamp: Option<String>,
    generation: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerRefWire {
    kind: String,
    name: String,
    uid: String,
    controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpecWire {
    node_name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConditionWire {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    last_transition_time: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerStatusWire {
    #[serde(default)]
    restart_count: i32,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodStatusWire {
    phase: Option<String>,
    #[serde(default)]
    conditions: Option<Vec<ConditionWire>>,
    #[serde(default)]
    container_statuses: Option<Vec<ContainerStatusWire>>,
}

/// The JSON shape of a Pod, as far as [`PodView`] needs it.
#[derive(Deserialize)]
pub struct PodWire {
    #[serde(default)]
    metadata: MetaWire,
    #[serde(default)]
    spec: Option<PodSpecWire>,
    #[serde(default)]
    status: Option<PodStatusWire>,
}

struct Identity {
    key: ObjectKey,
    uid: Uid,
    resource_version: Option<ResourceVersion>,
    resource_version_text: String,
}

fn identity(meta: &mut MetaWire) -> Result<Identity, DecodeError> {
    let name = meta
        .name
        .take()
        .ok_or(DecodeError::Missing("metadata.name"))?;
    let uid = meta
        .uid
        .take()
        .ok_or(DecodeError::Missing("metadata.uid"))?;
    let resource_version_text = meta
        .resource_version
        .take()
        .ok_or(DecodeError::Missing("metadata.resourceVersion"))?;
    Ok(Identity {
        key: ObjectKey::new(meta.namespace.take().unwrap_or_default(), name),
        uid: Uid::new(uid),
        resource_version: ResourceVersion::parse(&resource_version_text).ok(),
        resource_version_text,
    })
}

fn controller_of(meta: &mut MetaWire) -> Option<OwnerRef> {
    meta.owner_references
        .take()?
        .into_iter()
        .find(|o| o.controller == Some(true))
        .map(|o| OwnerRef {
            kind: o.kind.into(),
            name: o.name.into(),
            uid: Uid::new(o.uid),
        })
}

fn text<'a>(value: &'a serde_json::Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(serde_json::Value::as_str)
}

/// Reads a Pod field by field from a JSON tree, taking any field of the wrong type as absent.
fn lenient_pod(value: &serde_json::Value) -> Result<PodView, DecodeError> {
    use serde_json::Value;
    let name = text(value, "/metadata/name").ok_or(DecodeError::Missing("metadata.name"))?;
    let uid = text(value, "/metadata/uid").ok_or(DecodeError::Missing("metadata.uid"))?;
    let rv = text(value, "/metadata/resourceVersion")
        .ok_or(DecodeError::Missing("metadata.resourceVersion"))?;
    let labels = value
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let controller = value
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|r| {
            Some(OwnerRef {
                kind: text(r, "/kind")?.into(),
                name: text(r, "/name")?.into(),
                uid: Uid::new(text(r, "/uid")?),
            })
        });
    let phase = match text(value, "/status/phase") {
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        Some("Unknown") => PodPhase::Unknown,
        _ => PodPhase::Pending,
    };
    let ready_condition = value
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| text(c, "/type") == Some("Ready")));
    Ok(PodView {
        key: ObjectKey::new(text(value, "/metadata/namespace").unwrap_or_default(), name),
        uid: Uid::new(uid),
        resource_version: ResourceVersion::parse(rv).ok(),
        labels: Labels::from_map(labels),
        controller,
        node_name: text(value, "/spec/nodeName")
            .filter(|n| !n.is_empty())
            .map(Into::into),
        phase,
        ready: ready_condition.is_some_and(|c| text(c, "/status") == Some("True")),
        ready_since: ready_condition
            .and_then(|c| text(c, "/lastTransitionTime"))
            .and_then(parse_rfc3339),
        restarts: value
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .map_or(0, |cs| {
                cs.iter()
                    .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                    .map(|n| n.clamp(0, i64::from(i32::MAX)) as i32)
                    .fold(0i32, i32::saturating_add)
            }),
        created: text(value, "/metadata/creationTimestamp")
            .and_then(parse_rfc3339)
            .unwrap_or(0),
        terminating: value
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null()),
        job_tracking: value
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|f| f == JOB_TRACKING_FINALIZER)),
        completion_index: value
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(COMPLETION_INDEX_ANNOTATION))
            .and_then(Value::as_str)
            .and_then(|i| i.parse().ok()),
    })
}

impl TryFrom<PodWire> for PodView {
    type Error = DecodeError;
    fn try_from(mut wire: PodWire) -> Result<Self, DecodeError> {
        let id = identity(&mut wire.metadata)?;
        let status = wire.status.unwrap_or_default();
        let phase = match status.phase.as_deref() {
            Some("Running") => PodPhase::Running,
            Some("Succeeded") => PodPhase::Succeeded,
            Some("Failed") => PodPhase::Failed,
            Some("Unknown") => PodPhase::Unknown,
            _ => PodPhase::Pending,
        };
        let ready_condition = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Ready");
        let ready = ready_condition.as_ref().is_some_and(|c| c.status == "True");
        Ok(PodView {
            key: id.key,
            uid: id.uid,
            resource_version: id.resource_version,
            labels: Labels::from_map(wire.metadata.labels.take().unwrap_or_default()),
            controller: controller_of(&mut wire.metadata),
            node_name: wire
                .spec
                .and_then(|s| s.node_name)
                .filter(|n| !n.is_empty())
                .map(Into::into),
            phase,
            ready,
            ready_since: ready_condition
                .and_then(|c| c.last_transition_time)
                .and_then(|t| parse_rfc3339(&t)),
            restarts: status
                .container_statuses
                .unwrap_or_default()
                .iter()
                .map(|c| c.restart_count)
                .sum(),
            created: wire
                .metadata
                .creation_timestamp
                .as_deref()
                .and_then(parse_rfc3339)
                .unwrap_or(0),
            terminating: wire.metadata.deletion_timestamp.is_some(),
            job_tracking: wire
                .metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| f.iter().any(|f| f == JOB_TRACKING_FINALIZER)),
            completion_index: wire
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(COMPLETION_INDEX_ANNOTATION))
                .and_then(|i| i.parse().ok()),
        })
    }
}

impl<'de> Deserialize<'de> for PodView {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        PodView::try_from(PodWire::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<serde_json::Value> for ReplicaSetView {
    type Error = DecodeError;
    fn try_from(value: serde_json::Value) -> Result<Self, DecodeError> {
        let malformed = |e: serde_json::Error| DecodeError::Malformed(e.to_string());
        let mut meta: MetaWire = match value.get("metadata") {
            Some(m) => MetaWire::deserialize(m).map_err(malformed)?,
            None => return Err(DecodeError::Missing("metadata")),
        };
        let id = identity(&mut meta)?;
        let spec = value.get("spec");
        let field = |path: &str| spec.and_then(|s| s.get(path));
        let selector = match field("selector") {
            Some(s) => LabelSelector::deserialize(s).map_err(malformed)?,
            None => return Err(DecodeError::Missing("spec.selector")),
        };
        let status = value.get("status");
        let status_int = |name: &str| {
            status
                .and_then(|s| s.get(name))
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(0)
        };
        let clamp = |v: i64| v.clamp(0, i64::from(i32::MAX)) as i32;
        Ok(ReplicaSetView {
            key: id.key,
            uid: id.uid,
            resource_version: id.resource_version,
            resource_version_text: id.resource_version_text.into(),
            generation: meta.generation.unwrap_or(0),
            replicas: clamp(
                field("replicas")
                    .and_then(serde_json::Value::as_i64)
                    .unwrap_or(1),
            ),
            min_ready_seconds: field("minReadySeconds")
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(0),
            selector,
            terminating: meta.deletion_timestamp.is_some(),
            status: ReplicaSetStatus {
                replicas: clamp(status_int("replicas")),
                fully_labeled_replicas: clamp(status_int("fullyLabeledReplicas")),
                ready_replicas: clamp(status_int("readyReplicas")),
                available_replicas: clamp(status_int("availableReplicas")),
                observed_generation: status_int("observedGeneration"),
            },
            raw: Arc::new(value),
        })
    }
}

impl<'de> Deserialize<'de> for ReplicaSetView {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        ReplicaSetView::try_from(value).map_err(serde::de::Error::custom)
    }
}

/// Builders for tests across the crate.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use serde_json::json;

    /// A ReplicaSet `name` with `replicas`, selector `app=name`, at resourceVersion 1.
    pub fn replicaset(namespace: &str, name: &str, replicas: i32) -> ReplicaSetView {
        replicaset_json(namespace, name, replicas, 1)
    }

    /// A ReplicaSet as JSON decodes it, at `rv`.
    pub fn replicaset_json(namespace: &str, name: &str, replicas: i32, rv: u64) -> ReplicaSetView {
        ReplicaSetView::try_from(json!({
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_decodes_to_its_projection_and_skips_the_rest() {
        let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default",
          "uid":"u1","resourceVersion":"42","creationTimestamp":"2026-12-02T15:03:38Z",
          "labels":{"app":"web"},"managedFields":[{"manager":"kubectl"}],
          "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs1","controller":true}]},
          "spec":{"nodeName":"node-3","containers":[{"name":"c","image":"nginx"}]},
          "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-12-02T15:03:40Z"}],
                    "containerStatuses":[{"restartCount":2}]}}"#;
        let pod = PodView::from_json(json).expect("valid pod");
        assert_eq!(pod.key, ObjectKey::new("default", "web-1"));
        assert_eq!(pod.resource_version, ResourceVersion::new(42));
        assert_eq!(pod.labels.get("app"), Some("web"));
        assert_eq!(pod.controller.as_ref().map(|o| o.uid.as_str()), Some("rs1"));
        assert!(!pod.job_tracking);
        let job_pod = br#"{"metadata":{"name":"pi-0-x","namespace":"default","uid":"u2","resourceVersion":"43",
          "finalizers":["batch.kubernetes.io/job-tracking"],
          "annotations":{"batch.kubernetes.io/job-completion-index":"3"}},"status":{"phase":"Succeeded"}}"#;
        let job_pod = PodView::from_json(job_pod).expect("valid job pod");
        assert!(job_pod.job_tracking);
        assert_eq!(job_pod.completion_index, Some(3));
        assert_eq!(pod.node_name.as_deref(), Some("node-3"));
        assert!(pod.ready && pod.is_active());
        assert_eq!(pod.restarts, 2);
        assert_eq!(pod.created, 1_796_223_818);
    }

    #[test]
    fn a_pod_without_a_name_is_a_typed_error() {
        let err = PodView::from_json(br#"{"metadata":{"uid":"u","resourceVersion":"1"}}"#);
        assert_eq!(err, Err(DecodeError::Missing("metadata.name")));
        assert!(PodView::from_json(b"not json").is_err());
    }

    #[test]
    fn a_pod_with_an_odd_field_is_read_leniently_and_stays_visible() {
        let json = br#"{"metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"9",
          "ownerReferences":[{"kind":"ReplicaSet","name":"web","uid":"rs1","controller":true}]},
          "spec":{"nodeName":17},
          "status":{"phase":"Running","containerStatuses":[{"restartCount":"two"}],
                    "conditions":[{"type":"Ready","status":"True"}]}}"#;
        let (pod, lenient) = PodView::decode(json).expect("identity is readable");
        assert!(lenient);
        assert!(pod.is_active() && pod.ready);
        assert_eq!(pod.controller.map(|o| o.uid), Some(Uid::new("rs1")));
        assert_eq!(pod.node_name, None);
        assert_eq!(pod.restarts, 0);
    }

    #[test]
    fn a_strict_and_a_lenient_decode_agree_on_a_well_formed_pod() {
        let json = br#"{"metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"9",
          "creationTimestamp":"2026-12-02T15:03:38Z","labels":{"a":"b"},
          "ownerReferences":[{"kind":"ReplicaSet","name":"web","uid":"rs1","controller":true}]},
          "spec":{"nodeName":"n1"},"status":{"phase":"Pending","containerStatuses":[{"restartCount":3}],
          "conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2026-12-02T15:03:39Z"}]}}"#;
        let strict = PodView::from_json(json).expect("strict");
        let value: serde_json::Value = serde_json::from_slice(json).expect("json");
        assert_eq!(lenient_pod(&value).expect("lenient"), strict);
    }

    #[test]
    fn a_non_comparable_resource_version_is_kept_as_unknown() {
        let pod =
            PodView::from_json(br#"{"metadata":{"name":"p","uid":"u","resourceVersion":"abc"}}"#)
                .expect("decodes");
        assert_eq!(pod.resource_version, None);
    }

    #[test]
    fn a_replicaset_decodes_spec_and_status() {
        let rs = test_support::replicaset_json("ns", "web", 3, 7);
        assert_eq!(rs.replicas, 3);
        assert_eq!(rs.resource_version, ResourceVersion::new(7));
        assert_eq!(
            rs.selector.match_labels.get("app").map(String::as_str),
            Some("web")
        );
    }
}
