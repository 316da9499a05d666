//! Many seeds in a row: how many passed, the first that failed, and seeds per second.

use crate::run::{Outcome, SimConfig, run};
use std::time::{Duration, Instant};

/// The result of running a range of seeds.
#[derive(Debug)]
pub struct Exploration {
    /// Seeds run.
    pub runs: u64,
    /// Seeds that failed.
    pub failures: u64,
    /// The first failing run, if any.
    pub first_failure: Option<Outcome>,
    /// Seeds run until (and including) the first failure.
    pub seeds_to_first_failure: Option<u64>,
    /// Wall time taken.
    pub elapsed: Duration,
}

impl Exploration {
    /// Seeds per second of wall time.
    pub fn seeds_per_second(&self) -> f64 {
        self.runs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs every seed of `seeds` with `template` (its seed replaced); stops at the first failure
/// unless `keep_going`.
pub fn explore(template: &SimConfig, seeds: std::ops::Range<u64>, keep_going: bool) -> Exploration {
    let started = Instant::now();
    let mut result = Exploration {
        runs: 0,
        failures: 0,
        first_failure: None,
        seeds_to_first_failure: None,
        elapsed: Duration::ZERO,
    };
    for seed in seeds {
        let config = SimConfig {
            seed,
            ..template.clone()
        };
        let outcome = run(&config);
        result.runs += 1;
        if !outcome.passed() {
            result.failures += 1;
            if result.first_failure.is_none() {
                result.seeds_to_first_failure = Some(result.runs);
                result.first_failure = Some(outcome);
            }
            if !keep_going {
                break;
            }
        }
    }
    result.elapsed = started.elapsed();
    result
}
