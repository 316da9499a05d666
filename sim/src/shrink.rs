//! Shrinking a failing run: take away, one at a time, the faults and the user's changes the
//! failure does not need, keeping each removal after which the run still fails the same way.
//! What is left is a short trace of what the failure needs. Shrinking is a function of the
//! failing configuration, so `sim run --seed N --shrink` gives the same result every time.

use crate::faults::FaultPlan;
use crate::run::{Outcome, SimConfig, run};
use std::collections::BTreeSet;
use std::mem::discriminant;

/// One thing shrinking can take away from a run.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Removal {
    /// The user's change drawn `n`th.
    UserChange(usize),
    /// A watch's delivery delay (by the watch's index).
    WatchDelay(usize),
    /// A watch's stall (watch index, stall index).
    Stall(usize, usize),
    /// Dropped watches.
    Drops,
    /// `410` on resumed watches, and a short history.
    Gone,
    /// Lost write responses.
    LostResponses,
    /// Writes refused with `500`.
    ServerErrors,
    /// Slow writes.
    SlowWrites,
    /// Stuck writes.
    StuckWrites,
    /// The crash (and its partition).
    Crash,
    /// The partition that comes with the crash.
    Partition,
}

impl Removal {
    /// Takes this away from `plan` (user changes are taken away in the world, not here).
    pub fn apply(&self, plan: &mut FaultPlan) {
        match *self {
            Removal::UserChange(_) => {}
            Removal::WatchDelay(w) => {
                if let Some((_, f)) = plan.watches.get_mut(w) {
                    f.delay = std::time::Duration::ZERO;
                }
            }
            Removal::Stall(w, s) => {
                if let Some((_, f)) = plan.watches.get_mut(w)
                    && s < f.stalls.len()
                {
                    f.stalls[s].to = f.stalls[s].from;
                }
            }
            Removal::Drops => plan.drop = 0.0,
            Removal::Gone => {
                plan.gone_on_resume = 0.0;
                plan.history = plan.history.max(10_000);
            }
            Removal::LostResponses => plan.lost_response = 0.0,
            Removal::ServerErrors => plan.server_error = 0.0,
            Removal::SlowWrites => plan.slow_write = 0.0,
            Removal::StuckWrites => plan.stuck_write = 0.0,
            Removal::Crash => {
                plan.crash = None;
                plan.partition = None;
            }
            Removal::Partition => plan.partition = None,
        }
    }

    /// Everything that could be taken away from a run with `plan` and `user_changes` changes.
    fn candidates(plan: &FaultPlan, user_changes: usize) -> Vec<Removal> {
        let mut all: Vec<Removal> = vec![
            Removal::Crash,
            Removal::Partition,
            Removal::StuckWrites,
            Removal::SlowWrites,
            Removal::LostResponses,
            Removal::ServerErrors,
            Removal::Gone,
            Removal::Drops,
        ];
        for (w, (_, f)) in plan.watches.iter().enumerate() {
            all.push(Removal::WatchDelay(w));
            all.extend((0..f.stalls.len()).map(|s| Removal::Stall(w, s)));
        }
        all.extend((0..user_changes).map(Removal::UserChange));
        all
    }
}

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
