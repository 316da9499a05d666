//! Running the campaign: every cell, seed and gate as its own `loadgen stress` process (each
//! with its own simulated API server and managers), a bounded number at a time.

use super::matrix::{Cell, Controller, FaultClass};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

/// One run of one cell.
#[derive(Clone, Debug)]
pub struct Planned {
    /// The cell.
    pub cell: Arc<Cell>,
    /// The seed.
    pub seed: u64,
    /// `on` or `off`.
    pub gate: &'static str,
}

/// What one run found.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The controller.
    pub controller: String,
    /// The fault class.
    pub class: String,
    /// The seed.
    pub seed: u64,
    /// `on` or `off`.
    pub gate: String,
    /// Violations by invariant.
    pub violations: BTreeMap<String, usize>,
    /// Every key converged within the bound after the faults stopped.
    pub converged: bool,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// Why the run could not be carried out, if it could not (not a verdict).
    pub error: Option<String>,
}

impl RunResult {
    /// Violations of every invariant together.
    pub fn violation_count(&self) -> usize {
        self.violations.values().sum()
    }
}

/// Reads a stress report's verdict.
fn verdict(report: &serde_json::Value) -> (BTreeMap<String, usize>, bool) {
    let mut by_invariant = BTreeMap::new();
    for v in report["violations"].as_array().into_iter().flatten() {
        let name = v["invariant"].as_str().unwrap_or("unnamed").to_string();
        *by_invariant.entry(name).or_insert(0) += 1;
    }
    (by_invariant, report["converged"].as_bool().unwrap_or(false))
}

/// Runs one planned run with `loadgen` (this binary) in `dir`.
fn run_one(loadgen: &Path, dir: &Path, index: usize, planned: &Planned) -> RunResult {
    let started = Instant::now();
    let cell = &planned.cell;
    let stem = format!(
        "{index:04}-{}-{}-{}-{}",
        cell.controller, cell.class, planned.seed, planned.gate
    );
    let scenario = dir.join(format!("{stem}.toml"));
    let json = dir.join(format!("{stem}.json"));
    let log = dir.join(format!("{stem}.log"));
    let mut result = RunResult {
        controller: cell.controller.to_string(),
        class: cell.class.to_string(),
        seed: planned.seed,
        gate: planned.gate.to_string(),
        violations: BTreeMap::new(),
        converged: false,
        seconds: 0.0,
        error: None,
    };
    let outcome = std::fs::write(&scenario, &cell.text)
        .and_then(|()| std::fs::File::create(&log))
        .and_then(|log| {
            Command::new(loadgen)
                .arg("stress")
                .arg("--scenario")
                .arg(&scenario)
                .args(["--seed", &planned.seed.to_string()])
                .args(["--gate", planned.gate])
                .arg("--json")
                .arg(&json)
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .status()
        });
    result.seconds = started.elapsed().as_secs_f64();
    if let Err(e) = outcome {
        result.error = Some(format!("could not run loadgen stress: {e}"));
        return result;
    }
    match std::fs::read(&json)
        .map_err(|e| e.to_string())
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
    {
        Ok(report) => {
            let (violations, converged) = verdict(&report);
            result.violations = violations;
            result.converged = converged;
        }
        Err(e) => {
            result.error = Some(format!("no report ({e}); see {}", log.display()));
        }
    }
    result
}

/// Runs `plan` with `parallel` runs at a time, calling `progress` after each; results come
/// back in plan order.
pub fn run_all(
    loadgen: &Path,
    dir: &Path,
    plan: Vec<Planned>,
    parallel: usize,
    progress: &(dyn Fn(usize, usize, &RunResult) + Sync),
) -> Vec<RunResult> {
    let total = plan.len();
    let queue = parking_lot::Mutex::new(plan.into_iter().enumerate().collect::<VecDeque<_>>());
    let results = parking_lot::Mutex::new(Vec::with_capacity(total));
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..parallel.max(1) {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().pop_front();
                    let Some((index, planned)) = next else {
                        break;
                    };
                    let result = run_one(loadgen, dir, index, &planned);
                    let finished = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    progress(finished, total, &result);
                    results.lock().push((index, result));
                }
            });
        }
    });
    let mut results = results.into_inner();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The plan of a campaign: every cell x seed x gate, cells in matrix order.
pub fn plan(cells: &[Arc<Cell>], seeds: &[u64], gates: &[&'static str]) -> Vec<Planned> {
    let mut plan = Vec::new();
    for cell in cells {
        for seed in seeds {
            for gate in gates {
                plan.push(Planned {
                    cell: cell.clone(),
                    seed: *seed,
                    gate,
                });
            }
        }
    }
    plan
}

/// The CI sample: each fault class once, on a controller whose naive run that class catches,
/// and every controller at least once (node lifecycle under its own lagging Lease watch).
pub fn ci_sample() -> Vec<(Controller, FaultClass)> {
    vec![
        (Controller::ReplicaSet, FaultClass::WatchDelay),
        (Controller::ReplicaSet, FaultClass::TimeTravel),
        (Controller::DaemonSet, FaultClass::Stall),
        (Controller::Job, FaultClass::Drop),
        (Controller::ReplicaSet, FaultClass::GoneStorm),
        (Controller::ReplicaSet, FaultClass::LostResponses),
        (Controller::StatefulSet, FaultClass::ServerErrors),
        (Controller::ReplicaSet, FaultClass::RestartMidWrite),
        (Controller::Job, FaultClass::LeaderPause),
        (Controller::NodeLifecycle, FaultClass::WatchDelay),
        (Controller::DaemonSet, FaultClass::HostileObjects),
    ]
}

/// Where a campaign writes its scenario files, reports and logs.
pub fn work_dir(base: Option<PathBuf>) -> std::io::Result<PathBuf> {
    let dir = match base {
        Some(dir) => dir,
        None => std::env::temp_dir().join(format!("loadgen-campaign-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_as_violations_by_invariant() {
        let report = serde_json::json!({
            "violations": [{"invariant": "over-create"}, {"invariant": "over-create"},
                           {"invariant": "wanted-pod-deleted"}],
            "converged": true
        });
        let (by, converged) = verdict(&report);
        assert_eq!(by["over-create"], 2);
        assert_eq!(by["wanted-pod-deleted"], 1);
        assert!(converged);
    }

    #[test]
    fn the_ci_sample_covers_every_class_and_every_controller() {
        let sample = ci_sample();
        for class in FaultClass::ALL {
            assert!(sample.iter().any(|(_, c)| *c == class), "{class}");
        }
        for controller in Controller::ALL {
            assert!(sample.iter().any(|(c, _)| *c == controller));
        }
    }
}
