//! tidemark-loadgen: a simulated Kubernetes API server (real HTTP on loopback, the semantics of
//! kube-apiserver for the kinds it serves) with fault injection, kubelet emulation and an
//! invariant oracle.

pub mod admin;
pub mod discovery;
pub mod faults;
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
pub mod watch;

pub use faults::Faults;
pub use oracle::{ReplicaSetTruth, Verb, Violation, ViolationKind, WriteRecord};
pub use resource::Resource;
pub use server::{ApiServer, ServerConfig, ServerError, start};
pub use status::ApiError;
