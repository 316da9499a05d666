//! The simulated API server over HTTP, one test binary (one link, not one per file): CRUD,
//! list and watch, patches, validation, deletion, faults, the kubelet, OpenAPI and replay.

mod admin_faults;
mod arrival;
mod behaviour;
mod common;
mod crds;
mod crud;
mod deletion;
mod door;
mod fuzz_requests;
mod hostile_input;
mod kubelet;
mod list_watch;
mod openapi;
mod patch;
mod replay;
mod request_faults;
mod resources;
mod sharding;
mod validation;
mod watch_faults;
