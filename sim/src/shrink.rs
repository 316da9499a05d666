//! Shrinking a failing run: take away, one at a time, the faults and the user's changes the
//! failure does not need, keeping each removal after which the run still fails the same way.
//! What is left is a short trace of what the failure needs. Shrinking is a function of the
//! failing configuration, so `sim run --seed N --shrink` gives the same result every time.

use crate::removal::Removal;
use crate::run::{Outcome, SimConfig, run};
use std::collections::BTreeSet;
use std::mem::discriminant;

/// A shrunk failure: what was taken away, and the run that still fails without it.
#[derive(Debug)]
pub struct Shrunk {
    /// What the failure did not need.
    pub removed: BTreeSet<Removal>,
    /// The run with all of it taken away, its trace in full.
    pub outcome: Outcome,
    /// Runs tried.
    pub runs: usize,
}

/// Shrinks the failing run of `config` (which must fail); `None` if it passes.
pub fn shrink(config: &SimConfig) -> Option<Shrunk> {
    let first = run(config);
    if first.passed() {
        return None;
    }
    let same = |o: &Outcome| !o.passed() && discriminant(&o.end) == discriminant(&first.end);
    let mut removed: BTreeSet<Removal> = config.removed.clone();
    let mut runs = 1;
    let candidates = Removal::candidates(&first.faults, first.user_changes);
    loop {
        let mut progressed = false;
        for candidate in &candidates {
            if removed.contains(candidate) {
                continue;
            }
            let mut trial = removed.clone();
            trial.insert(candidate.clone());
            let outcome = run(&SimConfig {
                removed: trial.clone(),
                full_trace: false,
                ..config.clone()
            });
            runs += 1;
            if same(&outcome) {
                removed = trial;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    let outcome = run(&SimConfig {
        removed: removed.clone(),
        full_trace: true,
        ..config.clone()
    });
    Some(Shrunk {
        removed,
        outcome,
        runs: runs + 1,
    })
}
