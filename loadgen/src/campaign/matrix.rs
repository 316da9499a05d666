//! The campaign's matrix: each controller's base workload crossed with each fault class, as a
//! scenario built from the base scenario's TOML with the class's faults in place of its own.

use crate::scenario::{Scenario, ScenarioError};
use std::fmt;
use std::path::Path;
use toml::{Table, Value};

/// A controller under test, with the scenario whose workload drives it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Controller {
    /// ReplicaSets scaled up and down.
    ReplicaSet,
    /// StatefulSets scaled up and down.
    StatefulSet,
    /// DaemonSets over Nodes that come and go.
    DaemonSet,
    /// Jobs whose parallelism changes.
    Job,
    /// Node lifecycle over renewing and silent node Leases.
    NodeLifecycle,
}

impl Controller {
    /// Every controller, in report order.
    pub const ALL: [Controller; 5] = [
        Controller::ReplicaSet,
        Controller::StatefulSet,
        Controller::DaemonSet,
        Controller::Job,
        Controller::NodeLifecycle,
    ];

    /// Its name as `--controllers` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Controller::ReplicaSet => "replicaset",
            Controller::StatefulSet => "statefulset",
            Controller::DaemonSet => "daemonset",
            Controller::Job => "job",
            Controller::NodeLifecycle => "nodelifecycle",
        }
    }

    /// The shipped scenario whose workload, settings and invariants the cells reuse.
    pub fn base(self) -> &'static str {
        match self {
            Controller::ReplicaSet => "replicaset-watch-delay",
            Controller::StatefulSet => "statefulset-watch-delay",
            Controller::DaemonSet => "daemonset-watch-delay",
            Controller::Job => "job-watch-delay",
            Controller::NodeLifecycle => "nodelifecycle-lease-lag",
        }
    }

    /// The resource the controller reconciles (its owners, or Nodes).
    pub fn primary(self) -> &'static str {
        match self {
            Controller::ReplicaSet => "replicasets",
            Controller::StatefulSet => "statefulsets",
            Controller::DaemonSet => "daemonsets",
            Controller::Job => "jobs",
            Controller::NodeLifecycle => "nodes",
        }
    }

    /// The resource whose watch the faults aim at: what the controller's decisions count.
    pub fn watched(self) -> &'static str {
        match self {
            Controller::NodeLifecycle => "leases",
            _ => "pods",
        }
    }
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A class of fault, as Sieve and Acto sort them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultClass {
    /// The watch delivers 2 s late for the whole run.
    WatchDelay,
    /// The watch breaks, comes back with a 410, and is served by a replica 3 s behind.
    TimeTravel,
    /// The watch sends nothing (no events, no bookmarks) for a third of the run.
    Stall,
    /// Every watch is dropped three times.
    Drop,
    /// Watches are dropped and the next five reconnects from a version are answered 410: with
    /// client-go's reflector backoff (doubling from 0.8 s, jittered up to twice) the informer
    /// is back after up to 50 s, so these cells allow that much more to converge.
    GoneStorm,
    /// A fifth of the writes are applied but answered 504.
    LostResponses,
    /// 503 and 429 on a fifth and a tenth of the requests for half the run.
    ServerErrors,
    /// Creates take 400 ms and the manager is killed twice mid-write.
    RestartMidWrite,
    /// Two managers; the leader is paused past its Lease while the Pod watch lags.
    LeaderPause,
    /// Two of the controller's objects get a decisive field of the wrong type for a third of
    /// the run (written past validation), then are repaired: nothing may be done for them
    /// meanwhile, and everything else goes on.
    HostileObjects,
}

impl FaultClass {
    /// Every class, in report order.
    pub const ALL: [FaultClass; 10] = [
        FaultClass::WatchDelay,
        FaultClass::TimeTravel,
        FaultClass::Stall,
        FaultClass::Drop,
        FaultClass::GoneStorm,
        FaultClass::LostResponses,
        FaultClass::ServerErrors,
        FaultClass::RestartMidWrite,
        FaultClass::LeaderPause,
        FaultClass::HostileObjects,
    ];

    /// Its name in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FaultClass::WatchDelay => "watch-delay",
            FaultClass::TimeTravel => "time-travel",
            FaultClass::Stall => "stall",
            FaultClass::Drop => "drop",
            FaultClass::GoneStorm => "410-storm",
            FaultClass::LostResponses => "lost-responses",
            FaultClass::ServerErrors => "5xx-429",
            FaultClass::RestartMidWrite => "restart-mid-write",
            FaultClass::LeaderPause => "leader-pause",
            FaultClass::HostileObjects => "hostile-objects",
        }
    }

    /// Whether the class makes the cache stale (as opposed to failing requests): gate off must
    /// be caught in each of these somewhere in the matrix.
    pub fn is_stale_state(self) -> bool {
        !matches!(self, FaultClass::ServerErrors | FaultClass::HostileObjects)
    }

    /// The class's faults over a run whose steps and faults last `t` seconds, aimed at the
    /// watch of `watched`.
    fn faults(self, watched: &str, primary: &str, t: f64) -> Vec<Table> {
        let at = |share: f64| (t * share * 10.0).round() / 10.0;
        match self {
            FaultClass::WatchDelay => {
                vec![fault("watch-delay", Some(watched), 0.0, Some(t)).with("millis", 2000)]
            }
            FaultClass::TimeTravel => vec![
                fault("expire-watches", Some(watched), at(0.25), None).with("count", 1),
                fault("lagging-replica", Some(watched), at(0.25), Some(at(0.75)))
                    .with("millis", 3000),
            ],
            FaultClass::Stall => vec![fault("watch-stall", Some(watched), at(0.2), Some(at(0.55)))],
            FaultClass::Drop => [0.2, 0.45, 0.7]
                .into_iter()
                .map(|share| fault("drop-watches", None, at(share), None))
                .collect(),
            FaultClass::GoneStorm => vec![
                fault("expire-watches", Some(watched), at(0.2), None).with("count", 5),
                fault("drop-watches", None, at(0.2), None),
                fault("drop-watches", None, at(0.4), None),
            ],
            FaultClass::LostResponses => {
                vec![fault("lose-write-responses", None, 0.0, Some(t)).with_f("fraction", 0.2)]
            }
            FaultClass::ServerErrors => vec![
                fault("api-errors", None, at(0.1), Some(at(0.6)))
                    .with("code", 503)
                    .with_f("fraction", 0.2)
                    .with("retry_after_seconds", 1),
                fault("api-errors", None, at(0.1), Some(at(0.6)))
                    .with("code", 429)
                    .with_f("fraction", 0.1)
                    .with("retry_after_seconds", 1),
            ],
            FaultClass::RestartMidWrite => vec![
                fault("latency", Some("pods"), 0.0, Some(t))
                    .with_s("verb", "create")
                    .with("millis", 400),
                fault("kill-manager", None, at(0.3), Some(at(0.3) + 0.8)).with_s("target", "0"),
                fault("kill-manager", None, at(0.65), Some(at(0.65) + 0.5)).with_s("target", "0"),
            ],
            FaultClass::HostileObjects => vec![
                fault("corrupt-objects", Some(primary), at(0.2), Some(at(0.55))).with("count", 2),
            ],
            FaultClass::LeaderPause => vec![
                fault("watch-delay", Some(watched), 0.0, Some(t)).with("millis", 1000),
                fault("pause-manager", None, at(0.15), Some(at(0.15) + 7.0))
                    .with_s("target", "leader"),
            ],
        }
    }
}

impl fmt::Display for FaultClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The longest the reflector backs off over the storm's five relists: 0.8 + 1.6 + 3.2 + 6.4 +
/// 12.8 s, each jittered up to twice that.
const GONE_STORM_BACKOFF_SECONDS: f64 = 50.0;

/// Builds one fault table.
fn fault(kind: &str, resource: Option<&str>, from: f64, until: Option<f64>) -> Table {
    let mut t = Table::new();
    t.insert("kind".into(), Value::String(kind.into()));
    if let Some(resource) = resource {
        t.insert("resource".into(), Value::String(resource.into()));
    }
    t.insert("from_seconds".into(), Value::Float(from));
    if let Some(until) = until {
        t.insert("until_seconds".into(), Value::Float(until));
    }
    t
}

trait With {
    fn with(self, key: &str, value: i64) -> Self;
    fn with_f(self, key: &str, value: f64) -> Self;
    fn with_s(self, key: &str, value: &str) -> Self;
}

impl With for Table {
    fn with(mut self, key: &str, value: i64) -> Self {
        self.insert(key.into(), Value::Integer(value));
        self
    }
    fn with_f(mut self, key: &str, value: f64) -> Self {
        self.insert(key.into(), Value::Float(value));
        self
    }
    fn with_s(mut self, key: &str, value: &str) -> Self {
        self.insert(key.into(), Value::String(value.into()));
        self
    }
}

/// Why a cell could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CellError {
    /// The base scenario could not be read.
    #[error(transparent)]
    Base(#[from] ScenarioError),
    /// The base scenario is not valid TOML, or the cell does not serialise.
    #[error("cell {cell}: {message}")]
    Toml {
        /// The cell.
        cell: String,
        /// What went wrong.
        message: String,
    },
}

/// One cell of the matrix: a scenario's TOML text and its parsed form.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The controller.
    pub controller: Controller,
    /// The fault class.
    pub class: FaultClass,
    /// The scenario as TOML (what `loadgen stress --scenario FILE` runs).
    pub text: String,
    /// The same, parsed.
    pub scenario: Scenario,
}

/// The text of the built-in scenario `name`.
fn base_text(name: &str) -> Result<String, ScenarioError> {
    crate::scenario::catalog::text(name)
        .map(str::to_string)
        .ok_or_else(|| ScenarioError::NotFound {
            name: name.to_string(),
            known: crate::scenario::catalog::names()
                .map(str::to_string)
                .collect(),
        })
}

/// Builds the cell of `controller` under `class`: the base scenario's workload, settings and
/// invariants, its own faults replaced by the class's (a silent Node of node lifecycle's base
/// stays: it is the workload, not a fault), leader classes with two managers under election.
pub fn cell(controller: Controller, class: FaultClass) -> Result<Cell, CellError> {
    let name = format!("campaign-{controller}-{class}");
    let toml_error = |message: String| CellError::Toml {
        cell: name.clone(),
        message,
    };
    let base = Scenario::load(controller.base())?;
    let t = base.active_duration().as_secs_f64().max(6.0);
    let mut table: Table = base_text(controller.base())?
        .parse()
        .map_err(|e: toml::de::Error| toml_error(e.to_string()))?;
    table.insert("name".into(), Value::String(name.clone()));
    table.insert(
        "description".into(),
        Value::String(format!(
            "Campaign cell: the {controller} workload of {} under {class}.",
            controller.base()
        )),
    );
    let kept: Vec<Value> = table
        .get("faults")
        .and_then(Value::as_array)
        .map(|faults| {
            faults
                .iter()
                .filter(|f| f.get("kind").and_then(Value::as_str) == Some("stop-lease-renewal"))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut faults = kept;
    faults.extend(
        class
            .faults(controller.watched(), controller.primary(), t)
            .into_iter()
            .map(Value::Table),
    );
    table.insert("faults".into(), Value::Array(faults));
    if matches!(class, FaultClass::LeaderPause | FaultClass::RestartMidWrite) {
        let manager = table
            .entry("manager")
            .or_insert_with(|| Value::Table(Table::new()));
        if let Value::Table(manager) = manager {
            manager.insert("leader_elect".into(), Value::Boolean(true));
            if class == FaultClass::LeaderPause {
                manager.insert("replicas".into(), Value::Integer(2));
                manager.insert("lease_duration_seconds".into(), Value::Float(4.0));
                manager.insert("renew_deadline_seconds".into(), Value::Float(3.0));
                manager.insert("retry_period_seconds".into(), Value::Float(1.0));
                manager.insert(
                    "protections".into(),
                    Value::Array(vec![
                        Value::String("consistency".into()),
                        Value::String("fencing".into()),
                    ]),
                );
            }
        }
        if class == FaultClass::LeaderPause
            && let Some(Value::Table(invariants)) = table.get_mut("invariants")
            && let Some(Value::Array(check)) = invariants.get_mut("check")
        {
            check.push(Value::String("leader-single-writer".into()));
        }
    }
    if class == FaultClass::GoneStorm
        && let Some(Value::Table(invariants)) = table.get_mut("invariants")
    {
        let bound = invariants
            .get("convergence_bound_seconds")
            .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
            .unwrap_or(30.0);
        invariants.insert(
            "convergence_bound_seconds".into(),
            Value::Float(bound + GONE_STORM_BACKOFF_SECONDS),
        );
    }
    if class == FaultClass::HostileObjects
        && let Some(Value::Table(invariants)) = table.get_mut("invariants")
        && let Some(Value::Array(check)) = invariants.get_mut("check")
    {
        check.push(Value::String("no-action-on-malformed-owner".into()));
    }
    let text = toml::to_string(&table).map_err(|e| toml_error(e.to_string()))?;
    let scenario = Scenario::parse(&text, Path::new(&name))?;
    Ok(Cell {
        controller,
        class,
        text,
        scenario,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FaultKind;

    #[test]
    fn every_cell_of_the_matrix_is_a_valid_scenario() {
        for controller in Controller::ALL {
            for class in FaultClass::ALL {
                let cell = cell(controller, class).unwrap_or_else(|e| panic!("{e}"));
                assert!(!cell.scenario.faults.is_empty(), "{controller} {class}");
            }
        }
    }

    #[test]
    fn a_cell_replaces_the_base_faults_with_its_class() {
        let c = cell(Controller::ReplicaSet, FaultClass::Stall).expect("cell");
        let kinds: Vec<FaultKind> = c.scenario.faults.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, vec![FaultKind::WatchStall]);
        assert_eq!(c.scenario.faults[0].resource.as_deref(), Some("pods"));
    }

    #[test]
    fn node_lifecycle_keeps_its_silent_node_and_aims_at_leases() {
        let c = cell(Controller::NodeLifecycle, FaultClass::WatchDelay).expect("cell");
        let kinds: Vec<FaultKind> = c.scenario.faults.iter().map(|f| f.kind).collect();
        assert!(kinds.contains(&FaultKind::StopLeaseRenewal), "{kinds:?}");
        assert!(
            c.scenario
                .faults
                .iter()
                .any(|f| f.kind == FaultKind::WatchDelay && f.resource.as_deref() == Some("leases"))
        );
    }

    #[test]
    fn the_leader_class_runs_two_managers_and_checks_single_writer() {
        let c = cell(Controller::Job, FaultClass::LeaderPause).expect("cell");
        assert_eq!(c.scenario.manager.replicas, 2);
        assert!(c.scenario.manager.leader_elect);
        assert!(
            c.scenario
                .invariants
                .check
                .iter()
                .any(|i| i == "leader-single-writer")
        );
    }
}
