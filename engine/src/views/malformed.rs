//! Malformed objects: a field a controller decides on is present with the wrong type or out of
//! range. kube-apiserver would have refused such an object, so it can only come from a broken or
//! hostile server; the controller takes no action at all for its key (never a default that
//! deletes) until the object changes, and reports it once per object version.

use crate::key::{ObjectKey, Uid};
use crate::queue::Outcome;
use crate::reconciler::ReconcileError;
use crate::resource::Resource;
use crate::shard::Output;
use crate::stats::ControllerStats;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The reason of the Warning Event on a malformed object.
pub const MALFORMED_REASON: &str = "Malformed";

/// One unusable field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Its path (`spec.replicas`).
    pub path: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.problem)
    }
}

/// Why one decoded object version cannot be acted on. Every copy of the decoded object shares
/// it, so it is reported once however many reconciles meet it.
#[derive(Debug)]
pub struct Malformed {
    fields: Vec<FieldError>,
    total: usize,
    reported: AtomicBool,
}

impl Malformed {
    /// The record of `fields` (the first few of `total` problems).
    pub fn new(fields: Vec<FieldError>, total: usize) -> Self {
        Self {
            total: total.max(fields.len()),
            fields,
            reported: AtomicBool::new(false),
        }
    }

    /// The problems kept.
    pub fn fields(&self) -> &[FieldError] {
        &self.fields
    }

    /// How many problems were found.
    pub fn total(&self) -> usize {
        self.total
    }

    /// True the first time it is asked: the caller reports this object version.
    pub fn first_report(&self) -> bool {
        !self.reported.swap(true, Ordering::Relaxed)
    }
}

impl PartialEq for Malformed {
    fn eq(&self, other: &Self) -> bool {
        self.fields == other.fields && self.total == other.total
    }
}

impl Eq for Malformed {}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        if self.total > self.fields.len() {
            write!(f, " (and {} more)", self.total - self.fields.len())?;
        }
        Ok(())
    }
}

/// A cached projection that knows whether it is malformed.
pub trait Projection {
    /// Its resource.
    const RESOURCE: Resource;
    /// namespace/name.
    fn object_key(&self) -> &ObjectKey;
    /// metadata.uid.
    fn object_uid(&self) -> &Uid;
    /// Why it cannot be acted on, if it cannot.
    fn malformed(&self) -> Option<&Arc<Malformed>>;
}

/// [`Projection`] for a view with `key`, `uid` and `malformed` fields.
macro_rules! projection {
    ($view:ty, $resource:expr) => {
        impl $crate::malformed::Projection for $view {
            const RESOURCE: $crate::resource::Resource = $resource;
            fn object_key(&self) -> &$crate::key::ObjectKey {
                &self.key
            }
            fn object_uid(&self) -> &$crate::key::Uid {
                &self.uid
            }
            fn malformed(&self) -> Option<&std::sync::Arc<$crate::malformed::Malformed>> {
                self.malformed.as_ref()
            }
        }
    };
}
pub(crate) use projection;

/// `Ok` when `object` is well formed; otherwise the error that stops `controller` acting on the
/// key that read it.
pub fn ensure_well_formed<T: Projection>(
    controller: &'static str,
    object: &T,
) -> Result<(), ReconcileError> {
    match object.malformed() {
        None => Ok(()),
        Some(malformed) => Err(ReconcileError::Malformed {
            controller,
            resource: T::RESOURCE,
            key: object.object_key().clone(),
            uid: object.object_uid().clone(),
            malformed: malformed.clone(),
        }),
    }
}

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
