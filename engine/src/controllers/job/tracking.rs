//! Counting each finished Pod exactly once, as upstream: its UID is first recorded in
//! `status.uncountedTerminatedPods`, then its finalizer is removed, then it moves into the
//! counters in the same write that forgets the UID. A Pod whose finalizer a replacement still
//! needs (see `indexes`) is left alone until the replacement exists.

use super::indexes::PerIndex;
use super::pods::{is_failed, is_terminating, verdict};
use crate::index_set::IndexSet;
use crate::object::{PodPhase, PodView};
use crate::views::job::JobView;
use crate::views::pod_failure_policy::Verdict;

/// The counters after this sync, and the Pods whose finalizer may go.
pub(super) struct Tally<'a> {
    pub succeeded: i32,
    pub failed: i32,
    pub uncounted_succeeded: Vec<String>,
    pub uncounted_failed: Vec<String>,
    pub completed_indexes: IndexSet,
    /// Finished Pods newly recorded in this sync.
    pub recorded: usize,
    /// A newly recorded failed Pod matched a `FailJob` rule of the podFailurePolicy: why.
    pub fail_job: Option<String>,
    /// Failed Pods not recorded yet because their finalizer is held, whose failures count.
    pub held_failures: i32,
    /// Pods the *cached* status already records (or never needs to), so their finalizer goes.
    pub unfinalize: Vec<&'a PodView>,
}

fn known(job: &JobView, uid: &str) -> bool {
    job.status
        .uncounted_succeeded
        .iter()
        .chain(&job.status.uncounted_failed)
        .any(|u| u == uid)
}

/// Moves finished Pods through the tracking steps.
pub(super) fn track<'a>(
    job: &JobView,
    pods: &[&'a PodView],
    per_index: Option<&PerIndex<'_>>,
) -> Tally<'a> {
    let mut tally = Tally {
        succeeded: job.status.succeeded,
        failed: job.status.failed,
        uncounted_succeeded: Vec::new(),
        uncounted_failed: Vec::new(),
        completed_indexes: job.status.completed_indexes.clone(),
        recorded: 0,
        fail_job: None,
        held_failures: 0,
        unfinalize: Vec::new(),
    };
    let by_uid = |uid: &str| pods.iter().find(|p| p.uid.text() == uid);
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
        let success = pod.phase == PodPhase::Succeeded;
        if !pod.job_tracking || !(success || is_failed(job, pod)) {
            continue;
        }
        let verdict = if success {
            Verdict::Count
        } else {
            verdict(job, pod)
        };
        if per_index.is_some_and(|p| p.holds(pod)) {
            if verdict.counts() {
                tally.held_failures = tally.held_failures.saturating_add(1);
            }
            continue;
        }
        let uid = pod.uid.text();
        if known(job, &uid) {
            tally.unfinalize.push(*pod);
        } else if success {
            tally.uncounted_succeeded.push(uid.to_string());
            tally.recorded += 1;
        } else if verdict == Verdict::Ignore {
            // As upstream: an ignored failure is never recorded, only let go.
            tally.unfinalize.push(*pod);
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
    tally
}

impl Tally<'_> {
    /// Every recorded finished Pod is counted.
    pub(super) fn all_counted(&self) -> bool {
        self.uncounted_succeeded.is_empty() && self.uncounted_failed.is_empty()
    }
}

impl<'a> Tally<'a> {
    /// A Job that will run no more Pods (done, or being deleted) lets go of every Pod it still
    /// holds, as upstream's `canRemoveFinalizer` does once the Job has a finished condition:
    /// failed Pods held for a replacement that will not come are recorded as failures, and
    /// deleted Pods that have not finished are recorded as failed too when `failing` ("every
    /// non-terminated pod is considered failed").
    pub(super) fn let_go_all(
        &mut self,
        job: &JobView,
        pods: &[&'a PodView],
        per_index: Option<&PerIndex<'_>>,
        failing: bool,
    ) {
        for pod in pods {
            if !pod.job_tracking {
                continue;
            }
            let held = per_index.is_some_and(|p| p.holds(pod));
            let unfinished = is_terminating(pod) && !is_failed(job, pod);
            if !held && !unfinished {
                continue;
            }
            let counts = if held {
                verdict(job, pod).counts()
            } else {
                failing
            };
            let uid = pod.uid.text();
            if known(job, &uid) || !counts {
                self.unfinalize.push(*pod);
            } else {
                self.uncounted_failed.push(uid.to_string());
                self.recorded += 1;
            }
        }
    }
}
