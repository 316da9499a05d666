//! What a scenario's user does to the workload besides scaling it, in-process as `loadgen`:
//! adopt Pods into another set by hand, orphan them, delete a set leaving its Pods, and label
//! Nodes for a DaemonSet's node selector.

use serde_json::{Value, json};

use crate::apiserver::server::ApiServer;
use crate::apiserver::status::ApiError;
use crate::meta::{controller_uid, meta_str};
use crate::oracle::pod_is_live;
use crate::resource::Resource;
use crate::scenario::{EventVerb, ROLLOUT_ANNOTATION, SetNamespaces, WorkloadEvent, WorkloadKind};
use crate::store::deletion::{DeleteOptions, Propagation};

/// Makes exactly `count` extra Nodes `extra-0..` exist.
fn set_extra_nodes(server: &ApiServer, count: i32) -> Result<(), ApiError> {
    let count = usize::try_from(count).unwrap_or(0);
    for i in 0..64 {
        let name = format!("extra-{i}");
        let exists = server.get(Resource::Nodes, "", &name).is_some();
        if i < count && !exists {
            server.create(
                Resource::Nodes,
                "",
                serde_json::json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            )?;
        } else if i >= count && exists {
            server.delete(Resource::Nodes, "", &name)?;
        }
    }
    Ok(())
}

/// Makes the first `count` Nodes of `order` carry `<label>=true` and the others not.
pub fn label_nodes(
    server: &ApiServer,
    label: &str,
    order: &[String],
    count: usize,
) -> Result<(), ApiError> {
    for (i, node) in order.iter().enumerate() {
        let wanted = i < count;
        let has = server
            .get(Resource::Nodes, "", node)
            .is_some_and(|n| n["metadata"]["labels"][label] == "true");
        if has == wanted {
            continue;
        }
        server.update_with(Resource::Nodes, "", node, |n| {
            let labels = &mut n["metadata"]["labels"];
            if !labels.is_object() {
                *labels = json!({});
            }
            if let Some(map) = labels.as_object_mut() {
                if wanted {
                    map.insert(label.to_string(), Value::from("true"));
                } else {
                    map.remove(label);
                }
            }
        })?;
    }
    Ok(())
}

/// The user of one run: scales and acts on the workload's sets, each in its namespace, picking
/// Pods from a seeded source.
pub struct User<'a> {
    server: &'a ApiServer,
    namespaces: SetNamespaces,
    rng: fastrand::Rng,
    /// DaemonSets on labelled Nodes: the label, and the Nodes in the order they get it.
    node_label: Option<(String, Vec<String>)>,
}

impl<'a> User<'a> {
    /// A user of `server` whose sets live in `namespaces`.
    pub fn new(server: &'a ApiServer, namespaces: SetNamespaces, seed: u64) -> Self {
        Self {
            server,
            namespaces,
            rng: fastrand::Rng::with_seed(seed),
            node_label: None,
        }
    }

    /// DaemonSet steps label the first Nodes of `order` with `label` (when there is one)
    /// instead of adding Nodes.
    pub fn with_nodes(mut self, label: Option<String>, order: Vec<String>) -> Self {
        self.node_label = label.map(|l| (l, order));
        self
    }

    /// Scales the set `name` to `replicas` (a Job's parallelism; for DaemonSets, the Nodes that
    /// run them). A set the user deleted is left alone.
    pub fn scale(&self, kind: WorkloadKind, name: &str, replicas: i32) -> Result<(), ApiError> {
        let namespace = self.namespaces.of_set(name);
        let (server, ns) = (self.server, namespace.as_str());
        let set = |r: Resource, field: &'static str| {
            server
                .update_with(r, ns, name, |s| s["spec"][field] = json!(replicas))
                .map(drop)
        };
        let done = match kind {
            WorkloadKind::Replicaset => server.scale_replicaset(ns, name, replicas).map(drop),
            WorkloadKind::Statefulset => set(Resource::StatefulSets, "replicas"),
            WorkloadKind::Job => set(Resource::Jobs, "parallelism"),
            WorkloadKind::Daemonset => match &self.node_label {
                Some((label, order)) => {
                    label_nodes(server, label, order, usize::try_from(replicas).unwrap_or(0))
                }
                None => set_extra_nodes(server, replicas),
            },
        };
        match done {
            Err(ApiError::NotFound { .. }) => Ok(()),
            other => other,
        }
    }

    /// The set `name` in its namespace.
    fn set(&self, name: &str) -> Option<(Resource, Value)> {
        let namespace = self.namespaces.of_set(name);
        [
            Resource::ReplicaSets,
            Resource::StatefulSets,
            Resource::DaemonSets,
            Resource::Jobs,
        ]
        .into_iter()
        .find_map(|r| Some((r, self.server.get(r, &namespace, name)?)))
    }

    /// Up to `count` live Pods of `namespace` controlled by the set `uid`, picked by the seeded
    /// source.
    fn pick(&mut self, namespace: &str, uid: &str, count: usize) -> Vec<String> {
        let mut names: Vec<String> = self
            .server
            .list(Resource::Pods)
            .into_iter()
            .filter(|p| {
                meta_str(p, "namespace") == namespace
                    && pod_is_live(p)
                    && controller_uid(p) == Some(uid)
            })
            .map(|p| meta_str(&p, "name").to_string())
            .collect();
        names.sort();
        self.rng.shuffle(&mut names);
        names.truncate(count);
        names
    }

    /// Carries out `event`; returns what it did.
    pub fn act(&mut self, event: &WorkloadEvent) -> Result<String, ApiError> {
        let Some((resource, from)) = self.set(&event.from) else {
            return Ok(format!("{:?}: no set {} any more", event.verb, event.from));
        };
        let from_uid = meta_str(&from, "uid").to_string();
        let namespace = self.namespaces.of_set(&event.from);
        let namespace = namespace.as_str();
        match event.verb {
            EventVerb::DeleteOrphaning => {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Orphan),
                    ..DeleteOptions::default()
                };
                self.server
                    .delete_with(resource, namespace, &event.from, &opts)?;
                Ok(format!("{} deleted, its Pods orphaned", event.from))
            }
            EventVerb::Suspend | EventVerb::Resume => {
                let suspend = event.verb == EventVerb::Suspend;
                self.server
                    .update_with(resource, namespace, &event.from, |job| {
                        job["spec"]["suspend"] = Value::from(suspend);
                    })?;
                Ok(format!(
                    "{} {}",
                    event.from,
                    if suspend { "suspended" } else { "resumed" }
                ))
            }
            EventVerb::RollOut => {
                let updated = self
                    .server
                    .update_with(resource, namespace, &event.from, |set| {
                        let template = &mut set["spec"]["template"];
                        if !template.is_object() {
                            return;
                        }
                        let generation = template["metadata"]["annotations"][ROLLOUT_ANNOTATION]
                            .as_str()
                            .and_then(|n| n.parse::<u64>().ok())
                            .unwrap_or(0);
                        template["metadata"]["annotations"][ROLLOUT_ANNOTATION] =
                            Value::from((generation + 1).to_string());
                    })?;
                let generation =
                    &updated["spec"]["template"]["metadata"]["annotations"][ROLLOUT_ANNOTATION];
                Ok(format!(
                    "{} rolled out to template {generation}",
                    event.from
                ))
            }
            EventVerb::Orphan => {
                let pods = self.pick(namespace, &from_uid, event.count);
                let label = format!("{}-orphan", event.from);
                for pod in &pods {
                    self.server
                        .update_with(Resource::Pods, namespace, pod, |p| {
                            p["metadata"]["labels"]["app"] = Value::from(label.clone());
                            if let Some(meta) = p["metadata"].as_object_mut() {
                                meta.remove("ownerReferences");
                            }
                        })?;
                }
                Ok(format!("{pods:?} of {} orphaned", event.from))
            }
            EventVerb::Adopt => {
                let to = event.to.as_deref().unwrap_or_default();
                let Some((to_resource, adopter)) = self.set(to) else {
                    return Ok(format!("adopt: no set {to} any more"));
                };
                let owner = json!([{
                    "apiVersion": "apps/v1",
                    "kind": to_resource.kind(),
                    "name": to,
                    "uid": meta_str(&adopter, "uid"),
                    "controller": true,
                    "blockOwnerDeletion": true,
                }]);
                let pods = self.pick(namespace, &from_uid, event.count);
                for pod in &pods {
                    self.server
                        .update_with(Resource::Pods, namespace, pod, |p| {
                            p["metadata"]["labels"]["app"] = Value::from(to);
                            p["metadata"]["ownerReferences"] = owner.clone();
                        })?;
                }
                Ok(format!("{pods:?} of {} adopted by {to}", event.from))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::server::{ServerConfig, start};
    use crate::workload::replicaset_manifest;

    async fn server_with_two_sets() -> ApiServer {
        let server = start(ServerConfig {
            kubelet_enabled: false,
            ..ServerConfig::default()
        })
        .await
        .expect("server");
        for (set, pods) in [("rs-0", 3), ("rs-1", 1)] {
            let rs = server
                .create(
                    Resource::ReplicaSets,
                    "ns",
                    replicaset_manifest("ns", set, pods),
                )
                .expect("set");
            for i in 0..pods {
                let pod = json!({"metadata": {"name": format!("{set}-{i}"), "labels": {"app": set},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": set,
                        "uid": meta_str(&rs, "uid"), "controller": true}]},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}});
                server.create(Resource::Pods, "ns", pod).expect("pod");
            }
        }
        server
    }

    fn live(server: &ApiServer) -> Vec<(String, i64)> {
        let mut truth: Vec<_> = server
            .replicaset_truth()
            .into_iter()
            .map(|t| (t.name, t.live_pods))
            .collect();
        truth.sort();
        truth
    }

    fn event(verb: EventVerb, to: Option<&str>, count: usize) -> WorkloadEvent {
        WorkloadEvent {
            verb,
            at_seconds: 0.0,
            jitter_seconds: 0.0,
            from: "rs-0".into(),
            to: to.map(str::to_string),
            count,
            repeat_every_seconds: None,
            repeat_until_seconds: None,
        }
    }

    #[tokio::test]
    async fn adopted_pods_change_controller_and_orphans_have_none() {
        let server = server_with_two_sets().await;
        let mut user = User::new(&server, SetNamespaces::new("ns", 1), 1);
        user.act(&event(EventVerb::Adopt, Some("rs-1"), 1))
            .expect("adopt");
        assert_eq!(live(&server), [("rs-0".into(), 2), ("rs-1".into(), 2)]);
        user.act(&event(EventVerb::Orphan, None, 1))
            .expect("orphan");
        assert_eq!(live(&server), [("rs-0".into(), 1), ("rs-1".into(), 2)]);
        let orphans = server
            .list(Resource::Pods)
            .into_iter()
            .filter(|p| controller_uid(p).is_none())
            .count();
        assert_eq!(orphans, 1);
        user.act(&event(EventVerb::DeleteOrphaning, None, 1))
            .expect("delete");
        assert_eq!(live(&server), [("rs-1".into(), 2)]);
        assert_eq!(server.list(Resource::Pods).len(), 4, "no Pod went with it");
        server.shutdown().await;
    }

    #[tokio::test]
    async fn over_many_namespaces_a_set_is_scaled_and_acted_on_in_its_own() {
        let server = start(ServerConfig {
            kubelet_enabled: false,
            ..ServerConfig::default()
        })
        .await
        .expect("server");
        for (ns, set) in [("0-ns", "rs-0"), ("7-ns", "rs-7"), ("0-ns", "rs-8")] {
            server
                .create(Resource::ReplicaSets, ns, replicaset_manifest(ns, set, 1))
                .expect("set");
        }
        let mut user = User::new(&server, SetNamespaces::new("ns", 8), 1);
        user.scale(WorkloadKind::Replicaset, "rs-7", 3)
            .expect("scale");
        let replicas = |ns: &str, set: &str| {
            server
                .get(Resource::ReplicaSets, ns, set)
                .map(|rs| rs["spec"]["replicas"].clone())
        };
        assert_eq!(replicas("7-ns", "rs-7"), Some(json!(3)));
        let delete_rs_8 = WorkloadEvent {
            from: "rs-8".into(),
            ..event(EventVerb::DeleteOrphaning, None, 1)
        };
        user.act(&delete_rs_8).expect("delete");
        assert_eq!(replicas("0-ns", "rs-8"), None, "rs-8 is found in 0-ns");
        assert_eq!(replicas("0-ns", "rs-0"), Some(json!(1)));
        server.shutdown().await;
    }

    #[tokio::test]
    async fn nodes_are_labelled_in_the_seeded_order() {
        let server = server_with_two_sets().await;
        let order: Vec<String> = ["b", "a", "c"].map(String::from).to_vec();
        for n in &order {
            server
                .create(Resource::Nodes, "", json!({"metadata": {"name": n}}))
                .expect("node");
        }
        let labelled = |server: &ApiServer| {
            let mut names: Vec<String> = server
                .list(Resource::Nodes)
                .into_iter()
                .filter(|n| n["metadata"]["labels"]["agent"] == "true")
                .map(|n| meta_str(&n, "name").to_string())
                .collect();
            names.sort();
            names
        };
        label_nodes(&server, "agent", &order, 2).expect("label");
        assert_eq!(labelled(&server), ["a", "b"]);
        label_nodes(&server, "agent", &order, 1).expect("label");
        assert_eq!(labelled(&server), ["b"]);
        server.shutdown().await;
    }
}
