//! The onboarded controllers' logic, each a pure [`Reconciler`](crate::reconciler::Reconciler).

pub mod claim;
pub mod claimants;
pub mod daemonset;
pub mod history;
pub mod job;
pub mod nodelifecycle;
pub mod replicaset;
pub mod revision_claim;
pub mod statefulset;
