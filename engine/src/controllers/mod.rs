//! The onboarded controllers' logic, each a pure [`Reconciler`](crate::reconciler::Reconciler).

pub mod replicaset;
