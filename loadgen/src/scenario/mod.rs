//! Stress scenarios: a TOML file naming the workload, the faults over time, the invariants and
//! the convergence bound.

pub mod adoption;
pub mod catalog;
pub mod invariants;
pub mod takeover;
pub mod timeline;
pub mod user;
pub mod workload;

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::resource::Resource;
pub use crate::scenario::workload::{
    Amount, EventVerb, ROLLOUT_ANNOTATION, SetNamespaces, Workload, WorkloadEvent, WorkloadKind,
};

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Neither a file nor the name of a built-in scenario.
    #[error(
        "no scenario {name:?}: not a file, nor one of the built-in scenarios: {} (`loadgen stress --list` describes each)",
        .known.join(", ")
    )]
    NotFound {
        /// What was asked for.
        name: String,
        /// The built-in scenarios.
        known: Vec<String>,
    },
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error("parsing {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A stress scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// What it shows.
    #[serde(default)]
    pub description: String,
    /// Simulated API server settings.
    #[serde(default)]
    pub server: ServerSettings,
    /// Settings passed to `tidemark run`.
    #[serde(default)]
    pub manager: ManagerSettings,
    /// What the workload does.
    pub workload: Workload,
    /// Faults over time.
    #[serde(default)]
    pub faults: Vec<FaultWindow>,
    /// Changes a user makes to the workload's Pods and sets besides scaling (adoption,
    /// orphaning).
    #[serde(default)]
    pub events: Vec<WorkloadEvent>,
    /// What must hold.
    pub invariants: Invariants,
    /// The workload (and bystanders) seeded as kube-controller-manager leaves them, for a
    /// takeover: see [`takeover`].
    #[serde(default)]
    pub takeover: Option<takeover::Takeover>,
    /// Orphans seeded first and their owners created later: see [`adoption`].
    #[serde(default)]
    pub adoption: Option<adoption::Adoption>,
}

/// Simulated API server settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// Kubelet emulation: a new Pod becomes Running and Ready after this long.
    #[serde(default = "default_ready_ms")]
    pub kubelet_ready_after_ms: u64,
    /// Bookmark interval of watches.
    #[serde(default = "default_bookmark_ms")]
    pub bookmark_interval_ms: u64,
    /// Fake Nodes (each with a node Lease the kubelet emulation renews).
    #[serde(default = "default_nodes")]
    pub nodes: usize,
    /// How often node Leases are renewed.
    #[serde(default = "default_lease_renew_ms")]
    pub lease_renew_interval_ms: u64,
    /// KEP-5866's `ShardedListAndWatch` (on by default): off, the server ignores
    /// `shardSelector` and a manager must filter what it receives on its own side.
    #[serde(default = "default_true")]
    pub sharded_list_and_watch: bool,
}

fn default_true() -> bool {
    true
}

fn default_nodes() -> usize {
    3
}
fn default_lease_renew_ms() -> u64 {
    10_000
}

fn default_ready_ms() -> u64 {
    100
}
fn default_bookmark_ms() -> u64 {
    1_000
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            kubelet_ready_after_ms: default_ready_ms(),
            bookmark_interval_ms: default_bookmark_ms(),
            nodes: default_nodes(),
            lease_renew_interval_ms: default_lease_renew_ms(),
            sharded_list_and_watch: true,
        }
    }
}

/// Settings passed to `tidemark run`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerSettings {
    /// `--kube-api-qps`.
    #[serde(default = "default_qps")]
    pub qps: f32,
    /// `--kube-api-burst`.
    #[serde(default = "default_burst")]
    pub burst: u32,
    /// `--shards`.
    #[serde(default = "default_shards")]
    pub shards: usize,
    /// How many `tidemark` processes run (each with its own identity).
    #[serde(default = "default_replicas")]
    pub replicas: usize,
    /// `--leader-elect` (the Lease is `kube-system/tidemark`).
    #[serde(default = "default_leader_elect")]
    pub leader_elect: bool,
    /// `--leader-elect-lease-duration`, seconds.
    #[serde(default = "default_lease_duration")]
    pub lease_duration_seconds: f64,
    /// `--leader-elect-renew-deadline`, seconds.
    #[serde(default = "default_renew_deadline")]
    pub renew_deadline_seconds: f64,
    /// `--leader-elect-retry-period`, seconds.
    #[serde(default = "default_retry_period")]
    pub retry_period_seconds: f64,
    /// `--controllers` (all onboarded ones when absent).
    #[serde(default)]
    pub controllers: Option<Vec<String>>,
    /// `--node-monitor-grace-period`, seconds.
    #[serde(default = "default_grace")]
    pub node_monitor_grace_seconds: f64,
    /// `--node-eviction-rate`, Nodes per second per zone.
    #[serde(default = "default_eviction_rate")]
    pub node_eviction_rate: f64,
    /// What `--gate off` turns off: `consistency` (the stale-cache gate) and/or `fencing`
    /// (the leader's write fence).
    #[serde(default = "default_protections")]
    pub protections: Vec<Protection>,
    /// `--scale-out true`: the managers split the namespaces' 64 ranges between them, each
    /// range owned through a Lease `kube-system/tidemark-range-NN` (needs `leader_elect`).
    /// Off, the flag is not passed at all.
    #[serde(default)]
    pub scale_out: bool,
}

/// A protection `--gate off` can turn off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protection {
    /// `StaleControllerConsistency`.
    Consistency,
    /// `--leader-elect-fencing`.
    Fencing,
}

fn default_grace() -> f64 {
    40.0
}
fn default_eviction_rate() -> f64 {
    0.1
}
fn default_replicas() -> usize {
    1
}
fn default_leader_elect() -> bool {
    true
}
fn default_lease_duration() -> f64 {
    15.0
}
fn default_renew_deadline() -> f64 {
    10.0
}
fn default_retry_period() -> f64 {
    2.0
}
fn default_protections() -> Vec<Protection> {
    vec![Protection::Consistency]
}

fn default_qps() -> f32 {
    20.0
}
fn default_burst() -> u32 {
    30
}
fn default_shards() -> usize {
    2
}

impl Default for ManagerSettings {
    fn default() -> Self {
        Self {
            qps: default_qps(),
            burst: default_burst(),
            shards: default_shards(),
            replicas: default_replicas(),
            leader_elect: default_leader_elect(),
            lease_duration_seconds: default_lease_duration(),
            renew_deadline_seconds: default_renew_deadline(),
            retry_period_seconds: default_retry_period(),
            protections: default_protections(),
            controllers: None,
            node_monitor_grace_seconds: default_grace(),
            node_eviction_rate: default_eviction_rate(),
            scale_out: false,
        }
    }
}

/// What kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Events of `resource` are delivered `millis` after their commit.
    WatchDelay,
    /// Watches of `resource` send nothing (no events, no bookmarks).
    WatchStall,
    /// Every open watch is closed once, at the window's start.
    DropWatches,
    /// The next `count` watches of `resource` from a resourceVersion get `410 Gone`.
    ExpireWatches,
    /// `code` (429/500/503, with `retry_after_seconds`) on `fraction` of the requests matching
    /// `verb` and `resource`.
    ApiErrors,
    /// `millis` added to every request matching `verb` and `resource`.
    Latency,
    /// `fraction` of writes are applied but answered with a `504` (the outcome is unknown).
    LoseWriteResponses,
    /// Clients are redirected to a replica lagging `millis` behind ("time travel").
    LaggingReplica,
    /// Watches of `resource` are closed after `count` events.
    DropWatchesAfter,
    /// Events of the objects of `resource` labelled `label=value` are delivered `millis` late.
    ObjectWatchDelay,
    /// Each event of `resource` gets an extra delay drawn from `0..=millis`.
    WatchJitter,
    /// The kubelet emulation stops renewing the node Leases of `nodes`.
    StopLeaseRenewal,
    /// The `target` manager gets SIGKILL at the start; a new process with its identity starts
    /// at the end.
    KillManager,
    /// The `target` manager gets SIGSTOP at the start and SIGCONT at the end.
    PauseManager,
    /// The manager `target` (an index) is not started with the others but at the start: a
    /// replica joining the running ones.
    AddManager,
    /// `count` objects of `resource` (an owner kind or Nodes) get a decisive field of the wrong
    /// type at the start, written past validation as a broken client or storage would leave
    /// them, and are repaired at the end (see `corrupt`).
    CorruptObjects,
}

/// A fault active from `from_seconds` until `until_seconds` after the workload starts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultWindow {
    /// The fault.
    pub kind: FaultKind,
    /// The resource it applies to (plural, e.g. `pods`), where it applies to one.
    #[serde(default)]
    pub resource: Option<String>,
    /// Start, seconds after the workload starts.
    pub from_seconds: f64,
    /// End (the fault is undone); defaults to the start for one-shot faults.
    #[serde(default)]
    pub until_seconds: Option<f64>,
    /// For `watch-delay`.
    #[serde(default)]
    pub millis: u64,
    /// For `expire-watches`.
    #[serde(default)]
    pub count: u64,
    /// For `api-errors` and `latency`: the Kubernetes verb matched (all when absent).
    #[serde(default)]
    pub verb: Option<String>,
    /// For `api-errors` and `lose-write-responses`.
    #[serde(default)]
    pub fraction: f64,
    /// For `api-errors`.
    #[serde(default)]
    pub code: u16,
    /// For `api-errors`.
    #[serde(default)]
    pub retry_after_seconds: u64,
    /// For `object-watch-delay`: the label key.
    #[serde(default)]
    pub label: Option<String>,
    /// For `object-watch-delay`: the label value.
    #[serde(default)]
    pub value: Option<String>,
    /// For `stop-lease-renewal`: the Nodes.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// For `kill-manager` and `pause-manager`: `leader` (the holder of the Lease when the fault
    /// starts) or a manager's index (`0`, `1`, ...); for `add-manager`, an index.
    #[serde(default)]
    pub target: Option<String>,
    /// The window starts (and ends) up to this much later (drawn per seed).
    #[serde(default)]
    pub jitter_seconds: f64,
    /// `millis` is drawn from `millis..=millis_up_to` (per seed).
    #[serde(default)]
    pub millis_up_to: Option<u64>,
}

impl FaultWindow {
    /// The resource, parsed.
    pub fn resource(&self) -> Option<Resource> {
        self.resource.as_deref().and_then(Resource::from_plural)
    }
    /// When it starts.
    pub fn from(&self) -> Duration {
        Duration::from_secs_f64(self.from_seconds.max(0.0))
    }
    /// When it ends.
    pub fn until(&self) -> Duration {
        Duration::from_secs_f64(
            self.until_seconds
                .unwrap_or(self.from_seconds)
                .max(self.from_seconds),
        )
    }
}

/// The invariants and the liveness bound.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invariants {
    /// Invariants checked (names as reported).
    pub check: Vec<String>,
    /// Every key must converge within this long after the last step and fault.
    pub convergence_bound_seconds: f64,
}

impl Scenario {
    /// Parses a scenario from TOML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, ScenarioError> {
        let scenario: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            path: origin.to_path_buf(),
            message: e.to_string(),
        })?;
        for fault in &scenario.faults {
            let needs_resource = matches!(
                fault.kind,
                FaultKind::WatchDelay
                    | FaultKind::WatchStall
                    | FaultKind::ExpireWatches
                    | FaultKind::LaggingReplica
                    | FaultKind::DropWatchesAfter
                    | FaultKind::ObjectWatchDelay
                    | FaultKind::WatchJitter
                    | FaultKind::CorruptObjects
            ) || fault.resource.is_some();
            let problem = if needs_resource && fault.resource().is_none() {
                Some(format!(
                    "fault {:?} needs a known resource, got {:?}",
                    fault.kind, fault.resource
                ))
            } else if match fault.kind {
                FaultKind::ObjectWatchDelay => fault.label.is_none() || fault.value.is_none(),
                FaultKind::StopLeaseRenewal => fault.nodes.is_empty(),
                _ => false,
            } {
                Some(format!(
                    "fault {:?} is missing its label/value or nodes",
                    fault.kind
                ))
            } else {
                None
            };
            if let Some(message) = problem {
                return Err(ScenarioError::Parse {
                    path: origin.to_path_buf(),
                    message,
                });
            }
        }
        if let Some(message) = scenario
            .settings_problem()
            .or_else(|| scenario.bounds_problem())
        {
            return Err(ScenarioError::Parse {
                path: origin.to_path_buf(),
                message,
            });
        }
        Ok(scenario)
    }

    /// The manager slots an `add-manager` fault starts late, in no particular order.
    pub fn added_managers(&self) -> Vec<usize> {
        self.faults
            .iter()
            .filter(|f| f.kind == FaultKind::AddManager)
            .filter_map(|f| f.target.as_deref()?.parse().ok())
            .collect()
    }

    /// What is wrong with the invariants, the namespaces or the managers, if anything.
    fn settings_problem(&self) -> Option<String> {
        let w = &self.workload;
        if let Some(unknown) = self
            .invariants
            .check
            .iter()
            .find(|c| !invariants::KNOWN.contains(&c.as_str()))
        {
            return Some(format!(
                "unknown invariant {unknown:?} under [invariants] check; known: {}",
                invariants::KNOWN.join(", ")
            ));
        }
        let checks_ranges = self
            .invariants
            .check
            .iter()
            .any(|c| c == invariants::RANGE_SINGLE_WRITER);
        if checks_ranges && !self.manager.scale_out {
            return Some(format!(
                "{} needs [manager] scale_out = true",
                invariants::RANGE_SINGLE_WRITER
            ));
        }
        if self.manager.scale_out && !self.manager.leader_elect {
            return Some("[manager] scale_out = true needs leader_elect = true".into());
        }
        if w.namespaces == 0 {
            return Some("[workload] namespaces must be at least 1".into());
        }
        if w.namespaces > 1 && (self.adoption.is_some() || self.takeover.is_some()) {
            return Some(format!(
                "[workload] namespaces = {}: [adoption] and [takeover] seed one namespace; leave namespaces at 1",
                w.namespaces
            ));
        }
        let spread = w.set_namespaces();
        if let Some(e) = self.events.iter().find(|e| {
            e.to.as_deref()
                .is_some_and(|to| spread.of_set(to) != spread.of_set(&e.from))
        }) {
            return Some(format!(
                "event {:?} at {}s: {} and {:?} live in different namespaces (namespaces = {})",
                e.verb, e.at_seconds, e.from, e.to, w.namespaces
            ));
        }
        let mut added = Vec::new();
        for f in self
            .faults
            .iter()
            .filter(|f| f.kind == FaultKind::AddManager)
        {
            let index = f.target.as_deref().and_then(|t| t.parse::<usize>().ok());
            match index {
                Some(i) if i < self.manager.replicas.max(1) && !added.contains(&i) => added.push(i),
                _ => {
                    return Some(format!(
                        "add-manager at {}s: target must be the index of a manager slot below replicas ({}), each added once; got {:?}",
                        f.from_seconds, self.manager.replicas, f.target
                    ));
                }
            }
            if f.until_seconds.is_some() {
                return Some(format!(
                    "add-manager at {}s has no end: the manager keeps running (kill it with kill-manager)",
                    f.from_seconds
                ));
            }
        }
        if added.len() >= self.manager.replicas.max(1) {
            return Some("add-manager: at least one manager must run from the start".into());
        }
        None
    }

    /// What is wrong with the seeded bounds, if anything.
    fn bounds_problem(&self) -> Option<String> {
        let w = &self.workload;
        let mut amounts = w.steps.iter().chain([&w.initial_replicas, &w.completions]);
        if let Some(bad) = amounts.find(|a| !a.valid()) {
            return Some(format!("{bad:?}: from is above to"));
        }
        if w.step_jitter_seconds < 0.0
            || (w.steps.len() > 1 && w.step_jitter_seconds >= w.step_every_seconds)
        {
            return Some(format!(
                "step_jitter_seconds ({}) must be at least 0 and below step_every_seconds ({})",
                w.step_jitter_seconds, w.step_every_seconds
            ));
        }
        for f in &self.faults {
            if f.jitter_seconds < 0.0 || f.millis_up_to.is_some_and(|m| m < f.millis) {
                return Some(format!(
                    "fault {:?}: jitter_seconds below 0 or millis_up_to below millis",
                    f.kind
                ));
            }
        }
        let known = |name: &str| (0..w.replicasets).any(|i| w.kind.name(i) == name);
        for e in &self.events {
            let to_ok = match e.verb {
                EventVerb::Adopt => e.to.as_deref().is_some_and(known),
                EventVerb::Orphan
                | EventVerb::DeleteOrphaning
                | EventVerb::RollOut
                | EventVerb::Suspend
                | EventVerb::Resume => e.to.is_none(),
            };
            let repeats = match (e.repeat_every_seconds, e.repeat_until_seconds) {
                (None, None) => true,
                (Some(every), Some(until)) => every >= 0.1 && until >= e.at_seconds,
                _ => false,
            };
            if !repeats {
                return Some(format!(
                    "event {:?} at {}s: repeat_every_seconds (at least 0.1) and repeat_until_seconds (not before at_seconds) go together",
                    e.verb, e.at_seconds
                ));
            }
            if !known(&e.from) || !to_ok || e.jitter_seconds < 0.0 {
                return Some(format!(
                    "event {:?} at {}s names sets the workload does not have ({:?} -> {:?})",
                    e.verb, e.at_seconds, e.from, e.to
                ));
            }
        }
        None
    }

    /// Loads a scenario from a file path, or by the name of one built into the binary (the
    /// files of `loadgen/scenarios/`, see [`crate::scenario::catalog`]).
    pub fn load(name_or_file: &str) -> Result<Self, ScenarioError> {
        let path = Path::new(name_or_file);
        if path.is_file() {
            let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            return Self::parse(&text, path);
        }
        crate::scenario::catalog::load(name_or_file).unwrap_or_else(|| {
            Err(ScenarioError::NotFound {
                name: name_or_file.to_string(),
                known: crate::scenario::catalog::names()
                    .map(str::to_string)
                    .collect(),
            })
        })
    }

    /// When the workload's last step, event and fault are over, whatever the seed.
    pub fn active_duration(&self) -> Duration {
        let steps = self.workload.step_every_seconds.max(0.0) * self.workload.steps.len() as f64
            + self.owners_at_seconds();
        let faults = self
            .faults
            .iter()
            .map(|f| f.until().as_secs_f64() + f.jitter_seconds.max(0.0))
            .fold(0.0, f64::max);
        let events = self
            .events
            .iter()
            .flat_map(|e| e.times().into_iter().map(|t| t + e.jitter_seconds.max(0.0)))
            .map(|t| t.max(0.0))
            .fold(0.0, f64::max);
        Duration::from_secs_f64(steps.max(faults).max(events))
    }
}

/// The source tree's scenarios folder (for tests and tools run from the checkout; the binary
/// loads its built-in copies).
pub fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_scenario_parses_and_is_named_after_its_file() {
        let mut seen = 0;
        for name in crate::scenario::catalog::names() {
            let scenario = Scenario::load(name).expect("parses");
            assert_eq!(scenario.name, name, "file name and scenario name agree");
            seen += 1;
        }
        assert!(seen >= 2);
    }

    #[test]
    fn an_unknown_field_or_resource_is_a_clear_error() {
        let bad = "name='x'\nbogus=1\n[workload]\nreplicasets=1\nsteps=[1]\nstep_every_seconds=1\n[invariants]\ncheck=[]\nconvergence_bound_seconds=1\n";
        assert!(matches!(
            Scenario::parse(bad, Path::new("x")),
            Err(ScenarioError::Parse { .. })
        ));
        let bad_fault = "name='x'\n[workload]\nreplicasets=1\nsteps=[1]\nstep_every_seconds=1\n[invariants]\ncheck=[]\nconvergence_bound_seconds=1\n[[faults]]\nkind='watch-delay'\nresource='gizmos'\nfrom_seconds=0\n";
        let err = Scenario::parse(bad_fault, Path::new("x")).expect_err("unknown resource");
        assert!(err.to_string().contains("gizmos"));
    }

    const BASE: &str = "name='x'\n[invariants]\ncheck=[]\nconvergence_bound_seconds=1\n";

    #[test]
    fn steps_are_exact_or_bounds_and_bounds_must_be_in_order() {
        let ranged = format!(
            "{BASE}[workload]\nreplicasets=1\nsteps=[3, {{ from = 1, to = 4 }}]\nstep_every_seconds=2\nstep_jitter_seconds=1.5\n"
        );
        let s = Scenario::parse(&ranged, Path::new("x")).expect("parses");
        assert_eq!(
            s.workload.steps,
            [Amount::Exactly(3), Amount::Between { from: 1, to: 4 }]
        );
        let reversed = ranged.replace("from = 1, to = 4", "from = 4, to = 1");
        assert!(Scenario::parse(&reversed, Path::new("x")).is_err());
        let reordering = ranged.replace("step_jitter_seconds=1.5", "step_jitter_seconds=2");
        assert!(Scenario::parse(&reordering, Path::new("x")).is_err());
    }

    #[test]
    fn an_event_must_name_sets_of_the_workload() {
        let adopt = format!(
            "{BASE}[workload]\nreplicasets=2\nsteps=[1]\nstep_every_seconds=1\n[[events]]\nverb='adopt'\nat_seconds=1\nfrom='rs-0'\nto='rs-1'\n"
        );
        assert!(Scenario::parse(&adopt, Path::new("x")).is_ok());
        let unknown = adopt.replace("to='rs-1'", "to='rs-7'");
        let err = Scenario::parse(&unknown, Path::new("x")).expect_err("rs-7");
        assert!(err.to_string().contains("rs-7"), "{err}");
    }

    #[test]
    fn the_active_duration_covers_the_latest_a_seed_can_place_anything() {
        let text = format!(
            "{BASE}[workload]\nreplicasets=1\nsteps=[1]\nstep_every_seconds=1\n[[faults]]\nkind='drop-watches'\nfrom_seconds=4\njitter_seconds=2\n"
        );
        let s = Scenario::parse(&text, Path::new("x")).expect("parses");
        assert_eq!(s.active_duration(), Duration::from_secs(6));
    }

    #[test]
    fn range_single_writer_is_known_and_needs_scale_out() {
        let checked = String::from(
            "name='x'\n[manager]\nscale_out=true\n[workload]\nreplicasets=1\nsteps=[1]\nstep_every_seconds=1\n\
             [invariants]\ncheck=['range-single-writer', 'liveness']\nconvergence_bound_seconds=1\n",
        );
        let s = Scenario::parse(&checked, Path::new("x")).expect("parses");
        assert!(s.manager.scale_out);
        assert!(
            s.server.sharded_list_and_watch,
            "KEP-5866 on unless turned off"
        );
        let without = checked.replace("scale_out=true", "scale_out=false");
        let err = Scenario::parse(&without, Path::new("x")).expect_err("needs scale-out");
        assert!(err.to_string().contains("scale_out"), "{err}");
        let typo = checked.replace("range-single-writer", "range-single-writers");
        let err = Scenario::parse(&typo, Path::new("x")).expect_err("unknown");
        assert!(err.to_string().contains("range-single-writers"), "{err}");
    }

    #[test]
    fn many_namespaces_are_refused_where_the_seeding_knows_only_one() {
        let adoption = Scenario::load("adoption").expect("shipped");
        assert_eq!(adoption.workload.namespaces, 1);
        let text = crate::scenario::catalog::text("adoption")
            .expect("shipped")
            .replace("[workload]\n", "[workload]\nnamespaces = 4\n");
        let err = Scenario::parse(&text, Path::new("x")).expect_err("one namespace");
        assert!(err.to_string().contains("namespaces = 4"), "{err}");
    }

    #[test]
    fn an_added_manager_is_a_slot_index_not_started_with_the_others() {
        let base = format!(
            "{BASE}[manager]\nreplicas=3\n[workload]\nreplicasets=1\nsteps=[1]\nstep_every_seconds=1\n"
        );
        let added = format!("{base}[[faults]]\nkind='add-manager'\ntarget='2'\nfrom_seconds=5\n");
        let s = Scenario::parse(&added, Path::new("x")).expect("parses");
        assert_eq!(s.added_managers(), [2]);
        for bad in ["target='3'", "target='leader'"] {
            let text = added.replace("target='2'", bad);
            assert!(Scenario::parse(&text, Path::new("x")).is_err(), "{bad}");
        }
        let ended = added.replace("from_seconds=5", "from_seconds=5\nuntil_seconds=9");
        assert!(Scenario::parse(&ended, Path::new("x")).is_err());
    }

    #[test]
    fn a_missing_scenario_lists_the_built_in_ones() {
        let err = Scenario::load("no-such-scenario").expect_err("missing");
        let text = err.to_string();
        assert!(text.contains("\"no-such-scenario\""), "{text}");
        for name in crate::scenario::catalog::names() {
            assert!(text.contains(name), "{name} missing from: {text}");
        }
        assert!(text.contains("--list"), "{text}");
    }

    #[test]
    fn a_file_path_still_loads_and_wins_over_a_name() {
        let dir = std::env::temp_dir().join(format!("tidemark-scenario-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("tiny.toml");
        let text = "name='tiny'\n[workload]\nreplicasets=1\nsteps=[1]\nstep_every_seconds=1\n[invariants]\ncheck=[]\nconvergence_bound_seconds=1\n";
        std::fs::write(&file, text).expect("write");
        let scenario = Scenario::load(&file.display().to_string()).expect("loads");
        assert_eq!(scenario.name, "tiny");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
