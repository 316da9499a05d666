//! The user's steps: the workload created, then rescaled on the seed's schedule.

use super::{Event, World};
use crate::user::{NAMESPACE, USER_AGENT};
use loadgen::workload::replicaset_manifest;
use std::time::Duration;

impl World {
    /// Creates 2 or 3 ReplicaSets and schedules their scaling within the fault window.
    pub(crate) fn seed_workload(&mut self, window: Duration) {
        let sets = self.rng.usize(2..=3);
        for i in 0..sets {
            let name = format!("web-{i}");
            let replicas = self.rng.i32(1..=4);
            let manifest = replicaset_manifest(NAMESPACE, &name, replicas);
            if self
                .store
                .create(
                    loadgen::Resource::ReplicaSets,
                    NAMESPACE,
                    manifest,
                    Some(USER_AGENT),
                )
                .is_ok()
            {
                self.note(format_args!("user creates {name} with {replicas} replicas"));
                self.user.sets.push(name);
            }
            let window_ms = (window.as_millis() as u64).max(1_000);
            for _ in 0..self.rng.usize(1..=5) {
                let at = Duration::from_millis(self.rng.u64(1_000..=window_ms));
                let replicas = self.rng.i32(0..=6);
                self.queue.at(at, Event::Scale { set: i, replicas });
            }
        }
    }

    /// Scales set `set`, once it has settled (its live Pods and its status match the current
    /// spec, so the manager has seen it and finished acting on it). A change while the manager
    /// still acts on the previous spec races with it in a way no controller can avoid: a create
    /// or delete decided just before the change and arriving just after it is judged a
    /// violation at arrival, however fresh the cache was (a create or delete is read live only
    /// when a cache is *known* to lag, and a cache trailing by less than the lag threshold, or
    /// trailing what only another shard has learned, counts as current). The stress scenarios
    /// avoid that race by their timing; the user here waits instead (`--eager-user-ms` lifts it).
    pub(crate) fn scale(&mut self, set: usize, replicas: i32) {
        let Some(name) = self.user.sets.get(set).cloned() else {
            return;
        };
        let truth = self
            .oracle
            .replicaset_truth(&self.store)
            .into_iter()
            .find(|t| t.name == name);
        let settled = truth.as_ref().is_none_or(|t| t.is_converged());
        if !settled && !self.user.eager {
            if self.faults.active(self.now()) {
                self.after(Duration::from_millis(500), Event::Scale { set, replicas });
            }
            return;
        }
        let scaled = self.store.update_with(
            loadgen::Resource::ReplicaSets,
            NAMESPACE,
            &name,
            |v| v["spec"]["replicas"] = serde_json::Value::from(replicas),
            Some(USER_AGENT),
        );
        if scaled.is_ok() {
            self.note(format_args!("user scales {name} to {replicas}"));
        }
    }
}
