//! DaemonSet: one Pod per eligible Node (node selector, node affinity by name, tolerated taints),
//! placed with `spec.nodeName`; surplus Pods on a Node and Pods on Nodes that no longer want them
//! are deleted; a template change rolls out by deleting old-revision Pods, at most
//! `maxUnavailable` Nodes without a ready Pod at a time. Nodes reach every shard (they are
//! broadcast); each DaemonSet is reconciled in its own shard.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::object::{Object, PodView};
use crate::pod_template::{ControllerRef, NewMeta, NewObject, SpecOnly, template_spec, to_body};
use crate::reconcile_error::ensure_well_formed;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::template_hash::template_hash;
use crate::views::daemonset::{DaemonSetStatus, DaemonSetView};
use serde_json::{Map, Value, json};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// The label carrying a DaemonSet Pod's template revision.
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// The controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct DaemonSetController;

fn pod_for(ds: &DaemonSetView, node: &str, revision: &str) -> Result<Action, ReconcileError> {
    let mut labels = ds.template.labels.clone();
    labels.insert(REVISION_LABEL.into(), revision.to_string());
    let mut spec = template_spec(&ds.raw).clone();
    spec.insert("nodeName".into(), json!(node));
    let body = NewObject {
        api_version: "v1",
        kind: "Pod",
        metadata: NewMeta {
            name: None,
            generate_name: Some(format!("{}-", ds.key.name())),
            namespace: ds.key.namespace(),
            labels,
            annotations: Some(ds.template.annotations.clone()),
            finalizers: Vec::new(),
            owner_references: [ControllerRef::to(
                Resource::DaemonSets,
                ds.key.name(),
                ds.uid.as_str(),
            )],
        },
        body: SpecOnly { spec: &spec },
    };
    Ok(Action::Create {
        resource: Resource::Pods,
        namespace: ds.key.namespace_arc().clone(),
        body: to_body("daemonset", &ds.key, &body)?,
    })
}

/// The DaemonSet as observed with `status`'s counters in place (other status fields kept).
fn with_status(ds: &DaemonSetView, status: &DaemonSetStatus) -> Result<Value, ReconcileError> {
    let mut body = (*ds.raw).clone();
    let Value::Object(object) = &mut body else {
        return Err(ReconcileError::Unbuildable {
            controller: "daemonset",
            key: ds.key.clone(),
            message: "the cached DaemonSet is not a JSON object".into(),
        });
    };
    let mut new_status = match object.remove("status") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for (name, value) in [
        ("desiredNumberScheduled", status.desired_number_scheduled),
        ("currentNumberScheduled", status.current_number_scheduled),
        ("numberReady", status.number_ready),
        ("numberAvailable", status.number_available),
        ("numberUnavailable", status.number_unavailable),
        ("updatedNumberScheduled", status.updated_number_scheduled),
        ("numberMisscheduled", status.number_misscheduled),
    ] {
        new_status.insert(name.into(), json!(value));
    }
    new_status.insert(
        "observedGeneration".into(),
        json!(status.observed_generation),
    );
    object.insert("status".into(), Value::Object(new_status));
    Ok(body)
}

fn delete(pod: &PodView) -> Action {
    Action::Delete {
        resource: Resource::Pods,
        key: pod.key.clone(),
        uid: pod.uid.clone(),
    }
}

impl Reconciler for DaemonSetController {
    fn name(&self) -> &'static str {
        "daemonset"
    }
    fn gate_name(&self) -> &'static str {
        "DaemonSet"
    }
    fn primary(&self) -> Resource {
        Resource::DaemonSets
    }
    fn reads(&self) -> &[Resource] {
        &[Resource::DaemonSets, Resource::Pods, Resource::Nodes]
    }

    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::DaemonSet(ds) => keys.push(ds.key.clone()),
            Object::Pod(pod) => keys.extend(pod.owner_key("DaemonSet")),
            // A Node change concerns every DaemonSet: each shard queues those it has.
            Object::Node(_) => {}
            _ => {}
        }
    }

    fn keys_for_cache(&self, object: &Object, cache: &ShardCache, keys: &mut Vec<ObjectKey>) {
        if let Object::Node(_) = object {
            keys.extend(cache.daemonsets.iter().map(|d| d.key.clone()));
        }
    }

    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &ShardCache,
        _ctx: &Context,
    ) -> Result<Plan, ReconcileError> {
        let Some(ds) = cache.daemonsets.get(key) else {
            return Ok(Plan::default());
        };
        ensure_well_formed(self.name(), ds)?;
        let revision = template_hash(ds.raw.get("spec").and_then(|s| s.get("template")));
        let mut by_node: BTreeMap<&str, Vec<&PodView>> = BTreeMap::new();
        let mut unplaced: Vec<&PodView> = Vec::new();
        for pod in cache.pods.owned_by(&ds.uid) {
            ensure_well_formed(self.name(), pod)?;
            if !pod.is_active() {
                continue;
            }
            match pod.node_name.as_deref() {
                Some(node) => by_node.entry(node).or_default().push(pod),
                None => unplaced.push(pod),
            }
        }
        // A malformed Node is neither eligible nor unwanted: its Pods are left as they are and
        // it gets none, so one bad Node holds back no other Node's work.
        let unknown: Vec<&str> = cache
            .nodes
            .iter()
            .filter(|n| n.malformed.is_some())
            .map(|n| n.key.name())
            .collect();
        let eligible: Vec<&str> = cache
            .nodes
            .iter()
            .filter(|n| n.malformed.is_none() && !n.terminating && ds.wants(n))
            .map(|n| n.key.name())
            .collect();
        let mut creates = Vec::new();
        let mut deletes: Vec<Action> = unplaced.iter().map(|p| delete(p)).collect();
        let mut outdated: Vec<&PodView> = Vec::new();
        let mut unavailable = 0usize;
        if !ds.terminating {
            for node in &eligible {
                match by_node.get(node).map(Vec::as_slice) {
                    None | Some([]) => {
                        creates.push(pod_for(ds, node, &revision)?);
                        unavailable += 1;
                    }
                    Some(pods) => {
                        let mut pods = pods.to_vec();
                        pods.sort_by_key(|p| (p.created, p.key.name().to_string()));
                        if let Some((kept, surplus)) = pods.split_first() {
                            deletes.extend(surplus.iter().map(|p| delete(p)));
                            if !kept.ready {
                                unavailable += 1;
                            } else if kept.labels.get(REVISION_LABEL) != Some(revision.as_str()) {
                                outdated.push(kept);
                            }
                        }
                    }
                }
            }
        }
        let mut rests_on = Vec::new();
        for (node, pods) in &by_node {
            if unknown.contains(node) {
                continue;
            }
            if ds.terminating || !eligible.contains(node) {
                deletes.extend(pods.iter().map(|p| delete(p)));
                if !ds.terminating {
                    // The Node's labels (or its absence) are what make these Pods unwanted.
                    rests_on.push((Resource::Nodes, ObjectKey::new("", *node)));
                }
            }
        }
        if !ds.on_delete {
            let budget = ds
                .max_unavailable(eligible.len())
                .saturating_sub(unavailable);
            deletes.extend(outdated.iter().take(budget).map(|p| delete(p)));
        }
        let mut plan = Plan {
            rests_on,
            ..Plan::default()
        };
        plan.push_slow_start(creates);
        plan.steps.push(deletes);
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let scheduled = eligible.iter().filter(|n| by_node.contains_key(*n)).count();
        let ready = eligible
            .iter()
            .filter(|n| by_node.get(*n).is_some_and(|ps| ps.iter().any(|p| p.ready)))
            .count();
        let updated = by_node
            .values()
            .flatten()
            .filter(|p| p.labels.get(REVISION_LABEL) == Some(revision.as_str()))
            .count();
        let misscheduled = by_node
            .keys()
            .filter(|n| !eligible.contains(n) && !unknown.contains(n))
            .count();
        let status = DaemonSetStatus {
            desired_number_scheduled: count(eligible.len()),
            current_number_scheduled: count(scheduled),
            number_ready: count(ready),
            number_available: count(ready),
            number_unavailable: count(eligible.len() - ready),
            updated_number_scheduled: count(updated),
            number_misscheduled: count(misscheduled),
            observed_generation: ds.generation,
        };
        if status != ds.status {
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::DaemonSets,
                key: ds.key.clone(),
                body: with_status(ds, &status)?,
            }]);
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Uid;
    use crate::labels::Labels;
    use crate::object::{OwnerRef, PodPhase};
    use crate::views::nodes::NodeView;
    use std::time::Instant;

    fn ds(selector: Value) -> DaemonSetView {
        DaemonSetView::from_value(json!({
            "metadata": {"name": "agent", "namespace": "ns", "uid": "d1", "generation": 2},
            "spec": {"template": {"metadata": {"labels": {"app": "agent"}},
                "spec": {"nodeSelector": selector, "containers": [{"name": "a", "image": "a"}]}}},
        }))
        .expect("ds")
    }

    fn node(name: &str, labels: Value) -> NodeView {
        NodeView::from_value(
            json!({"metadata": {"name": name, "uid": format!("u-{name}"), "labels": labels}}),
        )
        .expect("node")
    }

    fn pod(name: &str, node: &str, created: i64, revision: &str) -> PodView {
        let mut labels = std::collections::BTreeMap::new();
        labels.insert(REVISION_LABEL.to_string(), revision.to_string());
        PodView {
            key: ObjectKey::new("ns", name),
            uid: Uid::new(format!("uid-{name}")),
            resource_version: None,
            labels: Labels::from_map(labels),
            controller: Some(OwnerRef {
                kind: "DaemonSet".into(),
                name: "agent".into(),
                uid: Uid::new("d1"),
            }),
            node_name: Some(node.into()),
            phase: PodPhase::Running,
            ready: true,
            ready_since: None,
            restarts: 0,
            created,
            terminating: false,
            job_tracking: false,
            completion_index: None,
            malformed: None,
        }
    }

    fn plan(ds: &DaemonSetView, nodes: Vec<NodeView>, pods: Vec<PodView>) -> Plan {
        let mut cache = ShardCache::default();
        cache.apply(Object::DaemonSet(ds.clone()));
        for n in nodes {
            cache.apply(Object::Node(n));
        }
        for p in pods {
            cache.apply(Object::Pod(p));
        }
        let ctx = Context {
            now: Instant::now(),
            unix_secs: 0,
        };
        DaemonSetController
            .reconcile(&ds.key, &cache, &ctx)
            .expect("plan")
    }

    fn created_on(plan: &Plan) -> Vec<String> {
        plan.steps
            .iter()
            .flatten()
            .filter_map(|a| match a {
                Action::Create { body, .. } => {
                    body["spec"]["nodeName"].as_str().map(str::to_string)
                }
                _ => None,
            })
            .collect()
    }

    fn deleted(plan: &Plan) -> Vec<String> {
        plan.steps
            .iter()
            .flatten()
            .filter_map(|a| match a {
                Action::Delete { key, .. } => Some(key.name().to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_eligible_node_gets_one_pod_and_a_second_one_is_removed() {
        let d = ds(json!({"pool": "a"}));
        let revision = template_hash(d.raw.get("spec").and_then(|s| s.get("template")));
        let nodes = vec![
            node("n1", json!({"pool": "a"})),
            node("n2", json!({"pool": "a"})),
            node("n3", json!({"pool": "b"})),
        ];
        let pods = vec![
            pod("p1", "n1", 1, &revision),
            pod("p1b", "n1", 2, &revision),
            pod("p3", "n3", 1, &revision),
        ];
        let p = plan(&d, nodes, pods);
        assert_eq!(created_on(&p), vec!["n2"]);
        let mut gone = deleted(&p);
        gone.sort();
        assert_eq!(
            gone,
            vec!["p1b", "p3"],
            "the younger duplicate and the Pod on an unwanted Node"
        );
    }

    #[test]
    fn a_template_spec_that_is_not_an_object_is_malformed_not_a_panic() {
        for spec in [json!("not-an-object"), json!([1]), json!(7)] {
            let d = DaemonSetView::from_value(json!({
                "metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
                "spec": {"template": {"spec": spec}},
            }))
            .expect("identity");
            let mut cache = ShardCache::default();
            cache.apply(Object::DaemonSet(d.clone()));
            cache.apply(Object::Node(node("n1", json!({}))));
            let ctx = Context {
                now: Instant::now(),
                unix_secs: 0,
            };
            let result = DaemonSetController.reconcile(&d.key, &cache, &ctx);
            assert!(
                matches!(result, Err(ReconcileError::Malformed { .. })),
                "{spec}: {result:?}"
            );
        }
    }

    #[test]
    fn a_malformed_node_gets_no_pod_and_keeps_the_one_it_has() {
        let d = ds(json!({}));
        let revision = template_hash(d.raw.get("spec").and_then(|s| s.get("template")));
        let bad = NodeView::from_value(
            json!({"metadata": {"name": "n2", "uid": "u-n2", "labels": {"a": 1}}}),
        )
        .expect("identity");
        assert!(bad.malformed.is_some());
        let p = plan(
            &d,
            vec![node("n1", json!({})), bad],
            vec![pod("p2", "n2", 1, &revision)],
        );
        assert_eq!(created_on(&p), vec!["n1"]);
        assert!(deleted(&p).is_empty(), "{p:?}");
    }

    #[test]
    fn on_delete_never_deletes_old_pods_for_an_update() {
        let d = DaemonSetView::from_value(json!({
            "metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
            "spec": {"template": {"spec": {}}, "updateStrategy": {"type": "OnDelete"}},
        }))
        .expect("ds");
        let nodes = (0..4).map(|i| node(&format!("n{i}"), json!({}))).collect();
        let pods = (0..4)
            .map(|i| pod(&format!("p{i}"), &format!("n{i}"), i, "old"))
            .collect();
        let p = plan(&d, nodes, pods);
        assert!(deleted(&p).is_empty(), "{p:?}");
    }

    #[test]
    fn a_rollout_replaces_old_pods_within_max_unavailable() {
        let d = ds(json!({}));
        let nodes = (0..4).map(|i| node(&format!("n{i}"), json!({}))).collect();
        let pods = (0..4)
            .map(|i| pod(&format!("p{i}"), &format!("n{i}"), i, "old"))
            .collect();
        let p = plan(&d, nodes, pods);
        assert_eq!(
            deleted(&p).len(),
            1,
            "maxUnavailable defaults to one Node at a time"
        );
        assert!(p.is_destructive());
    }
}
