//! The CI budget: the ReplicaSet scenario over a fixed range of seeds has no violation and
//! converges every time in the `tidemark` mode, and the baselines are caught within it.

use tidemark_engine::ConsistencyMode;
use tidemark_sim::{SimConfig, explore};

/// Seeds every mode is given.
const BUDGET: std::ops::Range<u64> = 1..2001;

fn first_failure(mode: ConsistencyMode) -> Option<u64> {
    let found = explore(&SimConfig::new(BUDGET.start, mode), BUDGET, false);
    if let Some(first) = &found.first_failure {
        eprintln!(
            "{mode}: caught at seed {} after {} seeds ({:?}, {} violations)",
            first.seed,
            found.runs,
            first.end,
            first.violations.len()
        );
    }
    found.seeds_to_first_failure
}

#[test]
fn tidemark_has_no_violation_and_converges_over_the_whole_budget() {
    let found = explore(
        &SimConfig::new(BUDGET.start, ConsistencyMode::Tidemark),
        BUDGET,
        false,
    );
    eprintln!(
        "tidemark: {} seeds, {:.0} seeds/s",
        found.runs,
        found.seeds_per_second()
    );
    if let Some(first) = &found.first_failure {
        panic!(
            "seed {} failed ({:?}): {:#?}\nlast events:\n{}\nreplay: sim run --seed {} --mode tidemark",
            first.seed,
            first.end,
            first.violations,
            first.tail.join("\n"),
            first.seed
        );
    }
    assert_eq!(found.runs, BUDGET.end - BUDGET.start);
}

#[test]
fn naive_is_caught_within_the_budget() {
    assert!(first_failure(ConsistencyMode::Naive).is_some());
}

#[test]
fn both_upstream_baselines_are_caught_within_the_budget() {
    assert!(first_failure(ConsistencyMode::Upstream135).is_some());
    assert!(first_failure(ConsistencyMode::Upstream136).is_some());
}
