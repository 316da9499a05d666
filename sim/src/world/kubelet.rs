//! The kubelet's steps: binding and starting created Pods, running Job Pods to completion,
//! removing terminating ones, and renewing node Leases.

use super::user::HEARTBEAT;
use super::{Event, World};
use crate::kubelet::{NODES, TICK};
use loadgen::DeleteOptions;
use loadgen::kubelet::nodes::renew_lease;
use loadgen::kubelet::{KUBELET_USER_AGENT, finish_pod, node_name, owned_by_job, start_pod};
use loadgen::meta::meta_str;
use loadgen::oracle::Verb;
use loadgen::store::Preconditions;
use std::time::Duration;
impl World {
    pub(crate) fn kubelet_tick(&mut self) {
        let (mut pods, _) = self.store.all(loadgen::Resource::Pods, None);
        // In the order they last changed, not by name: names carry random suffixes, and the
        // engine's choice among tied Pods is not a function of the seed (see `pod_label`).
        pods.sort_by_key(|pod| pod.rv);
        for pod in pods {
            let v = &pod.value;
            let uid = meta_str(v, "uid").to_string();
            let key = (
                meta_str(v, "namespace").to_string(),
                meta_str(v, "name").to_string(),
            );
            let deleting = !v["metadata"]["deletionTimestamp"].is_null();
            let pending = v["status"]["phase"] == "Pending" || v["status"]["phase"].is_null();
            if deleting {
                let grace = v["metadata"]["deletionGracePeriodSeconds"]
                    .as_i64()
                    .unwrap_or(0);
                if grace > 0 && self.kubelet.removing.insert(uid.clone()) {
                    let stop = Duration::from_millis(self.rng.u64(100..=2_000))
                        .min(Duration::from_secs(grace as u64));
                    self.after(stop, Event::PodRemoved { key, uid });
                }
            } else if pending && self.kubelet.starting.insert(uid.clone()) {
                let ready = Duration::from_millis(self.rng.u64(200..=3_000));
                self.after(ready, Event::PodStarts { key, uid });
            }
        }
        self.after(TICK, Event::KubeletTick);
    }

    pub(crate) fn pod_starts(&mut self, key: (String, String), uid: String) {
        let n = self.kubelet.started;
        let node = node_name(n % NODES);
        let ip = format!("10.244.{}.{}", (n / 250) % 250, n % 250 + 2);
        let mut started = false;
        let _ = self.store.write_as(
            loadgen::Resource::Pods,
            &key.0,
            &key.1,
            |v| {
                let pending = v["status"]["phase"] == "Pending" || v["status"]["phase"].is_null();
                let deleting = !v["metadata"]["deletionTimestamp"].is_null();
                if meta_str(v, "uid") == uid && pending && !deleting {
                    started = start_pod(v, &node, &ip);
                }
            },
            Verb::UpdateStatus,
            KUBELET_USER_AGENT,
        );
        if started {
            self.kubelet.started += 1;
            let pod = crate::world::pod_label(&key.0, &key.1);
            self.note(format_args!("kubelet starts {pod} on {node}"));
            let of_job = self
                .store
                .get(loadgen::Resource::Pods, &key.0, &key.1)
                .is_some_and(|p| owned_by_job(&p.value));
            if of_job {
                let runtime = Duration::from_millis(self.rng.u64(300..=2_000));
                self.after(runtime, Event::PodFinishes { key, uid });
            }
        }
    }

    pub(crate) fn pod_removed(&mut self, key: (String, String), uid: String) {
        let opts = DeleteOptions {
            preconditions: Preconditions {
                uid: Some(uid),
                resource_version: None,
            },
            grace_period_seconds: Some(0),
            ..DeleteOptions::default()
        };
        let removed = self
            .store
            .delete_opts(
                loadgen::Resource::Pods,
                &key.0,
                &key.1,
                &opts,
                Some(KUBELET_USER_AGENT),
            )
            .is_ok();
        if removed {
            let pod = crate::world::pod_label(&key.0, &key.1);
            self.note(format_args!("kubelet removes {pod}"));
        }
    }
}

impl World {
    /// A running Job Pod succeeds, as its container exits 0.
    pub(crate) fn pod_finishes(&mut self, key: (String, String), uid: String) {
        let mut finished = false;
        let _ = self.store.write_as(
            loadgen::Resource::Pods,
            &key.0,
            &key.1,
            |v| {
                let running = v["status"]["phase"] == "Running";
                if meta_str(v, "uid") == uid && running {
                    finished = finish_pod(v, None);
                }
            },
            Verb::UpdateStatus,
            KUBELET_USER_AGENT,
        );
        if finished {
            let pod = crate::world::pod_label(&key.0, &key.1);
            self.note(format_args!("kubelet: {pod} succeeded"));
        }
    }

    /// Every Node whose kubelet is alive renews its Lease.
    pub(crate) fn heartbeat(&mut self) {
        for i in 0..self.user.nodes {
            if !self.user.silent.contains(&i) {
                renew_lease(&self.store, &node_name(i));
            }
        }
        self.after(HEARTBEAT, Event::Heartbeat);
    }

    /// Node `node`'s kubelet stops renewing its Lease, until `until` or for good.
    pub(crate) fn node_silent(&mut self, node: usize, until: Option<Duration>) {
        if !self.user.silent.insert(node) && until.is_some() {
            return;
        }
        let name = node_name(node);
        match until {
            Some(at) => {
                self.note(format_args!("{name}'s kubelet goes silent"));
                self.queue.at(at, Event::NodeBack { node });
            }
            None => {
                self.note(format_args!("{name}'s kubelet dies"));
                self.user.dead_nodes.push(name);
            }
        }
    }

    /// Node `node`'s kubelet is back: it renews its Lease and reports the Node Ready, as a
    /// kubelet that restarts does (node lifecycle leaves the taint to be lifted by upstream's
    /// taint manager, which Tidemark does not run).
    pub(crate) fn node_back(&mut self, node: usize) {
        let name = node_name(node);
        if self.user.dead_nodes.contains(&name) || !self.user.silent.remove(&node) {
            return;
        }
        renew_lease(&self.store, &name);
        let _ = self.store.write_as(
            loadgen::Resource::Nodes,
            "",
            &name,
            |n| {
                if let Some(conditions) = n["status"]["conditions"].as_array_mut() {
                    for c in conditions.iter_mut().filter(|c| c["type"] == "Ready") {
                        c["status"] = "True".into();
                        c["reason"] = "KubeletReady".into();
                    }
                }
            },
            Verb::UpdateStatus,
            KUBELET_USER_AGENT,
        );
        self.note(format_args!("{name}'s kubelet is back"));
    }
}
