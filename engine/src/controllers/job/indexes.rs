//! `backoffLimitPerIndex` for Indexed Jobs, as upstream: an index whose Pod fails once its index
//! has already failed `backoffLimitPerIndex` times (or that a `FailIndex` rule matches) is failed
//! for good and recorded in `status.failedIndexes`; each replacement carries its index's failure
//! count in an annotation, read from the failed Pod it replaces, whose finalizer is kept until
//! the replacement exists so that the count cannot be lost. A replacement waits out the index's
//! own backoff, counted from when the Pod it replaces finished.

use super::pods::{is_failed, verdict};
use crate::index_set::IndexSet;
use crate::object::{IndexFailures, PodPhase, PodView};
use crate::views::job::JobView;
use crate::views::pod_failure_policy::Verdict;
use std::collections::{BTreeMap, BTreeSet};

/// The per-index state of one sync.
pub(super) struct PerIndex<'a> {
    /// status.failedIndexes with the indexes failed since.
    pub failed: IndexSet,
    /// For each index waiting for a replacement: the failed Pod it replaces (upstream's
    /// `getPodsWithDelayedDeletionPerIndex`), whose finalizer stays until the replacement exists.
    pub replaced: BTreeMap<u32, &'a PodView>,
}

fn below(job: &JobView) -> u32 {
    job.completions
        .and_then(|c| u32::try_from(c).ok())
        .unwrap_or(0)
}

/// The tracked Pod's index, if it is one the Job runs.
fn index_of(job: &JobView, pod: &PodView) -> Option<u32> {
    pod.completion_index
        .filter(|i| *i < below(job) && pod.job_tracking)
}

/// Upstream's `isIndexFailed`: the Pod failed, and a `FailIndex` rule matched it or its counted
/// failure found its index at `backoffLimitPerIndex` already.
fn fails_its_index(job: &JobView, limit: i32, pod: &PodView) -> bool {
    if !is_failed(job, pod) {
        return false;
    }
    match verdict(job, pod) {
        Verdict::FailIndex => true,
        v => v.counts() && i64::from(pod.index_failures.counted) >= i64::from(limit),
    }
}

/// The per-index state, for an Indexed Job with `backoffLimitPerIndex`.
pub(super) fn per_index<'a>(job: &JobView, pods: &[&'a PodView]) -> Option<PerIndex<'a>> {
    let limit = job.backoff_limit_per_index.filter(|_| job.indexed)?;
    let mut failed = job
        .status
        .failed_indexes
        .as_ref()
        .map(|f| f.below(below(job)))
        .unwrap_or_default();
    let mut succeeded = job.status.completed_indexes.below(below(job));
    let mut active = BTreeSet::new();
    for pod in pods {
        if let Some(i) = index_of(job, pod) {
            if fails_its_index(job, limit, pod) {
                failed.insert(i);
            }
            if pod.phase == PodPhase::Succeeded {
                succeeded.insert(i);
            }
        }
        if pod.is_active()
            && let Some(i) = pod.completion_index
        {
            active.insert(i);
        }
    }
    let mut replaced: BTreeMap<u32, &PodView> = BTreeMap::new();
    for pod in pods {
        let Some(i) = index_of(job, pod) else {
            continue;
        };
        if !is_failed(job, pod)
            || succeeded.contains(i)
            || failed.contains(i)
            || active.contains(&i)
            // A Pod that fails the whole Job is recorded at once, never replaced.
            || matches!(verdict(job, pod), Verdict::FailJob(_))
        {
            continue;
        }
        // The latest failure of the index: the most failures before it, then the newest.
        let later = |p: &PodView| (p.index_failures.total(), p.created);
        match replaced.get(&i) {
            Some(other) if later(other) > later(pod) => {}
            _ => {
                replaced.insert(i, pod);
            }
        }
    }
    Some(PerIndex { failed, replaced })
}

/// Upstream's `DefaultJobPodFailureBackOff`: the wait after one failure, doubled for each more.
const FIRST_BACKOFF_SECS: i64 = 10;
/// Upstream's `MaxJobPodFailureBackOff`.
const MAX_BACKOFF_SECS: i64 = 600;

/// When the failed Pod finished, as upstream's `getFinishedTime` looks it up: its containers,
/// else its Ready condition turning False, else its creation (the deletion time it also tries
/// is not kept in the cache).
fn finished_at(pod: &PodView) -> i64 {
    pod.failure
        .as_ref()
        .and_then(|f| f.finished_at)
        .or(pod.ready_since.filter(|_| !pod.ready))
        .unwrap_or(pod.created)
}

impl PerIndex<'_> {
    /// The annotations of the new Pod of index `i` (upstream's `getNewIndexFailureCounts`): the
    /// counts of the Pod it replaces with that Pod's own failure added, counted or ignored.
    pub(super) fn failures_for(&self, job: &JobView, i: u32) -> IndexFailures {
        let Some(pod) = self.replaced.get(&i) else {
            return IndexFailures::default();
        };
        let mut f = pod.index_failures;
        if verdict(job, pod).counts() {
            f.counted = f.counted.saturating_add(1);
        } else {
            f.ignored = f.ignored.saturating_add(1);
        }
        f
    }

    /// The Pod's finalizer is held for its index's replacement.
    pub(super) fn holds(&self, pod: &PodView) -> bool {
        pod.completion_index
            .and_then(|i| self.replaced.get(&i))
            .is_some_and(|p| p.uid == pod.uid)
    }

    /// Seconds index `i` must still wait before its next Pod at `now` (upstream's
    /// `getRemainingTimePerIndex`): 0 without a failed Pod to replace.
    pub(super) fn backoff_left(&self, i: u32, now: i64) -> i64 {
        let Some(pod) = self.replaced.get(&i) else {
            return 0;
        };
        let failures = pod.index_failures.total().saturating_add(1);
        let mut backoff = FIRST_BACKOFF_SECS;
        for _ in 1..failures {
            backoff = (backoff * 2).min(MAX_BACKOFF_SECS);
            if backoff == MAX_BACKOFF_SECS {
                break;
            }
        }
        let elapsed = now.saturating_sub(finished_at(pod));
        if backoff < elapsed {
            0
        } else {
            backoff - elapsed
        }
    }
}
