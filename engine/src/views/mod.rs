//! The projections the shard caches, one file per resource, and their decode helpers: the
//! metadata every projection reads, checked field reads, and the record of a malformed object.
//! Nothing here imports [`crate::object`], which wraps them.

pub mod checked;
pub mod custom;
pub mod daemonset;
pub mod job;
pub mod malformed;
pub mod meta;
pub mod nodes;
pub mod owner_json;
pub mod pod;
pub mod pod_failure_policy;
pub mod replicaset;
pub mod revision;
pub mod statefulset;
pub mod success_policy;
pub mod volume_claim;
mod without_managed_fields;
