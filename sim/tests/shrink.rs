//! Shrinking keeps the failure and takes away what it does not need, and the shrunk run
//! replays exactly.

use tidemark_engine::{ConsistencyMode, SeededBug};
use tidemark_sim::{SimConfig, Workload, run, shrink};

fn failing() -> SimConfig {
    SimConfig {
        workload: Workload::Job,
        bug: Some(SeededBug::FenceOnlyBeforeSending),
        ..SimConfig::new(59, ConsistencyMode::Tidemark)
    }
}

#[test]
fn a_shrunk_failure_still_fails_the_same_way_with_less() {
    let config = failing();
    let original = run(&config);
    assert!(!original.passed(), "seed 59 must fail: {:?}", original.end);
    let shrunk = shrink(&config).expect("a failing run shrinks");
    assert!(!shrunk.removed.is_empty(), "something was not needed");
    assert_eq!(
        std::mem::discriminant(&shrunk.outcome.end),
        std::mem::discriminant(&original.end)
    );
    let replayed = run(&SimConfig {
        removed: shrunk.removed.clone(),
        full_trace: true,
        ..config
    });
    assert_eq!(replayed.trace_hash, shrunk.outcome.trace_hash);
}

#[test]
fn a_passing_run_has_nothing_to_shrink() {
    let config = SimConfig::new(59, ConsistencyMode::Tidemark);
    assert!(shrink(&config).is_none());
}
