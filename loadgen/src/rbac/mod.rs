//! Role-based access control as kube-apiserver enforces it, as pure library code: request
//! attributes from method and URL ([`attributes`]), the RBAC authorizer over stored roles and
//! bindings ([`policy`]), the bootstrap policy every cluster has ([`bootstrap`]), the 403 body
//! ([`forbidden`]), a log of what each user asked ([`request_log`]), and a least-privilege audit
//! of manifests against that log ([`audit`], [`manifests`]).
//!
//! Not wired into the HTTP layer here: authentication and the store are elsewhere.

mod aggregation;
pub mod attributes;
pub mod audit;
pub mod bootstrap;
pub mod deploy;
pub mod forbidden;
pub mod manifests;
mod objects;
pub mod policy;
pub mod request_log;
pub mod rule;
pub mod user;

pub use attributes::{Attributes, ResourceAttributes, request_attributes};
pub use audit::{AuditReport, Grant, GrantUse, audit};
pub use bootstrap::{bootstrap_cluster_role_bindings, bootstrap_cluster_roles};
pub use forbidden::forbidden_status;
pub use manifests::{ManifestError, parse_manifests};
pub use policy::{Decision, RbacPolicy};
pub use request_log::{RequestLog, RequestLogEntry};
pub use rule::PolicyRule;
pub use user::UserInfo;
