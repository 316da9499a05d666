//! Job (batch/v1): runs Pods until `completions` succeed (or one, for a work queue), at most
//! `parallelism` at once; Indexed mode gives each Pod a completion index and never runs two for
//! one index; `backoffLimit` and `activeDeadlineSeconds` fail the Job, as does a failed Pod a
//! `podFailurePolicy` rule fails it for (a `FailureTarget` first), while its `Ignore` rules let
//! failures go uncounted; a suspended Job's active Pods are deleted. Pods carry the
//! `batch.kubernetes.io/job-tracking` finalizer so each is counted exactly once, as upstream: a
//! finished Pod's UID is first recorded in `status.uncountedTerminatedPods`, then its finalizer
//! is removed, then it moves into the counters in the same write that forgets the UID.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::controllers::claimants;
use crate::index_set::IndexSet;
use crate::key::ObjectKey;
use crate::object::{
    COMPLETION_INDEX_ANNOTATION, JOB_TRACKING_FINALIZER, Object, PodPhase, PodView,
};
use crate::pod_template::{ControllerRef, NewMeta, NewObject, SpecOnly, template_spec, to_body};
use crate::reconcile_error::ensure_well_formed;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::views::job::JobView;
use crate::views::pod_failure_policy::Verdict;
use serde_json::{Map, Value, json};
use smallvec::SmallVec;
use std::collections::BTreeSet;

/// The controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct JobController;

fn finished(pod: &PodView) -> Option<bool> {
    match pod.phase {
        PodPhase::Succeeded => Some(true),
        PodPhase::Failed => Some(false),
        _ => None,
    }
}

/// Upstream's `MaxPodCreateDeletePerSync`: at most this many Pods are created per sync.
pub const MAX_POD_CREATES_PER_SYNC: usize = 500;

fn pod_for(job: &JobView, index: Option<u32>) -> Result<Action, ReconcileError> {
    let mut labels = job.template.labels.clone();
    labels.insert("batch.kubernetes.io/job-name".into(), job.key.name().into());
    labels.insert(
        "batch.kubernetes.io/controller-uid".into(),
        job.uid.as_str().into(),
    );
    let mut annotations = job.template.annotations.clone();
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
            owner_references: [ControllerRef::to(
                Resource::Jobs,
                job.key.name(),
                job.uid.as_str(),
            )],
        },
        body: SpecOnly {
            spec: template_spec(&job.raw),
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
fn unfinalize(pod: &PodView) -> Action {
    Action::StrategicPatch {
        resource: Resource::Pods,
        key: pod.key.clone(),
        patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}),
    }
}

fn delete(pod: &PodView) -> Action {
    Action::Delete {
        resource: Resource::Pods,
        key: pod.key.clone(),
        uid: pod.uid.clone(),
    }
}

struct Tally {
    succeeded: i32,
    failed: i32,
    uncounted_succeeded: Vec<String>,
    uncounted_failed: Vec<String>,
    completed_indexes: IndexSet,
    recorded: usize,
    /// A newly recorded failed Pod matched a `FailJob` rule of the podFailurePolicy: why.
    fail_job: Option<String>,
}

/// Moves finished Pods through the tracking steps; returns the new counters and the finalizer
/// removals that are due (for Pods whose UID the *cached* status already records).
fn track<'a>(job: &JobView, pods: &[&'a PodView]) -> (Tally, Vec<&'a PodView>) {
    let mut tally = Tally {
        succeeded: job.status.succeeded,
        failed: job.status.failed,
        uncounted_succeeded: Vec::new(),
        uncounted_failed: Vec::new(),
        completed_indexes: job.status.completed_indexes.clone(),
        recorded: 0,
        fail_job: None,
    };
    let mut unfinalize = Vec::new();
    let by_uid = |uid: &str| pods.iter().find(|p| p.uid.as_str() == uid);
    for (recorded, counted, into) in [
        (
            &job.status.uncounted_succeeded,
            &mut tally.succeeded,
            &mut tally.uncounted_succeeded,
        ),
        (
            &job.status.uncounted_failed,
            &mut tally.failed,
            &mut tally.uncounted_failed,
        ),
    ] {
        for uid in recorded {
            match by_uid(uid) {
                Some(pod) if pod.job_tracking => into.push(uid.clone()),
                _ => *counted = counted.saturating_add(1),
            }
        }
    }
    for pod in pods {
        let Some(success) = finished(pod) else {
            continue;
        };
        if !pod.job_tracking {
            continue;
        }
        let uid = pod.uid.as_str();
        let known = job
            .status
            .uncounted_succeeded
            .iter()
            .chain(&job.status.uncounted_failed)
            .any(|u| u == uid);
        let verdict = match (&job.pod_failure_policy, &pod.failure) {
            (Some(policy), Some(failure)) if !success => {
                policy.judge(pod.key.namespace(), pod.key.name(), failure)
            }
            _ => Verdict::Count,
        };
        if known {
            unfinalize.push(*pod);
        } else if success {
            tally.uncounted_succeeded.push(uid.to_string());
            tally.recorded += 1;
        } else if verdict == Verdict::Ignore {
            // As upstream: an ignored failure is never recorded, only let go.
            unfinalize.push(*pod);
        } else {
            if let Verdict::FailJob(message) = verdict {
                tally.fail_job.get_or_insert(message);
            }
            tally.uncounted_failed.push(uid.to_string());
            tally.recorded += 1;
        }
        // An index beyond `completions` is not a completion (upstream ignores it too).
        if success
            && let Some(i) = pod.completion_index
            && job.completions.is_some_and(|c| i64::from(i) < i64::from(c))
        {
            tally.completed_indexes.insert(i);
        }
    }
    (tally, unfinalize)
}

/// What a status write changes.
struct StatusUpdate<'a> {
    active: i32,
    tally: &'a Tally,
    start_time: i64,
    condition: Option<Value>,
    now: i64,
}

/// The Job as observed with its status updated (other status fields kept).
fn with_status(job: &JobView, update: StatusUpdate<'_>) -> Result<Value, ReconcileError> {
    let unbuildable = |message: &str| ReconcileError::Unbuildable {
        controller: "job",
        key: job.key.clone(),
        message: message.to_string(),
    };
    let mut body = (*job.raw).clone();
    let Value::Object(object) = &mut body else {
        return Err(unbuildable("the cached Job is not a JSON object"));
    };
    let mut status = match object.remove("status") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let tally = update.tally;
    status.insert("active".into(), json!(update.active));
    status.insert("succeeded".into(), json!(tally.succeeded));
    status.insert("failed".into(), json!(tally.failed));
    status.insert(
        "uncountedTerminatedPods".into(),
        json!({"succeeded": tally.uncounted_succeeded, "failed": tally.uncounted_failed}),
    );
    status.insert(
        "startTime".into(),
        json!(crate::time::format_rfc3339(update.start_time)),
    );
    if job.indexed {
        status.insert(
            "completedIndexes".into(),
            json!(tally.completed_indexes.to_string()),
        );
    }
    if let Some(c) = update.condition {
        let complete = c.get("type").and_then(Value::as_str) == Some("Complete");
        let conditions = status
            .entry("conditions")
            .or_insert_with(|| Value::Array(Vec::new()));
        if conditions.is_null() {
            *conditions = Value::Array(Vec::new());
        }
        let Value::Array(conditions) = conditions else {
            return Err(unbuildable("status.conditions is not an array"));
        };
        conditions.push(c);
        if complete {
            status.insert(
                "completionTime".into(),
                json!(crate::time::format_rfc3339(update.now)),
            );
        }
    }
    object.insert("status".into(), Value::Object(status));
    Ok(body)
}

impl Reconciler for JobController {
    fn name(&self) -> &'static str {
        "job"
    }
    fn gate_name(&self) -> &'static str {
        "Job"
    }
    fn primary(&self) -> Resource {
        Resource::Jobs
    }
    fn reads(&self) -> &[Resource] {
        &[Resource::Jobs, Resource::Pods]
    }

    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::Job(job) => keys.push(job.key.clone()),
            Object::Pod(pod) => keys.extend(pod.owner_key("Job")),
            _ => {}
        }
    }

    fn keys_for_cache(&self, object: &Object, cache: &ShardCache, keys: &mut Vec<ObjectKey>) {
        claimants::owners_of(self.primary(), object, cache, keys);
    }

    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &ShardCache,
        ctx: &Context,
    ) -> Result<Plan, ReconcileError> {
        let Some(job) = cache.jobs.get(key) else {
            return Ok(Plan::default());
        };
        ensure_well_formed(self.name(), job)?;
        for pod in cache.pods.owned_by(&job.uid) {
            ensure_well_formed(self.name(), pod)?;
        }
        let claimed = claimants::job(job).claim(cache, |_| true, |_| true);
        let pods = claimed.pods;
        let mut active: Vec<&PodView> = pods.iter().copied().filter(|p| p.is_active()).collect();
        let (tally, finalizers_due) = track(job, &pods);
        let mut plan = Plan::default();
        if !claimed.patches.is_empty() {
            plan.adopts = claimed.adopted > 0;
            plan.steps.push(claimed.patches);
        }
        let len = |v: &Vec<String>| i32::try_from(v.len()).unwrap_or(i32::MAX);
        let succeeded_total = tally
            .succeeded
            .saturating_add(len(&tally.uncounted_succeeded));
        let failed_total = tally.failed.saturating_add(len(&tally.uncounted_failed));
        let completions = job.completions.unwrap_or(1);
        let complete = if job.indexed {
            tally.completed_indexes.count() >= u64::try_from(completions).unwrap_or(0)
        } else {
            match job.completions {
                Some(c) => succeeded_total >= c,
                None => succeeded_total >= 1 && active.is_empty(),
            }
        };
        let start_time = job.status.start_time.unwrap_or(ctx.unix_secs);
        let deadline_exceeded = job
            .active_deadline_seconds
            .is_some_and(|d| ctx.unix_secs.saturating_sub(start_time) >= d);
        // A podFailurePolicy's FailJob is recorded first as a FailureTarget condition, as
        // upstream: the Job fails for it once its Pods are gone, whatever comes later.
        let target = job.status.failure_target.clone().or_else(|| {
            tally
                .fail_job
                .clone()
                .map(|m| ("PodFailurePolicy".to_string(), m))
        });
        let failure = if let Some((reason, message)) = &target {
            Some((reason.as_str(), message.as_str()))
        } else if failed_total > job.backoff_limit {
            Some((
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ))
        } else if deadline_exceeded {
            Some((
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            ))
        } else {
            None
        };
        // As upstream: the finished condition waits until every finished Pod is counted.
        let all_counted = tally.uncounted_succeeded.is_empty() && tally.uncounted_failed.is_empty();
        let mut condition: Option<Value> = None;
        let mut deletes: Vec<Action> = Vec::new();
        let mut creates: Vec<Action> = Vec::new();
        if job.finished() || job.terminating {
            deletes = active.iter().map(|p| delete(p)).collect();
        } else if let Some((reason, message)) = failure {
            deletes = active.iter().map(|p| delete(p)).collect();
            if job.status.failure_target.is_none() && tally.fail_job.is_some() {
                condition = Some(
                    json!({"type": "FailureTarget", "status": "True", "reason": reason, "message": message,
                    "lastTransitionTime": crate::time::format_rfc3339(ctx.unix_secs)}),
                );
            } else if all_counted && active.is_empty() {
                condition = Some(
                    json!({"type": "Failed", "status": "True", "reason": reason, "message": message,
                    "lastTransitionTime": crate::time::format_rfc3339(ctx.unix_secs)}),
                );
            }
        } else if complete {
            deletes = active.iter().map(|p| delete(p)).collect();
            if all_counted && active.is_empty() {
                condition = Some(json!({"type": "Complete", "status": "True",
                    "lastTransitionTime": crate::time::format_rfc3339(ctx.unix_secs)}));
            }
        } else if !job.suspended {
            let parallelism = usize::try_from(job.parallelism).unwrap_or(0);
            if job.indexed {
                let running: BTreeSet<u32> =
                    active.iter().filter_map(|p| p.completion_index).collect();
                let pending = tally.completed_indexes.first_missing(
                    u32::try_from(completions).unwrap_or(0),
                    &running,
                    parallelism
                        .saturating_sub(active.len())
                        .min(MAX_POD_CREATES_PER_SYNC),
                );
                creates = pending
                    .into_iter()
                    .map(|i| pod_for(job, Some(i)))
                    .collect::<Result<_, _>>()?;
            } else {
                let remaining = match job.completions {
                    Some(c) => usize::try_from(c.saturating_sub(succeeded_total)).unwrap_or(0),
                    None if succeeded_total > 0 => 0,
                    None => parallelism,
                };
                let wanted = parallelism
                    .min(remaining)
                    .min(active.len().saturating_add(MAX_POD_CREATES_PER_SYNC));
                if active.len() < wanted {
                    creates = (active.len()..wanted)
                        .map(|_| pod_for(job, None))
                        .collect::<Result<_, _>>()?;
                }
            }
            if active.len() > parallelism {
                active.sort_by_key(|p| std::cmp::Reverse(p.created));
                deletes = active[..active.len() - parallelism]
                    .iter()
                    .map(|p| delete(p))
                    .collect();
            }
        } else {
            // As upstream's manageJob: a suspended Job runs nothing; its active Pods go.
            deletes = active.iter().map(|p| delete(p)).collect();
        }
        let active_after = i32::try_from(active.len()).unwrap_or(i32::MAX);
        let status_changed = tally.recorded > 0
            || tally.succeeded != job.status.succeeded
            || tally.failed != job.status.failed
            || job.status.start_time.is_none()
            || active_after != job.status.active
            || condition.is_some()
            || (job.indexed && tally.completed_indexes != job.status.completed_indexes);
        if status_changed {
            let update = StatusUpdate {
                active: active_after,
                tally: &tally,
                start_time,
                condition,
                now: ctx.unix_secs,
            };
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::Jobs,
                key: job.key.clone(),
                body: with_status(job, update)?,
            }]);
        }
        plan.steps
            .push(finalizers_due.iter().map(|p| unfinalize(p)).collect());
        plan.push_slow_start(creates);
        plan.steps.push(deletes);
        if let Some(d) = job.active_deadline_seconds
            && !job.finished()
        {
            let left = start_time
                .saturating_add(d)
                .saturating_sub(ctx.unix_secs)
                .max(1);
            plan.requeue_after = Some(std::time::Duration::from_secs(
                u64::try_from(left).unwrap_or(1),
            ));
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests;
