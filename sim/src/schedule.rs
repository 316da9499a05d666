//! How a run's faults are chosen: drawn at random from the seed, or aimed at one race that
//! random faults seldom line up. An aimed schedule still draws every choice from the seed; it
//! only narrows what is drawn.

use crate::error::SimError;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The schedule of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Schedule {
    /// Faults drawn at random (delays, stalls, drops, `410`, lost and slow writes, crashes).
    #[default]
    Random,
    /// The race a relist must win: while a set's plan runs (one of its Pods is being written),
    /// the user makes the set smaller and the watch that would have told of it ends with `410`,
    /// so the change is learned only from the relist. Watches are otherwise prompt and every
    /// request leg takes 150 to 300 ms, so a decision made before the change could be known
    /// arrives within [`RELIST_RACE_ALLOWANCE`] of it: a plan step sent after the relist began,
    /// or a reconcile on the spec the relist was about to replace, arrives later and is judged
    /// on the new spec.
    RelistRace,
}

/// A request leg under [`Schedule::RelistRace`], in milliseconds.
pub const RELIST_RACE_LEG_MS: (u64, u64) = (150, 300);

/// The delivery allowance under [`Schedule::RelistRace`]: a change reaches the cache within a
/// watch read (at most 200 ms apart) and a decision made just before it arrives within a leg
/// (300 ms); a relist takes its backoff (at least 800 ms) and two legs more.
pub const RELIST_RACE_ALLOWANCE: Duration = Duration::from_millis(600);

/// How many races a [`Schedule::RelistRace`] run sets up at most.
pub const RELIST_RACES: u32 = 3;

impl Schedule {
    /// The name `--schedule` takes.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Random => "random",
            Schedule::RelistRace => "relist-race",
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Schedule {
    type Err = SimError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Schedule::Random, Schedule::RelistRace]
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| SimError::UnknownSchedule(s.to_string()))
    }
}
