//! The projections node lifecycle reads: a Node's conditions, taints and zone labels, and a
//! node Lease's holder and renew time. Nodes are few (thousands, not millions), so they keep their whole JSON
//! for the writes that mark them.

use crate::key::{ObjectKey, Uid};
use crate::labels::Labels;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::views::checked::{Checker, Field};
use crate::views::malformed::Malformed;
use crate::views::malformed::projection;
use crate::views::meta::{DecodeError, parse_json, read_meta};
use std::sync::Arc;

/// The namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// The taint a Node gets when its kubelet stops renewing its Lease.
pub const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// The status of a Node condition.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown` (what node lifecycle sets when the kubelet went silent).
    Unknown,
}

/// The statuses of the conditions node lifecycle maps to taints (`None`: not reported).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeConditions {
    /// `Ready`.
    pub ready: Option<ConditionStatus>,
    /// `MemoryPressure`.
    pub memory_pressure: Option<ConditionStatus>,
    /// `DiskPressure`.
    pub disk_pressure: Option<ConditionStatus>,
    /// `PIDPressure`.
    pub pid_pressure: Option<ConditionStatus>,
    /// `NetworkUnavailable` (set by the network provider, never by node lifecycle).
    pub network_unavailable: Option<ConditionStatus>,
}

impl NodeConditions {
    /// The slot of condition `kind`, if node lifecycle reads it.
    fn slot(&mut self, kind: &str) -> Option<&mut Option<ConditionStatus>> {
        match kind {
            "Ready" => Some(&mut self.ready),
            "MemoryPressure" => Some(&mut self.memory_pressure),
            "DiskPressure" => Some(&mut self.disk_pressure),
            "PIDPressure" => Some(&mut self.pid_pressure),
            "NetworkUnavailable" => Some(&mut self.network_unavailable),
            _ => None,
        }
    }
}

/// A Node taint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taint {
    /// The key.
    pub key: String,
    /// The value, if any.
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// The taint effects upstream accepts.
pub const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// A Node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeView {
    /// The name (cluster-scoped: empty namespace).
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.labels.
    pub labels: Labels,
    /// spec.taints.
    pub taints: Vec<Taint>,
    /// The conditions node lifecycle reads.
    pub conditions: NodeConditions,
    /// spec.unschedulable (cordoned).
    pub unschedulable: bool,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// Why no controller may act on it, if a field they read is unusable.
    pub malformed: Option<Arc<Malformed>>,
    /// The whole object as last observed (a JSON object whose `status`, if present, is an object
    /// and whose `status.conditions`, if present, is an array of objects).
    pub raw: Arc<serde_json::Value>,
}

/// A node Lease.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseView {
    /// namespace/name (the name is the Node's).
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// spec.holderIdentity.
    pub holder: Option<Arc<str>>,
    /// spec.renewTime, as written (informational: elapsed time is never judged from it).
    pub renew_time: Option<Arc<str>>,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// Why no controller may act on it, if a field they read is unusable.
    pub malformed: Option<Arc<Malformed>>,
}

impl NodeView {
    /// Decodes a Node from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_value(parse_json(bytes)?)
    }

    /// Decodes a Node from a parsed object, every field a controller reads checked.
    pub fn from_value(value: serde_json::Value) -> Result<Self, DecodeError> {
        let mut c = Checker::default();
        let meta = read_meta(&value, &mut c)?;
        let root = Field::root(&value);
        let labels = root.get(&mut c, "metadata.labels").string_map(&mut c);
        let mut conditions = NodeConditions::default();
        for condition in root.get(&mut c, "status.conditions").items(&mut c) {
            if c.object(&condition).is_none() && !condition.is_present() {
                c.record(condition.path(), "must be an object, got null".into());
            }
            let kind = condition.get(&mut c, "type").string(&mut c);
            let status = condition.get(&mut c, "status");
            match kind.and_then(|k| conditions.slot(k)) {
                // The first of a type counts, as upstream's GetNodeCondition finds it.
                Some(slot @ None) => {
                    *slot = match c.one_of(&status, &["True", "False", "Unknown"]) {
                        Some("True") => Some(ConditionStatus::True),
                        Some("False") => Some(ConditionStatus::False),
                        _ => Some(ConditionStatus::Unknown),
                    };
                }
                _ => {
                    c.string(&status);
                }
            }
        }
        let unschedulable = root
            .get(&mut c, "spec.unschedulable")
            .boolean(&mut c)
            .unwrap_or(false);
        let mut taints = Vec::new();
        for t in root.get(&mut c, "spec.taints").items(&mut c) {
            c.object(&t);
            let key = t.get(&mut c, "key").string(&mut c);
            let value = t.get(&mut c, "value").string(&mut c);
            let effect = t.get(&mut c, "effect").one_of(&mut c, &TAINT_EFFECTS);
            t.get(&mut c, "timeAdded").timestamp(&mut c);
            if let (Some(key), Some(effect)) = (key, effect) {
                taints.push(Taint {
                    key: key.to_string(),
                    value: value.map(str::to_string),
                    effect: effect.to_string(),
                });
            } else if t.is_present() {
                c.record(
                    t.path(),
                    "Required value: a taint has a key and an effect".into(),
                );
            }
        }
        Ok(NodeView {
            key: meta.key,
            uid: meta.uid,
            resource_version: meta.resource_version,
            labels: Labels::from_map(labels),
            taints,
            conditions,
            unschedulable,
            terminating: meta.terminating,
            malformed: c.finish(),
            raw: Arc::new(value),
        })
    }

    /// The key of this Node's Lease.
    pub fn lease_key(&self) -> ObjectKey {
        ObjectKey::new(NODE_LEASE_NAMESPACE, self.key.name())
    }
}

impl LeaseView {
    /// Decodes a Lease from JSON bytes, every field checked.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        let value = parse_json(bytes)?;
        let mut c = Checker::default();
        let meta = read_meta(&value, &mut c)?;
        let spec = Field::root(&value).get(&mut c, "spec");
        let holder = spec.get(&mut c, "holderIdentity").string(&mut c);
        let renew_field = spec.get(&mut c, "renewTime");
        c.timestamp(&renew_field);
        spec.get(&mut c, "acquireTime").timestamp(&mut c);
        spec.get(&mut c, "leaseDurationSeconds").int32(&mut c, 1);
        spec.get(&mut c, "leaseTransitions").int32(&mut c, 0);
        let text = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(Arc::<str>::from);
        Ok(LeaseView {
            key: meta.key,
            uid: meta.uid,
            resource_version: meta.resource_version,
            holder: text(holder),
            renew_time: text(renew_field.value().and_then(serde_json::Value::as_str)),
            terminating: meta.terminating,
            malformed: c.finish(),
        })
    }

    /// Whether this is a node Lease, and of which Node.
    pub fn node_key(&self) -> Option<ObjectKey> {
        (self.key.namespace() == NODE_LEASE_NAMESPACE).then(|| ObjectKey::new("", self.key.name()))
    }
}

projection!(NodeView, Resource::Nodes);

projection!(LeaseView, Resource::Leases);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_reads_its_ready_condition_and_unreachable_taint() {
        let node = br#"{"metadata":{"name":"n1","uid":"u1","resourceVersion":"7"},
            "spec":{"taints":[{"key":"node.kubernetes.io/unreachable","effect":"NoExecute"}]},
            "status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}"#;
        let n = NodeView::from_json(node).expect("decodes");
        assert_eq!(n.key, ObjectKey::new("", "n1"));
        assert_eq!(n.conditions.ready, Some(ConditionStatus::Unknown));
        assert_eq!(n.conditions.memory_pressure, None);
        assert!(n.taints.iter().any(|t| t.key == UNREACHABLE_TAINT));
        assert_eq!(n.lease_key(), ObjectKey::new("kube-node-lease", "n1"));
    }

    #[test]
    fn a_node_lease_names_its_node_and_a_node_without_uid_is_an_error() {
        let lease = br#"{"metadata":{"name":"n1","namespace":"kube-node-lease","uid":"l1","resourceVersion":"9"},
            "spec":{"holderIdentity":"n1","renewTime":"2026-12-02T10:00:00.000000Z"}}"#;
        let l = LeaseView::from_json(lease).expect("decodes");
        assert_eq!(l.node_key(), Some(ObjectKey::new("", "n1")));
        assert_eq!(l.holder.as_deref(), Some("n1"));
        assert!(matches!(
            NodeView::from_json(br#"{"metadata":{"name":"x"}}"#),
            Err(DecodeError::Missing("metadata.uid"))
        ));
    }

    #[test]
    fn a_node_whose_status_or_taints_have_the_wrong_shape_is_malformed() {
        for (node, path) in [
            (r#""status":"not-an-object""#, "status"),
            (
                r#""status":{"conditions":{"type":"Ready"}}"#,
                "status.conditions",
            ),
            (
                r#""status":{"conditions":["Ready"]}"#,
                "status.conditions[0]",
            ),
            (
                r#""status":{"conditions":[{"type":"Ready","status":"Yes"}]}"#,
                "status.conditions[0].status",
            ),
            (
                r#""spec":{"taints":[{"key":"k","effect":"Sometimes"}]}"#,
                "spec.taints[0].effect",
            ),
            (
                r#""metadata":{"name":"n1","uid":"u1","labels":{"a":1}}"#,
                "metadata.labels[a]",
            ),
        ] {
            let json = if node.starts_with(r#""metadata""#) {
                format!("{{{node}}}")
            } else {
                format!(r#"{{"metadata":{{"name":"n1","uid":"u1"}},{node}}}"#)
            };
            let n = NodeView::from_json(json.as_bytes()).expect("identity is readable");
            let m = n.malformed.expect(path);
            assert_eq!(m.fields()[0].path, path);
        }
        let lease = br#"{"metadata":{"name":"n1","namespace":"kube-node-lease","uid":"l1"},
            "spec":{"holderIdentity":7,"renewTime":"soon"}}"#;
        let l = LeaseView::from_json(lease).expect("identity is readable");
        assert_eq!(l.malformed.map(|m| m.total()), Some(2));
    }
}
