//! Tidemark's runtime around the sans-IO core: shard actors on actix arbiters, informers and
//! writers on a tokio I/O runtime through kube-rs, the embedded demo (feature `embedded`, on by
//! default), and the `tidemark` binary.

#![deny(missing_docs)]

pub mod barrier;
pub mod builder;
pub mod cli;
pub mod client;
#[cfg(feature = "embedded")]
pub mod embedded;
pub mod errors;
pub mod events;
pub mod fence;
pub mod informer;
pub mod leader;
pub mod lease_write;
pub mod manager;
pub mod manager_config;
pub mod metrics;
pub mod paths;
pub mod process_metrics;
pub mod ranges;
pub mod rate_limit;
pub mod registration;
pub mod server_revision;
pub mod serving;
pub mod shard_actor;
pub mod startup;
pub mod summary;
pub mod supervision;
pub mod writer;

pub use builder::ManagerBuilder;
pub use manager::{Manager, ManagerConfig, ManagerStats, StartError};
pub use registration::Registration;
pub use summary::Summary;
