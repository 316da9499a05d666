//! DaemonSet: one Pod per eligible Node (node selector, node affinity by name, tolerated taints),
//! placed with `spec.nodeName`; surplus Pods on a Node and Pods on Nodes that no longer want them
//! are deleted; a template change rolls out by deleting old-revision Pods, at most
//! `maxUnavailable` Nodes without a ready Pod at a time, or with `maxSurge` by starting the
//! updated Pod beside the old one on at most that many Nodes at a time, the old one deleted once
//! the new one is ready. Nodes reach every shard (they are
//! broadcast); each DaemonSet is reconciled in its own shard.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::controllers::claimants;
use crate::controllers::history::{self, Owner, UpdateRevision};
use crate::controllers::revision_claim::{RevisionOwner, owners_of_orphan_revision};
use crate::key::ObjectKey;
use crate::object::{Object, PodView};
use crate::pod_template::{
    ControllerRef, NewMeta, NewObject, SpecOnly, owner_object, spec_of_template, to_body,
};
use crate::reconcile_error::ensure_well_formed;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::views::daemonset::{DaemonSetStatus, DaemonSetView};
use serde_json::{Map, Value, json};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// The label carrying a DaemonSet Pod's template revision (the revision's hash).
pub const REVISION_LABEL: &str = history::HASH_LABEL;
/// The label carrying the template generation a Pod was made at, as upstream sets it.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

/// The template generation the API server recorded on `ds`, if any.
fn template_generation(ds: &DaemonSetView) -> Option<&str> {
    ds.template_generation.as_deref()
}

/// Whether `pod` was made from `ds`'s current template, as upstream's `IsPodUpdated` decides:
/// its hash label names the current revision, or its template generation is the set's.
fn is_updated(pod: &PodView, hash: &str, generation: Option<&str>) -> bool {
    pod.labels.get(REVISION_LABEL) == Some(hash)
        || generation.is_some_and(|g| pod.labels.get(TEMPLATE_GENERATION_LABEL) == Some(g))
}

/// The controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct DaemonSetController;

fn pod_for(ds: &DaemonSetView, node: &str, revision: &str) -> Result<Action, ReconcileError> {
    let mut labels = ds.template.labels.clone();
    labels.insert(REVISION_LABEL.into(), revision.to_string());
    if let Some(generation) = template_generation(ds) {
        labels.insert(TEMPLATE_GENERATION_LABEL.into(), generation.to_string());
    }
    let mut spec = spec_of_template(&ds.pod_template).clone();
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
            owner_references: vec![ControllerRef::to(
                Resource::DaemonSets,
                ds.key.name(),
                &ds.uid,
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
    let mut body = owner_object("daemonset", &ds.key, &ds.raw)?;
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

/// `ds` as the owner that claims ControllerRevisions.
fn revision_owner(ds: &DaemonSetView) -> RevisionOwner<'_> {
    RevisionOwner {
        resource: Resource::DaemonSets,
        key: &ds.key,
        uid: &ds.uid,
        selector: &ds.selector,
        terminating: ds.terminating,
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
        &[
            Resource::DaemonSets,
            Resource::Pods,
            Resource::Nodes,
            Resource::ControllerRevisions,
        ]
    }

    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::DaemonSet(ds) => keys.push(ds.key.clone()),
            Object::Pod(pod) => keys.extend(pod.owner_key("DaemonSet")),
            Object::Custom(revision) if revision.resource == Resource::ControllerRevisions => {
                keys.extend(revision.owner_key("DaemonSet"))
            }
            // A Node change concerns every DaemonSet: each shard queues those it has.
            Object::Node(_) => {}
            _ => {}
        }
    }

    fn keys_for_cache(&self, object: &Object, cache: &ShardCache, keys: &mut Vec<ObjectKey>) {
        if let Object::Node(_) = object {
            keys.extend(cache.daemonsets.iter().map(|d| d.key.clone()));
        }
        if let Object::Custom(revision) = object {
            owners_of_orphan_revision(revision, cache.daemonsets.iter().map(revision_owner), keys);
        }
        claimants::owners_of(self.primary(), object, cache, keys);
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
        let revisions = revision_owner(ds).claim(cache);
        let recorded = revisions.revisions;
        let UpdateRevision {
            name: current,
            hash: revision,
            create: create_revision,
        } = history::update_revision(
            &recorded,
            Owner {
                controller: self.name(),
                resource: Resource::DaemonSets,
                key: &ds.key,
                uid: &ds.uid,
                template: &ds.pod_template,
                template_labels: &ds.template.labels,
            },
        )?;
        let generation = template_generation(ds);
        let mut by_node: BTreeMap<&str, Vec<&PodView>> = BTreeMap::new();
        let mut unplaced: Vec<&PodView> = Vec::new();
        for pod in cache.pods.owned_by(&ds.uid) {
            ensure_well_formed(self.name(), pod)?;
        }
        let claimed = claimants::daemonset(ds).claim(cache, |_| true, |_| true);
        for pod in claimed.pods {
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
        let budgets = ds.rollout_budgets(eligible.len());
        let surge = !ds.on_delete && budgets.max_surge > 0;
        let mut creates = Vec::new();
        let mut deletes: Vec<Action> = unplaced.iter().map(|p| delete(p)).collect();
        let mut outdated: Vec<&PodView> = Vec::new();
        let mut unavailable = 0usize;
        let mut surging = 0usize;
        let mut surge_candidates: Vec<&str> = Vec::new();
        if !ds.terminating {
            for node in &eligible {
                let Some(pods) = by_node.get(node).filter(|pods| !pods.is_empty()) else {
                    creates.push(pod_for(ds, node, &revision)?);
                    unavailable += 1;
                    continue;
                };
                let mut pods = pods.to_vec();
                pods.sort_by_key(|p| (p.created, p.key.name().to_string()));
                if !surge {
                    if let Some((kept, surplus)) = pods.split_first() {
                        deletes.extend(surplus.iter().map(|p| delete(p)));
                        if !kept.ready {
                            unavailable += 1;
                        } else if !is_updated(kept, &revision, generation) {
                            outdated.push(kept);
                        }
                    }
                    continue;
                }
                // Surge (upstream's podsShouldBeOnNode and rollingUpdate with maxSurge): the
                // oldest updated and the oldest old Pod may run side by side; the old one goes
                // once the updated one is ready, or at once if it is not ready itself.
                let new = pods
                    .iter()
                    .copied()
                    .find(|p| is_updated(p, &revision, generation));
                let old = pods
                    .iter()
                    .copied()
                    .find(|p| !is_updated(p, &revision, generation));
                let kept = |p: &&PodView| {
                    new.is_some_and(|n| n.uid == p.uid) || old.is_some_and(|o| o.uid == p.uid)
                };
                deletes.extend(pods.iter().filter(|p| !kept(p)).map(|p| delete(p)));
                match (new, old) {
                    (Some(new), Some(old)) => {
                        surging += 1;
                        if !old.ready || new.ready {
                            deletes.push(delete(old));
                        }
                    }
                    (None, Some(old)) if old.ready => surge_candidates.push(node),
                    (None, Some(_)) => creates.push(pod_for(ds, node, &revision)?),
                    (Some(new), None) if !new.ready => unavailable += 1,
                    _ => {}
                }
            }
        }
        if surge {
            // Upstream takes them in map order; by name, so a replay decides alike.
            surge_candidates.sort_unstable();
            let room = budgets.max_surge.saturating_sub(surging);
            for node in surge_candidates.iter().take(room) {
                creates.push(pod_for(ds, node, &revision)?);
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
        if !ds.on_delete && !surge {
            let budget = budgets.max_unavailable.saturating_sub(unavailable);
            deletes.extend(outdated.iter().take(budget).map(|p| delete(p)));
        }
        let mut plan = Plan {
            rests_on,
            adopts: claimed.adopted > 0 || revisions.adopted > 0,
            ..Plan::default()
        };
        let claims: Vec<Action> = revisions
            .patches
            .into_iter()
            .chain(claimed.patches)
            .collect();
        if !claims.is_empty() {
            plan.steps.push(claims);
        }
        // The revision is written before any Pod that names it, as upstream's history comes
        // before its Pods.
        if let Some(create) = create_revision {
            plan.steps.push(vec![create]);
        }
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
            .filter(|p| is_updated(p, &revision, generation))
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
        let pod_hashes = |hash: &str| {
            by_node
                .values()
                .flatten()
                .any(|p| p.labels.get(REVISION_LABEL) == Some(hash))
        };
        let cleaned = history::clean_up_daemonset_history(
            &ds.key,
            &recorded,
            &current,
            pod_hashes,
            ds.revision_history_limit,
        );
        if !cleaned.is_empty() {
            plan.steps.push(cleaned);
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests;
