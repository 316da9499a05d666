//! The manager and the `tidemark` binary end to end against the simulated API server, one test
//! binary (one link, not one per file): each controller under watch delay with its gate on and
//! off, lost responses, the breaker, metrics, lifecycle, leader election and the stress runs.

mod auth_methods;
mod binary;
mod common;
mod daemonset_e2e;
mod events_e2e;
mod hostile_informers;
mod hostile_logs;
mod job_e2e;
mod lifecycle;
mod lost_responses;
mod nodelifecycle_e2e;
mod observability;
mod output;
mod protobuf_e2e;
mod replicaset_e2e;
mod scale_out_e2e;
mod secure_serving;
mod serving_limits;
mod shard_restart;
mod statefulset_e2e;
mod stress;
mod takeover_e2e;
mod throttle_e2e;
