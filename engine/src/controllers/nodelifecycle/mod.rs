//! Node lifecycle: a Node whose Lease has not changed for the grace period gets its `Ready`
//! (and pressure) conditions `Unknown`; its conditions are mirrored as `NoSchedule` taints; a
//! Node not Ready is tainted `NoExecute` (`not-ready` or `unreachable`), at its zone's pace
//! and not at all while every zone is dark; a Node Ready again loses them. Silence is measured
//! on the monotonic clock from when the shard last saw the Lease change, never by comparing
//! `renewTime` with the wall clock. Marking a Node and tainting it `NoExecute` are destructive
//! and time-based, so every such decision needs its own barrier (the cache must be current
//! *now* for "not renewed" to be true).

mod evictions;
mod health;
mod taints;
mod zones;

pub use evictions::{Evictions, Grant, HELD_RETRY, SURVEY_PERIOD, TOKEN_HELD_AT_MOST, ZoneReport};
pub use health::{SILENT_CONDITIONS, conditions_unknown};
pub use taints::{
    DISK_PRESSURE_TAINT, MEMORY_PRESSURE_TAINT, NETWORK_UNAVAILABLE_TAINT, NOT_READY_TAINT,
    PID_PRESSURE_TAINT, UNSCHEDULABLE_TAINT, has_taint, no_schedule_wanted, taints_after,
};
pub use zones::{EXCLUDE_DISRUPTION_LABEL, EvictionRates, ZoneState, zone_key};

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::labels::LabelSelector;
use crate::object::Object;
use crate::reconcile_error::ensure_well_formed;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::views::nodes::{ConditionStatus, NodeView, UNREACHABLE_TAINT};
use serde_json::json;
use smallvec::SmallVec;
use std::sync::Arc;
use std::time::Duration;

/// kube-controller-manager's `--node-monitor-grace-period` default.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(40);

/// The controller, with its grace period, the Nodes it manages and its zones' pace. Its
/// clones (one per shard) share the zones' buckets.
#[derive(Clone, Debug)]
pub struct NodeLifecycleController {
    /// How long a Lease may stay unchanged before its Node is marked.
    pub grace_period: Duration,
    /// Only Nodes whose labels it selects are marked (`--node-selector`, so a canary manages
    /// a labelled pool while the incumbent keeps the rest); empty selects every Node.
    pub node_selector: Arc<LabelSelector>,
    /// The zones' states and `NoExecute` buckets.
    pub evictions: Arc<Evictions>,
}

impl Default for NodeLifecycleController {
    fn default() -> Self {
        Self {
            grace_period: DEFAULT_GRACE_PERIOD,
            node_selector: Arc::default(),
            evictions: Arc::default(),
        }
    }
}

fn unbuildable(key: &ObjectKey, message: &str) -> ReconcileError {
    ReconcileError::Unbuildable {
        controller: "nodelifecycle",
        key: key.clone(),
        message: message.to_string(),
    }
}

impl NodeLifecycleController {
    /// The `NoExecute` taint `node` should carry (with whether adding it is a new decision),
    /// or `Err(wait)` when its zone has no token for it yet.
    fn no_execute(
        &self,
        node: &NodeView,
        lease_silent: bool,
        ctx: &Context,
    ) -> Result<Option<(&'static str, bool)>, Duration> {
        let zone = zone_key(&node.labels);
        let name = node.key.name();
        let (wanted, other) = match node.conditions.ready {
            Some(ConditionStatus::False) => (NOT_READY_TAINT, UNREACHABLE_TAINT),
            Some(ConditionStatus::Unknown) => (UNREACHABLE_TAINT, NOT_READY_TAINT),
            Some(ConditionStatus::True) | None => {
                self.evictions.not_wanted(&zone, name);
                return Ok(None);
            }
        };
        if self.evictions.stopped() {
            return Ok(None);
        }
        if has_taint(node, wanted, "NoExecute") {
            self.evictions.tainted(&zone, name, ctx.now);
            return Ok(Some((wanted, false)));
        }
        if has_taint(node, other, "NoExecute") {
            // Already evicting: the other reason replaces it at once, as upstream swaps them.
            return Ok(Some((wanted, true)));
        }
        if wanted == UNREACHABLE_TAINT && !lease_silent {
            // `Unknown` with a Lease renewed since: the kubelet is back and about to post its
            // status; evicting now would evict from a live Node.
            self.evictions.not_wanted(&zone, name);
            return Ok(None);
        }
        match self.evictions.take(&zone, name, ctx.now) {
            Grant::Now => Ok(Some((wanted, true))),
            Grant::After(wait) => Err(wait),
            Grant::Stopped => Ok(None),
        }
    }
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
        if node.terminating {
            return Ok(Plan::default());
        }
        self.evictions.survey(ctx.now, || {
            cache
                .nodes
                .iter()
                .filter(|n| self.node_selector.matches(&n.labels))
        });
        // Silence counts from the Lease's last change seen, and from the end of a disruption
        // of every zone at the latest (upstream then gives every Node a fresh grace period).
        let heard_from = cache.lease_observed_at(&node.lease_key()).map(|seen| {
            match self.evictions.resumed_at() {
                Some(resumed) => seen.max(resumed),
                None => seen,
            }
        });
        let silent_for = heard_from.map(|at| ctx.now.saturating_duration_since(at));
        let lease_silent = silent_for.is_some_and(|d| d >= self.grace_period);
        let rests_on = vec![(Resource::Leases, node.lease_key())];
        let stamp = crate::time::format_rfc3339(ctx.unix_secs);
        if lease_silent && node.conditions.ready != Some(ConditionStatus::Unknown) {
            // The taints follow once this write is seen, from the Node as written: a second
            // write in this decision could not carry the Node's resourceVersion.
            return Ok(Plan {
                destructive: true,
                // "Not renewed" is a claim about the Lease: a live read on a lagging cache must
                // see the Lease's version, not only the Node's, or a renewal the cache missed
                // goes unnoticed.
                rests_on,
                steps: vec![vec![Action::UpdateStatus {
                    resource: Resource::Nodes,
                    key: key.clone(),
                    body: conditions_unknown(node, &stamp)?,
                }]],
                ..Plan::default()
            });
        }
        let mut plan = Plan::default();
        let no_schedule = no_schedule_wanted(&node.conditions, node.unschedulable);
        let no_execute = match self.no_execute(node, lease_silent, ctx) {
            Ok(taint) => taint,
            Err(wait) => {
                plan.requeue_after = Some(wait);
                // Keep the one it has until the token comes (none: it waits for one).
                None
            }
        };
        if let Some((_, true)) = no_execute {
            plan.destructive = true;
            plan.rests_on = rests_on;
            // Seen tainted, the Node hands its zone's token on; its own write wakes nothing, so
            // it looks again soon.
            plan.requeue_after = Some(HELD_RETRY);
        }
        if let Some(taints) = taints_after(node, &no_schedule, no_execute.map(|(k, _)| k), &stamp) {
            let mut patch = json!({"spec": {"taints": taints}});
            if let Some(rv) = &node.resource_version {
                // A taint another writer adds meanwhile is not overwritten: `409`, and the key
                // decides again from the Node as it is.
                patch["metadata"] = json!({"resourceVersion": rv.to_string()});
            }
            plan.steps.push(vec![Action::Patch {
                resource: Resource::Nodes,
                key: key.clone(),
                patch,
            }]);
        }
        let recheck = match (node.conditions.ready, silent_for) {
            // Not Ready: looked at every survey period, for its zone's pace and for every zone
            // going dark (its `NoExecute` taint then goes).
            (Some(ConditionStatus::False | ConditionStatus::Unknown), _) => Some(SURVEY_PERIOD),
            (_, Some(silent)) => {
                Some(self.grace_period.saturating_sub(silent) + Duration::from_millis(10))
            }
            // No Lease seen yet: nothing to measure from; look again after a grace period.
            (_, None) => Some(self.grace_period),
        };
        plan.requeue_after = match (plan.requeue_after, recheck) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(plan)
    }
}

#[cfg(test)]
mod tests;
