//! What `loadgen bench` needs on the server side: realistic pre-encoded Pods, a lean API server
//! that serves them, the JSON schema of a bench run, its regression check, and its report
//! (markdown tables, and plots as SVG and PNG).

pub mod chart;
pub mod label_place;
pub mod plots;
pub mod pods;
pub mod pods_protobuf;
pub mod regression;
pub mod report;
pub mod schema;
pub mod server;
pub mod ticks;
