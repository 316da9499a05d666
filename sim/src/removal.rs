//! What can be taken away from a run's faults and user changes, as shrinking does and
//! `SimConfig::removed` names.

use crate::faults::FaultPlan;

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
    /// Resumed watches that deliver events again.
    Replays,
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
    /// Process clocks out of step with the server's.
    ClockDrift,
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
            Removal::Replays => plan.replay_on_resume = 0.0,
            Removal::ServerErrors => plan.server_error = 0.0,
            Removal::SlowWrites => plan.slow_write = 0.0,
            Removal::StuckWrites => plan.stuck_write = 0.0,
            Removal::Crash => {
                plan.crash = None;
                plan.partition = None;
            }
            Removal::Partition => plan.partition = None,
            Removal::ClockDrift => plan.clock_drift = 0.0,
        }
    }

    /// Everything that could be taken away from a run with `plan` and `user_changes` changes.
    pub(crate) fn candidates(plan: &FaultPlan, user_changes: usize) -> Vec<Removal> {
        let mut all: Vec<Removal> = vec![
            Removal::Crash,
            Removal::Partition,
            Removal::ClockDrift,
            Removal::StuckWrites,
            Removal::SlowWrites,
            Removal::LostResponses,
            Removal::ServerErrors,
            Removal::Gone,
            Removal::Replays,
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
