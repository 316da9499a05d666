//! The user's steps: the workload created before the manager starts, then changed on the seed's
//! schedule while faults are on (rescaled, given a new image, Nodes added or silenced).

use super::{Event, World};
use crate::user::{NAMESPACE, USER_AGENT};
use crate::workload::Workload;
use loadgen::kubelet::nodes::{bootstrap, node_object};
use loadgen::oracle::truth::truth_in;
use loadgen::workload::{
    daemonset_manifest, job_manifest, replicaset_manifest, statefulset_manifest,
};
use serde_json::Value;
use std::time::Duration;

/// Nodes a DaemonSet run starts with (more join on the user's schedule).
const DAEMONSET_NODES: usize = 3;
/// Nodes a node lifecycle run has.
const LIFECYCLE_NODES: usize = 4;
/// How often a live kubelet renews its node Lease.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(1);

impl World {
    /// Creates the workload and schedules its changes within the fault window.
    pub(crate) fn seed_workload(&mut self, window: Duration) {
        let window_ms = (window.as_millis() as u64).max(1_000);
        match self.workload {
            Workload::ReplicaSet | Workload::StatefulSet | Workload::Job => {
                self.seed_sets(window_ms)
            }
            Workload::DaemonSet => self.seed_daemonsets(window_ms),
            Workload::NodeLifecycle => self.seed_silent_nodes(window_ms),
        }
    }

    fn seed_sets(&mut self, window_ms: u64) {
        let sets = self.rng.usize(2..=3);
        for i in 0..sets {
            let (name, manifest, size) = match self.workload {
                Workload::StatefulSet => {
                    let name = format!("db-{i}");
                    let replicas = self.rng.i32(1..=4);
                    let parallel = self.rng.bool();
                    let m = statefulset_manifest(NAMESPACE, &name, replicas, parallel);
                    (name, m, replicas)
                }
                Workload::Job => {
                    let name = format!("batch-{i}");
                    let completions = self.rng.i32(2..=8);
                    let parallelism = self.rng.i32(1..=3);
                    let indexed = self.rng.bool();
                    let m = job_manifest(NAMESPACE, &name, parallelism, completions, indexed);
                    (name, m, parallelism)
                }
                _ => {
                    let name = format!("web-{i}");
                    let replicas = self.rng.i32(1..=4);
                    (
                        name.clone(),
                        replicaset_manifest(NAMESPACE, &name, replicas),
                        replicas,
                    )
                }
            };
            self.create(&name, manifest, size);
            for _ in 0..self.rng.usize(1..=5) {
                let at = Duration::from_millis(self.rng.u64(1_000..=window_ms));
                let replicas = match self.workload {
                    Workload::Job => self.rng.i32(1..=4),
                    _ => self.rng.i32(0..=6),
                };
                self.user_event(at, Event::Scale { set: i, replicas });
            }
            if self.workload == Workload::StatefulSet {
                for _ in 0..self.rng.usize(1..=3) {
                    let at = Duration::from_millis(self.rng.u64(1_000..=window_ms));
                    self.user_event(at, Event::Roll { set: i });
                }
            }
        }
    }

    fn seed_daemonsets(&mut self, window_ms: u64) {
        if bootstrap(&self.store, DAEMONSET_NODES).is_ok() {
            self.user.nodes = DAEMONSET_NODES;
        }
        for i in 0..self.rng.usize(1..=2) {
            let name = format!("agent-{i}");
            self.create(&name, daemonset_manifest(NAMESPACE, &name), 0);
            for _ in 0..self.rng.usize(0..=2) {
                let at = Duration::from_millis(self.rng.u64(1_000..=window_ms));
                self.user_event(at, Event::Roll { set: i });
            }
        }
        for _ in 0..self.rng.usize(0..=2) {
            let at = Duration::from_millis(self.rng.u64(1_000..=window_ms));
            self.user_event(at, Event::NodeJoins);
        }
    }

    /// Nodes whose kubelets go silent for a while, some longer than the grace period, and
    /// one for good once the faults stop (the liveness check waits for it to be marked).
    fn seed_silent_nodes(&mut self, window_ms: u64) {
        if bootstrap(&self.store, LIFECYCLE_NODES).is_ok() {
            self.user.nodes = LIFECYCLE_NODES;
        }
        self.note(format_args!("user starts {LIFECYCLE_NODES} Nodes"));
        for _ in 0..self.rng.usize(1..=4) {
            let node = self.rng.usize(0..LIFECYCLE_NODES);
            let at = Duration::from_millis(self.rng.u64(1_000..=window_ms));
            let silent = Duration::from_millis(self.rng.u64(1_000..=10_000));
            self.user_event(
                at,
                Event::NodeSilent {
                    node,
                    until: Some(at + silent),
                },
            );
        }
        let node = self.rng.usize(0..LIFECYCLE_NODES);
        self.queue.at(
            Duration::from_millis(window_ms),
            Event::NodeSilent { node, until: None },
        );
        self.queue.at(HEARTBEAT, Event::Heartbeat);
    }

    /// Schedules the user's next change, unless shrinking dropped it (changes are numbered in
    /// the order they are drawn, so dropping one leaves the others as they were).
    fn user_event(&mut self, at: Duration, event: Event) {
        let n = self.user.drawn;
        self.user.drawn += 1;
        if self.user.dropped.contains(&n) {
            return;
        }
        self.queue.at(at, event);
    }

    fn create(&mut self, name: &str, manifest: Value, size: i32) {
        let resource = self.set_resource();
        if self
            .store
            .create(resource, NAMESPACE, manifest, Some(USER_AGENT))
            .is_ok()
        {
            self.note(format_args!("user creates {resource} {name} of {size}"));
            self.user.sets.push(name.to_string());
        }
    }

    /// The resource of the sets the user makes.
    fn set_resource(&self) -> loadgen::Resource {
        match self.workload {
            Workload::ReplicaSet => loadgen::Resource::ReplicaSets,
            Workload::StatefulSet => loadgen::Resource::StatefulSets,
            Workload::DaemonSet => loadgen::Resource::DaemonSets,
            Workload::Job => loadgen::Resource::Jobs,
            Workload::NodeLifecycle => loadgen::Resource::Nodes,
        }
    }

    /// Whether set `name` has settled: its live Pods and its status match its current spec,
    /// so the manager has seen it and finished acting on it.
    fn settled(&self, name: &str) -> bool {
        let Some(kind) = self.workload.set_kind() else {
            return true;
        };
        truth_in(&self.store, &self.oracle, kind)
            .into_iter()
            .find(|t| t.name == name)
            .is_none_or(|t| t.is_converged())
    }

    /// Changes set `set` with `change` once it has settled (see [`World::scale`]); `retry` is
    /// the event to try again with.
    fn change_set(
        &mut self,
        set: usize,
        retry: Event,
        what: &str,
        change: impl FnOnce(&mut Value),
    ) {
        let Some(name) = self.user.sets.get(set).cloned() else {
            return;
        };
        if !self.settled(&name) && !self.user.eager {
            if self.faults.active(self.now()) {
                self.after(Duration::from_millis(500), retry);
            }
            return;
        }
        let resource = self.set_resource();
        if self
            .store
            .update_with(resource, NAMESPACE, &name, change, Some(USER_AGENT))
            .is_ok()
        {
            self.note(format_args!("user {what} {name}"));
        }
    }

    /// Scales set `set` (a Job: its parallelism), once it has settled. A change while the
    /// manager still acts on the previous spec races with it in a way no controller can avoid:
    /// a create or delete decided just before the change and arriving just after it is judged
    /// a violation at arrival, however fresh the cache was (a create or delete is read live
    /// only when a cache is *known* to lag, and a cache trailing by less than the lag
    /// threshold, or trailing what only another shard has learned, counts as current). The
    /// stress scenarios avoid that race by their timing; the user here waits instead
    /// (`--eager-user-ms` lifts it).
    pub(crate) fn scale(&mut self, set: usize, replicas: i32) {
        let field = match self.workload {
            Workload::Job => "parallelism",
            _ => "replicas",
        };
        self.change_set(
            set,
            Event::Scale { set, replicas },
            &format!("sets {field} {replicas} of"),
            |v| v["spec"][field] = Value::from(replicas),
        );
    }

    /// Gives set `set` a new image, once it has settled.
    pub(crate) fn roll(&mut self, set: usize) {
        self.user.rolls += 1;
        let image = format!("registry.k8s.io/pause:3.{}", 10 + self.user.rolls);
        self.change_set(set, Event::Roll { set }, "rolls", |v| {
            v["spec"]["template"]["spec"]["containers"][0]["image"] = Value::from(image);
        });
    }

    /// The relist race (see [`crate::schedule::Schedule::RelistRace`]): set `set` is made
    /// smaller while its plan runs, and its resource's watch ends at once with `410`, before it
    /// has delivered the change.
    pub(crate) fn relist_race(&mut self, set: &str) {
        let Some(index) = self.user.sets.iter().position(|s| s == set) else {
            return;
        };
        let field = match self.workload {
            Workload::Job => "parallelism",
            _ => "replicas",
        };
        let current = self
            .store
            .get(self.set_resource(), NAMESPACE, set)
            .and_then(|s| s.value["spec"][field].as_i64())
            .unwrap_or(0);
        if current < 1 {
            return;
        }
        let smaller = self.rng.i64(0..current) as i32;
        self.note(format_args!(
            "aimed: {set} shrinks mid-plan, its watch ends"
        ));
        self.scale(index, smaller);
        self.end_for_relist(0, "410 Gone, aimed at the relist race");
    }

    /// A new Node joins, once every DaemonSet has settled: a Node joining while a rollout's
    /// plan runs changes its budget under it, the race [`World::scale`] describes.
    pub(crate) fn node_joins(&mut self) {
        let sets = self.user.sets.clone();
        if !self.user.eager && !sets.iter().all(|name| self.settled(name)) {
            if self.faults.active(self.now()) {
                self.after(Duration::from_millis(500), Event::NodeJoins);
            }
            return;
        }
        let i = self.user.nodes;
        let created = self.store.create(
            loadgen::Resource::Nodes,
            "",
            node_object(i),
            Some(loadgen::kubelet::KUBELET_USER_AGENT),
        );
        if created.is_ok() {
            self.user.nodes += 1;
            self.note(format_args!("node-{i} joins"));
        }
    }
}
