//! The ReplicaSet controller: keep `spec.replicas` active Pods, as kube-controller-manager does.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::controllers::claimants;
use crate::key::ObjectKey;
use crate::object::{Object, PodPhase, PodView, ReplicaSetStatus, ReplicaSetView};
use crate::pod_template::{
    ControllerRef, NewMeta, NewObject, SpecOnly, owner_object, template_spec, to_body,
};
use crate::reconcile_error::ensure_well_formed;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use serde_json::{Map, Value, json};
use smallvec::SmallVec;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::time::Duration;

/// Upstream `burstReplicas`: at most this many creates or deletes per sync.
pub const BURST_REPLICAS: usize = 500;

/// The ReplicaSet reconciler.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplicaSetController;

impl Reconciler for ReplicaSetController {
    fn name(&self) -> &'static str {
        "replicaset"
    }
    fn gate_name(&self) -> &'static str {
        "ReplicaSet"
    }
    fn primary(&self) -> Resource {
        Resource::ReplicaSets
    }
    fn reads(&self) -> &[Resource] {
        &[Resource::ReplicaSets, Resource::Pods]
    }

    /// What a ReplicaSet reads of its Pods: which are its own or could be adopted (labels,
    /// controller), which are active (phase, deletion), and its status counts (labels for
    /// `fullyLabeledReplicas`, Ready and since when for `readyReplicas` and
    /// `availableReplicas`, deletion for `terminatingReplicas`); a malformed Pod stops it. A
    /// restart or a node assignment only reorders which Pods a scale-down would pick, which the
    /// reconcile of that scale-down reads from the cache when it comes.
    fn pod_change_matters(&self, previous: &PodView, pod: &PodView) -> bool {
        previous.labels != pod.labels
            || previous.controller != pod.controller
            || previous.phase != pod.phase
            || previous.terminating != pod.terminating
            || previous.ready != pod.ready
            || previous.ready_since != pod.ready_since
            || previous.malformed != pod.malformed
    }

    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::ReplicaSet(rs) => keys.push(rs.key.clone()),
            Object::Pod(pod) => keys.extend(pod.owner_key("ReplicaSet")),
            Object::Node(_)
            | Object::Lease(_)
            | Object::StatefulSet(_)
            | Object::Job(_)
            | Object::DaemonSet(_)
            | Object::Custom(_) => {}
        }
    }

    fn keys_for_cache(&self, object: &Object, cache: &ShardCache, keys: &mut Vec<ObjectKey>) {
        claimants::owners_of(self.primary(), object, cache, keys);
    }

    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &ShardCache,
        ctx: &Context,
    ) -> Result<Plan, ReconcileError> {
        let Some(rs) = cache.replicasets.get(key) else {
            return Ok(Plan::default());
        };
        ensure_well_formed(self.name(), rs)?;
        for pod in cache.pods.owned_by(&rs.uid) {
            ensure_well_formed(self.name(), pod)?;
        }
        // Upstream claims active Pods only: a finished orphan is not adopted, a finished Pod
        // that stops matching is not released.
        let claimed = claimants::replicaset(rs).claim(cache, PodView::is_active, |_| true);
        let mut active = claimed.pods;
        let mut plan = Plan::default();
        if !claimed.patches.is_empty() {
            plan.adopts = claimed.adopted > 0;
            plan.steps.push(claimed.patches);
        }
        if !rs.terminating {
            let desired = rs.replicas as usize;
            if active.len() < desired {
                let missing = (desired - active.len()).min(BURST_REPLICAS);
                let body = pod_from_template(rs)?;
                let creates = (0..missing)
                    .map(|_| Action::Create {
                        resource: Resource::Pods,
                        namespace: rs.key.namespace_arc().clone(),
                        body: body.clone(),
                    })
                    .collect();
                plan.push_slow_start(creates);
            } else if active.len() > desired {
                let surplus = (active.len() - desired).min(BURST_REPLICAS);
                rank_for_deletion(&mut active, ctx.unix_secs);
                plan.steps.push(
                    active[..surplus]
                        .iter()
                        .map(|p| Action::Delete {
                            resource: Resource::Pods,
                            key: p.key.clone(),
                            uid: p.uid.clone(),
                        })
                        .collect(),
                );
            }
        }
        let (status, next_available) = compute_status(rs, &active, ctx.unix_secs);
        if status != rs.status {
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::ReplicaSets,
                key: rs.key.clone(),
                body: with_status(rs, &status)?,
            }]);
        }
        plan.requeue_after = next_available;
        Ok(plan)
    }
}

/// The Pod a ReplicaSet creates: its template, `generateName: <rs>-`, a controller reference.
fn pod_from_template(rs: &ReplicaSetView) -> Result<Value, ReconcileError> {
    let object = owner_object("replicaset", &rs.key, &rs.raw)?;
    let body = NewObject {
        api_version: "v1",
        kind: "Pod",
        metadata: NewMeta {
            name: None,
            generate_name: Some(format!("{}-", rs.key.name())),
            namespace: rs.key.namespace(),
            labels: rs.template.labels.clone(),
            annotations: Some(rs.template.annotations.clone()),
            finalizers: Vec::new(),
            owner_references: vec![ControllerRef::to(
                Resource::ReplicaSets,
                rs.key.name(),
                &rs.uid,
            )],
        },
        body: SpecOnly {
            spec: template_spec(&object),
        },
    };
    to_body("replicaset", &rs.key, &body)
}

fn phase_rank(phase: PodPhase) -> u8 {
    match phase {
        PodPhase::Pending => 0,
        PodPhase::Unknown => 1,
        _ => 2,
    }
}

/// Orders Pods so the first are the ones to delete, as upstream `ActivePodsWithRanks` does:
/// unscheduled before scheduled, Pending before Unknown before Running, not ready before ready,
/// more siblings on the same node first, ready for less time first, more restarts first, newest
/// first.
pub fn rank_for_deletion(pods: &mut [&PodView], now_unix: i64) {
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for p in pods.iter() {
        if let Some(node) = p.node_name.as_deref() {
            *on_node.entry(node).or_default() += 1;
        }
    }
    let siblings = |p: &PodView| p.node_name.as_deref().map_or(0, |n| on_node[n]);
    pods.sort_by(|a, b| {
        let ord = a.node_name.is_some().cmp(&b.node_name.is_some());
        if ord != Ordering::Equal {
            return ord;
        }
        let ord = phase_rank(a.phase).cmp(&phase_rank(b.phase));
        if ord != Ordering::Equal {
            return ord;
        }
        let ord = a.ready.cmp(&b.ready);
        if ord != Ordering::Equal {
            return ord;
        }
        let ord = siblings(b).cmp(&siblings(a));
        if ord != Ordering::Equal {
            return ord;
        }
        if a.ready && b.ready {
            let ready_for = |p: &PodView| p.ready_since.map_or(0, |t| now_unix - t);
            let ord = ready_for(a).cmp(&ready_for(b));
            if ord != Ordering::Equal {
                return ord;
            }
        }
        let ord = b.restarts.cmp(&a.restarts);
        if ord != Ordering::Equal {
            return ord;
        }
        // Upstream's sort leaves ties in any order; the name makes the choice one a replay
        // (tidemark-sim) repeats, instead of the cache's per-process hash order.
        b.created
            .cmp(&a.created)
            .then_with(|| a.key.name().cmp(b.key.name()))
    });
}

/// The status the ReplicaSet should report, and when the next Pod becomes available.
fn compute_status(
    rs: &ReplicaSetView,
    active: &[&PodView],
    now_unix: i64,
) -> (ReplicaSetStatus, Option<Duration>) {
    let labels = &rs.template.labels;
    let fully_labeled = active
        .iter()
        .filter(|p| {
            labels
                .iter()
                .all(|(k, v)| p.labels.get(k) == Some(v.as_str()))
        })
        .count();
    let ready: Vec<_> = active.iter().filter(|p| p.ready).collect();
    let mut next_available: Option<i64> = None;
    let available = ready
        .iter()
        .filter(|p| {
            if rs.min_ready_seconds <= 0 {
                return true;
            }
            let since = p.ready_since.unwrap_or(now_unix);
            let wait = since
                .saturating_add(rs.min_ready_seconds)
                .saturating_sub(now_unix);
            if wait > 0 {
                next_available = Some(next_available.map_or(wait, |n| n.min(wait)));
            }
            wait <= 0
        })
        .count();
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    (
        ReplicaSetStatus {
            replicas: count(active.len()),
            fully_labeled_replicas: count(fully_labeled),
            ready_replicas: count(ready.len()),
            available_replicas: count(available),
            observed_generation: rs.generation,
        },
        next_available.map(|s| Duration::from_secs(s.unsigned_abs())),
    )
}

/// The ReplicaSet as observed with `status` in place of its status (other status fields kept).
fn with_status(rs: &ReplicaSetView, status: &ReplicaSetStatus) -> Result<Value, ReconcileError> {
    let mut body = owner_object("replicaset", &rs.key, &rs.raw)?;
    let Value::Object(object) = &mut body else {
        return Err(ReconcileError::Unbuildable {
            controller: "replicaset",
            key: rs.key.clone(),
            message: "the cached ReplicaSet is not a JSON object".into(),
        });
    };
    let mut new_status = match object.remove("status") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    new_status.insert("replicas".into(), json!(status.replicas));
    new_status.insert(
        "fullyLabeledReplicas".into(),
        json!(status.fully_labeled_replicas),
    );
    new_status.insert("readyReplicas".into(), json!(status.ready_replicas));
    new_status.insert("availableReplicas".into(), json!(status.available_replicas));
    new_status.insert(
        "observedGeneration".into(),
        json!(status.observed_generation),
    );
    object.insert("status".into(), Value::Object(new_status));
    Ok(body)
}

#[cfg(test)]
mod adoption_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::test_support::{pod, replicaset};
    use std::time::Instant;

    fn ctx() -> Context {
        Context {
            now: Instant::now(),
            unix_secs: 1_000,
        }
    }

    fn cache_with(rs: &ReplicaSetView, pods: Vec<PodView>) -> ShardCache {
        let mut cache = ShardCache::default();
        cache.replicasets.apply(rs.clone());
        for p in pods {
            cache.pods.apply(p);
        }
        cache
    }

    #[test]
    fn missing_pods_are_created_in_slow_start_batches() {
        let rs = replicaset("ns", "web", 7);
        let plan = ReplicaSetController
            .reconcile(&rs.key, &cache_with(&rs, vec![]), &ctx())
            .expect("plan");
        let sizes: Vec<_> = plan.steps.iter().map(Vec::len).collect();
        assert_eq!(
            sizes,
            [1, 2, 4, 1],
            "then the status write for observedGeneration"
        );
        let Action::Create { body, .. } = &plan.steps[0][0] else {
            panic!("a create")
        };
        assert_eq!(body["metadata"]["generateName"], "web-");
        assert_eq!(body["metadata"]["labels"]["app"], "web");
        assert_eq!(body["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "uid-web");
        assert_eq!(body["spec"]["containers"][0]["image"], "nginx");
    }

    #[test]
    fn surplus_pods_are_deleted_not_ready_first_then_newest() {
        let rs = replicaset("ns", "web", 1);
        let pods = vec![
            pod(&rs, "old-ready", 1, true),
            pod(&rs, "new-ready", 5, true),
            pod(&rs, "unready", 3, false),
        ];
        let plan = ReplicaSetController
            .reconcile(&rs.key, &cache_with(&rs, pods), &ctx())
            .expect("plan");
        let deleted: Vec<_> = plan.steps[0]
            .iter()
            .map(|a| match a {
                Action::Delete { key, .. } => key.name().to_string(),
                other => panic!("expected delete, got {other:?}"),
            })
            .collect();
        assert_eq!(deleted, ["unready", "new-ready"]);
        assert!(matches!(plan.steps[1][0], Action::UpdateStatus { .. }));
    }

    #[test]
    fn unscheduled_pods_go_before_scheduled_ones() {
        let rs = replicaset("ns", "web", 0);
        let mut a = pod(&rs, "scheduled", 1, false);
        a.phase = PodPhase::Pending;
        let mut b = pod(&rs, "unscheduled", 1, false);
        b.phase = PodPhase::Pending;
        b.node_name = None;
        let mut pods = vec![&a, &b];
        rank_for_deletion(&mut pods, 0);
        assert_eq!(pods[0].key.name(), "unscheduled");
    }

    #[test]
    fn status_counts_active_ready_and_available_pods() {
        let rs = replicaset("ns", "web", 3);
        let mut gone = pod(&rs, "gone", 4, true);
        gone.terminating = true;
        let pods = vec![
            pod(&rs, "a", 1, true),
            pod(&rs, "b", 2, false),
            pod(&rs, "c", 3, true),
            gone,
        ];
        let plan = ReplicaSetController
            .reconcile(&rs.key, &cache_with(&rs, pods), &ctx())
            .expect("plan");
        assert_eq!(
            plan.steps.len(),
            1,
            "3 active pods: nothing to create or delete"
        );
        let Action::UpdateStatus { body, .. } = &plan.steps[0][0] else {
            panic!("status")
        };
        assert_eq!(body["status"]["replicas"], 3);
        assert_eq!(body["status"]["readyReplicas"], 2);
        assert_eq!(body["status"]["availableReplicas"], 2);
        assert_eq!(body["status"]["observedGeneration"], 1);
        assert_eq!(
            body["metadata"]["resourceVersion"], "1",
            "optimistic concurrency"
        );
    }

    #[test]
    fn a_deleted_replicaset_needs_nothing() {
        let rs = replicaset("ns", "web", 3);
        let plan = ReplicaSetController
            .reconcile(&rs.key, &ShardCache::default(), &ctx())
            .expect("plan");
        assert!(plan.is_empty());
    }

    fn replicaset_with(replicas: Value) -> ReplicaSetView {
        ReplicaSetView::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "uid-web", "resourceVersion": "1"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}},
        }))
        .expect("identity is readable")
    }

    #[test]
    fn a_malformed_replica_count_deletes_nothing_and_writes_nothing() {
        for bad in [json!("five"), json!(3.0), json!("3"), json!(-2)] {
            let rs = replicaset_with(bad.clone());
            let pods = (0..10)
                .map(|i| pod(&rs, &format!("p{i}"), 1, true))
                .collect();
            let result = ReplicaSetController.reconcile(&rs.key, &cache_with(&rs, pods), &ctx());
            let Err(ReconcileError::Malformed { key, resource, .. }) = result else {
                panic!("{bad}: a malformed error, got {result:?}");
            };
            assert_eq!((key, resource), (rs.key.clone(), Resource::ReplicaSets));
        }
    }

    #[test]
    fn a_malformed_pod_stops_its_owner_from_acting() {
        let rs = replicaset("ns", "web", 1);
        let odd = br#"{"metadata":{"name":"odd","namespace":"ns","uid":"uid-odd","resourceVersion":"2",
            "ownerReferences":[{"kind":"ReplicaSet","name":"web","uid":"uid-web","controller":true}]},
            "status":{"phase":42}}"#;
        let odd = PodView::from_json(odd).expect("identity is readable");
        assert!(odd.malformed.is_some());
        let pods = vec![pod(&rs, "a", 1, true), pod(&rs, "b", 1, true), odd];
        let result = ReplicaSetController.reconcile(&rs.key, &cache_with(&rs, pods), &ctx());
        let Err(ReconcileError::Malformed { key, resource, .. }) = result else {
            panic!("a malformed error, got {result:?}");
        };
        assert_eq!((key.name(), resource), ("odd", Resource::Pods));
    }

    #[test]
    fn pods_enqueue_their_controlling_replicaset() {
        let rs = replicaset("ns", "web", 3);
        let mut keys = SmallVec::new();
        ReplicaSetController.keys_for(&Object::Pod(pod(&rs, "a", 1, true)), &mut keys);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0], rs.key);
    }
}
