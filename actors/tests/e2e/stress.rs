//! `loadgen stress` with the real `tidemark` binary across a process boundary: the watch-restart
//! scenario (watch delay, dropped watches, 410 on reconnect, a stall) passes with protection and
//! reports violations without it.

use std::path::PathBuf;
use tidemark_loadgen::scenario::Scenario;
use tidemark_loadgen::stress::{StressOptions, run};

fn stress(gate: bool) -> tidemark_loadgen::report::StressReport {
    let runtime = tidemark_actors::manager::io_runtime().expect("runtime");
    let options = StressOptions {
        scenario: Scenario::load("replicaset-watch-restart").expect("shipped scenario"),
        seed: 3,
        gate: tidemark_loadgen::mode::Mode::from_gate(gate),
        tidemark: PathBuf::from(env!("CARGO_BIN_EXE_tidemark")),
        work_dir: std::env::temp_dir().join(format!(
            "tidemark-stress-test-{}-{gate}",
            std::process::id()
        )),
    };
    runtime.block_on(run(options)).expect("the run completes")
}

#[test]
fn the_watch_restart_scenario_passes_with_protection_on() {
    let report = stress(true);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(report.converged, "log: {}", report.manager_log);
    assert!(report.stale_sync_skips > 0);
    assert!(report.writes.create > 0 && report.writes.delete > 0);
    assert!(report.faults.iter().any(|f| f.what.contains("410")));
}

#[test]
fn the_watch_restart_scenario_reports_violations_with_protection_off() {
    let report = stress(false);
    assert!(
        report
            .violations
            .iter()
            .any(|v| v.invariant == "replicaset-no-over-create"),
        "{:#?}",
        report.violations
    );
    assert!(!report.passed());
}
