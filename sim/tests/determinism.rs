//! A run is a pure function of its seed: the same seed gives the same trace, another seed
//! another one.

use tidemark_engine::ConsistencyMode;
use tidemark_sim::{SimConfig, run};

#[test]
fn the_same_seed_gives_the_same_trace_twice() {
    for mode in ConsistencyMode::ALL {
        for seed in [1, 6, 31, 181, 4242] {
            let config = SimConfig::new(seed, mode);
            let (first, second) = (run(&config), run(&config));
            assert_eq!(
                (first.trace_hash, first.events, &first.end),
                (second.trace_hash, second.events, &second.end),
                "seed {seed} in {mode} ran differently twice"
            );
        }
    }
}

#[test]
fn another_seed_gives_another_trace() {
    let hash = |seed| run(&SimConfig::new(seed, ConsistencyMode::Tidemark)).trace_hash;
    assert_ne!(hash(1), hash(2));
}

#[test]
fn a_run_without_faults_converges_with_no_violation() {
    let mut config = SimConfig::new(3, ConsistencyMode::Tidemark);
    config.faults = false;
    let outcome = run(&config);
    assert!(outcome.passed(), "{:?}: {:?}", outcome.end, outcome.tail);
    assert!(outcome.violations.is_empty());
}
