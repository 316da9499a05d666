//! Deterministic simulation of Tidemark (issue 19): the engine's real shards and controllers
//! against loadgen's real store and oracle, driven by one seeded scheduler on virtual time, with
//! faults drawn from the seed. No threads, no async runtime, no wall clock: a run is a pure
//! function of its seed, so a failure replays exactly from the seed it prints.

pub mod api;
pub mod budget;
pub mod clock;
pub mod election;
pub mod error;
pub mod explore;
pub mod faults;
pub mod informer;
pub mod kubelet;
pub mod removal;
pub mod run;
pub mod schedule;
pub mod scheduler;
pub mod shrink;
pub mod trace;
pub mod user;
pub mod workload;
pub mod world;
pub mod writes;

pub use error::{SimError, parse_seeds};
pub use explore::{Exploration, explore};
pub use removal::Removal;
pub use run::{Outcome, SimConfig, run};
pub use schedule::Schedule;
pub use shrink::{Shrunk, shrink};
pub use workload::Workload;
pub use world::End;
