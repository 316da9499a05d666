//! The projections node lifecycle reads: a Node's readiness and taints, and a node Lease's
//! holder and renew time. Nodes are few (thousands, not millions), so they keep their whole JSON
//! for the writes that mark them.

use crate::key::{ObjectKey, Uid};
use crate::object::DecodeError;
use crate::rv::ResourceVersion;
use std::sync::Arc;

/// The namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// The taint a Node gets when its kubelet stops renewing its Lease.
pub const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// The status of a Node's `Ready` condition.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReadyStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown` (what node lifecycle sets when the kubelet went silent).
    Unknown,
}

/// A Node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeView {
    /// The name (cluster-scoped: empty namespace).
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// The `Ready` condition, if reported.
    pub ready: Option<ReadyStatus>,
    /// It carries the `node.kubernetes.io/unreachable` taint.
    pub unreachable: bool,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The whole object as last observed.
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
}

struct Identity {
    key: ObjectKey,
    uid: Uid,
    resource_version: Option<ResourceVersion>,
    terminating: bool,
}

fn identity(value: &serde_json::Value) -> Result<Identity, DecodeError> {
    let meta = value
        .get("metadata")
        .ok_or(DecodeError::Missing("metadata"))?;
    let text = |field: &'static str| meta.get(field).and_then(serde_json::Value::as_str);
    let name = text("name").ok_or(DecodeError::Missing("metadata.name"))?;
    let uid = text("uid").ok_or(DecodeError::Missing("metadata.uid"))?;
    Ok(Identity {
        key: ObjectKey::new(text("namespace").unwrap_or(""), name),
        uid: Uid::new(uid),
        resource_version: text("resourceVersion").and_then(|v| ResourceVersion::parse(v).ok()),
        terminating: meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()),
    })
}

fn parse(bytes: &[u8]) -> Result<serde_json::Value, DecodeError> {
    serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))
}

impl NodeView {
    /// Decodes a Node from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_value(parse(bytes)?)
    }

    /// Decodes a Node from a parsed object.
    pub fn from_value(value: serde_json::Value) -> Result<Self, DecodeError> {
        let id = identity(&value)?;
        let ready = value["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .map(|c| match c["status"].as_str() {
                Some("True") => ReadyStatus::True,
                Some("False") => ReadyStatus::False,
                _ => ReadyStatus::Unknown,
            });
        let unreachable = value["spec"]["taints"]
            .as_array()
            .is_some_and(|ts| ts.iter().any(|t| t["key"] == UNREACHABLE_TAINT));
        Ok(NodeView {
            key: id.key,
            uid: id.uid,
            resource_version: id.resource_version,
            ready,
            unreachable,
            terminating: id.terminating,
            raw: Arc::new(value),
        })
    }

    /// The key of this Node's Lease.
    pub fn lease_key(&self) -> ObjectKey {
        ObjectKey::new(NODE_LEASE_NAMESPACE, self.key.name())
    }
}

impl LeaseView {
    /// Decodes a Lease from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        let value = parse(bytes)?;
        let id = identity(&value)?;
        let text = |field: &str| {
            value["spec"][field]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(Arc::<str>::from)
        };
        Ok(LeaseView {
            key: id.key,
            uid: id.uid,
            resource_version: id.resource_version,
            holder: text("holderIdentity"),
            renew_time: text("renewTime"),
            terminating: id.terminating,
        })
    }

    /// Whether this is a node Lease, and of which Node.
    pub fn node_key(&self) -> Option<ObjectKey> {
        (self.key.namespace() == NODE_LEASE_NAMESPACE).then(|| ObjectKey::new("", self.key.name()))
    }
}

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
        assert_eq!(n.ready, Some(ReadyStatus::Unknown));
        assert!(n.unreachable);
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
}
