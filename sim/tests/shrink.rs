//! Shrinking keeps the failure and takes away what it does not need, and the shrunk run
//! replays exactly.

use tidemark_engine::{ConsistencyMode, SeededBug};
use tidemark_sim::{SimConfig, Workload, explore, run, shrink};

/// The first failing seed of the Job workload with writes that carry no deadline (found
/// within the budget's bound; which seed it is moves whenever the model draws differently).
fn failing() -> SimConfig {
    let template = SimConfig {
        workload: Workload::Job,
        bug: Some(SeededBug::FenceOnlyBeforeSending),
        ..SimConfig::new(1, ConsistencyMode::Tidemark)
    };
    let found = explore(&template, 1..501, false);
    let seed = found
        .first_failure
        .map(|o| o.seed)
        .expect("the fence bug is found within 500 seeds");
    SimConfig { seed, ..template }
}

#[test]
fn a_shrunk_failure_still_fails_the_same_way_with_less() {
    let config = failing();
    let original = run(&config);
    assert!(!original.passed(), "{:?}", original.end);
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
    let config = SimConfig::new(failing().seed, ConsistencyMode::Tidemark);
    assert!(
        run(&config).passed(),
        "the same seed without the bug passes"
    );
    assert!(shrink(&config).is_none());
}
