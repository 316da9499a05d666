//! The StatefulSet projection: what its controller reads, checked, its Pod template (named and
//! recorded by its revisions), and the object as compact JSON without managedFields for its
//! status writes.

use crate::key::{ObjectKey, Uid};
use crate::labels::LabelSelector;
use crate::pod_template::{PodTemplate, template_object};
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::views::checked::{Checker, Field, IntOrPercent};
use crate::views::malformed::Malformed;
use crate::views::malformed::projection;
use crate::views::meta::{DecodeError, read_meta};
use crate::views::owner_json::OwnerJson;
use crate::views::without_managed_fields::parse_owner_json;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `status` of a StatefulSet, as the controller writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatefulSetStatus {
    /// status.replicas.
    pub replicas: i32,
    /// status.readyReplicas.
    pub ready_replicas: i32,
    /// status.availableReplicas.
    pub available_replicas: i32,
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

/// One of `spec.volumeClaimTemplates`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimTemplate {
    /// metadata.name (the volume's name, and the claims' name prefix).
    pub name: String,
    /// metadata.labels.
    pub labels: BTreeMap<String, String>,
    /// spec, passed through to the claims.
    pub spec: Map<String, Value>,
}

/// What happens to a claim made from `volumeClaimTemplates` at one of two moments.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Retention {
    /// `Retain` (the default): the claim outlives the Pod and the set.
    #[default]
    Retain,
    /// `Delete`: the claim goes with them, through the garbage collector (it is owned).
    Delete,
}

/// `spec.persistentVolumeClaimRetentionPolicy`: which ownerReferences the set's claims carry,
/// so the garbage collector deletes them with the set, with a scaled-down Pod, both or neither.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimRetentionPolicy {
    /// `whenDeleted`: the claims of a deleted set (owned by the set when `Delete`).
    pub when_deleted: Retention,
    /// `whenScaled`: the claims of a Pod removed by scale-down (owned by that Pod when `Delete`).
    pub when_scaled: Retention,
}

/// `spec.updateStrategy`: how Pods not at the update revision are replaced.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UpdateStrategy {
    /// `RollingUpdate` (the default): Pods at or above `partition` (an index from the first
    /// ordinal) not at the update revision are deleted from the highest down, at most
    /// `max_unavailable` unavailable at once, and come back at the update revision.
    RollingUpdate {
        /// `rollingUpdate.partition` (default 0).
        partition: i32,
        /// `rollingUpdate.maxUnavailable` (default 1; a percentage of `spec.replicas`, rounded
        /// up, never below 1).
        max_unavailable: IntOrPercent,
    },
    /// `OnDelete`: Pods are replaced only when someone deletes them.
    OnDelete,
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
    /// spec.ordinals.start (defaults to 0): the Pods are `<set>-<start>` .. `<set>-<start+replicas-1>`.
    pub start_ordinal: i32,
    /// spec.podManagementPolicy is `Parallel` (else `OrderedReady`).
    pub parallel: bool,
    /// spec.serviceName.
    pub service_name: Option<String>,
    /// spec.selector.
    pub selector: LabelSelector,
    /// spec.template.
    pub template: Arc<PodTemplate>,
    /// spec.volumeClaimTemplates.
    pub claim_templates: Arc<[ClaimTemplate]>,
    /// spec.updateStrategy.
    pub update_strategy: UpdateStrategy,
    /// spec.persistentVolumeClaimRetentionPolicy (`Retain` for both when absent).
    pub claim_retention: ClaimRetentionPolicy,
    /// spec.minReadySeconds: how long a Pod must have been ready to count as available.
    pub min_ready_seconds: i32,
    /// spec.revisionHistoryLimit: old ControllerRevisions kept (10 when absent).
    pub revision_history_limit: usize,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The current status.
    pub status: StatefulSetStatus,
    /// Why the controller must not act on it, if a field it reads is unusable.
    pub malformed: Option<Arc<Malformed>>,
    /// spec.template as observed (an empty object when absent).
    pub pod_template: Arc<Value>,
    /// The object as last observed, without managedFields, for status writes.
    pub raw: OwnerJson,
}

impl StatefulSetView {
    /// Decodes a StatefulSet from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_value(parse_owner_json(bytes)?)
    }

    /// Decodes a StatefulSet from a parsed object, every field the controller reads checked.
    pub fn from_value(value: Value) -> Result<Self, DecodeError> {
        let mut c = Checker::default();
        let meta = read_meta(&value, &mut c)?;
        let root = Field::root(&value);
        let spec = root.get(&mut c, "spec");
        let replicas = spec.get(&mut c, "replicas").int32(&mut c, 0).unwrap_or(1);
        let start_ordinal = spec
            .get(&mut c, "ordinals.start")
            .int32(&mut c, 0)
            .unwrap_or(0);
        let parallel = spec
            .get(&mut c, "podManagementPolicy")
            .one_of(&mut c, &["OrderedReady", "Parallel"])
            == Some("Parallel");
        let service_name = spec
            .get(&mut c, "serviceName")
            .string(&mut c)
            .map(str::to_string);
        let selector_field = spec.get(&mut c, "selector");
        if !selector_field.is_present() {
            c.record("spec.selector", "Required value".into());
        }
        let selector = LabelSelector::read(&selector_field, &mut c);
        let template = PodTemplate::read(&root, &mut c);
        let mut claim_templates = Vec::new();
        for t in spec.get(&mut c, "volumeClaimTemplates").items(&mut c) {
            c.object(&t);
            let name_field = t.get(&mut c, "metadata.name");
            let name = c.string(&name_field).filter(|n| !n.is_empty());
            if name.is_none() {
                c.record(name_field.path(), "Required value".into());
            }
            let labels = t.get(&mut c, "metadata.labels").string_map(&mut c);
            let claim_spec = t
                .get(&mut c, "spec")
                .object(&mut c)
                .cloned()
                .unwrap_or_default();
            if let Some(name) = name {
                claim_templates.push(ClaimTemplate {
                    name: name.to_string(),
                    labels,
                    spec: claim_spec,
                });
            }
        }
        let on_delete = spec
            .get(&mut c, "updateStrategy.type")
            .one_of(&mut c, &["RollingUpdate", "OnDelete"])
            == Some("OnDelete");
        let partition = spec
            .get(&mut c, "updateStrategy.rollingUpdate.partition")
            .int32(&mut c, 0)
            .unwrap_or(0);
        let max_unavailable = spec
            .get(&mut c, "updateStrategy.rollingUpdate.maxUnavailable")
            .int_or_percent(&mut c)
            .unwrap_or(IntOrPercent::Int(1));
        let update_strategy = if on_delete {
            UpdateStrategy::OnDelete
        } else {
            UpdateStrategy::RollingUpdate {
                partition,
                max_unavailable,
            }
        };
        let mut retention =
            |name: &str| match spec.get(&mut c, name).one_of(&mut c, &["Retain", "Delete"]) {
                Some("Delete") => Retention::Delete,
                _ => Retention::Retain,
            };
        let claim_retention = ClaimRetentionPolicy {
            when_deleted: retention("persistentVolumeClaimRetentionPolicy.whenDeleted"),
            when_scaled: retention("persistentVolumeClaimRetentionPolicy.whenScaled"),
        };
        let min_ready_seconds = spec
            .get(&mut c, "minReadySeconds")
            .int32(&mut c, 0)
            .unwrap_or(0);
        let status = root.get(&mut c, "status");
        let mut count = |name: &str| status.get(&mut c, name).int32(&mut c, 0).unwrap_or(0);
        let (replicas_now, ready, current, updated) = (
            count("replicas"),
            count("readyReplicas"),
            count("currentReplicas"),
            count("updatedReplicas"),
        );
        let available = count("availableReplicas");
        let observed_generation = status
            .get(&mut c, "observedGeneration")
            .int64(&mut c, 0)
            .unwrap_or(0);
        let mut revision = |name: &str| status.get(&mut c, name).string(&mut c).map(str::to_string);
        let (current_revision, update_revision) =
            (revision("currentRevision"), revision("updateRevision"));
        let revision_history_limit = spec
            .get(&mut c, "revisionHistoryLimit")
            .int32(&mut c, 0)
            .map_or(10, |n| usize::try_from(n).unwrap_or(0));
        Ok(StatefulSetView {
            key: meta.key,
            uid: meta.uid,
            resource_version: meta.resource_version,
            generation: meta.generation,
            replicas,
            start_ordinal,
            parallel,
            service_name,
            selector,
            template: Arc::new(template),
            claim_templates: claim_templates.into(),
            update_strategy,
            claim_retention,
            min_ready_seconds,
            revision_history_limit,
            terminating: meta.terminating,
            status: StatefulSetStatus {
                replicas: replicas_now,
                ready_replicas: ready,
                available_replicas: available,
                current_replicas: current,
                updated_replicas: updated,
                observed_generation,
                current_revision,
                update_revision,
            },
            malformed: c.finish(),
            pod_template: template_object(&value),
            raw: OwnerJson::keep(value),
        })
    }

    /// The ordinal of a Pod named `<set>-<n>`, if `pod_name` is one of this set's: `n` is an
    /// int32 in canonical decimal (no sign, no leading zeros), as the controller names them.
    pub fn ordinal_of(&self, pod_name: &str) -> Option<usize> {
        let digits = pod_name.strip_prefix(self.key.name())?.strip_prefix('-')?;
        let canonical = digits == "0"
            || (!digits.is_empty()
                && !digits.starts_with('0')
                && digits.len() <= 10
                && digits.bytes().all(|b| b.is_ascii_digit()));
        if !canonical {
            return None;
        }
        let n = digits.parse::<i32>().ok()?;
        usize::try_from(n).ok()
    }

    /// The partition of a rolling update, as an index from the first ordinal; `None` under
    /// `OnDelete`.
    pub fn partition(&self) -> Option<usize> {
        match self.update_strategy {
            UpdateStrategy::RollingUpdate { partition, .. } => {
                Some(usize::try_from(partition.max(0)).unwrap_or(0))
            }
            UpdateStrategy::OnDelete => None,
        }
    }

    /// How many of the wanted Pods may be unavailable while a rolling update replaces them.
    pub fn max_unavailable(&self) -> usize {
        match self.update_strategy {
            UpdateStrategy::RollingUpdate {
                max_unavailable, ..
            } => max_unavailable
                .scaled(usize::try_from(self.replicas.max(0)).unwrap_or(0))
                .max(1),
            UpdateStrategy::OnDelete => 1,
        }
    }

    /// The ordinals the set wants: `start..start+replicas`, ending at int32's end (the last
    /// ordinal a Pod name can carry).
    pub fn wanted(&self) -> std::ops::Range<usize> {
        let start = i64::from(self.start_ordinal.max(0));
        let end = (start + i64::from(self.replicas.max(0))).min(i64::from(i32::MAX) + 1);
        let to_usize = |n: i64| usize::try_from(n).unwrap_or(0);
        to_usize(start)..to_usize(end)
    }
}

projection!(StatefulSetView, Resource::StatefulSets);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(spec: Value) -> StatefulSetView {
        let mut spec = spec;
        if let Some(m) = spec.as_object_mut() {
            m.entry("selector")
                .or_insert(json!({"matchLabels": {"app": "db"}}));
            m.entry("template")
                .or_insert(json!({"metadata": {"labels": {"app": "db"}}, "spec": {}}));
        }
        StatefulSetView::from_value(json!({
            "metadata": {"name": "db", "namespace": "ns", "uid": "u"}, "spec": spec}))
        .expect("identity is readable")
    }

    #[test]
    fn ordinals_are_canonical_decimal_int32s() {
        let s = set(json!({}));
        assert_eq!(s.ordinal_of("db-0"), Some(0));
        assert_eq!(s.ordinal_of("db-12"), Some(12));
        for odd in [
            "db-+1",
            "db-007",
            "db--1",
            "db-",
            "db-1a",
            "db-99999999999",
            "dbx-1",
            "db-2147483648",
        ] {
            assert_eq!(s.ordinal_of(odd), None, "{odd}");
        }
    }

    #[test]
    fn the_wanted_ordinals_start_at_spec_ordinals_start() {
        assert_eq!(set(json!({"replicas": 3})).wanted(), 0..3);
        assert_eq!(
            set(json!({"replicas": 3, "ordinals": {"start": 5}})).wanted(),
            5..8
        );
        assert_eq!(set(json!({})).wanted(), 0..1, "replicas default to 1");
        let huge = set(json!({"replicas": i32::MAX, "ordinals": {"start": i32::MAX}}));
        assert_eq!(huge.wanted(), i32::MAX as usize..i32::MAX as usize + 1);
    }

    #[test]
    fn the_claim_retention_policy_is_retain_unless_it_says_delete() {
        assert_eq!(
            set(json!({})).claim_retention,
            ClaimRetentionPolicy::default()
        );
        let both = set(json!({"persistentVolumeClaimRetentionPolicy":
            {"whenDeleted": "Delete", "whenScaled": "Delete"}}));
        assert_eq!(both.claim_retention.when_deleted, Retention::Delete);
        assert_eq!(both.claim_retention.when_scaled, Retention::Delete);
        let scaled = set(json!({"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}}));
        assert_eq!(scaled.claim_retention.when_deleted, Retention::Retain);
        assert_eq!(scaled.claim_retention.when_scaled, Retention::Delete);
        assert!(scaled.malformed.is_none());
    }

    #[test]
    fn policies_strategies_and_claim_templates_of_the_wrong_shape_are_malformed() {
        for (spec, path) in [
            (
                json!({"podManagementPolicy": "Whenever"}),
                "spec.podManagementPolicy",
            ),
            (json!({"ordinals": {"start": -1}}), "spec.ordinals.start"),
            (
                json!({"updateStrategy": {"rollingUpdate": {"partition": "2"}}}),
                "spec.updateStrategy.rollingUpdate.partition",
            ),
            (
                json!({"volumeClaimTemplates": [{"spec": {}}]}),
                "spec.volumeClaimTemplates[0].metadata.name",
            ),
            (json!({"replicas": 2.5}), "spec.replicas"),
            (
                json!({"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Remove"}}),
                "spec.persistentVolumeClaimRetentionPolicy.whenScaled",
            ),
            (
                json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": true}}),
                "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
            ),
            (
                json!({"persistentVolumeClaimRetentionPolicy": "Delete"}),
                "spec.persistentVolumeClaimRetentionPolicy",
            ),
        ] {
            let s = set(spec);
            let m = s.malformed.expect(path);
            assert_eq!(m.fields()[0].path, path);
        }
    }
}
