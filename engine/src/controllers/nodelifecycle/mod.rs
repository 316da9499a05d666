//! Node lifecycle: a Node whose Lease has not changed for the grace period gets `Ready=Unknown`
//! and the `node.kubernetes.io/unreachable` taint. Silence is measured on the monotonic clock from
//! when the shard last saw the Lease change, never by comparing `renewTime` with the wall clock;
//! the decision is destructive and time-based, so every one needs its own barrier (the cache
//! must be current *now* for "not renewed" to be true).

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::labels::LabelSelector;
use crate::object::Object;
use crate::reconcile_error::ensure_well_formed;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::views::nodes::{NodeView, ReadyStatus, UNREACHABLE_TAINT};
use serde::Serialize;
use serde_json::{Map, Value, json};
use smallvec::SmallVec;
use std::sync::Arc;
use std::time::Duration;

/// kube-controller-manager's `--node-monitor-grace-period` default.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(40);

/// The controller, with its grace period and the Nodes it manages.
#[derive(Clone, Debug)]
pub struct NodeLifecycleController {
    /// How long a Lease may stay unchanged before its Node is marked.
    pub grace_period: Duration,
    /// Only Nodes whose labels it selects are marked (`--node-selector`, so a canary manages
    /// a labelled pool while the incumbent keeps the rest); empty selects every Node.
    pub node_selector: Arc<LabelSelector>,
}

impl Default for NodeLifecycleController {
    fn default() -> Self {
        Self {
            grace_period: DEFAULT_GRACE_PERIOD,
            node_selector: Arc::default(),
        }
    }
}

fn marked(node: &NodeView) -> bool {
    node.ready == Some(ReadyStatus::Unknown) && node.unreachable
}

/// The `Ready=Unknown` condition node lifecycle writes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UnknownCondition<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    status: &'static str,
    reason: &'static str,
    message: &'static str,
    last_heartbeat_time: &'a str,
    last_transition_time: &'a str,
}

/// A taint node lifecycle adds.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NewTaint<'a> {
    key: &'static str,
    effect: &'static str,
    time_added: &'a str,
}

fn unbuildable(key: &ObjectKey, message: &str) -> ReconcileError {
    ReconcileError::Unbuildable {
        controller: "nodelifecycle",
        key: key.clone(),
        message: message.to_string(),
    }
}

fn to_value<T: Serialize>(key: &ObjectKey, value: &T) -> Result<Value, ReconcileError> {
    serde_json::to_value(value).map_err(|e| unbuildable(key, &e.to_string()))
}

/// The Node with its `Ready` condition set to `Unknown`, for the status subresource. The
/// decoded Node's shape was checked, but every step is matched again, so no shape panics.
fn ready_unknown(node: &NodeView, stamp: &str) -> Result<Value, ReconcileError> {
    let unknown = to_value(
        &node.key,
        &UnknownCondition {
            kind: "Ready",
            status: "Unknown",
            reason: "NodeStatusUnknown",
            message: "Kubelet stopped posting node status.",
            last_heartbeat_time: stamp,
            last_transition_time: stamp,
        },
    )?;
    let mut body = (*node.raw).clone();
    let Value::Object(object) = &mut body else {
        return Err(unbuildable(
            &node.key,
            "the cached Node is not a JSON object",
        ));
    };
    let status = object
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if status.is_null() {
        *status = Value::Object(Map::new());
    }
    let Value::Object(status) = status else {
        return Err(unbuildable(&node.key, "status is not an object"));
    };
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if conditions.is_null() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(conditions) = conditions else {
        return Err(unbuildable(&node.key, "status.conditions is not an array"));
    };
    let ready = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    match ready {
        Some(ready) => {
            if ready.get("status").and_then(Value::as_str) != Some("Unknown") {
                *ready = unknown;
            }
        }
        None => conditions.push(unknown),
    }
    Ok(body)
}

/// A merge patch adding the unreachable taints (NoSchedule and NoExecute) to those the Node has,
/// which are kept as written.
fn taint_patch(node: &NodeView, stamp: &str) -> Result<Value, ReconcileError> {
    let mut taints: Vec<Value> = node
        .raw
        .get("spec")
        .and_then(|s| s.get("taints"))
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .filter(|t| t.get("key").and_then(Value::as_str) != Some(UNREACHABLE_TAINT))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    for effect in ["NoSchedule", "NoExecute"] {
        taints.push(to_value(
            &node.key,
            &NewTaint {
                key: UNREACHABLE_TAINT,
                effect,
                time_added: stamp,
            },
        )?);
    }
    Ok(json!({"spec": {"taints": taints}}))
}

impl Reconciler for NodeLifecycleController {
    fn name(&self) -> &'static str {
        "nodelifecycle"
    }
    fn gate_name(&self) -> &'static str {
        "NodeLifecycle"
    }
    fn primary(&self) -> Resource {
        Resource::Nodes
    }
    fn reads(&self) -> &[Resource] {
        &[Resource::Nodes, Resource::Leases]
    }
    fn proof_per_decision(&self) -> bool {
        true
    }

    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::Node(node) => keys.push(node.key.clone()),
            Object::Lease(lease) => keys.extend(lease.node_key()),
            Object::Pod(_)
            | Object::ReplicaSet(_)
            | Object::StatefulSet(_)
            | Object::Job(_)
            | Object::DaemonSet(_)
            | Object::Custom(_) => {}
        }
    }

    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &ShardCache,
        ctx: &Context,
    ) -> Result<Plan, ReconcileError> {
        let Some(node) = cache.nodes.get(key) else {
            return Ok(Plan::default());
        };
        if !self.node_selector.matches(&node.labels) {
            // Another manager's Node: neither marked nor judged, even when malformed.
            return Ok(Plan::default());
        }
        ensure_well_formed(self.name(), node)?;
        if let Some(lease) = cache.leases.get(&node.lease_key()) {
            ensure_well_formed(self.name(), lease)?;
        }
        if marked(node) || node.terminating {
            return Ok(Plan::default());
        }
        let Some(observed) = cache.lease_observed_at(&node.lease_key()) else {
            // No Lease seen yet: nothing to measure from; look again after a grace period.
            return Ok(Plan {
                requeue_after: Some(self.grace_period),
                ..Plan::default()
            });
        };
        let silent = ctx.now.saturating_duration_since(observed);
        if silent < self.grace_period {
            return Ok(Plan {
                requeue_after: Some(self.grace_period - silent + Duration::from_millis(10)),
                ..Plan::default()
            });
        }
        let stamp = crate::time::format_rfc3339(ctx.unix_secs);
        let mut plan = Plan {
            destructive: true,
            // "Not renewed" is a claim about the Lease: a live read on a lagging cache must see
            // the Lease's version, not only the Node's, or a renewal the cache missed goes
            // unnoticed.
            rests_on: vec![(Resource::Leases, node.lease_key())],
            ..Plan::default()
        };
        // Two steps of one decision: the shard sends the second only while the decision's
        // proof holds (a taint sent long after the status, the kubelet back meanwhile, would
        // evict Pods from a live Node); past that the key decides again.
        if node.ready != Some(ReadyStatus::Unknown) {
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::Nodes,
                key: key.clone(),
                body: ready_unknown(node, &stamp)?,
            }]);
        }
        if !node.unreachable {
            plan.steps.push(vec![Action::Patch {
                resource: Resource::Nodes,
                key: key.clone(),
                patch: taint_patch(node, &stamp)?,
            }]);
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::nodes::LeaseView;
    use std::time::Instant;

    fn node(name: &str, ready: &str, tainted: bool) -> NodeView {
        let taints = if tainted {
            json!([{"key": UNREACHABLE_TAINT, "effect": "NoExecute"}])
        } else {
            json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
        };
        let value = json!({
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "5"},
            "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        });
        NodeView::from_value(value).expect("node")
    }

    fn lease(name: &str, rv: u64) -> LeaseView {
        let json = format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"kube-node-lease","uid":"l-{name}","resourceVersion":"{rv}"}},"spec":{{"holderIdentity":"{name}"}}}}"#
        );
        LeaseView::from_json(json.as_bytes()).expect("lease")
    }

    fn cache_with(node: NodeView, lease_seen: Option<Instant>) -> ShardCache {
        let mut cache = ShardCache::default();
        let lease = lease(node.key.name(), 7);
        let lease_key = lease.key.clone();
        cache.apply(Object::Node(node));
        cache.apply(Object::Lease(lease));
        if let Some(at) = lease_seen {
            cache.observe_lease(&lease_key, at);
        }
        cache
    }

    fn ctx(now: Instant) -> Context {
        Context {
            now,
            unix_secs: 1_800_000_000,
        }
    }

    fn grace() -> NodeLifecycleController {
        NodeLifecycleController {
            grace_period: Duration::from_secs(40),
            ..NodeLifecycleController::default()
        }
    }

    #[test]
    fn a_lease_seen_within_the_grace_period_leaves_the_node_alone_and_looks_again_when_it_ends() {
        let t0 = Instant::now();
        let cache = cache_with(node("n1", "True", false), Some(t0));
        let plan = grace()
            .reconcile(
                &ObjectKey::new("", "n1"),
                &cache,
                &ctx(t0 + Duration::from_secs(30)),
            )
            .expect("plan");
        assert!(plan.is_empty());
        assert!(!plan.is_destructive());
        let again = plan.requeue_after.expect("a recheck");
        assert!(
            again >= Duration::from_secs(10) && again < Duration::from_secs(11),
            "{again:?}"
        );
    }

    #[test]
    fn a_silent_lease_marks_the_node_unknown_and_taints_it_keeping_other_taints() {
        let t0 = Instant::now();
        let cache = cache_with(node("n1", "True", false), Some(t0));
        let plan = grace()
            .reconcile(
                &ObjectKey::new("", "n1"),
                &cache,
                &ctx(t0 + Duration::from_secs(40)),
            )
            .expect("plan");
        assert!(plan.is_destructive(), "marking NotReady needs proof");
        assert_eq!(
            plan.rests_on,
            vec![(Resource::Leases, ObjectKey::new("kube-node-lease", "n1"))],
            "a live read checks the Lease it judges silent"
        );
        let Action::UpdateStatus { body, .. } = &plan.steps[0][0] else {
            panic!("status first: {plan:?}");
        };
        assert_eq!(body["status"]["conditions"][0]["status"], "Unknown");
        assert_eq!(
            body["metadata"]["resourceVersion"], "5",
            "optimistic concurrency"
        );
        let Action::Patch { patch, .. } = &plan.steps[1][0] else {
            panic!("then the taint: {plan:?}");
        };
        let taints = patch["spec"]["taints"].as_array().expect("taints");
        assert_eq!(taints.len(), 3, "{taints:?}");
        assert!(taints.iter().any(|t| t["key"] == "dedicated"));
    }

    #[test]
    fn a_silent_node_outside_the_node_selector_is_left_to_its_other_manager() {
        let t0 = Instant::now();
        let late = ctx(t0 + Duration::from_secs(60));
        let key = ObjectKey::new("", "n1");
        let canary_only = NodeLifecycleController {
            node_selector: Arc::new(LabelSelector::parse("pool=canary").expect("selector")),
            ..grace()
        };
        let unlabelled = cache_with(node("n1", "True", false), Some(t0));
        let plan = canary_only
            .reconcile(&key, &unlabelled, &late)
            .expect("plan");
        assert!(plan.is_empty() && plan.requeue_after.is_none(), "{plan:?}");

        let mut labelled = node("n1", "True", false);
        labelled.labels =
            crate::labels::Labels::from_map([("pool".to_string(), "canary".to_string())].into());
        let plan = canary_only
            .reconcile(&key, &cache_with(labelled, Some(t0)), &late)
            .expect("plan");
        assert!(plan.is_destructive(), "the canary's own Node is marked");
    }

    #[test]
    fn renew_time_on_the_wall_clock_is_never_the_measure() {
        let t0 = Instant::now();
        // The Lease says it was renewed in 1999, but the shard saw it change just now.
        let cache = cache_with(node("n1", "True", false), Some(t0));
        let plan = grace()
            .reconcile(
                &ObjectKey::new("", "n1"),
                &cache,
                &ctx(t0 + Duration::from_secs(1)),
            )
            .expect("plan");
        assert!(plan.is_empty());
    }

    #[test]
    fn a_node_whose_status_is_not_an_object_is_malformed_and_left_alone() {
        let t0 = Instant::now();
        let value = json!({
            "metadata": {"name": "n1", "uid": "uid-n1", "resourceVersion": "5"},
            "status": "not-an-object",
        });
        let cache = cache_with(NodeView::from_value(value).expect("identity"), Some(t0));
        let result = grace().reconcile(
            &ObjectKey::new("", "n1"),
            &cache,
            &ctx(t0 + Duration::from_secs(100)),
        );
        assert!(
            matches!(
                result,
                Err(ReconcileError::Malformed {
                    resource: Resource::Nodes,
                    ..
                })
            ),
            "{result:?}"
        );
    }

    #[test]
    fn a_node_without_status_or_conditions_gets_a_ready_unknown_condition() {
        for value in [
            json!({"metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"}}),
            json!({"metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"}, "status": {}}),
            json!({"metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"}, "status": null}),
            json!({"metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"},
                   "status": {"conditions": null}}),
        ] {
            let node = NodeView::from_value(value).expect("node");
            let body = ready_unknown(&node, "2026-01-01T00:00:00Z").expect("body");
            assert_eq!(body["status"]["conditions"][0]["status"], "Unknown");
            let patch = taint_patch(&node, "2026-01-01T00:00:00Z").expect("patch");
            assert_eq!(patch["spec"]["taints"].as_array().map(Vec::len), Some(2));
        }
    }

    #[test]
    fn a_marked_node_is_left_as_it_is_and_leases_route_to_their_node() {
        let t0 = Instant::now();
        let cache = cache_with(node("n1", "Unknown", true), Some(t0));
        let plan = grace()
            .reconcile(
                &ObjectKey::new("", "n1"),
                &cache,
                &ctx(t0 + Duration::from_secs(100)),
            )
            .expect("plan");
        assert!(plan.is_empty() && plan.requeue_after.is_none());
        let mut keys = SmallVec::new();
        grace().keys_for(&Object::Lease(lease("n1", 9)), &mut keys);
        assert_eq!(keys.as_slice(), &[ObjectKey::new("", "n1")]);
    }
}
