//! Tidemark's sans-IO reconciliation core. No I/O, no clocks of its own: events, time and write
//! results go in; writes, probes and alerts come out.

#![deny(missing_docs)]

pub mod action;
pub mod backoff;
pub mod breaker;
pub mod cache;
pub mod controllers;
pub mod expectations;
pub mod feature_gates;
pub mod go_bool;
pub mod index_set;
pub mod key;
pub mod labels;
pub mod lag;
pub mod leader_election;
pub mod live_read;
pub mod mode;
pub mod object;
pub mod placements;
pub mod pod_template;
pub mod proof;
pub mod queue;
pub mod reconcile_error;
pub mod reconciler;
pub mod resource;
pub mod router;
pub mod rv;
pub mod shard;
pub mod stats;
pub mod store;
pub mod template_hash;
pub mod time;
pub mod version_map;
pub mod views;
pub mod write;

pub use action::{Action, ActionClass, Plan};
pub use breaker::{BreakerChange, BreakerConfig, BreakerOpen, CircuitBreaker};
pub use cache::ShardCache;
pub use controllers::daemonset::DaemonSetController;
pub use controllers::job::JobController;
pub use controllers::nodelifecycle::NodeLifecycleController;
pub use controllers::replicaset::ReplicaSetController;
pub use controllers::statefulset::StatefulSetController;
pub use feature_gates::FeatureGates;
pub use go_bool::{NotAGoBool, parse_go_bool};
pub use key::{ObjectKey, Uid};
pub use lag::{KnownRevisions, LAG_THRESHOLD};
pub use leader_election::{Elector, ElectorConfig, LeaderChange, LeaseRecord, LeaseStep};
pub use live_read::LiveReadId;
pub use mode::{ConsistencyMode, UnknownMode};
pub use object::{DecodeError, Object, PodView, ReplicaSetView};
pub use placements::{Placement, Placements};
pub use proof::{BarrierId, Proofs};
pub use reconciler::{Context, ReconcileError, Reconciler};
pub use resource::Resource;
pub use router::{ShardId, ShardRouter};
pub use rv::{NotComparable, ResourceVersion};
pub use shard::{Change, ControllerSpec, Output, Shard};
pub use stats::ControllerStats;
pub use views::daemonset::DaemonSetView;
pub use views::job::{JobStatus, JobView};
pub use views::malformed::{FieldError, MALFORMED_REASON, Malformed};
pub use views::nodes::{LeaseView, NodeView, ReadyStatus};
pub use views::statefulset::{StatefulSetStatus, StatefulSetView};
pub use write::{WriteError, WriteErrorKind, WriteId, WriteRequest, WriteResult};
