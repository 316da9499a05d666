//! A run is a pure function of its configuration: the same seed gives the same trace, another
//! seed another one, for every workload and schedule.

use tidemark_engine::ConsistencyMode;
use tidemark_sim::{Schedule, SimConfig, Workload, run};

#[test]
fn the_same_seed_gives_the_same_trace_twice() {
    for workload in Workload::ALL {
        for schedule in [Schedule::Random, Schedule::RelistRace] {
            for mode in ConsistencyMode::ALL {
                for seed in [1, 6, 181] {
                    let config = SimConfig {
                        workload,
                        schedule,
                        ..SimConfig::new(seed, mode)
                    };
                    let (first, second) = (run(&config), run(&config));
                    assert_eq!(
                        (first.trace_hash, first.events, &first.end),
                        (second.trace_hash, second.events, &second.end),
                        "seed {seed} of {workload} in {mode} ({schedule}) ran differently twice"
                    );
                }
            }
        }
    }
}

#[test]
fn another_seed_gives_another_trace() {
    let hash = |seed| run(&SimConfig::new(seed, ConsistencyMode::Tidemark)).trace_hash;
    assert_ne!(hash(1), hash(2));
}

#[test]
fn every_workload_without_faults_converges_with_no_violation() {
    for workload in Workload::ALL {
        let config = SimConfig {
            workload,
            faults: false,
            ..SimConfig::new(3, ConsistencyMode::Tidemark)
        };
        let outcome = run(&config);
        assert!(
            outcome.passed(),
            "{workload}: {:?}: {:?}",
            outcome.end,
            outcome.tail
        );
        assert!(outcome.violations.is_empty());
    }
}
