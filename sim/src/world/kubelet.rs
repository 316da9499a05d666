//! The kubelet's steps: binding and starting created Pods, removing terminating ones.

use super::{Event, World};
use crate::kubelet::{NODES, TICK};
use loadgen::DeleteOptions;
use loadgen::kubelet::{KUBELET_USER_AGENT, node_name, start_pod};
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
