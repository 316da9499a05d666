//! The ReplicaSet projection: what its controller reads, checked, and the object as compact JSON
//! without managedFields, because status updates send it back (as upstream does) and Pods are
//! created from its template.

use crate::key::{ObjectKey, Uid};
use crate::labels::LabelSelector;
use crate::pod_template::PodTemplate;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::views::checked::{Checker, Field};
use crate::views::malformed::Malformed;
use crate::views::malformed::projection;
use crate::views::meta::{DecodeError, read_meta};
use crate::views::owner_json::OwnerJson;
use crate::views::without_managed_fields::parse_owner_json;
use std::sync::Arc;

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

/// A ReplicaSet: the fields the controller reads, and the object for status writes and Pod
/// templates.
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
    /// spec.template.
    pub template: Arc<PodTemplate>,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The current status.
    pub status: ReplicaSetStatus,
    /// Why the controller must not act on it, if a field it reads is unusable.
    pub malformed: Option<Arc<Malformed>>,
    /// The object as last observed, without managedFields (its Pod template is read from it when
    /// Pods are created).
    pub raw: OwnerJson,
}

impl ReplicaSetView {
    /// Decodes a ReplicaSet from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_value(parse_owner_json(bytes)?)
    }

    /// Decodes a ReplicaSet from a parsed object, every field the controller reads checked.
    pub fn from_value(value: serde_json::Value) -> Result<Self, DecodeError> {
        let mut c = Checker::default();
        let meta = read_meta(&value, &mut c)?;
        let resource_version_text = meta
            .resource_version_text
            .ok_or(DecodeError::Missing("metadata.resourceVersion"))?;
        let root = Field::root(&value);
        let replicas = root
            .get(&mut c, "spec.replicas")
            .int32(&mut c, 0)
            .unwrap_or(1);
        let min_ready_seconds = root
            .get(&mut c, "spec.minReadySeconds")
            .int32(&mut c, 0)
            .unwrap_or(0);
        let selector_field = root.get(&mut c, "spec.selector");
        if !selector_field.is_present() {
            c.record("spec.selector", "Required value".into());
        }
        let selector = LabelSelector::read(&selector_field, &mut c);
        let template = PodTemplate::read(&root, &mut c);
        let status = root.get(&mut c, "status");
        let mut count = |name: &str| status.get(&mut c, name).int32(&mut c, 0).unwrap_or(0);
        let status = ReplicaSetStatus {
            replicas: count("replicas"),
            fully_labeled_replicas: count("fullyLabeledReplicas"),
            ready_replicas: count("readyReplicas"),
            available_replicas: count("availableReplicas"),
            observed_generation: status
                .get(&mut c, "observedGeneration")
                .int64(&mut c, 0)
                .unwrap_or(0),
        };
        let malformed = c.finish();
        Ok(ReplicaSetView {
            key: meta.key,
            uid: meta.uid,
            resource_version: meta.resource_version,
            resource_version_text: resource_version_text.into(),
            generation: meta.generation,
            replicas,
            min_ready_seconds: i64::from(min_ready_seconds),
            selector,
            template: Arc::new(template),
            terminating: meta.terminating,
            status,
            malformed,
            raw: OwnerJson::keep(value),
        })
    }
}

impl TryFrom<serde_json::Value> for ReplicaSetView {
    type Error = DecodeError;
    fn try_from(value: serde_json::Value) -> Result<Self, DecodeError> {
        Self::from_value(value)
    }
}

projection!(ReplicaSetView, Resource::ReplicaSets);

#[cfg(test)]
#[path = "replicaset_tests.rs"]
mod tests;
