//! Tidemark's sans-IO reconciliation core. No I/O, no clocks of its own: events, time and write
//! results go in; writes, probes and alerts come out.

#![deny(missing_docs)]

pub mod action;
pub mod backoff;
pub mod breaker;
pub mod cache;
pub mod checked;
pub mod controllers;
pub mod daemonset_view;
pub mod feature_gates;
pub mod go_bool;
pub mod index_set;
pub mod job_view;
pub mod key;
pub mod labels;
pub mod leader_election;
pub mod malformed;
pub mod node_views;
pub mod object;
pub mod pod_template;
pub mod pod_view;
pub mod proof;
pub mod queue;
pub mod reconciler;
pub mod replicaset_view;
pub mod resource;
pub mod router;
pub mod rv;
pub mod shard;
pub mod statefulset_view;
pub mod stats;
pub mod store;
pub mod template_hash;
pub mod time;
pub mod version_map;
pub mod write;

pub use action::{Action, ActionClass, Plan};
pub use breaker::{BreakerChange, BreakerConfig, BreakerOpen, CircuitBreaker};
pub use cache::ShardCache;
pub use controllers::daemonset::DaemonSetController;
pub use controllers::job::JobController;
pub use controllers::nodelifecycle::NodeLifecycleController;
pub use controllers::replicaset::ReplicaSetController;
pub use controllers::statefulset::StatefulSetController;
pub use daemonset_view::DaemonSetView;
pub use feature_gates::FeatureGates;
pub use go_bool::{NotAGoBool, parse_go_bool};
pub use job_view::{JobStatus, JobView};
pub use key::{ObjectKey, Uid};
pub use leader_election::{Elector, ElectorConfig, LeaderChange, LeaseRecord, LeaseStep};
pub use malformed::{FieldError, MALFORMED_REASON, Malformed};
pub use node_views::{LeaseView, NodeView, ReadyStatus};
pub use object::{DecodeError, Object, PodView, ReplicaSetView};
pub use proof::{BarrierId, Proofs};
pub use reconciler::{Context, ReconcileError, Reconciler};
pub use resource::Resource;
pub use router::{ShardId, ShardRouter};
pub use rv::{NotComparable, ResourceVersion};
pub use shard::{Change, ControllerSpec, Output, Shard};
pub use statefulset_view::{StatefulSetStatus, StatefulSetView};
pub use stats::ControllerStats;
pub use write::{WriteError, WriteErrorKind, WriteId, WriteRequest, WriteResult};
