//! StatefulSet: ordinal Pods `<set>-0..n-1` with their claims from `volumeClaimTemplates`,
//! created in order (OrderedReady: the next only once its predecessor is Running and Ready) or
//! all at once (Parallel); scale-down from the highest ordinal (one at a time under OrderedReady);
//! the update revision found in the set's ControllerRevisions by the template it records, or
//! written (see [`history`]); a rolling update with `partition` and `maxUnavailable`; the claims'
//! ownerReferences kept to `persistentVolumeClaimRetentionPolicy` (see [`retention`]).

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::controllers::claimants;
use crate::controllers::history::{self, Owner, UpdateRevision};
use crate::controllers::revision_claim::{RevisionOwner, owners_of_orphan_revision};
use crate::key::ObjectKey;
use crate::object::{CustomObject, Object, PodPhase, PodView};
use crate::pod_template::{ControllerRef, NewMeta, NewObject, SpecOnly, owner_object, to_body};
use crate::reconcile_error::ensure_well_formed;
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::views::statefulset::{StatefulSetStatus, StatefulSetView};
use crate::views::volume_claim::VolumeClaim;
use serde::Serialize;
use serde_json::{Value, json};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// The label carrying a Pod's revision.
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// The label naming a StatefulSet Pod.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label carrying a StatefulSet Pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// The controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct StatefulSetController;

fn running_and_ready(pod: &PodView) -> bool {
    pod.phase == PodPhase::Running && pod.ready && !pod.terminating
}

/// The name of the revision this controller writes for `set`'s template when no cached revision
/// records it (see [`history::update_revision`]).
pub fn revision_name(set: &StatefulSetView) -> String {
    history::new_revision_name(&set.key, &set.pod_template).0
}

/// At most this many Pods (and their claims) are created per sync under `Parallel`, as
/// upstream's `burstReplicas`: a set of two billion replicas costs a bounded plan.
pub const BURST_REPLICAS: usize = 500;

fn owner(set: &StatefulSetView) -> Vec<ControllerRef<'_>> {
    vec![ControllerRef::to(
        Resource::StatefulSets,
        set.key.name(),
        &set.uid,
    )]
}

/// The claims of `ordinal`'s Pod, about to be created: those missing from the cache created by
/// name (one the cache has not seen yet answers AlreadyExists, which is success) with the
/// references the retention policy gives a wanted Pod's claim, those cached brought to the
/// policy. `None` when a claim stands in the way of the Pod ([`retention::blocked`]).
fn claims(
    set: &StatefulSetView,
    ordinal: usize,
    cache: &ShardCache,
) -> Result<Option<Vec<Action>>, ReconcileError> {
    if retention::blocked(cache, set, ordinal) {
        return Ok(None);
    }
    let pod_name = format!("{}-{ordinal}", set.key.name());
    let mut actions = retention::bring_to_policy(
        cache,
        set,
        ordinal,
        PodRef {
            name: &pod_name,
            uid: "",
        },
    );
    for template in set.claim_templates.iter() {
        if retention::cached_claim(cache, set, template, ordinal).is_some() {
            continue;
        }
        let mut labels = set.selector.match_labels.clone();
        labels.extend(template.labels.clone());
        let body = NewObject {
            api_version: "v1",
            kind: "PersistentVolumeClaim",
            metadata: NewMeta {
                name: Some(claim_name(template, set, ordinal)),
                generate_name: None,
                namespace: set.key.namespace(),
                labels,
                annotations: None,
                finalizers: Vec::new(),
                owner_references: if retention::owned_by_set_at_creation(set) {
                    owner(set)
                } else {
                    Vec::new()
                },
            },
            body: SpecOnly {
                spec: &template.spec,
            },
        };
        actions.push(Action::Create {
            resource: Resource::PersistentVolumeClaims,
            namespace: set.key.namespace_arc().clone(),
            body: to_body("statefulset", &set.key, &body)?,
        });
    }
    Ok(Some(actions))
}

/// The patches that bring the claims of the live `pods` to the retention policy, in ordinal
/// order.
fn claim_fixes<'a>(
    set: &StatefulSetView,
    cache: &ShardCache,
    pods: impl IntoIterator<Item = &'a PodView>,
) -> Vec<Action> {
    pods.into_iter()
        .filter_map(|pod| Some((set.ordinal_of(pod.key.name())?, pod)))
        .flat_map(|(ordinal, pod)| {
            retention::bring_to_policy(
                cache,
                set,
                ordinal,
                PodRef {
                    name: pod.key.name(),
                    uid: &pod.uid.text(),
                },
            )
        })
        .collect()
}

fn pod_for(
    set: &StatefulSetView,
    ordinal: usize,
    revision: &str,
    template: Template<'_>,
) -> Result<Action, ReconcileError> {
    let name = format!("{}-{ordinal}", set.key.name());
    let mut labels = template.labels;
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    labels.insert(REVISION_LABEL.into(), revision.to_string());
    let mut spec = template.spec.clone();
    spec.insert("hostname".into(), json!(name));
    if let Some(service) = &set.service_name {
        spec.insert("subdomain".into(), json!(service));
    }
    if !set.claim_templates.is_empty() {
        let mut volumes = match spec.remove("volumes") {
            Some(Value::Array(vs)) => vs,
            _ => Vec::new(),
        };
        volumes.extend(set.claim_templates.iter().map(|t| {
            json!({
                "name": t.name,
                "persistentVolumeClaim": {"claimName": claim_name(t, set, ordinal)},
            })
        }));
        spec.insert("volumes".into(), Value::Array(volumes));
    }
    let body = NewObject {
        api_version: "v1",
        kind: "Pod",
        metadata: NewMeta {
            name: Some(name),
            generate_name: None,
            namespace: set.key.namespace(),
            labels,
            annotations: Some(template.annotations),
            finalizers: Vec::new(),
            owner_references: owner(set),
        },
        body: SpecOnly { spec: &spec },
    };
    Ok(Action::Create {
        resource: Resource::Pods,
        namespace: set.key.namespace_arc().clone(),
        body: to_body("statefulset", &set.key, &body)?,
    })
}

/// The status the controller writes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusBody<'a> {
    replicas: i32,
    ready_replicas: i32,
    current_replicas: i32,
    updated_replicas: i32,
    available_replicas: i32,
    observed_generation: i64,
    current_revision: Option<&'a str>,
    update_revision: Option<&'a str>,
}

fn with_status(set: &StatefulSetView, status: &StatefulSetStatus) -> Result<Value, ReconcileError> {
    let new_status = to_body(
        "statefulset",
        &set.key,
        &StatusBody {
            replicas: status.replicas,
            ready_replicas: status.ready_replicas,
            current_replicas: status.current_replicas,
            updated_replicas: status.updated_replicas,
            available_replicas: status.available_replicas,
            observed_generation: status.observed_generation,
            current_revision: status.current_revision.as_deref(),
            update_revision: status.update_revision.as_deref(),
        },
    )?;
    let mut body = owner_object("statefulset", &set.key, &set.raw)?;
    let Value::Object(object) = &mut body else {
        return Err(ReconcileError::Unbuildable {
            controller: "statefulset",
            key: set.key.clone(),
            message: "the cached StatefulSet is not a JSON object".into(),
        });
    };
    object.insert("status".into(), new_status);
    Ok(body)
}

fn delete(pod: &PodView) -> Action {
    Action::Delete {
        resource: Resource::Pods,
        key: pod.key.clone(),
        uid: pod.uid.clone(),
    }
}

/// `set` as the owner that claims ControllerRevisions.
fn revision_owner(set: &StatefulSetView) -> RevisionOwner<'_> {
    RevisionOwner {
        resource: Resource::StatefulSets,
        key: &set.key,
        uid: &set.uid,
        selector: &set.selector,
        terminating: set.terminating,
    }
}

impl Reconciler for StatefulSetController {
    fn name(&self) -> &'static str {
        "statefulset"
    }
    fn gate_name(&self) -> &'static str {
        "StatefulSet"
    }
    fn primary(&self) -> Resource {
        Resource::StatefulSets
    }
    fn reads(&self) -> &[Resource] {
        &[
            Resource::StatefulSets,
            Resource::Pods,
            Resource::ControllerRevisions,
            Resource::PersistentVolumeClaims,
        ]
    }

    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::StatefulSet(set) => keys.push(set.key.clone()),
            Object::Pod(pod) => keys.extend(pod.owner_key("StatefulSet")),
            Object::Custom(revision) if revision.resource == Resource::ControllerRevisions => {
                keys.extend(revision.owner_key("StatefulSet"))
            }
            Object::Custom(claim) if claim.resource == Resource::PersistentVolumeClaims => keys
                .extend(
                    claim
                        .get::<VolumeClaim>()
                        .and_then(VolumeClaim::statefulset_name)
                        .map(|set| ObjectKey::new(claim.key.namespace_arc().clone(), set)),
                ),
            Object::ReplicaSet(_)
            | Object::Node(_)
            | Object::Lease(_)
            | Object::Job(_)
            | Object::DaemonSet(_)
            | Object::Custom(_) => {}
        }
    }

    fn keys_for_cache(&self, object: &Object, cache: &ShardCache, keys: &mut Vec<ObjectKey>) {
        if let Object::Custom(revision) = object {
            owners_of_orphan_revision(
                revision,
                cache.statefulsets.iter().map(revision_owner),
                keys,
            );
        }
        claimants::owners_of(self.primary(), object, cache, keys);
        if let Object::Custom(claim) = object
            && claim.resource == Resource::PersistentVolumeClaims
            && claim
                .get::<VolumeClaim>()
                .and_then(VolumeClaim::statefulset_name)
                .is_none()
        {
            sets_named_by_claim(claim, cache, keys);
        }
    }

    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &ShardCache,
        ctx: &Context,
    ) -> Result<Plan, ReconcileError> {
        let Some(set) = cache.statefulsets.get(key) else {
            return Ok(Plan::default());
        };
        ensure_well_formed(self.name(), set)?;
        let claimed_revisions = revision_owner(set).claim(cache);
        let recorded = claimed_revisions.revisions;
        let UpdateRevision {
            name: update_revision,
            create: create_revision,
            ..
        } = history::update_revision(
            &recorded,
            Owner {
                controller: self.name(),
                resource: Resource::StatefulSets,
                key: &set.key,
                uid: &set.uid,
                template: &set.pod_template,
                template_labels: &set.template.labels,
            },
        )?;
        // The revision the Pods below the partition keep: the one the status names, until the
        // rollout completes (a set without one starts at the update revision).
        let current_revision = set
            .status
            .current_revision
            .clone()
            .unwrap_or_else(|| update_revision.clone());
        for pod in cache.pods.owned_by(&set.uid) {
            ensure_well_formed(self.name(), pod)?;
        }
        let claimed =
            claimants::statefulset(set).claim(cache, |_| true, |p| claimants::is_member_of(set, p));
        let mut pods: BTreeMap<usize, &PodView> = BTreeMap::new();
        for pod in claimed.pods {
            if let Some(ordinal) = set.ordinal_of(pod.key.name()) {
                pods.insert(ordinal, pod);
            }
        }
        let wanted = set.wanted();
        let condemned: Vec<&PodView> = pods
            .range(..wanted.start)
            .chain(pods.range(wanted.end..))
            .map(|(_, p)| *p)
            .collect();
        let current_template = (current_revision != update_revision)
            .then(|| {
                recorded
                    .iter()
                    .find(|r| r.object.key.name() == current_revision)
                    .and_then(|r| r.revision.template())
            })
            .flatten();
        let revisions = Revisions {
            current: &current_revision,
            current_template,
            update: &update_revision,
        };
        let mut plan = Plan {
            adopts: claimed.adopted > 0 || claimed_revisions.adopted > 0,
            ..Plan::default()
        };
        let claims: Vec<Action> = claimed_revisions
            .patches
            .into_iter()
            .chain(claimed.patches)
            .collect();
        if !claims.is_empty() {
            plan.steps.push(claims);
        }
        if let Some(create) = create_revision {
            plan.steps.push(vec![create]);
        }
        if !set.terminating {
            let replicas_settled = if set.parallel {
                burst_replicas(set, cache, &pods, &condemned, revisions, &mut plan)?;
                true
            } else {
                ordered_replicas(set, cache, &pods, &condemned, revisions, &mut plan)?
            };
            if replicas_settled {
                let doomed = rolling_update(set, &pods, &update_revision, ctx.unix_secs);
                if !doomed.is_empty() {
                    plan.steps.push(doomed.into_iter().map(delete).collect());
                }
            }
            if let Some(wait) = availability_wait(set, &pods, ctx.unix_secs) {
                plan.requeue_after = Some(wait);
            }
        }
        let status = status_of(set, &pods, revisions, ctx.unix_secs);
        if status != set.status {
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::StatefulSets,
                key: set.key.clone(),
                body: with_status(set, &status)?,
            }]);
        }
        let live = |name: &str| {
            name == current_revision
                || name == update_revision
                || pods
                    .values()
                    .any(|p| p.labels.get(REVISION_LABEL) == Some(name))
        };
        let truncated =
            history::truncate_statefulset_history(&recorded, live, set.revision_history_limit);
        if !truncated.is_empty() {
            plan.steps.push(truncated);
        }
        Ok(plan)
    }
}

/// The current and update revisions' names, and the current one's template when it differs
/// and its ControllerRevision is cached.
#[derive(Clone, Copy)]
struct Revisions<'a> {
    current: &'a str,
    current_template: Option<&'a Value>,
    update: &'a str,
}

/// Whether `pod` has been ready for `spec.minReadySeconds` at `now` (Unix seconds).
fn available(set: &StatefulSetView, pod: &PodView, now: i64) -> bool {
    running_and_ready(pod)
        && (set.min_ready_seconds <= 0
            || pod
                .ready_since
                .is_some_and(|since| since + i64::from(set.min_ready_seconds) <= now))
}

/// How long until a ready Pod becomes available, when one is waiting for `minReadySeconds`.
fn availability_wait(
    set: &StatefulSetView,
    pods: &BTreeMap<usize, &PodView>,
    now: i64,
) -> Option<std::time::Duration> {
    if set.min_ready_seconds <= 0 {
        return None;
    }
    pods.values()
        .filter(|p| running_and_ready(p) && !available(set, p, now))
        .filter_map(|p| p.ready_since)
        .map(|since| since + i64::from(set.min_ready_seconds) - now)
        .min()
        .map(|secs| std::time::Duration::from_secs(u64::try_from(secs.max(1)).unwrap_or(1)))
}

/// Whether `pod` finished (upstream deletes it so its ordinal is created again).
fn finished(pod: &PodView) -> bool {
    matches!(pod.phase, PodPhase::Failed | PodPhase::Succeeded)
}

/// A missing `ordinal`'s claims and Pod, at the revision upstream picks: the current revision
/// below the partition of a rolling update, the update revision otherwise. `None` while a claim
/// stands in the Pod's way.
fn replacement(
    set: &StatefulSetView,
    cache: &ShardCache,
    ordinal: usize,
    revisions: Revisions<'_>,
) -> Result<Option<(Vec<Action>, Action)>, ReconcileError> {
    let Some(claims) = claims(set, ordinal, cache)? else {
        return Ok(None);
    };
    let below_partition = set
        .partition()
        .is_some_and(|partition| ordinal < set.wanted().start + partition);
    if below_partition && revisions.current != revisions.update {
        let Some(template) = revisions.current_template else {
            return Err(ReconcileError::Unbuildable {
                controller: "statefulset",
                key: set.key.clone(),
                message: format!(
                    "ordinal {ordinal} is below the partition and must come back at the current \
                     revision {}, which is not cached",
                    revisions.current
                ),
            });
        };
        let pod = pod_for(
            set,
            ordinal,
            revisions.current,
            Template::recorded(template),
        )?;
        return Ok(Some((claims, pod)));
    }
    Ok(Some((
        claims,
        pod_for(set, ordinal, revisions.update, Template::of_set(set))?,
    )))
}

/// `OrderedReady`: the first wanted ordinal that is missing is created (and nothing after it),
/// a finished Pod is deleted to be created again, an unhealthy one blocks; the claims of the
/// healthy ones before it are brought to the retention policy first, as upstream's per-Pod
/// loop does. Then every condemned Pod's claims are brought to the policy (a Pod that
/// `whenScaled: Delete` condemns must own its claims before it goes, so the garbage collector
/// takes them with it), and the highest condemned ordinal goes, one at a time. True when every
/// wanted Pod is healthy and nothing is condemned: a rolling update may go on.
fn ordered_replicas<'a>(
    set: &StatefulSetView,
    cache: &ShardCache,
    pods: &BTreeMap<usize, &'a PodView>,
    condemned: &[&'a PodView],
    revisions: Revisions<'_>,
    plan: &mut Plan,
) -> Result<bool, ReconcileError> {
    let mut healthy: Vec<&PodView> = Vec::new();
    for ordinal in set.wanted() {
        match pods.get(&ordinal) {
            None => {
                plan.steps.push(claim_fixes(set, cache, healthy));
                if let Some((claims, pod)) = replacement(set, cache, ordinal, revisions)? {
                    plan.steps.push(claims);
                    plan.steps.push(vec![pod]);
                }
                return Ok(false);
            }
            Some(pod) if finished(pod) => {
                plan.steps.push(claim_fixes(set, cache, healthy));
                if !pod.terminating {
                    plan.steps.push(vec![delete(pod)]);
                }
                return Ok(false);
            }
            Some(pod) if !running_and_ready(pod) => {
                plan.steps.push(claim_fixes(set, cache, healthy));
                return Ok(false);
            }
            Some(pod) => healthy.push(pod),
        }
    }
    plan.steps.push(claim_fixes(set, cache, healthy));
    plan.steps
        .push(claim_fixes(set, cache, condemned.iter().copied()));
    if condemned.iter().any(|p| p.terminating) {
        return Ok(false);
    }
    // The highest condemned ordinal goes first, as upstream.
    match condemned
        .iter()
        .max_by_key(|p| set.ordinal_of(p.key.name()))
    {
        Some(highest) => {
            plan.steps.push(vec![delete(highest)]);
            Ok(false)
        }
        None => Ok(true),
    }
}

/// `Parallel`: every missing wanted ordinal at once (up to [`BURST_REPLICAS`]; one whose claim
/// stands in its way waits, the others go), finished Pods deleted, the other live Pods' claims
/// brought to the retention policy, then every condemned Pod's, and every condemned Pod
/// deleted, highest first.
fn burst_replicas<'a>(
    set: &StatefulSetView,
    cache: &ShardCache,
    pods: &BTreeMap<usize, &'a PodView>,
    condemned: &[&'a PodView],
    revisions: Revisions<'_>,
    plan: &mut Plan,
) -> Result<(), ReconcileError> {
    let missing: Vec<usize> = set
        .wanted()
        .filter(|i| !pods.contains_key(i))
        .take(BURST_REPLICAS)
        .collect();
    let mut claim_step = Vec::new();
    let mut creates = Vec::new();
    for &i in &missing {
        if let Some((claims, pod)) = replacement(set, cache, i, revisions)? {
            claim_step.extend(claims);
            creates.push(pod);
        }
    }
    plan.steps.push(claim_step);
    plan.steps.push(creates);
    let (finished_pods, live): (Vec<&PodView>, Vec<&PodView>) = set
        .wanted()
        .filter_map(|i| pods.get(&i).copied())
        .partition(|p| finished(p));
    plan.steps.push(
        finished_pods
            .into_iter()
            .filter(|p| !p.terminating)
            .map(delete)
            .collect(),
    );
    plan.steps.push(claim_fixes(set, cache, live));
    plan.steps
        .push(claim_fixes(set, cache, condemned.iter().copied()));
    let mut doomed: Vec<&PodView> = condemned
        .iter()
        .copied()
        .filter(|p| !p.terminating)
        .collect();
    doomed.reverse();
    plan.steps.push(doomed.into_iter().map(delete).collect());
    Ok(())
}

/// The Pods a rolling update deletes now (upstream v1.36 with `MaxUnavailableStatefulSet`, on
/// by default): with `u` of the wanted Pods unavailable (missing ones count), at most
/// `maxUnavailable - u` Pods at or above the partition that are not at the update revision,
/// highest first. A terminating Pod counts as unavailable here (upstream counts it while it
/// still reports ready), which never lets more than `maxUnavailable` be down at once.
fn rolling_update<'a>(
    set: &StatefulSetView,
    pods: &BTreeMap<usize, &'a PodView>,
    update_revision: &str,
    now: i64,
) -> Vec<&'a PodView> {
    let Some(partition) = set.partition() else {
        return Vec::new();
    };
    let wanted = set.wanted();
    let unavailable = wanted
        .clone()
        .filter(|i| pods.get(i).is_none_or(|p| !available(set, p, now)))
        .count();
    let allowed = set.max_unavailable();
    if unavailable > allowed {
        return Vec::new();
    }
    let first = wanted.start + partition;
    wanted
        .rev()
        .take_while(|i| *i >= first)
        .filter_map(|i| pods.get(&i).copied())
        .filter(|p| p.labels.get(REVISION_LABEL) != Some(update_revision) && !p.terminating)
        .take(allowed - unavailable)
        .collect()
}

/// The status upstream computes: every Pod created counts in `replicas`, running and ready ones
/// in `readyReplicas` (and `availableReplicas` once ready for `minReadySeconds`), live ones by
/// revision in `currentReplicas` and `updatedReplicas`; a rolling update whose Pods are all
/// updated and ready makes the update revision current.
fn status_of(
    set: &StatefulSetView,
    pods: &BTreeMap<usize, &PodView>,
    revisions: Revisions<'_>,
    now: i64,
) -> StatefulSetStatus {
    let count = |f: &dyn Fn(&PodView) -> bool| {
        i32::try_from(pods.values().filter(|p| f(p)).count()).unwrap_or(i32::MAX)
    };
    fn at(revision: &str) -> impl Fn(&PodView) -> bool + '_ {
        move |p: &PodView| !p.terminating && p.labels.get(REVISION_LABEL) == Some(revision)
    }
    let mut status = StatefulSetStatus {
        replicas: count(&|_| true),
        ready_replicas: count(&|p| running_and_ready(p)),
        available_replicas: count(&|p| available(set, p, now)),
        current_replicas: count(&at(revisions.current)),
        updated_replicas: count(&at(revisions.update)),
        observed_generation: set.generation,
        current_revision: Some(revisions.current.to_string()),
        update_revision: Some(revisions.update.to_string()),
    };
    if set.partition().is_some()
        && status.updated_replicas == status.replicas
        && status.ready_replicas == status.replicas
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
    status
}

/// Every cached set that `claim` is named for (`<template>-<set>-<ordinal>`, one of the set's
/// claim templates): a claim without a reference to its set names it only this way, and not
/// unambiguously (`data-my-db-0` is template `data` of `my-db` or template `data-my` of `db`).
fn sets_named_by_claim(claim: &CustomObject, cache: &ShardCache, keys: &mut Vec<ObjectKey>) {
    let Some((stem, ordinal)) = claim.key.name().rsplit_once('-') else {
        return;
    };
    if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return;
    }
    for (dash, _) in stem.match_indices('-') {
        let (template, set) = (&stem[..dash], &stem[dash + 1..]);
        let key = ObjectKey::new(claim.key.namespace_arc().clone(), set);
        if let Some(found) = cache.statefulsets.get(&key)
            && found.claim_templates.iter().any(|t| t.name == template)
        {
            keys.push(key);
        }
    }
}

mod retention;
mod template;

use retention::{PodRef, claim_name};
use template::Template;

#[cfg(test)]
mod tests;
