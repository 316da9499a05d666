//! Job (batch/v1): runs Pods until `completions` succeed (or one, for a work queue), at most
//! `parallelism` at once; Indexed mode gives each Pod a completion index and never runs two for
//! one index, may give each index its own `backoffLimitPerIndex`, and may succeed early by a
//! `successPolicy`. A Job fails past `backoffLimit` or `activeDeadlineSeconds`, by a
//! `podFailurePolicy` rule (whose `Ignore` rules let failures go uncounted), or by failed
//! indexes. A terminating Pod is replaced at once, or, with `podReplacementPolicy: Failed`, only
//! once it has failed. A suspended Job's active Pods are deleted, and its `Suspended` condition
//! says so. A Job's end is declared before it is final (see `finish`). Pods carry the
//! `batch.kubernetes.io/job-tracking` finalizer so each is counted exactly once (see `tracking`).

mod finish;
mod indexes;
mod pods;
mod status;
mod tracking;

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::controllers::claimants;
use crate::key::ObjectKey;
use crate::object::{Object, PodView};
use crate::reconcile_error::ensure_well_formed;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::views::job::JobView;
use finish::{Facts, Finish, finish};
use indexes::{PerIndex, per_index};
use pods::{delete, is_terminating, pod_for, unfinalize};
use smallvec::SmallVec;
use status::{Condition, StatusUpdate, conditions, with_status};
use std::collections::BTreeSet;
use tracking::{Tally, track};

/// The controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct JobController;

/// Upstream's `MaxPodCreateDeletePerSync`: at most this many Pods are created per sync.
pub const MAX_POD_CREATES_PER_SYNC: usize = 500;

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The writes to the Job's Pods one sync decides.
#[derive(Default)]
struct PodWrites {
    creates: Vec<Action>,
    /// Running Pods let go before they are deleted, as upstream's `deleteJobPods`: a Pod the
    /// Job no longer wants is not a failure.
    released: Vec<Action>,
    deletes: Vec<Action>,
    /// Pods are due later (an index's backoff): sync again after this many seconds.
    retry_after: Option<i64>,
}

impl PodWrites {
    /// Deletes `pods` keeping their finalizers, as upstream's `deleteActivePods` for a Job that
    /// is done: each is still counted once it has finished.
    fn delete_all(pods: &[&PodView]) -> Self {
        PodWrites {
            deletes: pods.iter().map(|p| delete(p)).collect(),
            ..PodWrites::default()
        }
    }

    fn release_and_delete(&mut self, pods: &[&PodView]) {
        self.released = pods
            .iter()
            .filter(|p| p.job_tracking)
            .map(|p| unfinalize(p))
            .collect();
        self.deletes = pods.iter().map(|p| delete(p)).collect();
    }
}

/// Upstream's `manageJob` for a running, unsuspended Job: creates up to `parallelism` (less the
/// terminating Pods when only failed Pods are replaced), deletes beyond it.
fn manage(
    job: &JobView,
    active: &mut [&PodView],
    terminating: &[&PodView],
    tally: &Tally<'_>,
    per_index: Option<&PerIndex<'_>>,
    now: i64,
) -> Result<PodWrites, ReconcileError> {
    let mut writes = PodWrites::default();
    let parallelism = usize::try_from(job.parallelism).unwrap_or(0);
    let waiting = if job.only_replace_failed {
        terminating.len()
    } else {
        0
    };
    if active.len() > parallelism {
        active.sort_by_key(|p| std::cmp::Reverse(p.created));
        writes.release_and_delete(&active[..active.len() - parallelism]);
        return Ok(writes);
    }
    let room = parallelism
        .saturating_sub(active.len())
        .saturating_sub(waiting)
        .min(MAX_POD_CREATES_PER_SYNC);
    let completions = job.completions.unwrap_or(1);
    if job.indexed {
        let mut busy: BTreeSet<u32> = active.iter().filter_map(|p| p.completion_index).collect();
        if job.only_replace_failed {
            busy.extend(terminating.iter().filter_map(|p| p.completion_index));
        }
        let done = match per_index {
            Some(p) => tally.completed_indexes.union(&p.failed),
            None => tally.completed_indexes.clone(),
        };
        let mut pending = done.first_missing(u32::try_from(completions).unwrap_or(0), &busy, room);
        if let Some(p) = per_index {
            pending.retain(|&i| match p.backoff_left(i, now) {
                0 => true,
                left => {
                    writes.retry_after = Some(writes.retry_after.map_or(left, |r| r.min(left)));
                    false
                }
            });
        }
        writes.creates = pending
            .into_iter()
            .map(|i| pod_for(job, Some(i), per_index.map(|p| p.failures_for(job, i))))
            .collect::<Result<_, _>>()?;
    } else {
        let succeeded = tally
            .succeeded
            .saturating_add(count(tally.uncounted_succeeded.len()));
        let remaining = match job.completions {
            Some(c) => usize::try_from(c.saturating_sub(succeeded)).unwrap_or(0),
            None if succeeded > 0 => 0,
            None => parallelism,
        };
        let wanted = remaining
            .min(parallelism)
            .saturating_sub(waiting)
            .saturating_sub(active.len())
            .min(MAX_POD_CREATES_PER_SYNC);
        writes.creates = (0..wanted)
            .map(|_| pod_for(job, None, None))
            .collect::<Result<_, _>>()?;
    }
    Ok(writes)
}

/// The `Suspended` condition as upstream's `syncJob` keeps it, and whether a resume restarts
/// the clock of `activeDeadlineSeconds`.
fn suspension(job: &JobView) -> (Condition, bool) {
    let condition = if job.suspended {
        Condition::new("Suspended", true, "JobSuspended", "Job suspended")
    } else {
        Condition::new("Suspended", false, "JobResumed", "Job resumed")
    };
    let resumed = !job.suspended && condition.changes(conditions(job));
    (condition, resumed)
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
        let terminating: Vec<&PodView> =
            pods.iter().copied().filter(|p| is_terminating(p)).collect();
        let per_index = per_index(job, &pods);
        let mut tally = track(job, &pods, per_index.as_ref());
        let succeeded_total = tally
            .succeeded
            .saturating_add(count(tally.uncounted_succeeded.len()));
        let failed_total = tally
            .failed
            .saturating_add(count(tally.uncounted_failed.len()))
            .saturating_add(tally.held_failures);
        let completions_reached = if job.indexed {
            let completions = u64::try_from(job.completions.unwrap_or(1)).unwrap_or(0);
            tally.completed_indexes.count() >= completions
        } else {
            match job.completions {
                Some(c) => succeeded_total >= c,
                None => succeeded_total >= 1 && active.is_empty(),
            }
        };
        let (suspended_condition, resumed) = suspension(job);
        // As upstream: the clock starts when the Job first runs, and again when it resumes.
        let mut start_time = match job.status.start_time {
            _ if resumed => Some(ctx.unix_secs),
            None if !job.suspended => Some(ctx.unix_secs),
            start => start,
        };
        let deadline_exceeded = !job.suspended
            && job
                .active_deadline_seconds
                .is_some_and(|d| start_time.is_some_and(|s| ctx.unix_secs.saturating_sub(s) >= d));
        let facts = Facts {
            tally: &tally,
            failed_total,
            deadline_exceeded,
            per_index: per_index.as_ref(),
            completions_reached,
        };
        let verdict: Option<Finish> = finish(job, &facts);
        let mut edits: Vec<Condition> = Vec::new();
        let writes = if job.finished() || job.terminating {
            // As upstream's `syncOrphanPod` for a finished Job and `canRemoveFinalizer` for one
            // being deleted: nothing is held for a Job that will run no more Pods.
            tally.let_go_all(job, &pods, per_index.as_ref(), false);
            PodWrites::delete_all(&active)
        } else if let Some(done) = &verdict {
            tally.let_go_all(job, &pods, per_index.as_ref(), done.failed);
            edits.push(done.interim());
            if tally.all_counted() && active.is_empty() && terminating.is_empty() {
                edits.push(done.terminal());
            }
            if done.releases_running() {
                let mut writes = PodWrites::default();
                writes.release_and_delete(&active);
                writes
            } else {
                PodWrites::delete_all(&active)
            }
        } else if job.suspended {
            // As upstream v1.36 (MutableSchedulingDirectivesForSuspendedJobs, on by default): a
            // suspended Job's clock is cleared, so its template may change and a resume
            // restarts `activeDeadlineSeconds` from zero.
            start_time = None;
            edits.push(suspended_condition);
            let mut writes = PodWrites::default();
            writes.release_and_delete(&active);
            writes
        } else {
            edits.push(suspended_condition);
            manage(
                job,
                &mut active,
                &terminating,
                &tally,
                per_index.as_ref(),
                ctx.unix_secs,
            )?
        };
        edits.retain(|c| c.changes(conditions(job)));
        let active_after = count(active.len());
        let ready = count(active.iter().filter(|p| p.ready).count());
        let failed_indexes = per_index.as_ref().map(|p| &p.failed);
        let status_changed = tally.recorded > 0
            || tally.succeeded != job.status.succeeded
            || tally.failed != job.status.failed
            || start_time != job.status.start_time
            || active_after != job.status.active
            || job.status.ready != Some(ready)
            || (!job.finished() && job.status.terminating != Some(count(terminating.len())))
            || !edits.is_empty()
            || (job.indexed && tally.completed_indexes != job.status.completed_indexes)
            || failed_indexes.is_some_and(|f| job.status.failed_indexes.as_ref() != Some(f));
        let mut plan = Plan::default();
        // Claims first, as upstream's `getPodsForJob` before `syncJob` decides: the rest of the
        // plan counts the adopted Pods, so it runs only once every claim succeeded.
        if !claimed.patches.is_empty() {
            plan.adopts = claimed.adopted > 0;
            plan.steps.push(claimed.patches);
        }
        if status_changed {
            let update = StatusUpdate {
                active: active_after,
                ready,
                terminating: count(terminating.len()),
                tally: &tally,
                start_time,
                failed_indexes,
                conditions: edits,
                now: ctx.unix_secs,
            };
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::Jobs,
                key: job.key.clone(),
                body: with_status(job, update)?,
            }]);
        }
        let mut releases: Vec<Action> = tally.unfinalize.iter().map(|p| unfinalize(p)).collect();
        releases.extend(writes.released);
        plan.steps.push(releases);
        plan.push_slow_start(writes.creates);
        plan.steps.push(writes.deletes);
        let deadline = match (job.active_deadline_seconds, start_time) {
            (Some(d), Some(start)) if !job.finished() && !job.suspended => {
                Some(start.saturating_add(d).saturating_sub(ctx.unix_secs))
            }
            _ => None,
        };
        let again = match (deadline, writes.retry_after) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(left) = again {
            plan.requeue_after = Some(std::time::Duration::from_secs(
                u64::try_from(left.max(1)).unwrap_or(1),
            ));
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests;
