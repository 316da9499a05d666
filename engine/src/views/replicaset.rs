//! The ReplicaSet projection: what its controller reads, checked, and the whole object, because
//! status updates send it back (as upstream does) and ReplicaSets are few next to their Pods.

use crate::checked::{Checker, Field};
use crate::key::{ObjectKey, Uid};
use crate::labels::LabelSelector;
use crate::malformed::Malformed;
use crate::malformed::projection;
use crate::object::{DecodeError, parse_json, read_meta};
use crate::pod_template::PodTemplate;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
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
    /// spec.template.
    pub template: Arc<PodTemplate>,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The current status.
    pub status: ReplicaSetStatus,
    /// Why the controller must not act on it, if a field it reads is unusable.
    pub malformed: Option<Arc<Malformed>>,
    /// The whole object as last observed (a JSON object).
    pub raw: Arc<serde_json::Value>,
}

impl ReplicaSetView {
    /// Decodes a ReplicaSet from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_value(parse_json(bytes)?)
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
            raw: Arc::new(value),
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
mod tests {
    use super::*;
    use crate::object::test_support;
    use serde_json::json;

    fn with_replicas(replicas: serde_json::Value) -> ReplicaSetView {
        ReplicaSetView::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "3"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}},
        }))
        .expect("identity is readable")
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
        assert!(rs.malformed.is_none());
    }

    #[test]
    fn replicas_that_are_not_a_non_negative_int32_make_the_replicaset_malformed() {
        for bad in [json!("five"), json!(3.0), json!("3"), json!(-2)] {
            let rs = with_replicas(bad.clone());
            let m = rs.malformed.expect("malformed");
            assert_eq!(m.fields()[0].path, "spec.replicas", "{bad}");
        }
    }

    #[test]
    fn absent_replicas_default_to_one_as_upstream() {
        let rs = ReplicaSetView::from_value(json!({
            "metadata": {"name": "web", "uid": "u", "resourceVersion": "3"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {}}},
        }))
        .expect("decodes");
        assert_eq!(rs.replicas, 1);
        assert!(rs.malformed.is_none());
        assert_eq!(with_replicas(serde_json::Value::Null).replicas, 1);
    }

    #[test]
    fn a_status_or_selector_of_the_wrong_shape_is_malformed_too() {
        let rs = ReplicaSetView::from_value(json!({
            "metadata": {"name": "web", "uid": "u", "resourceVersion": "3"},
            "spec": {"replicas": 1, "template": {"spec": {}}},
            "status": "lots",
        }))
        .expect("decodes");
        let m = rs.malformed.expect("malformed");
        let paths: Vec<_> = m.fields().iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["spec.selector", "status"]);
    }
}
