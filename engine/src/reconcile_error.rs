//! Why a reconcile could not decide: it fails that key only, and the shard settles it (a
//! malformed input rests the key until it changes; anything else retries with backoff).

use crate::key::{ObjectKey, Uid};
use crate::resource::Resource;
use crate::views::malformed::{Malformed, Projection};
use std::sync::Arc;

/// A reconcile could not decide. It fails that key only: the shard settles it with
/// `settle` (in the shard).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReconcileError {
    /// An object the decision reads is malformed: no action for the key until it changes.
    #[error("{controller}: {resource} {key} is malformed: {malformed}")]
    Malformed {
        /// The controller.
        controller: &'static str,
        /// The malformed object's resource.
        resource: Resource,
        /// Its key (the key reconciled, or a dependent such as a Pod).
        key: ObjectKey,
        /// Its UID.
        uid: Uid,
        /// What is wrong with it.
        malformed: Arc<Malformed>,
    },
    /// The cached object has a shape the controller's writes cannot be built from.
    #[error("{controller}: {key}: {message}")]
    Unbuildable {
        /// The controller.
        controller: &'static str,
        /// The key reconciled.
        key: ObjectKey,
        /// Why.
        message: String,
    },
    /// The reconcile panicked. The shard caught it: that key fails and retries with backoff,
    /// every other key goes on.
    #[error("{controller}: reconcile of {key} panicked: {message}")]
    Panicked {
        /// The controller.
        controller: &'static str,
        /// The key reconciled.
        key: ObjectKey,
        /// The panic's message, when it carried one.
        message: String,
    },
}

impl ReconcileError {
    /// The error for a reconcile of `key` that panicked with `payload`.
    pub fn panicked(
        controller: &'static str,
        key: &ObjectKey,
        payload: &(dyn std::any::Any + Send),
    ) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        Self::Panicked {
            controller,
            key: key.clone(),
            message,
        }
    }
}

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
