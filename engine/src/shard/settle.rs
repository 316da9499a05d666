//! What a shard does with a reconcile that failed: a malformed input is reported once and rests
//! the key; any other failure retries with backoff.

use super::messages::Output;
use crate::queue::Outcome;
use crate::reconcile_error::ReconcileError;
use crate::stats::ControllerStats;
use crate::views::malformed::MALFORMED_REASON;

/// What a shard does with a failed reconcile of `controller`: a malformed input is counted,
/// logged and reported (a `Degraded` output with reason [`MALFORMED_REASON`], naming the malformed
/// object, for a Warning Event on it) once per object version, and the key rests until an event
/// queues it again (retrying cannot help); any other failure retries with backoff.
pub fn settle(
    error: &ReconcileError,
    stats: &mut ControllerStats,
    outbox: &mut Vec<Output>,
) -> Outcome {
    let ReconcileError::Malformed {
        controller,
        resource,
        key,
        uid,
        malformed,
    } = error
    else {
        tracing::warn!(error = %error, "reconcile failed: the key retries with backoff");
        return Outcome::Failed;
    };
    stats.malformed_skips += 1;
    if malformed.first_report() {
        tracing::warn!(controller, %resource, %key, problems = %malformed, "malformed object: no action for the keys that read it until it changes");
        outbox.push(Output::Degraded {
            controller,
            key: key.clone(),
            resource: *resource,
            uid: Some(uid.clone()),
            reason: MALFORMED_REASON,
            message: format!(
                "{} is malformed ({malformed}): the {controller} controller takes no action for \
                 the objects that read it until it changes",
                resource.kind()
            ),
        });
    }
    Outcome::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ObjectKey, Uid};
    use crate::resource::Resource;
    use crate::views::malformed::{FieldError, Malformed};
    use std::sync::Arc;

    fn record() -> Arc<Malformed> {
        Arc::new(Malformed::new(
            vec![FieldError {
                path: "spec.replicas".into(),
                problem: "must be an int32, got \"five\"".into(),
            }],
            1,
        ))
    }

    #[test]
    fn a_malformed_input_is_reported_once_and_rests_the_key() {
        let malformed = record();
        let error = ReconcileError::Malformed {
            controller: "replicaset",
            resource: Resource::ReplicaSets,
            key: ObjectKey::new("ns", "web"),
            uid: Uid::new("u"),
            malformed: malformed.clone(),
        };
        let mut stats = ControllerStats::new("replicaset");
        let mut out = Vec::new();
        assert_eq!(settle(&error, &mut stats, &mut out), Outcome::Done);
        assert_eq!(settle(&error, &mut stats, &mut out), Outcome::Done);
        assert_eq!(stats.malformed_skips, 2);
        assert_eq!(out.len(), 1, "one Warning Event per object version");
        let Output::Degraded {
            reason, message, ..
        } = &out[0]
        else {
            panic!("a Degraded output: {out:?}");
        };
        assert_eq!(*reason, MALFORMED_REASON);
        assert!(message.contains("spec.replicas"), "{message}");
    }

    #[test]
    fn other_failures_retry_with_backoff() {
        let error = ReconcileError::Unbuildable {
            controller: "statefulset",
            key: ObjectKey::new("ns", "db"),
            message: "no template".into(),
        };
        let mut stats = ControllerStats::new("statefulset");
        let mut out = Vec::new();
        assert_eq!(settle(&error, &mut stats, &mut out), Outcome::Failed);
        assert!(out.is_empty());
        assert_eq!(stats.malformed_skips, 0);
    }
}
