//! One run: a seed, a mode and a shard count in; the trace hash, the oracle's violations and
//! whether every set converged out. A run is a pure function of its configuration.

use crate::clock::WallClockGuard;
use crate::faults::FaultPlan;
use crate::removal::Removal;
use crate::schedule::{RELIST_RACE_ALLOWANCE, RELIST_RACE_LEG_MS, RELIST_RACES, Schedule};
use crate::trace::Trace;
use crate::workload::Workload;
use crate::world::{End, Event, Setup, World};
use loadgen::Violation;
use std::collections::BTreeSet;
use std::time::Duration;
use tidemark_engine::{ConsistencyMode, SeededBug};

/// Events after which a run counts as runaway (a scheduler loop, not a result).
pub const EVENT_BUDGET: u64 = 2_000_000;

/// What to run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The seed: every choice of the run is drawn from it.
    pub seed: u64,
    /// The controller run, with its user's objects.
    pub workload: Workload,
    /// The controllers' protection.
    pub mode: ConsistencyMode,
    /// An old bug seeded back into the shards.
    pub bug: Option<SeededBug>,
    /// The user rescales sets the manager still acts on, and the oracle gives every change of
    /// a set's size this delivery allowance (virtual time).
    pub eager_user: Option<Duration>,
    /// Shards (1 to 4); drawn from the seed when `None`.
    pub shards: Option<usize>,
    /// Whether faults are drawn (off: a run with none, to check the harness itself).
    pub faults: bool,
    /// Random faults, or a schedule aimed at one race.
    pub schedule: Schedule,
    /// How long faults last.
    pub fault_window: Duration,
    /// How long after the faults every set must have converged.
    pub converge_within: Duration,
    /// Trace lines kept for the report.
    pub trace_tail: usize,
    /// Keep every trace line.
    pub full_trace: bool,
    /// Faults and user changes taken away (by shrinking).
    pub removed: BTreeSet<Removal>,
}

impl SimConfig {
    /// The defaults for `seed` under `mode`.
    pub fn new(seed: u64, mode: ConsistencyMode) -> Self {
        Self {
            seed,
            workload: Workload::ReplicaSet,
            mode,
            bug: None,
            eager_user: None,
            shards: None,
            faults: true,
            schedule: Schedule::Random,
            fault_window: Duration::from_secs(30),
            converge_within: Duration::from_secs(90),
            trace_tail: 40,
            full_trace: false,
            removed: BTreeSet::new(),
        }
    }
}

/// How a run went.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// The controller run.
    pub workload: Workload,
    /// The mode.
    pub mode: ConsistencyMode,
    /// Shards used.
    pub shards: usize,
    /// How it ended.
    pub end: End,
    /// The oracle's violations (the run stops at the first step that has any).
    pub violations: Vec<Violation>,
    /// Hash of the whole trace.
    pub trace_hash: u64,
    /// Events run.
    pub events: u64,
    /// Virtual time at the end.
    pub virtual_time: Duration,
    /// The last trace lines.
    pub tail: Vec<String>,
    /// Every trace line, if asked.
    pub full: Option<Vec<String>>,
    /// The faults the run had (after any removal).
    pub faults: FaultPlan,
    /// How many changes the user drew.
    pub user_changes: usize,
}

impl Outcome {
    /// No violation and every set converged.
    pub fn passed(&self) -> bool {
        self.end == End::Converged
    }
}

/// Runs one seed.
pub fn run(config: &SimConfig) -> Outcome {
    let _wall = WallClockGuard;
    // loadgen draws uids and generateName suffixes from the thread's generator: seed it too.
    fastrand::seed(config.seed);
    let mut rng = fastrand::Rng::with_seed(config.seed);
    let shards = config.shards.unwrap_or_else(|| rng.usize(1..=4));
    let mut faults = if !config.faults {
        FaultPlan::none(config.workload.watched())
    } else if config.schedule == Schedule::RelistRace {
        FaultPlan::steady(
            config.workload.watched(),
            config.fault_window,
            RELIST_RACE_LEG_MS,
        )
    } else {
        FaultPlan::draw(&mut rng, config.workload.watched(), config.fault_window)
    };
    for removal in &config.removed {
        removal.apply(&mut faults);
    }
    let fault_end = faults.until;
    let crash = faults.crash;
    let mut world = World::new(Setup {
        rng,
        workload: config.workload,
        mode: config.mode,
        bug: config.bug,
        shards,
        faults,
        converge_within: config.converge_within,
        trace: Trace::new(config.trace_tail, config.full_trace),
    });
    world.clock.advance_to(Duration::ZERO);
    world.user.dropped = (config.removed.iter())
        .filter_map(|r| match r {
            Removal::UserChange(n) => Some(*n),
            _ => None,
        })
        .collect();
    if let Some(allowance) = config.eager_user {
        world.user.eager = true;
        world.oracle.set_delivery_allowance(allowance);
    }
    if config.schedule == Schedule::RelistRace && config.faults {
        world.user.eager = true;
        world.oracle.set_delivery_allowance(RELIST_RACE_ALLOWANCE);
        world.races_left = RELIST_RACES;
    }
    world.note(format_args!(
        "seed {} workload {} mode {} shards {shards}",
        config.seed, config.workload, config.mode
    ));
    world.seed_workload(config.fault_window);
    world.queue.at(Duration::from_millis(10), Event::Start);
    world
        .queue
        .at(Duration::from_millis(50), Event::KubeletTick);
    if let Some((at, down)) = crash {
        world.queue.at(at, Event::Crash);
        world.queue.at(at + down, Event::Start);
    }
    world.queue.at(fault_end, Event::FaultsEnd);
    let mut events = 0u64;
    let end = loop {
        let Some((at, event)) = world.queue.pop() else {
            break End::Runaway;
        };
        world.clock.advance_to(at);
        world.handle(event);
        events += 1;
        if world.oracle.violation_count() > 0 {
            world.note(format_args!("oracle: violation"));
            break End::Violated;
        }
        if let Some(end) = world.end.take() {
            break end;
        }
        if events >= EVENT_BUDGET {
            break End::Runaway;
        }
    };
    Outcome {
        seed: config.seed,
        workload: config.workload,
        mode: config.mode,
        shards,
        end,
        violations: world.oracle.violations(),
        trace_hash: world.trace.hash(),
        events,
        virtual_time: world.clock.elapsed(),
        tail: world.trace.tail().map(str::to_string).collect(),
        full: world.trace.full().map(<[String]>::to_vec),
        faults: world.faults.clone(),
        user_changes: world.user.drawn,
    }
}
