//! `spec.persistentVolumeClaimRetentionPolicy` as upstream v1.36 keeps it: the policy is a
//! statement about a claim's ownerReferences, and the garbage collector does the deleting.
//!
//! | whenScaled | whenDeleted | a wanted Pod's claim | a condemned Pod's claim |
//! |------------|-------------|----------------------|-------------------------|
//! | Retain     | Retain      | no reference         | no reference            |
//! | Retain     | Delete      | the set              | the set                 |
//! | Delete     | Retain      | no reference         | the Pod                 |
//! | Delete     | Delete      | the set              | the Pod                 |
//!
//! Each reference is a controller reference (upstream's `addControllerRef`). A claim is left
//! alone when it holds a stale reference (one naming the set or the Pod with another UID: an
//! earlier incarnation's, which the garbage collector is about to act on), and under a policy
//! other than Retain/Retain it gets no reference of ours while another controller owns it
//! (upstream's `hasUnexpectedController`); references of ours are then removed.

use crate::action::Action;
use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::object::CustomObject;
use crate::resource::Resource;
use crate::views::statefulset::{ClaimTemplate, Retention, StatefulSetView};
use crate::views::volume_claim::{OwnerReference, VolumeClaim};
use serde_json::json;

/// The Pod a claim is judged for: its name, and its UID (empty for one not created yet, so that
/// any reference to its name is stale, as upstream judges a Pod it is about to create).
#[derive(Clone, Copy, Debug)]
pub(super) struct PodRef<'a> {
    pub name: &'a str,
    pub uid: &'a str,
}

/// The name of `ordinal`'s claim from `template` (upstream's `getPersistentVolumeClaimName`).
pub(super) fn claim_name(
    template: &ClaimTemplate,
    set: &StatefulSetView,
    ordinal: usize,
) -> String {
    format!("{}-{}-{ordinal}", template.name, set.key.name())
}

/// The cached claim of `ordinal` from `template`, if any.
pub(super) fn cached_claim<'c>(
    cache: &'c ShardCache,
    set: &StatefulSetView,
    template: &ClaimTemplate,
    ordinal: usize,
) -> Option<&'c CustomObject> {
    let key = ObjectKey::new(
        set.key.namespace_arc().clone(),
        claim_name(template, set, ordinal),
    );
    cache.custom(Resource::PersistentVolumeClaims, &key)
}

fn references(claim: &CustomObject) -> &[OwnerReference] {
    claim
        .get::<VolumeClaim>()
        .map_or(&[], VolumeClaim::owner_references)
}

const SET_API_VERSION: &str = "apps/v1";
const SET_KIND: &str = "StatefulSet";
const POD_API_VERSION: &str = "v1";
const POD_KIND: &str = "Pod";

fn names_set(r: &OwnerReference, set: &StatefulSetView) -> bool {
    r.names(SET_API_VERSION, SET_KIND, set.key.name())
}

fn names_pod(r: &OwnerReference, pod: PodRef<'_>) -> bool {
    r.names(POD_API_VERSION, POD_KIND, pod.name)
}

/// Whether the first reference naming the owner carries another UID (upstream's
/// `hasStaleOwnerRef`).
fn stale(refs: &[OwnerReference], names: impl Fn(&OwnerReference) -> bool, uid: &str) -> bool {
    refs.iter().find(|r| names(r)).is_some_and(|r| r.uid != uid)
}

/// Whether some reference carries `uid` (upstream's `hasOwnerRef`); a Pod not created yet has
/// none.
fn has_ref(refs: &[OwnerReference], uid: &str) -> bool {
    !uid.is_empty() && refs.iter().any(|r| r.uid == uid)
}

fn retains_all(set: &StatefulSetView) -> bool {
    let p = set.claim_retention;
    p.when_scaled == Retention::Retain && p.when_deleted == Retention::Retain
}

/// Another controller owns the claim, or a reference of ours names an older incarnation
/// (upstream's `hasUnexpectedController`); never under Retain/Retain, where it does not matter
/// who else manages the claim.
fn unexpected_controller(refs: &[OwnerReference], set: &StatefulSetView, pod: PodRef<'_>) -> bool {
    if retains_all(set) {
        return false;
    }
    refs.iter().any(|r| {
        if names_set(r, set) {
            *r.uid != *set.uid.text()
        } else if names_pod(r, pod) {
            r.uid != pod.uid
        } else {
            r.is_controller()
        }
    })
}

/// The references the policy wants of ours: (the set, the Pod).
fn wanted(set: &StatefulSetView, condemned: bool) -> (bool, bool) {
    let p = set.claim_retention;
    let by_scale = p.when_scaled == Retention::Delete && condemned;
    let by_set = p.when_deleted == Retention::Delete && !by_scale;
    (by_set, by_scale)
}

/// Whether the claim's references already say what the policy says (upstream's
/// `isClaimOwnerUpToDate`; a claim to leave alone counts as up to date).
fn up_to_date(
    refs: &[OwnerReference],
    set: &StatefulSetView,
    pod: PodRef<'_>,
    condemned: bool,
) -> bool {
    if stale(refs, |r| names_set(r, set), &set.uid.text())
        || stale(refs, |r| names_pod(r, pod), pod.uid)
    {
        return true;
    }
    let set_uid_text = set.uid.text();
    let (set_uid, pod_uid) = (&*set_uid_text, pod.uid);
    if unexpected_controller(refs, set, pod) {
        return !(has_ref(refs, set_uid) || has_ref(refs, pod_uid));
    }
    let not_controlling = refs.iter().any(|r| {
        (r.uid == set_uid || (!pod_uid.is_empty() && r.uid == pod_uid)) && !r.is_controller()
    });
    if not_controlling {
        return false;
    }
    let (by_set, by_pod) = wanted(set, condemned);
    has_ref(refs, set_uid) == by_set && has_ref(refs, pod_uid) == by_pod
}

/// The references with ours rewritten to the policy (upstream's
/// `updateClaimOwnerRefForSetAndPod`): every reference naming the set or the Pod removed, then
/// the wanted ones added as controller references, unless another controller owns the claim.
fn rewritten(
    refs: &[OwnerReference],
    set: &StatefulSetView,
    pod: PodRef<'_>,
    condemned: bool,
) -> Vec<OwnerReference> {
    let unexpected = unexpected_controller(refs, set, pod);
    let mut kept: Vec<OwnerReference> = refs
        .iter()
        .filter(|r| !names_set(r, set) && !names_pod(r, pod))
        .cloned()
        .collect();
    if unexpected {
        return kept;
    }
    let (by_set, by_pod) = wanted(set, condemned);
    if by_pod {
        kept.push(OwnerReference::controller_to(
            POD_API_VERSION,
            POD_KIND,
            pod.name,
            pod.uid,
        ));
    }
    if by_set {
        kept.push(OwnerReference::controller_to(
            SET_API_VERSION,
            SET_KIND,
            set.key.name(),
            &set.uid.text(),
        ));
    }
    kept
}

/// Whether the claim at `ordinal` wants the set as its controller when it is created: a claim is
/// created for a wanted Pod, which the policy makes the set's only under `whenDeleted: Delete`.
/// (Upstream creates it bare and gives it that reference right after the Pod; this is the same
/// end, one write fewer.)
pub(super) fn owned_by_set_at_creation(set: &StatefulSetView) -> bool {
    wanted(set, false).0
}

/// The patches that bring the cached claims of `pod` (at `ordinal`) to the policy (upstream's
/// `ClaimsMatchRetentionPolicy` and `UpdatePodClaimForRetentionPolicy`): a JSON merge patch of
/// the whole `ownerReferences` list, preconditioned on the claim's UID and cached
/// resourceVersion, so a claim that changed since it was read is refused (409), as upstream's
/// Update is.
pub(super) fn bring_to_policy(
    cache: &ShardCache,
    set: &StatefulSetView,
    ordinal: usize,
    pod: PodRef<'_>,
) -> Vec<Action> {
    let condemned = !set.wanted().contains(&ordinal);
    set.claim_templates
        .iter()
        .filter_map(|template| cached_claim(cache, set, template, ordinal))
        .filter(|claim| claim.malformed.is_none() && !claim.terminating)
        .filter(|claim| !up_to_date(references(claim), set, pod, condemned))
        .map(|claim| {
            let refs = rewritten(references(claim), set, pod, condemned);
            let mut metadata = json!({"uid": claim.uid.text(), "ownerReferences": refs});
            if let Some(rv) = claim.resource_version {
                metadata["resourceVersion"] = json!(rv.to_string());
            }
            Action::Patch {
                resource: Resource::PersistentVolumeClaims,
                key: claim.key.clone(),
                patch: json!({ "metadata": metadata }),
            }
        })
        .collect()
}

/// Why `ordinal`'s Pod may not be created now, if a claim stands in its way: one being deleted
/// (upstream's `createPersistentVolumeClaims` refuses it), or, under `whenScaled: Delete`, one
/// still owned by an earlier Pod of that name, which the garbage collector is about to delete
/// (upstream's `PodClaimIsStale`). Its deletion wakes the set again.
pub(super) fn blocked(cache: &ShardCache, set: &StatefulSetView, ordinal: usize) -> bool {
    let pod_name = format!("{}-{ordinal}", set.key.name());
    let pod = PodRef {
        name: &pod_name,
        uid: "",
    };
    set.claim_templates
        .iter()
        .filter_map(|template| cached_claim(cache, set, template, ordinal))
        .any(|claim| {
            claim.terminating
                || (set.claim_retention.when_scaled == Retention::Delete
                    && stale(references(claim), |r| names_pod(r, pod), pod.uid))
        })
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
