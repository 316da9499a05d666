//! Node lifecycle: a Node whose Lease has not changed for the grace period gets `Ready=Unknown`
//! and the `node.kubernetes.io/unreachable` taint. Silence is measured on the monotonic clock from
//! when the shard last saw the Lease change, never by comparing `renewTime` with the wall clock;
//! the decision is destructive and time-based, so every one needs its own barrier (the cache
//! must be current *now* for "not renewed" to be true).

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::node_views::{NodeView, ReadyStatus, UNREACHABLE_TAINT};
use crate::object::Object;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use serde_json::{Value, json};
use smallvec::SmallVec;
use std::time::Duration;

/// kube-controller-manager's `--node-monitor-grace-period` default.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(40);

/// The controller, with its grace period.
#[derive(Clone, Copy, Debug)]
pub struct NodeLifecycleController {
    /// How long a Lease may stay unchanged before its Node is marked.
    pub grace_period: Duration,
}

impl Default for NodeLifecycleController {
    fn default() -> Self {
        Self {
            grace_period: DEFAULT_GRACE_PERIOD,
        }
    }
}

fn marked(node: &NodeView) -> bool {
    node.ready == Some(ReadyStatus::Unknown) && node.unreachable
}

/// The Node with its `Ready` condition set to `Unknown`, for the status subresource.
fn ready_unknown(node: &NodeView, stamp: &str) -> Value {
    let mut body = (*node.raw).clone();
    let unknown = json!({
        "type": "Ready",
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
    });
    let conditions = body["status"]["conditions"].as_array_mut();
    match conditions {
        Some(cs) => match cs.iter_mut().find(|c| c["type"] == "Ready") {
            Some(ready) => {
                if ready["status"] != "Unknown" {
                    *ready = unknown;
                }
            }
            None => cs.push(unknown),
        },
        None => body["status"]["conditions"] = json!([unknown]),
    }
    body
}

/// A merge patch adding the unreachable taints (NoSchedule and NoExecute) to those the Node has.
fn taint_patch(node: &NodeView, stamp: &str) -> Value {
    let mut taints: Vec<Value> = node.raw["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t["key"] != UNREACHABLE_TAINT)
        .collect();
    taints.push(json!({"key": UNREACHABLE_TAINT, "effect": "NoSchedule", "timeAdded": stamp}));
    taints.push(json!({"key": UNREACHABLE_TAINT, "effect": "NoExecute", "timeAdded": stamp}));
    json!({"spec": {"taints": taints}})
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
    fn reads(&self) -> &'static [Resource] {
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
            | Object::DaemonSet(_) => {}
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
            ..Plan::default()
        };
        if node.ready != Some(ReadyStatus::Unknown) {
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::Nodes,
                key: key.clone(),
                body: ready_unknown(node, &stamp),
            }]);
        }
        if !node.unreachable {
            plan.steps.push(vec![Action::Patch {
                resource: Resource::Nodes,
                key: key.clone(),
                patch: taint_patch(node, &stamp),
            }]);
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_views::LeaseView;
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
