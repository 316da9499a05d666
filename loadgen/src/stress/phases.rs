//! What `loadgen stress` shows of its phases (starting, settling, running, converging, the
//! verdict), drawn by [`crate::progress`].

use crate::progress::{Bound, finish, phase};
use crate::stress::report::StressReport;
use crate::stress::{READY_BOUND, StressOptions};
use std::time::Duration;

/// The phases of a stress run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StressPhase {
    /// The server starts, the workload is seeded, the managers start.
    Starting,
    /// The managers sync and settle the seeded workload.
    Settling,
    /// The timeline of steps and faults plays.
    Running,
    /// Every set must converge within the scenario's bound.
    Converging,
    /// The managers stop; the oracle's checks.
    Verdict,
}

/// `stress NAME seed N gate on|off`: how progress names a stress run.
pub fn stress_run(options: &StressOptions) -> String {
    format!(
        "stress {} seed {} gate {}",
        options.scenario.name,
        options.seed,
        options.gate.name()
    )
}

/// Shows that the stress run of `options` is in `phase`.
pub fn stress(options: &StressOptions, phase: StressPhase) {
    let scenario = &options.scenario;
    let (what, bound) = match phase {
        StressPhase::Starting => (
            format!(
                "starting the API server and {} manager(s)",
                scenario.manager.replicas.max(1)
            ),
            Bound::Open,
        ),
        StressPhase::Settling => (
            "waiting for the managers to settle the seeded workload".to_string(),
            Bound::AtMost(READY_BOUND),
        ),
        StressPhase::Running => (
            format!(
                "running the scenario's {} steps and {} fault windows",
                scenario.workload.steps.len(),
                scenario.faults.len()
            ),
            Bound::Exactly(scenario.active_duration()),
        ),
        StressPhase::Converging => (
            "waiting for every set to converge".to_string(),
            Bound::AtMost(Duration::from_secs_f64(
                scenario.invariants.convergence_bound_seconds.max(0.0),
            )),
        ),
        StressPhase::Verdict => (
            "stopping the managers; the oracle's verdict".to_string(),
            Bound::Open,
        ),
    };
    self::phase(&stress_run(options), &what, bound);
}

/// The stress run of `options` is over: its verdict in one line.
pub fn stress_done(options: &StressOptions, report: &StressReport) {
    let verdict = if report.passed() { "passed" } else { "FAILED" };
    let convergence = if report.converged {
        "converged"
    } else {
        "NOT converged"
    };
    finish(
        &stress_run(options),
        &format!(
            "verdict: {verdict} ({} violation(s), {convergence})",
            report.violations.len(),
        ),
    );
}
