//! The Job projection (batch/v1): what the Job controller reads, checked, and the whole object
//! for its status writes.

use crate::index_set::IndexSet;
use crate::key::{ObjectKey, Uid};
use crate::pod_template::{PodTemplate, template_object};
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::views::checked::{Checker, Field};
use crate::views::malformed::Malformed;
use crate::views::malformed::projection;
use crate::views::meta::{DecodeError, read_meta};
use crate::views::owner_json::OwnerJson;
use crate::views::pod_failure_policy::PodFailurePolicy;
use crate::views::success_policy::SuccessPolicy;
use crate::views::without_managed_fields::parse_owner_json;
use std::sync::Arc;

/// A Job's status as the controller tracks it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobStatus {
    /// status.active.
    pub active: i32,
    /// status.succeeded (counted: the Pods' finalizers are gone).
    pub succeeded: i32,
    /// status.failed (counted).
    pub failed: i32,
    /// status.uncountedTerminatedPods.succeeded: finished, recorded, finalizer not yet removed.
    pub uncounted_succeeded: Vec<String>,
    /// status.uncountedTerminatedPods.failed.
    pub uncounted_failed: Vec<String>,
    /// status.completedIndexes, for Indexed Jobs.
    pub completed_indexes: IndexSet,
    /// status.startTime (Unix seconds).
    pub start_time: Option<i64>,
    /// A `Complete` condition is True.
    pub completed: bool,
    /// A `Failed` condition is True.
    pub failed_condition: bool,
    /// A `FailureTarget` condition is True: the Job is failing for this `(reason, message)`
    /// and fails once its Pods are gone and counted.
    pub failure_target: Option<(String, String)>,
    /// A `SuccessCriteriaMet` condition is True: the Job has succeeded for this
    /// `(reason, message)` and completes once its Pods are gone and counted.
    pub success_criteria_met: Option<(String, String)>,
    /// status.failedIndexes, for Jobs with `backoffLimitPerIndex`.
    pub failed_indexes: Option<IndexSet>,
    /// status.terminating.
    pub terminating: Option<i32>,
    /// status.ready: active Pods with the `Ready` condition.
    pub ready: Option<i32>,
}

/// A Job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobView {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// spec.parallelism (default 1).
    pub parallelism: i32,
    /// spec.completions (`None`: a work queue, done when one Pod succeeds; defaults to 1 when
    /// parallelism is absent too, as upstream).
    pub completions: Option<i32>,
    /// spec.backoffLimit (default 6, or no limit with `backoffLimitPerIndex`, as upstream's
    /// defaulting).
    pub backoff_limit: i32,
    /// spec.backoffLimitPerIndex: the failures each index may have before it fails.
    pub backoff_limit_per_index: Option<i32>,
    /// spec.maxFailedIndexes: the failed indexes past which the whole Job fails.
    pub max_failed_indexes: Option<i32>,
    /// spec.successPolicy.
    pub success_policy: Option<Arc<SuccessPolicy>>,
    /// A terminating Pod is not replaced until it has failed (upstream's
    /// `onlyReplaceFailedPods`): spec.podReplacementPolicy is `Failed`, which a
    /// podFailurePolicy makes its default.
    pub only_replace_failed: bool,
    /// spec.activeDeadlineSeconds.
    pub active_deadline_seconds: Option<i64>,
    /// spec.completionMode is `Indexed`.
    pub indexed: bool,
    /// spec.suspend.
    pub suspended: bool,
    /// spec.podFailurePolicy.
    pub pod_failure_policy: Option<Arc<PodFailurePolicy>>,
    /// spec.template.
    pub template: Arc<PodTemplate>,
    /// spec.selector (the server generates one from the Job's UID); `None` if absent.
    pub selector: Option<crate::labels::LabelSelector>,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The status.
    pub status: JobStatus,
    /// Why the controller must not act on it, if a field it reads is unusable.
    pub malformed: Option<Arc<Malformed>>,
    /// status.conditions as observed (an array when present).
    pub conditions: Option<Arc<serde_json::Value>>,
    /// spec.template as observed (an empty object when absent).
    pub pod_template: Arc<serde_json::Value>,
    /// The object as last observed, without managedFields, for status writes (a JSON object
    /// whose `status`, if present, is an object).
    pub raw: OwnerJson,
}

impl JobView {
    /// Decodes a Job from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_value(parse_owner_json(bytes)?)
    }

    /// Decodes a Job from a parsed object, every field the controller reads checked.
    pub fn from_value(value: serde_json::Value) -> Result<Self, DecodeError> {
        let mut c = Checker::default();
        let meta = read_meta(&value, &mut c)?;
        let root = Field::root(&value);
        let spec = root.get(&mut c, "spec");
        let parallelism = spec.get(&mut c, "parallelism").int32(&mut c, 0);
        let completions_field = spec.get(&mut c, "completions");
        let mut completions = c.int32(&completions_field, 0);
        if parallelism.is_none() && !completions_field.is_present() {
            completions = Some(1);
        }
        let backoff_limit_per_index = spec.get(&mut c, "backoffLimitPerIndex").int32(&mut c, 0);
        let max_failed_indexes = spec.get(&mut c, "maxFailedIndexes").int32(&mut c, 0);
        let backoff_limit = spec.get(&mut c, "backoffLimit").int32(&mut c, 0).unwrap_or(
            if backoff_limit_per_index.is_some() {
                i32::MAX
            } else {
                6
            },
        );
        let active_deadline_seconds = spec.get(&mut c, "activeDeadlineSeconds").int64(&mut c, 0);
        let indexed = spec
            .get(&mut c, "completionMode")
            .one_of(&mut c, &["NonIndexed", "Indexed"])
            == Some("Indexed");
        if indexed && completions.is_none() && !completions_field.is_present() {
            c.record(
                "spec.completions",
                "Required value: when completion mode is Indexed".into(),
            );
        }
        let suspended = spec.get(&mut c, "suspend").boolean(&mut c).unwrap_or(false);
        let pod_failure_policy =
            PodFailurePolicy::read(&spec.get(&mut c, "podFailurePolicy"), &mut c).map(Arc::new);
        let replacement = spec
            .get(&mut c, "podReplacementPolicy")
            .one_of(&mut c, &["TerminatingOrFailed", "Failed"]);
        let only_replace_failed = replacement == Some("Failed") || pod_failure_policy.is_some();
        let success_policy =
            SuccessPolicy::read(&spec.get(&mut c, "successPolicy"), &mut c, completions)
                .map(Arc::new);
        let selector = spec
            .get(&mut c, "selector")
            .is_present()
            .then(|| crate::labels::LabelSelector::read(&spec.get(&mut c, "selector"), &mut c));
        let template = PodTemplate::read(&root, &mut c);
        let status = root.get(&mut c, "status");
        let mut count = |name: &str| status.get(&mut c, name).int32(&mut c, 0).unwrap_or(0);
        let (active, succeeded, failed) = (count("active"), count("succeeded"), count("failed"));
        let uncounted_succeeded = status
            .get(&mut c, "uncountedTerminatedPods.succeeded")
            .strings(&mut c);
        let uncounted_failed = status
            .get(&mut c, "uncountedTerminatedPods.failed")
            .strings(&mut c);
        let indexes_field = status.get(&mut c, "completedIndexes");
        let completed_indexes = match c.string(&indexes_field) {
            None => IndexSet::default(),
            Some(text) => {
                let limit = completions.and_then(|n| u32::try_from(n).ok());
                match IndexSet::parse(text) {
                    Some(set) if set.max().is_none_or(|m| limit.is_none_or(|l| m < l)) => set,
                    _ => {
                        c.record(
                            indexes_field.path(),
                            format!(
                                "{:?}: not ascending indexes below spec.completions",
                                cut(text)
                            ),
                        );
                        IndexSet::default()
                    }
                }
            }
        };
        let failed_field = status.get(&mut c, "failedIndexes");
        let failed_indexes = c.string(&failed_field).map(|text| {
            IndexSet::parse(text).unwrap_or_else(|| {
                c.record(
                    failed_field.path(),
                    format!("{:?}: not ascending indexes", cut(text)),
                );
                IndexSet::default()
            })
        });
        let terminating = status.get(&mut c, "terminating").int32(&mut c, 0);
        let ready = status.get(&mut c, "ready").int32(&mut c, 0);
        let start_time = status.get(&mut c, "startTime").timestamp(&mut c);
        status.get(&mut c, "completionTime").timestamp(&mut c);
        let (mut completed, mut failed_condition) = (false, false);
        let (mut failure_target, mut success_criteria_met) = (None, None);
        for condition in status.get(&mut c, "conditions").items(&mut c) {
            c.object(&condition);
            let kind = condition.get(&mut c, "type").string(&mut c);
            let on = condition
                .get(&mut c, "status")
                .one_of(&mut c, &["True", "False", "Unknown"])
                == Some("True");
            condition
                .get(&mut c, "lastTransitionTime")
                .timestamp(&mut c);
            completed |= on && kind == Some("Complete");
            failed_condition |= on && kind == Some("Failed");
            let text = |c: &mut Checker, name: &str| {
                condition.get(c, name).string(c).unwrap_or("").to_string()
            };
            if on && kind == Some("FailureTarget") && failure_target.is_none() {
                failure_target = Some((text(&mut c, "reason"), text(&mut c, "message")));
            }
            if on && kind == Some("SuccessCriteriaMet") && success_criteria_met.is_none() {
                success_criteria_met = Some((text(&mut c, "reason"), text(&mut c, "message")));
            }
        }
        Ok(JobView {
            key: meta.key,
            uid: meta.uid,
            resource_version: meta.resource_version,
            parallelism: parallelism.unwrap_or(1),
            completions,
            backoff_limit,
            backoff_limit_per_index,
            max_failed_indexes,
            success_policy,
            only_replace_failed,
            active_deadline_seconds,
            indexed,
            suspended,
            pod_failure_policy,
            template: Arc::new(template),
            selector,
            terminating: meta.terminating,
            status: JobStatus {
                active,
                succeeded,
                failed,
                uncounted_succeeded,
                uncounted_failed,
                completed_indexes,
                start_time,
                completed,
                failed_condition,
                failure_target,
                success_criteria_met,
                failed_indexes,
                terminating,
                ready,
            },
            malformed: c.finish(),
            conditions: value
                .get("status")
                .and_then(|s| s.get("conditions"))
                .cloned()
                .map(Arc::new),
            pod_template: template_object(&value),
            raw: OwnerJson::keep(value),
        })
    }

    /// The Job is finished (Complete or Failed).
    pub fn finished(&self) -> bool {
        self.status.completed || self.status.failed_condition
    }
}

fn cut(text: &str) -> &str {
    let mut end = text.len().min(64);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

projection!(JobView, Resource::Jobs);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(spec: serde_json::Value, status: serde_json::Value) -> JobView {
        let mut spec = spec;
        if let Some(m) = spec.as_object_mut() {
            m.insert("template".into(), json!({"spec": {}}));
        }
        JobView::from_value(
            json!({"metadata": {"name": "pi", "uid": "u"}, "spec": spec, "status": status}),
        )
        .expect("identity")
    }

    #[test]
    fn absent_counts_take_upstream_defaults() {
        let j = job(json!({}), json!({}));
        assert_eq!(
            (j.parallelism, j.completions, j.backoff_limit),
            (1, Some(1), 6)
        );
        let queue = job(json!({"parallelism": 3}), json!({}));
        assert_eq!((queue.parallelism, queue.completions), (3, None));
        assert!(j.malformed.is_none() && queue.malformed.is_none());
    }

    #[test]
    fn per_index_limits_lift_the_backoff_limit_and_a_failure_policy_replaces_only_failed_pods() {
        let j = job(json!({"backoffLimitPerIndex": 1}), json!({}));
        assert_eq!(j.backoff_limit, i32::MAX);
        assert!(!j.only_replace_failed);
        let j = job(json!({"podReplacementPolicy": "Failed"}), json!({}));
        assert!(j.only_replace_failed);
        let j = job(json!({"podFailurePolicy": {"rules": []}}), json!({}));
        assert!(j.only_replace_failed);
        let j = job(
            json!({"podReplacementPolicy": "TerminatingOrFailed"}),
            json!({"failedIndexes": "0,1", "terminating": 2, "ready": 1}),
        );
        assert!(!j.only_replace_failed);
        assert_eq!(j.status.failed_indexes.map(|f| f.count()), Some(2));
        assert_eq!(j.status.terminating, Some(2));
        assert_eq!(j.status.ready, Some(1));
    }

    #[test]
    fn counts_modes_and_indexes_of_the_wrong_shape_are_malformed() {
        for (spec, status, path) in [
            (json!({"parallelism": "2"}), json!({}), "spec.parallelism"),
            (json!({"completions": -1}), json!({}), "spec.completions"),
            (
                json!({"completionMode": "Indexed", "parallelism": 2}),
                json!({}),
                "spec.completions",
            ),
            (
                json!({"completionMode": "Sideways"}),
                json!({}),
                "spec.completionMode",
            ),
            (json!({"suspend": "yes"}), json!({}), "spec.suspend"),
            (
                json!({"completions": 3, "completionMode": "Indexed"}),
                json!({"completedIndexes": "0-7"}),
                "status.completedIndexes",
            ),
            (
                json!({}),
                json!({"uncountedTerminatedPods": {"succeeded": [1]}}),
                "status.uncountedTerminatedPods.succeeded[0]",
            ),
            (
                json!({}),
                json!({"conditions": [{"type": "Complete", "status": "Yes"}]}),
                "status.conditions[0].status",
            ),
            (json!({}), json!({"startTime": 5}), "status.startTime"),
            (
                json!({"podReplacementPolicy": "Sometimes"}),
                json!({}),
                "spec.podReplacementPolicy",
            ),
            (
                json!({"backoffLimitPerIndex": -1}),
                json!({}),
                "spec.backoffLimitPerIndex",
            ),
            (
                json!({}),
                json!({"failedIndexes": "3-1"}),
                "status.failedIndexes",
            ),
            (
                json!({"successPolicy": {"rules": [{"succeededIndexes": "x"}]}}),
                json!({}),
                "spec.successPolicy.rules[0].succeededIndexes",
            ),
        ] {
            let j = job(spec, status);
            let m = j.malformed.expect(path);
            assert_eq!(m.fields()[0].path, path);
        }
    }
}
