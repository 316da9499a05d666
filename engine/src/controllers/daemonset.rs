//! DaemonSet: one Pod per eligible Node (node selector, node affinity by name, tolerated taints),
//! placed with `spec.nodeName`; surplus Pods on a Node and Pods on Nodes that no longer want them
//! are deleted; a template change rolls out by deleting old-revision Pods, at most
//! `maxUnavailable` Nodes without a ready Pod at a time. Nodes reach every shard (they are
//! broadcast); each DaemonSet is reconciled in its own shard.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::daemonset_view::DaemonSetView;
use crate::key::ObjectKey;
use crate::object::{Object, PodView};
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::template_hash::template_hash;
use serde_json::{Value, json};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// The label carrying a DaemonSet Pod's template revision.
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// The controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct DaemonSetController;

fn pod_for(ds: &DaemonSetView, node: &str, revision: &str) -> Result<Action, ReconcileError> {
    let template = ds
        .raw
        .pointer("/spec/template")
        .ok_or_else(|| ReconcileError {
            controller: "daemonset",
            message: format!("{} has no spec.template", ds.key),
        })?;
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    if let Some(map) = labels.as_object_mut() {
        map.insert(REVISION_LABEL.into(), json!(revision));
    }
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    spec["nodeName"] = json!(node);
    Ok(Action::Create {
        resource: Resource::Pods,
        namespace: ds.key.namespace_arc().clone(),
        body: json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": format!("{}-", ds.key.name()),
                "namespace": ds.key.namespace(),
                "labels": labels,
                "annotations": template.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds.key.name(),
                    "uid": ds.uid.as_str(), "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": spec,
        }),
    })
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
    fn reads(&self) -> &'static [Resource] {
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
        let revision = template_hash(ds.raw.pointer("/spec/template"));
        let mut by_node: BTreeMap<&str, Vec<&PodView>> = BTreeMap::new();
        let mut unplaced: Vec<&PodView> = Vec::new();
        for pod in cache.pods.owned_by(&ds.uid).filter(|p| p.is_active()) {
            match pod.node_name.as_deref() {
                Some(node) => by_node.entry(node).or_default().push(pod),
                None => unplaced.push(pod),
            }
        }
        let eligible: Vec<&str> = cache
            .nodes
            .iter()
            .filter(|n| !n.terminating && ds.wants(&n.raw))
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
                        deletes.extend(pods[1..].iter().map(|p| delete(p)));
                        let kept = pods[0];
                        if !kept.ready {
                            unavailable += 1;
                        } else if kept.labels.get(REVISION_LABEL) != Some(revision.as_str()) {
                            outdated.push(kept);
                        }
                    }
                }
            }
        }
        let mut rests_on = Vec::new();
        for (node, pods) in &by_node {
            if ds.terminating || !eligible.contains(node) {
                deletes.extend(pods.iter().map(|p| delete(p)));
                if !ds.terminating {
                    // The Node's labels (or its absence) are what make these Pods unwanted.
                    rests_on.push((Resource::Nodes, ObjectKey::new("", *node)));
                }
            }
        }
        let budget = ds
            .max_unavailable(eligible.len())
            .saturating_sub(unavailable);
        deletes.extend(outdated.iter().take(budget).map(|p| delete(p)));
        let mut plan = Plan {
            rests_on,
            ..Plan::default()
        };
        plan.push_slow_start(creates);
        plan.steps.push(deletes);
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
        let misscheduled = by_node.keys().filter(|n| !eligible.contains(n)).count();
        let status = json!({
            "desiredNumberScheduled": eligible.len(),
            "currentNumberScheduled": scheduled,
            "numberReady": ready,
            "numberAvailable": ready,
            "numberUnavailable": eligible.len() - ready,
            "updatedNumberScheduled": updated,
            "numberMisscheduled": misscheduled,
            "observedGeneration": ds.generation,
        });
        let current = ds.raw.get("status").cloned().unwrap_or(Value::Null);
        if status
            .as_object()
            .is_some_and(|s| s.iter().any(|(k, v)| current.get(k) != Some(v)))
        {
            let mut body = (*ds.raw).clone();
            body["status"] = status;
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::DaemonSets,
                key: ds.key.clone(),
                body,
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
    use crate::node_views::NodeView;
    use crate::object::{OwnerRef, PodPhase};
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
        let revision = template_hash(d.raw.pointer("/spec/template"));
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
