//! The workload part of a stress scenario: which sets are scaled through which steps (exact
//! counts or bounds the seed draws from), and what the user does to them besides scaling.

use serde::Deserialize;

use crate::resource::Resource;

/// A count a scenario gives exactly or as bounds the seed draws from: `5` or
/// `{ from = 2, to = 6 }` (both inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Amount {
    /// Always this.
    Exactly(i32),
    /// Drawn from `from..=to`.
    Between {
        /// The lowest.
        from: i32,
        /// The highest.
        to: i32,
    },
}

impl Default for Amount {
    fn default() -> Self {
        Amount::Exactly(0)
    }
}

impl Amount {
    /// One draw.
    pub fn draw(self, rng: &mut fastrand::Rng) -> i32 {
        match self {
            Amount::Exactly(n) => n,
            Amount::Between { from, to } => rng.i32(from..=to.max(from)),
        }
    }

    /// Whether the bounds are in order.
    pub fn valid(self) -> bool {
        match self {
            Amount::Exactly(_) => true,
            Amount::Between { from, to } => from <= to,
        }
    }
}

/// Sets scaled through steps; the seed draws each step's target from its bounds, its time
/// within `step_jitter_seconds`, and each set's order and offset.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// What is scaled: ReplicaSets (`rs-N`) or StatefulSets (`sts-N`).
    #[serde(default)]
    pub kind: WorkloadKind,
    /// StatefulSets only: `podManagementPolicy: Parallel` (else OrderedReady).
    #[serde(default)]
    pub parallel: bool,
    /// Jobs only: `completions` (each Job's target, drawn per Job).
    #[serde(default)]
    pub completions: Amount,
    /// Jobs only: `completionMode: Indexed` for every other Job.
    #[serde(default)]
    pub indexed: bool,
    /// Namespace of the workload; with `namespaces` above 1, the stem of theirs.
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// How many namespaces the sets are spread over (see [`SetNamespaces`]).
    #[serde(default = "one")]
    pub namespaces: usize,
    /// How many ReplicaSets.
    pub replicasets: usize,
    /// Their replicas at the start (drawn per set).
    #[serde(default)]
    pub initial_replicas: Amount,
    /// The replicas every set is scaled to, step by step (drawn once per step).
    pub steps: Vec<Amount>,
    /// Time between steps.
    pub step_every_seconds: f64,
    /// Each step after the first comes up to this much later than `k * step_every_seconds`
    /// (drawn per step; less than `step_every_seconds`, so steps keep their order).
    #[serde(default)]
    pub step_jitter_seconds: f64,
    /// DaemonSets only: they run on Nodes labelled `<node_label>=true`, and steps set how many
    /// of the server's Nodes carry the label (the seed picks which) instead of adding Nodes.
    #[serde(default)]
    pub node_label: Option<String>,
    /// StatefulSets and DaemonSets: `spec.revisionHistoryLimit` (the API default, 10, when
    /// absent).
    #[serde(default)]
    pub revision_history_limit: Option<u32>,
    /// Jobs only: one Pod in this many fails (by a hash of its name), with `exit_code`.
    #[serde(default)]
    pub fail_one_in: Option<u32>,
    /// Jobs only: the exit code a failing Pod ends with (1 when absent).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Jobs only: a `podFailurePolicy` whose `Ignore` rule matches these exit codes.
    #[serde(default)]
    pub ignore_exit_codes: Vec<i32>,
    /// Jobs only: `spec.backoffLimit` (the API default, 6, when absent).
    #[serde(default)]
    pub backoff_limit: Option<i32>,
    /// DaemonSets only: roll out with `maxSurge` this many Nodes and `maxUnavailable` 0 (else
    /// the default, one Node unavailable at a time).
    #[serde(default)]
    pub max_surge: Option<u32>,
    /// Each ReplicaSet's target is the step's plus a seeded offset in `-jitter..=jitter` (never
    /// below 0).
    #[serde(default)]
    pub jitter: i32,
    /// StatefulSets only: `spec.persistentVolumeClaimRetentionPolicy` of set `i` is entry
    /// `i % len` (the API default, Retain for both, when empty).
    #[serde(default)]
    pub claim_retention: Vec<ClaimRetention>,
}

/// A StatefulSet's `persistentVolumeClaimRetentionPolicy`, as written (`Retain` or `Delete`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRetention {
    /// `whenScaled`.
    pub when_scaled: String,
    /// `whenDeleted`.
    pub when_deleted: String,
}

/// The kind of set a workload scales.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// apps/v1 ReplicaSets.
    #[default]
    Replicaset,
    /// apps/v1 StatefulSets.
    Statefulset,
    /// batch/v1 Jobs (steps set `parallelism`).
    Job,
    /// apps/v1 DaemonSets (steps set how many extra Nodes `extra-N` exist).
    Daemonset,
}

impl WorkloadKind {
    /// The resource.
    pub fn resource(self) -> Resource {
        match self {
            WorkloadKind::Replicaset => Resource::ReplicaSets,
            WorkloadKind::Statefulset => Resource::StatefulSets,
            WorkloadKind::Job => Resource::Jobs,
            WorkloadKind::Daemonset => Resource::DaemonSets,
        }
    }

    /// The name of set `i`.
    pub fn name(self, i: usize) -> String {
        match self {
            WorkloadKind::Replicaset => format!("rs-{i}"),
            WorkloadKind::Statefulset => format!("sts-{i}"),
            WorkloadKind::Job => format!("job-{i}"),
            WorkloadKind::Daemonset => format!("ds-{i}"),
        }
    }
}

fn default_namespace() -> String {
    "stress".into()
}

impl Workload {
    /// Where its sets live.
    pub fn set_namespaces(&self) -> SetNamespaces {
        SetNamespaces::new(&self.namespace, self.namespaces)
    }
}

/// Where a workload's sets live: all in `namespace` when there is one, else set `i` in
/// `<i % count>-<namespace>` (`0-stress`, `1-stress`, ...). The index comes first because
/// KEP-5866 cuts the ring by the top bits of a 64-bit FNV-1a hash, which a name's last
/// characters barely move: `stress-0` to `stress-39` fall in 2 of 64 ranges, `0-stress` to
/// `39-stress` in 28.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetNamespaces {
    stem: String,
    count: usize,
}

impl SetNamespaces {
    /// `count` namespaces named after `stem` (just `stem` when `count` is 1).
    pub fn new(stem: &str, count: usize) -> Self {
        Self {
            stem: stem.to_string(),
            count: count.max(1),
        }
    }

    /// The namespace of set `i`.
    pub fn of_index(&self, i: usize) -> String {
        if self.count <= 1 {
            self.stem.clone()
        } else {
            format!("{}-{}", i % self.count, self.stem)
        }
    }

    /// The namespace of the set named `name` (`rs-7`: set 7); a name without an index is in
    /// the first.
    pub fn of_set(&self, name: &str) -> String {
        let index = name
            .rsplit_once('-')
            .and_then(|(_, i)| i.parse::<usize>().ok())
            .unwrap_or(0);
        self.of_index(index)
    }

    /// Whether `namespace` is one of them.
    pub fn contains(&self, namespace: &str) -> bool {
        if self.count <= 1 {
            return namespace == self.stem;
        }
        namespace
            .strip_suffix(self.stem.as_str())
            .and_then(|rest| rest.strip_suffix('-'))
            .and_then(|i| i.parse::<usize>().ok())
            .is_some_and(|i| i < self.count && namespace == self.of_index(i))
    }

    /// All of them, in index order.
    pub fn all(&self) -> Vec<String> {
        (0..self.count.max(1)).map(|i| self.of_index(i)).collect()
    }

    /// How many there are.
    pub fn count(&self) -> usize {
        self.count.max(1)
    }
}

/// What a user does to the workload besides scaling it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventVerb {
    /// `count` live Pods of `from` are adopted by `to` by hand: one patch sets their labels to
    /// `to`'s selector and `to` as their controller.
    Adopt,
    /// `count` live Pods of `from` lose their ownerReferences and their selector label (a
    /// patch): orphans no set selects.
    Orphan,
    /// `from` is deleted with `propagationPolicy: Orphan`: its Pods stay, without owner.
    DeleteOrphaning,
    /// `from`'s Pod template changes (the annotation [`ROLLOUT_ANNOTATION`] counts up, as
    /// `kubectl rollout restart` does with its own): a rolling update replaces its Pods.
    RollOut,
    /// The Job `from` is suspended (`spec.suspend: true`): its active Pods go, none is created.
    Suspend,
    /// The Job `from` resumes (`spec.suspend: false`).
    Resume,
}

/// The Pod template annotation a `roll-out` event counts up; the oracle tells a Pod of the
/// template before from one of the template now by it.
pub const ROLLOUT_ANNOTATION: &str = "loadgen.tidemark.dev/rollout";

/// One user action at a time in the run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadEvent {
    /// What is done.
    pub verb: EventVerb,
    /// When, seconds after the workload starts.
    pub at_seconds: f64,
    /// Up to this much later (drawn per seed).
    #[serde(default)]
    pub jitter_seconds: f64,
    /// The set whose Pods (or which) it is about, by name (`rs-0`).
    pub from: String,
    /// For `adopt`: the set that takes the Pods over.
    #[serde(default)]
    pub to: Option<String>,
    /// How many Pods (the seed picks which).
    #[serde(default = "one")]
    pub count: usize,
    /// Done again every this many seconds (a user or a misbehaving operator in a loop), up to
    /// `repeat_until_seconds`.
    #[serde(default)]
    pub repeat_every_seconds: Option<f64>,
    /// When the repetitions stop, seconds after the workload starts.
    #[serde(default)]
    pub repeat_until_seconds: Option<f64>,
}

impl WorkloadEvent {
    /// The seconds after the workload starts at which it is done (before jitter).
    pub fn times(&self) -> Vec<f64> {
        let mut times = vec![self.at_seconds];
        if let (Some(every), Some(until)) = (self.repeat_every_seconds, self.repeat_until_seconds)
            && every > 0.0
        {
            let mut next = self.at_seconds + every;
            while next <= until {
                times.push(next);
                next += every;
            }
        }
        times
    }
}

fn one() -> usize {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(count: usize) -> SetNamespaces {
        SetNamespaces::new("stress", count)
    }

    #[test]
    fn one_namespace_is_the_workload_namespace_itself() {
        let one = spread(1);
        assert_eq!(one.of_index(7), "stress");
        assert_eq!(one.of_set("rs-7"), "stress");
        assert_eq!(one.all(), ["stress"]);
        assert!(one.contains("stress") && !one.contains("0-stress"));
    }

    #[test]
    fn set_i_lives_in_the_namespace_i_modulo_the_count() {
        let eight = spread(8);
        assert_eq!(eight.of_index(0), "0-stress");
        assert_eq!(eight.of_index(9), "1-stress");
        assert_eq!(eight.of_set("rs-7"), "7-stress");
        assert_eq!(eight.of_set("sts-15"), "7-stress");
        assert_eq!(eight.all().len(), 8);
        assert!(eight.contains("3-stress"));
        assert!(
            !eight.contains("stress")
                && !eight.contains("8-stress")
                && !eight.contains("03-stress")
        );
    }
}
