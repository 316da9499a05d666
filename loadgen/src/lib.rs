//! tidemark-loadgen: a simulated Kubernetes API server (real HTTP on loopback, the semantics of
//! kube-apiserver for the kinds it serves) with fault injection, kubelet emulation and an
//! invariant oracle.
//!
//! Shape: [`store`] holds every object as JSON plus its pre-encoded bytes under one short lock;
//! each write takes the next global revision and appends an event (with the previous object)
//! to a log that watches walk from their position ([`watch`]) and that lists undo to rebuild
//! the snapshot a `continue` token pins ([`list`]). [`handlers`] maps HTTP onto it, [`oracle`]
//! checks invariants inside the same lock, so the state at each revision is exact.
//!
//! Deliberate choices, as the real kube-apiserver does unless noted:
//! - An update that changes nothing takes no revision and emits no event (upstream skips
//!   no-op writes), so `update_with` of an identical object returns the stored one.
//! - Deleting a ReplicaSet deletes its controlled Pods at the next revisions inside the same
//!   commit (upstream's garbage collector is asynchronous; the order is the same).
//! - Strategic merge patch is treated as JSON merge patch; JSON patch and apply are 415.
//! - Objects are encoded while the write lock is held (the resourceVersion is only known
//!   there); lists and watches never re-encode.
//! - There is no OpenAPI document: `kubectl create -f` needs `--validate=false`.

pub mod admin;
pub mod deletion;
pub mod discovery;
pub mod faults;
pub mod gc;
pub mod handlers;
pub mod kubeconfig;
pub mod kubelet;
pub mod list;
pub mod object;
pub mod oracle;
pub mod resource;
pub mod routes;
pub mod selector;
pub mod server;
pub mod status;
pub mod store;
pub mod validation;
pub mod watch;

pub use faults::Faults;
pub use oracle::{ReplicaSetTruth, Verb, Violation, ViolationKind, WriteRecord};
pub use resource::Resource;
pub use server::{ApiServer, ServerConfig, ServerError, start};
pub use status::ApiError;
