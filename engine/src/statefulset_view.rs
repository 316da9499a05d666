//! The StatefulSet projection: what its controller reads, and the whole object for the Pods,
//! claims and revisions it stamps out of it.

use crate::key::{ObjectKey, Uid};
use crate::object::DecodeError;
use crate::rv::ResourceVersion;
use std::sync::Arc;

/// `status` of a StatefulSet, as the controller writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatefulSetStatus {
    /// status.replicas.
    pub replicas: i32,
    /// status.readyReplicas.
    pub ready_replicas: i32,
    /// status.currentReplicas.
    pub current_replicas: i32,
    /// status.updatedReplicas.
    pub updated_replicas: i32,
    /// status.observedGeneration.
    pub observed_generation: i64,
    /// status.currentRevision.
    pub current_revision: Option<String>,
    /// status.updateRevision.
    pub update_revision: Option<String>,
}

/// A StatefulSet.
#[derive(Clone, Debug, PartialEq)]
pub struct StatefulSetView {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.generation.
    pub generation: i64,
    /// spec.replicas (defaults to 1).
    pub replicas: i32,
    /// spec.podManagementPolicy is `Parallel` (else `OrderedReady`).
    pub parallel: bool,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The current status.
    pub status: StatefulSetStatus,
    /// The whole object as last observed.
    pub raw: Arc<serde_json::Value>,
}

impl StatefulSetView {
    /// Decodes a StatefulSet from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
        Self::from_value(value)
    }

    /// Decodes a StatefulSet from a parsed object.
    pub fn from_value(value: serde_json::Value) -> Result<Self, DecodeError> {
        let meta = value
            .get("metadata")
            .ok_or(DecodeError::Missing("metadata"))?;
        let text = |field: &'static str| meta.get(field).and_then(serde_json::Value::as_str);
        let name = text("name").ok_or(DecodeError::Missing("metadata.name"))?;
        let uid = text("uid").ok_or(DecodeError::Missing("metadata.uid"))?;
        if value.pointer("/spec/template").is_none() {
            return Err(DecodeError::Missing("spec.template"));
        }
        let int = |path: &str| value.pointer(path).and_then(serde_json::Value::as_i64);
        let status_text = |path: &str| {
            value
                .pointer(path)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        };
        let narrow = |n: Option<i64>| n.and_then(|n| i32::try_from(n).ok()).unwrap_or(0);
        Ok(StatefulSetView {
            key: ObjectKey::new(text("namespace").unwrap_or(""), name),
            uid: Uid::new(uid),
            resource_version: text("resourceVersion").and_then(|v| ResourceVersion::parse(v).ok()),
            generation: int("/metadata/generation").unwrap_or(0),
            replicas: int("/spec/replicas").map_or(1, |n| i32::try_from(n).unwrap_or(0)),
            parallel: value.pointer("/spec/podManagementPolicy") == Some(&"Parallel".into()),
            terminating: meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()),
            status: StatefulSetStatus {
                replicas: narrow(int("/status/replicas")),
                ready_replicas: narrow(int("/status/readyReplicas")),
                current_replicas: narrow(int("/status/currentReplicas")),
                updated_replicas: narrow(int("/status/updatedReplicas")),
                observed_generation: int("/status/observedGeneration").unwrap_or(0),
                current_revision: status_text("/status/currentRevision"),
                update_revision: status_text("/status/updateRevision"),
            },
            raw: Arc::new(value),
        })
    }

    /// The ordinal of a Pod named `<set>-<n>`, if `pod_name` is one of this set's.
    pub fn ordinal_of(&self, pod_name: &str) -> Option<usize> {
        pod_name
            .strip_prefix(self.key.name())?
            .strip_prefix('-')?
            .parse()
            .ok()
    }
}
