//! What `loadgen bench` needs on the server side: realistic pre-encoded Pods, a lean API server
//! that serves them, the JSON schema of a bench run, its regression check, and its report
//! (markdown tables and SVG plots).

pub mod plots;
pub mod pods;
pub mod regression;
pub mod report;
pub mod schema;
pub mod server;
