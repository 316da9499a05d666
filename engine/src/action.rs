//! What a reconciler asks for: writes to the API server, each classified ordinary or destructive.

use crate::key::{ObjectKey, Uid};
use crate::resource::Resource;
use std::sync::Arc;
use std::time::Duration;

/// Whether an action can lose something if taken on a stale view.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ActionClass {
    /// Status updates and creates: the freshness gate covers them.
    Ordinary,
    /// Deletes, scale-downs, Lease takeover or expiry, NotReady: need proof of freshness.
    Destructive,
}

/// One write to the API server.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// POST a new object (the body may use `generateName`).
    Create {
        /// The resource.
        resource: Resource,
        /// The namespace to create in.
        namespace: Arc<str>,
        /// The object.
        body: serde_json::Value,
    },
    /// DELETE an object, with a UID precondition so a newer object of the same name survives.
    Delete {
        /// The resource.
        resource: Resource,
        /// The object.
        key: ObjectKey,
        /// The UID the decision was about.
        uid: Uid,
    },
    /// PATCH an object with a JSON merge patch (`application/merge-patch+json`), for fields that
    /// are set whatever their previous value (a taint).
    Patch {
        /// The resource.
        resource: Resource,
        /// The object.
        key: ObjectKey,
        /// The merge patch.
        patch: serde_json::Value,
    },
    /// PATCH an object with a strategic merge patch (`application/strategic-merge-patch+json`),
    /// for list edits a merge patch cannot express: `$deleteFromPrimitiveList/finalizers`
    /// removes one finalizer and keeps the ones other controllers put there.
    StrategicPatch {
        /// The resource (a built-in kind: strategic merge does not apply to custom resources).
        resource: Resource,
        /// The object.
        key: ObjectKey,
        /// The strategic merge patch.
        patch: serde_json::Value,
    },
    /// PUT the status subresource; the body carries the cached resourceVersion, so a stale view
    /// gets `409 Conflict` instead of overwriting.
    UpdateStatus {
        /// The resource.
        resource: Resource,
        /// The object.
        key: ObjectKey,
        /// The whole object with its new status.
        body: serde_json::Value,
    },
}

impl Action {
    /// Ordinary or destructive.
    pub fn class(&self) -> ActionClass {
        match self {
            Action::Delete { .. } => ActionClass::Destructive,
            Action::Create { .. }
            | Action::UpdateStatus { .. }
            | Action::Patch { .. }
            | Action::StrategicPatch { .. } => ActionClass::Ordinary,
        }
    }

    /// The resource written.
    pub fn resource(&self) -> Resource {
        match self {
            Action::Create { resource, .. }
            | Action::Delete { resource, .. }
            | Action::Patch { resource, .. }
            | Action::StrategicPatch { resource, .. }
            | Action::UpdateStatus { resource, .. } => *resource,
        }
    }

    /// The namespace written to (empty for a cluster-scoped object): under scale-out, whose
    /// range fences the write.
    pub fn namespace(&self) -> &str {
        match self {
            Action::Create { namespace, .. } => namespace,
            Action::Delete { key, .. }
            | Action::Patch { key, .. }
            | Action::StrategicPatch { key, .. }
            | Action::UpdateStatus { key, .. } => key.namespace(),
        }
    }

    /// Whether it creates an object that names a controller in its ownerReferences: only then
    /// can its appearance in the cache be credited to an owner (upstream counts a create in
    /// `ControllerExpectations` only for what the controller owns; a StatefulSet's claim under
    /// a `Retain` policy belongs to nobody).
    pub fn creates_controlled(&self) -> bool {
        let Action::Create { body, .. } = self else {
            return false;
        };
        body.pointer("/metadata/ownerReferences")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|refs| {
                refs.iter()
                    .any(|r| r.get("controller") == Some(&serde_json::Value::Bool(true)))
            })
    }

    /// The verb, for logs and metrics.
    pub fn verb(&self) -> &'static str {
        match self {
            Action::Create { .. } => "create",
            Action::Delete { .. } => "delete",
            Action::UpdateStatus { .. } => "update_status",
            Action::Patch { .. } | Action::StrategicPatch { .. } => "patch",
        }
    }
}

/// What a reconcile returns: steps of writes run in order, every write of a step at once, the
/// next step only when the previous one fully succeeded (this is how slow start is expressed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The steps.
    pub steps: Vec<Vec<Action>>,
    /// Reconcile again after this long even if nothing changes.
    pub requeue_after: Option<Duration>,
    /// The reconciler declares the plan destructive although its actions look ordinary (marking
    /// a Node NotReady is a status update).
    pub destructive: bool,
    /// Objects other than the key's own that a destructive decision rests on (the Node whose
    /// labels made a DaemonSet Pod unwanted). When a cache the controller reads is known to
    /// lag, each is read live with the key's object before the decision is carried out.
    pub rests_on: Vec<(Resource, ObjectKey)>,
    /// The plan adopts orphans. The owner is read live before it is carried out, as upstream's
    /// `RecheckDeletionTimestamp` reads it before the first adoption of a sync: an owner deleted
    /// (or replaced) since the cache saw it must not take Pods.
    pub adopts: bool,
}

impl Plan {
    /// True when any action needs proof of freshness.
    pub fn is_destructive(&self) -> bool {
        self.destructive
            || self
                .steps
                .iter()
                .flatten()
                .any(|a| a.class() == ActionClass::Destructive)
    }

    /// True when any action creates an object.
    pub fn creates(&self) -> bool {
        self.steps
            .iter()
            .flatten()
            .any(|a| matches!(a, Action::Create { .. }))
    }

    /// True when the plan writes nothing.
    pub fn is_empty(&self) -> bool {
        self.steps.iter().all(Vec::is_empty)
    }

    /// Appends `actions` in slow-start steps of 1, 2, 4, ... as kube-controller-manager creates
    /// Pods: a failing API server costs one write, not hundreds.
    pub fn push_slow_start(&mut self, actions: Vec<Action>) {
        let mut batch = 1;
        let mut rest = actions.into_iter().peekable();
        while rest.peek().is_some() {
            self.steps.push(rest.by_ref().take(batch).collect());
            batch *= 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create() -> Action {
        Action::Create {
            resource: Resource::Pods,
            namespace: "ns".into(),
            body: serde_json::Value::Null,
        }
    }

    #[test]
    fn slow_start_doubles_the_batch() {
        let mut plan = Plan::default();
        plan.push_slow_start(vec![create(); 10]);
        let sizes: Vec<_> = plan.steps.iter().map(Vec::len).collect();
        assert_eq!(sizes, [1, 2, 4, 3]);
    }

    #[test]
    fn deletes_are_destructive_and_creates_ordinary() {
        let delete = Action::Delete {
            resource: Resource::Pods,
            key: ObjectKey::new("ns", "p"),
            uid: Uid::new("u"),
        };
        assert_eq!(delete.class(), ActionClass::Destructive);
        assert_eq!(create().class(), ActionClass::Ordinary);
    }
}
