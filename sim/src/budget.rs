//! The CI budget: every workload over a fixed range of seeds with the gate on (no violation,
//! always converged), every baseline caught within it, and each seeded bug found within a
//! bound of seeds. One table, run on as many threads as asked (runs share nothing).

use crate::explore::{Exploration, explore};
use crate::run::SimConfig;
use crate::schedule::Schedule;
use crate::workload::Workload;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tidemark_engine::{ConsistencyMode, SeededBug};

/// What an entry of the budget must show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Every seed passes.
    Clean,
    /// A failing seed within this many.
    CaughtWithin(u64),
}

/// One line of the budget.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The workload.
    pub workload: Workload,
    /// The mode.
    pub mode: ConsistencyMode,
    /// The schedule.
    pub schedule: Schedule,
    /// A seeded bug, if any.
    pub bug: Option<SeededBug>,
    /// Seeds `1..=seeds`.
    pub seeds: u64,
    /// What it must show.
    pub expect: Expect,
}

/// An entry and how it went.
#[derive(Debug)]
pub struct Row {
    /// The entry.
    pub entry: Entry,
    /// Seeds run, failures, the first failing seed.
    pub found: Exploration,
}

impl Row {
    /// Whether the entry showed what it must.
    pub fn met(&self) -> bool {
        match self.entry.expect {
            Expect::Clean => self.found.failures == 0,
            Expect::CaughtWithin(n) => self.found.seeds_to_first_failure.is_some_and(|k| k <= n),
        }
    }
}

/// The baselines.
const BASELINES: [ConsistencyMode; 3] = [
    ConsistencyMode::Naive,
    ConsistencyMode::Upstream135,
    ConsistencyMode::Upstream136,
];

/// The budget with `seeds` seeds per workload under the random schedule (and half as many for
/// the relist race of the two sets whose plans a relist can interrupt).
pub fn plan(seeds: u64) -> Vec<Entry> {
    let entry = |workload, mode, schedule, bug, seeds, expect| Entry {
        workload,
        mode,
        schedule,
        bug,
        seeds,
        expect,
    };
    let mut all = Vec::new();
    for workload in Workload::ALL {
        all.push(entry(
            workload,
            ConsistencyMode::Tidemark,
            Schedule::Random,
            None,
            seeds,
            Expect::Clean,
        ));
    }
    for workload in [Workload::ReplicaSet, Workload::StatefulSet] {
        all.push(entry(
            workload,
            ConsistencyMode::Tidemark,
            Schedule::RelistRace,
            None,
            seeds / 2,
            Expect::Clean,
        ));
    }
    for workload in Workload::ALL {
        // A StatefulSet's ordered rules leave the baselines safe while the user waits for it to
        // settle; they are caught when the user's change races a relist.
        let schedule = match workload {
            Workload::StatefulSet => Schedule::RelistRace,
            _ => Schedule::Random,
        };
        for mode in BASELINES {
            all.push(entry(
                workload,
                mode,
                schedule,
                None,
                seeds,
                Expect::CaughtWithin(seeds),
            ));
        }
    }
    let bugs = [
        (
            SeededBug::RelistKeepsPlans,
            Workload::ReplicaSet,
            Schedule::RelistRace,
            50,
        ),
        (
            SeededBug::ProofNeverExpires,
            Workload::NodeLifecycle,
            Schedule::Random,
            100,
        ),
        (
            SeededBug::FenceOnlyBeforeSending,
            Workload::DaemonSet,
            Schedule::Random,
            1_000,
        ),
        (
            SeededBug::FenceOnlyBeforeSending,
            Workload::Job,
            Schedule::Random,
            500,
        ),
    ];
    for (bug, workload, schedule, within) in bugs {
        all.push(entry(
            workload,
            ConsistencyMode::Tidemark,
            schedule,
            Some(bug),
            within,
            Expect::CaughtWithin(within),
        ));
    }
    all
}

/// Runs `entries` on `threads` threads; rows in the entries' order, and the wall time.
pub fn run_budget(entries: Vec<Entry>, threads: usize) -> (Vec<Row>, Duration) {
    let started = Instant::now();
    let queue = Mutex::new(entries.into_iter().enumerate().collect::<Vec<_>>());
    let rows = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().map(|mut q| q.pop()).ok().flatten();
                    let Some((index, entry)) = next else {
                        break;
                    };
                    let found = explore(&template(&entry), 1..entry.seeds + 1, false);
                    if let Ok(mut rows) = rows.lock() {
                        rows.push((index, Row { entry, found }));
                    }
                }
            });
        }
    });
    let mut rows = rows.into_inner().unwrap_or_default();
    rows.sort_by_key(|(index, _)| *index);
    (
        rows.into_iter().map(|(_, row)| row).collect(),
        started.elapsed(),
    )
}

fn template(entry: &Entry) -> SimConfig {
    SimConfig {
        workload: entry.workload,
        schedule: entry.schedule,
        bug: entry.bug,
        ..SimConfig::new(1, entry.mode)
    }
}

/// The command that replays `row`'s first failure.
pub fn replay(row: &Row) -> Option<String> {
    let first = row.found.first_failure.as_ref()?;
    let mut line = format!(
        "sim run --seed {} --workload {} --mode {}",
        first.seed, row.entry.workload, row.entry.mode
    );
    if row.entry.schedule != Schedule::Random {
        line.push_str(&format!(" --schedule {}", row.entry.schedule));
    }
    if let Some(bug) = row.entry.bug {
        line.push_str(&format!(" --bug {bug}"));
    }
    Some(line)
}
