//! The Events kube-controller-manager records for a controller's writes, with upstream's
//! components, reasons and messages: `RealPodControl` in pkg/controller/controller_utils.go
//! (ReplicaSet, DaemonSet and Job: "Created pod: NAME", "Error creating: ERR", "Deleted pod:
//! NAME", "Error deleting: ERR") and `recordPodEvent`/`recordClaimEvent` in
//! pkg/controller/statefulset/stateful_pod_control.go ("create Pod web-0 in StatefulSet web
//! successful", ...).

use super::correlator::EventType;
use tidemark_engine::{Action, ObjectKey, Resource, WriteError, WriteErrorKind};

/// Who records a controller's Events, and about which kind of object.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// `source.component`, as upstream's recorder names it (`replicaset-controller`).
    pub component: &'static str,
    /// The kind the controller owns: its Events are about objects of it.
    pub primary: Resource,
}

/// The Event source of a Tidemark controller.
pub fn source(controller: &str) -> Option<Source> {
    let (component, primary) = match controller {
        "replicaset" => ("replicaset-controller", Resource::ReplicaSets),
        "statefulset" => ("statefulset-controller", Resource::StatefulSets),
        "daemonset" => ("daemonset-controller", Resource::DaemonSets),
        "job" => ("job-controller", Resource::Jobs),
        "nodelifecycle" => ("node-controller", Resource::Nodes),
        _ => return None,
    };
    Some(Source { component, primary })
}

/// How a write ended, as far as its Event is concerned.
#[derive(Copy, Clone, Debug)]
pub enum Outcome<'a> {
    /// Done; the object's name (for a create, the one the server generated).
    Done(Option<&'a str>),
    /// Refused or lost.
    Failed(&'a WriteError),
}

/// One Event to record about the owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    /// Normal or Warning.
    pub event_type: EventType,
    /// The reason.
    pub reason: &'static str,
    /// The message.
    pub message: String,
}

fn normal(reason: &'static str, message: String) -> Option<Described> {
    Some(Described {
        event_type: EventType::Normal,
        reason,
        message,
    })
}

fn warning(reason: &'static str, message: String) -> Option<Described> {
    Some(Described {
        event_type: EventType::Warning,
        reason,
        message,
    })
}

/// The error as Go's `%v` of an API `StatusError` prints it: its message, without the code and
/// reason Tidemark's error classification appends.
fn go_error(e: &WriteError) -> &str {
    match e.message.rsplit_once(" (") {
        Some((message, tail))
            if tail.ends_with(')')
                && tail
                    .as_bytes()
                    .get(..3)
                    .is_some_and(|code| code.iter().all(u8::is_ascii_digit)) =>
        {
            message
        }
        _ => &e.message,
    }
}

fn created_name<'a>(action: &'a Action, outcome: Outcome<'a>) -> &'a str {
    let from_body = match action {
        Action::Create { body, .. } => body["metadata"]["name"]
            .as_str()
            .or_else(|| body["metadata"]["generateName"].as_str()),
        _ => None,
    };
    match outcome {
        Outcome::Done(Some(name)) => name,
        _ => from_body.unwrap_or_default(),
    }
}

/// The Event upstream records for `action` done by `controller` for `owner`, if any. Writes
/// that were never sent (fenced) record nothing: no API server saw them.
pub fn describe(
    controller: &str,
    owner: &ObjectKey,
    action: &Action,
    outcome: Outcome<'_>,
) -> Option<Described> {
    if let Outcome::Failed(e) = outcome
        && e.kind == WriteErrorKind::Fenced
    {
        return None;
    }
    match controller {
        "replicaset" | "daemonset" | "job" => pod_control(action, outcome),
        "statefulset" => stateful_pod_control(owner, action, outcome),
        _ => None,
    }
}

/// `RealPodControl.CreatePods` / `DeletePod`.
fn pod_control(action: &Action, outcome: Outcome<'_>) -> Option<Described> {
    match (action, outcome) {
        (
            Action::Create {
                resource: Resource::Pods,
                ..
            },
            Outcome::Done(_),
        ) => normal(
            "SuccessfulCreate",
            format!("Created pod: {}", created_name(action, outcome)),
        ),
        (
            Action::Create {
                resource: Resource::Pods,
                ..
            },
            Outcome::Failed(e),
        ) => warning("FailedCreate", format!("Error creating: {}", go_error(e))),
        (
            Action::Delete {
                resource: Resource::Pods,
                key,
                ..
            },
            Outcome::Done(_),
        ) => normal("SuccessfulDelete", format!("Deleted pod: {}", key.name())),
        // Upstream logs an already deleted Pod and records nothing.
        (
            Action::Delete {
                resource: Resource::Pods,
                ..
            },
            Outcome::Failed(e),
        ) if e.kind == WriteErrorKind::NotFound => None,
        (
            Action::Delete {
                resource: Resource::Pods,
                ..
            },
            Outcome::Failed(e),
        ) => warning("FailedDelete", format!("Error deleting: {}", go_error(e))),
        _ => None,
    }
}

/// `StatefulPodControl.recordPodEvent` and `recordClaimEvent`.
fn stateful_pod_control(
    set: &ObjectKey,
    action: &Action,
    outcome: Outcome<'_>,
) -> Option<Described> {
    let set = set.name();
    let (verb, reason_ok, reason_failed, pod) = match action {
        Action::Create {
            resource: Resource::Pods,
            ..
        } => (
            "create",
            "SuccessfulCreate",
            "FailedCreate",
            created_name(action, outcome),
        ),
        Action::Delete {
            resource: Resource::Pods,
            key,
            ..
        } => ("delete", "SuccessfulDelete", "FailedDelete", key.name()),
        Action::Create {
            resource: Resource::PersistentVolumeClaims,
            ..
        } => {
            let claim = created_name(action, outcome);
            // A claim is `<template>-<set>-<ordinal>` for the Pod `<set>-<ordinal>`.
            let ordinal = claim.rsplit('-').next().unwrap_or_default();
            let pod = format!("{set}-{ordinal}");
            return match outcome {
                Outcome::Done(_) => normal(
                    "SuccessfulCreate",
                    format!("create Claim {claim} Pod {pod} in StatefulSet {set} success"),
                ),
                // Upstream records nothing when the claim is already there.
                Outcome::Failed(e) if e.kind == WriteErrorKind::AlreadyExists => None,
                Outcome::Failed(e) => warning(
                    "FailedCreate",
                    format!(
                        "create Claim {claim} for Pod {pod} in StatefulSet {set} failed error: {}",
                        go_error(e)
                    ),
                ),
            };
        }
        _ => return None,
    };
    match outcome {
        Outcome::Done(_) => normal(
            reason_ok,
            format!("{verb} Pod {pod} in StatefulSet {set} successful"),
        ),
        Outcome::Failed(e) => warning(
            reason_failed,
            format!(
                "{verb} Pod {pod} in StatefulSet {set} failed error: {}",
                go_error(e)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tidemark_engine::Uid;

    fn create(resource: Resource, name: &str) -> Action {
        Action::Create {
            resource,
            namespace: "ns".into(),
            body: json!({"metadata": {"name": name}}),
        }
    }

    fn delete(name: &str) -> Action {
        Action::Delete {
            resource: Resource::Pods,
            key: ObjectKey::new("ns", name),
            uid: Uid::new("u"),
        }
    }

    fn failed(kind: WriteErrorKind, message: &str) -> WriteError {
        WriteError {
            kind,
            message: message.into(),
        }
    }

    #[test]
    fn a_replicaset_records_created_and_deleted_pods_as_kcm_does() {
        let rs = ObjectKey::new("ns", "web");
        let created = describe(
            "replicaset",
            &rs,
            &create(Resource::Pods, ""),
            Outcome::Done(Some("web-7xk2p")),
        );
        assert_eq!(
            created,
            normal("SuccessfulCreate", "Created pod: web-7xk2p".into())
        );
        let deleted = describe("replicaset", &rs, &delete("web-7xk2p"), Outcome::Done(None));
        assert_eq!(
            deleted,
            normal("SuccessfulDelete", "Deleted pod: web-7xk2p".into())
        );
        let refused = failed(
            WriteErrorKind::Server,
            "pods \"web-\" is forbidden: exceeded quota: q (403 Forbidden)",
        );
        assert_eq!(
            describe(
                "job",
                &rs,
                &create(Resource::Pods, ""),
                Outcome::Failed(&refused)
            ),
            warning(
                "FailedCreate",
                "Error creating: pods \"web-\" is forbidden: exceeded quota: q".into()
            )
        );
        let gone = failed(WriteErrorKind::NotFound, "not found (404 NotFound)");
        assert_eq!(
            describe("daemonset", &rs, &delete("p"), Outcome::Failed(&gone)),
            None,
            "a Pod already gone is not a failure"
        );
    }

    #[test]
    fn a_statefulset_names_the_pod_and_the_set_as_upstream() {
        let set = ObjectKey::new("ns", "db");
        assert_eq!(
            describe(
                "statefulset",
                &set,
                &create(Resource::Pods, "db-0"),
                Outcome::Done(None)
            ),
            normal(
                "SuccessfulCreate",
                "create Pod db-0 in StatefulSet db successful".into()
            )
        );
        let lost = failed(WriteErrorKind::Transport, "connection reset");
        assert_eq!(
            describe("statefulset", &set, &delete("db-2"), Outcome::Failed(&lost)),
            warning(
                "FailedDelete",
                "delete Pod db-2 in StatefulSet db failed error: connection reset".into()
            )
        );
        assert_eq!(
            describe(
                "statefulset",
                &set,
                &create(Resource::PersistentVolumeClaims, "data-db-1"),
                Outcome::Done(None)
            ),
            normal(
                "SuccessfulCreate",
                "create Claim data-db-1 Pod db-1 in StatefulSet db success".into()
            )
        );
    }

    #[test]
    fn a_write_that_was_never_sent_records_nothing() {
        let fenced = failed(WriteErrorKind::Fenced, "not leader");
        let rs = ObjectKey::new("ns", "web");
        assert_eq!(
            describe(
                "replicaset",
                &rs,
                &create(Resource::Pods, ""),
                Outcome::Failed(&fenced)
            ),
            None
        );
    }
}
