//! The user model: ReplicaSets created before the manager starts, then scaled on a schedule
//! drawn from the seed while faults are on.

use crate::world::{Event, World};
use loadgen::workload::replicaset_manifest;
use std::time::Duration;

/// The namespace every simulated object lives in.
pub const NAMESPACE: &str = "sim";
/// The user agent of the user's writes.
pub const USER_AGENT: &str = "sim-user";

/// The sets the user made, by index.
#[derive(Debug, Default)]
pub struct User {
    sets: Vec<String>,
}

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

    pub(crate) fn scale(&mut self, set: usize, replicas: i32) {
        let Some(name) = self.user.sets.get(set).cloned() else {
            return;
        };
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
