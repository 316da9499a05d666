//! `loadgen campaign`: the Sieve-style fault campaign. Every controller's workload under every
//! fault class, over seeds, with the gate on and off, each run a `loadgen stress` of its own; one
//! report (a table and a heat map) says whether the gate held everywhere and where gate off was
//! caught.

pub mod cli;
pub mod matrix;
pub mod report;
pub mod run;

pub use matrix::{Cell, CellError, Controller, FaultClass, cell};
pub use report::{Verdict, heat_map, markdown, verdict};
pub use run::{Planned, RunResult, ci_sample, plan, run_all};
