//! Whether a Job is done, and why, decided in upstream's `syncJob` order: a success already
//! declared, a failure already targeted, a `FailJob` rule, `backoffLimit`,
//! `activeDeadlineSeconds`, `maxFailedIndexes`, failed indexes, the `successPolicy`, and last the
//! completions reached. Each is declared first by an interim condition (`FailureTarget`,
//! `SuccessCriteriaMet`) and made final (`Failed`, `Complete`, same reason and message) once
//! no Pod of the Job is left running, terminating or uncounted.

use super::indexes::PerIndex;
use super::status::Condition;
use super::tracking::Tally;
use crate::views::job::JobView;

const COMPLETIONS_REACHED: &str = "CompletionsReached";

/// The Job is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Finish {
    /// It failed (else it succeeded).
    pub failed: bool,
    pub reason: String,
    pub message: String,
}

/// What the verdict rests on besides the Job.
pub(super) struct Facts<'a, 'p> {
    pub tally: &'a Tally<'p>,
    /// Failures counted, recorded or held.
    pub failed_total: i32,
    pub deadline_exceeded: bool,
    pub per_index: Option<&'a PerIndex<'p>>,
    /// The Job's completions (or, for a work queue, one success and nothing active) are reached.
    pub completions_reached: bool,
}

fn failing(reason: &str, message: &str) -> Option<Finish> {
    Some(Finish {
        failed: true,
        reason: reason.into(),
        message: message.into(),
    })
}

fn succeeding(reason: &str, message: &str) -> Option<Finish> {
    Some(Finish {
        failed: false,
        reason: reason.into(),
        message: message.into(),
    })
}

/// Upstream's verdict, first match wins.
pub(super) fn finish(job: &JobView, facts: &Facts<'_, '_>) -> Option<Finish> {
    if let Some((reason, message)) = &job.status.success_criteria_met {
        return succeeding(reason, message);
    }
    if let Some((reason, message)) = &job.status.failure_target {
        return failing(reason, message);
    }
    if let Some(message) = &facts.tally.fail_job {
        return failing("PodFailurePolicy", message);
    }
    if facts.failed_total > job.backoff_limit {
        return failing(
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        );
    }
    if facts.deadline_exceeded {
        return failing(
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        );
    }
    if let Some(per_index) = facts.per_index {
        let failed = per_index.failed.count();
        if job
            .max_failed_indexes
            .is_some_and(|max| failed > u64::try_from(max).unwrap_or(0))
        {
            return failing(
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes",
            );
        }
        let completions = u64::try_from(job.completions.unwrap_or(0)).unwrap_or(0);
        if failed > 0 && failed + facts.tally.completed_indexes.count() >= completions {
            return failing("FailedIndexes", "Job has failed indexes");
        }
    }
    if job.indexed
        && let Some(message) = job
            .success_policy
            .as_ref()
            .and_then(|p| p.matched(&facts.tally.completed_indexes))
    {
        return succeeding("SuccessPolicy", &message);
    }
    if facts.completions_reached {
        return succeeding(
            COMPLETIONS_REACHED,
            "Reached expected number of succeeded pods",
        );
    }
    None
}

impl Finish {
    /// The interim condition that declares it.
    pub(super) fn interim(&self) -> Condition {
        let kind = if self.failed {
            "FailureTarget"
        } else {
            "SuccessCriteriaMet"
        };
        Condition::new(kind, true, &self.reason, &self.message)
    }

    /// The Job's running Pods are let go before they are deleted, as upstream's `manageJob`
    /// deletes those beyond the completions left; for every other verdict they keep their
    /// finalizer (upstream's `deleteActivePods`) and are counted when they finish.
    pub(super) fn releases_running(&self) -> bool {
        !self.failed && self.reason == COMPLETIONS_REACHED
    }

    /// The final condition.
    pub(super) fn terminal(&self) -> Condition {
        let kind = if self.failed { "Failed" } else { "Complete" };
        Condition::new(kind, true, &self.reason, &self.message)
    }
}
