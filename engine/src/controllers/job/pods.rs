//! The Pods a Job makes and lets go: their bodies, the removal of its tracking finalizer, their
//! deletion, and which of them upstream holds to have failed.

use crate::action::Action;
use crate::object::{
    COMPLETION_INDEX_ANNOTATION, INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, IndexFailures, JOB_TRACKING_FINALIZER, PodPhase,
    PodView,
};
use crate::pod_template::{ControllerRef, NewMeta, NewObject, SpecOnly, spec_of_template, to_body};
use crate::reconciler::ReconcileError;
use crate::resource::Resource;
use crate::views::job::JobView;
use crate::views::pod_failure_policy::Verdict;
use serde_json::json;

/// A new Pod for the Job: of `index` for an Indexed Job, carrying `failures` (its index's
/// failures so far) for one with `backoffLimitPerIndex`.
pub(super) fn pod_for(
    job: &JobView,
    index: Option<u32>,
    failures: Option<IndexFailures>,
) -> Result<Action, ReconcileError> {
    let mut labels = job.template.labels.clone();
    labels.insert("batch.kubernetes.io/job-name".into(), job.key.name().into());
    labels.insert(
        "batch.kubernetes.io/controller-uid".into(),
        job.uid.text().into(),
    );
    let mut annotations = job.template.annotations.clone();
    if let Some(f) = failures {
        annotations.insert(INDEX_FAILURE_COUNT_ANNOTATION.into(), f.counted.to_string());
        // As upstream's `addIndexFailureCountAnnotation`: the ignored count only once non-zero.
        if f.ignored > 0 {
            annotations.insert(
                INDEX_IGNORED_FAILURE_COUNT_ANNOTATION.into(),
                f.ignored.to_string(),
            );
        }
    }
    let generate_name = match index {
        Some(i) => {
            annotations.insert(COMPLETION_INDEX_ANNOTATION.into(), i.to_string());
            format!("{}-{i}-", job.key.name())
        }
        None => format!("{}-", job.key.name()),
    };
    let body = NewObject {
        api_version: "v1",
        kind: "Pod",
        metadata: NewMeta {
            name: None,
            generate_name: Some(generate_name),
            namespace: job.key.namespace(),
            labels,
            annotations: Some(annotations),
            finalizers: vec![JOB_TRACKING_FINALIZER],
            owner_references: vec![ControllerRef::to(Resource::Jobs, job.key.name(), &job.uid)],
        },
        body: SpecOnly {
            spec: spec_of_template(&job.pod_template),
        },
    };
    Ok(Action::Create {
        resource: Resource::Pods,
        namespace: job.key.namespace_arc().clone(),
        body: to_body("job", &job.key, &body)?,
    })
}

/// Removes only the Job's own finalizer, as upstream's `removeTrackingFinalizerPatch`: other
/// controllers' finalizers on the Pod must outlive the Job's bookkeeping.
pub(super) fn unfinalize(pod: &PodView) -> Action {
    Action::StrategicPatch {
        resource: Resource::Pods,
        key: pod.key.clone(),
        patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}),
    }
}

pub(super) fn delete(pod: &PodView) -> Action {
    Action::Delete {
        resource: Resource::Pods,
        key: pod.key.clone(),
        uid: pod.uid.clone(),
    }
}

/// Upstream's `isPodFailed`: phase `Failed`, or, unless only failed Pods are replaced, being
/// deleted before succeeding (an orphan may never reach a phase).
pub(super) fn is_failed(job: &JobView, pod: &PodView) -> bool {
    match pod.phase {
        PodPhase::Failed => true,
        PodPhase::Succeeded => false,
        _ => !job.only_replace_failed && pod.terminating,
    }
}

/// Being deleted and not yet finished: what `status.terminating` counts.
pub(super) fn is_terminating(pod: &PodView) -> bool {
    pod.terminating && !matches!(pod.phase, PodPhase::Succeeded | PodPhase::Failed)
}

/// What the Job's podFailurePolicy makes of the failed `pod` (no policy: it counts).
pub(super) fn verdict(job: &JobView, pod: &PodView) -> Verdict {
    match (&job.pod_failure_policy, &pod.failure) {
        (Some(policy), Some(failure)) => policy.judge(pod.key.namespace(), pod.key.name(), failure),
        _ => Verdict::Count,
    }
}
