//! The retention policy, one situation a test: the claims a set creates, the claims of a Pod
//! scale-down condemns, claims left from before, under each of the four policies.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::controllers::statefulset::{REVISION_LABEL, StatefulSetController, revision_name};
use crate::key::{ObjectKey, Uid};
use crate::labels::Labels;
use crate::object::{Object, OwnerRef, PodPhase, PodView};
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::views::statefulset::StatefulSetView;
use serde_json::{Value, json};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::time::Instant;

const POLICIES: [(&str, &str); 4] = [
    ("Retain", "Retain"),
    ("Retain", "Delete"),
    ("Delete", "Retain"),
    ("Delete", "Delete"),
];

/// A set `db` of `replicas` whose policy is `whenScaled`, `whenDeleted`.
fn set(
    replicas: i32,
    parallel: bool,
    (when_scaled, when_deleted): (&str, &str),
) -> StatefulSetView {
    StatefulSetView::from_value(json!({
        "metadata": {"name": "db", "namespace": "ns", "uid": "uid-db", "resourceVersion": "4", "generation": 1},
        "spec": {
            "replicas": replicas,
            "podManagementPolicy": if parallel { "Parallel" } else { "OrderedReady" },
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "db"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
            "persistentVolumeClaimRetentionPolicy": {"whenScaled": when_scaled, "whenDeleted": when_deleted},
        },
    }))
    .expect("set")
}

fn ready_pod(set: &StatefulSetView, ordinal: usize) -> PodView {
    PodView {
        key: ObjectKey::new("ns", format!("db-{ordinal}")),
        uid: Uid::new(format!("uid-db-{ordinal}")),
        resource_version: None,
        labels: Labels::from_map(BTreeMap::from([
            (REVISION_LABEL.to_string(), revision_name(set)),
            ("app".to_string(), "db".to_string()),
        ])),
        controller: Some(OwnerRef {
            kind: "StatefulSet".into(),
            name: "db".into(),
            uid: set.uid.clone(),
        }),
        node_name: None,
        phase: PodPhase::Running,
        ready: true,
        ready_since: None,
        restarts: 0,
        created: 0,
        terminating: false,
        job_tracking: false,
        completion_index: None,
        index_failures: Default::default(),
        failure: None,
        malformed: None,
    }
}

fn set_ref() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "uid-db",
           "controller": true, "blockOwnerDeletion": true})
}

fn pod_ref(ordinal: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "name": format!("db-{ordinal}"),
           "uid": format!("uid-db-{ordinal}"), "controller": true, "blockOwnerDeletion": true})
}

/// The claim `data-db-<ordinal>` with `refs`.
fn claim(ordinal: usize, refs: Value) -> Object {
    let body = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": format!("data-db-{ordinal}"), "namespace": "ns",
                     "uid": format!("uid-claim-{ordinal}"), "resourceVersion": "9",
                     "ownerReferences": refs}});
    let (object, _) = Object::decode(
        Resource::PersistentVolumeClaims,
        &serde_json::to_vec(&body).expect("json"),
    )
    .expect("a claim");
    object
}

fn cache_of(set: &StatefulSetView, pods: Vec<PodView>, claims: Vec<Object>) -> ShardCache {
    let mut cache = ShardCache::default();
    cache.apply(Object::StatefulSet(set.clone()));
    for p in pods {
        cache.apply(Object::Pod(p));
    }
    for c in claims {
        cache.apply(c);
    }
    cache
}

fn reconcile(set: &StatefulSetView, cache: &ShardCache) -> Result<Plan, ReconcileError> {
    let ctx = Context {
        now: Instant::now(),
        unix_secs: 0,
    };
    StatefulSetController.reconcile(&set.key, cache, &ctx)
}

fn plan(set: &StatefulSetView, pods: Vec<PodView>, claims: Vec<Object>) -> Plan {
    reconcile(set, &cache_of(set, pods, claims)).expect("plan")
}

/// The ownerReferences of each claim the plan creates, by name.
fn created_claims(plan: &Plan) -> Vec<(String, Value)> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::Create {
                resource: Resource::PersistentVolumeClaims,
                body,
                ..
            } => Some((
                body["metadata"]["name"].as_str()?.to_string(),
                body["metadata"]
                    .get("ownerReferences")
                    .cloned()
                    .unwrap_or(json!([])),
            )),
            _ => None,
        })
        .collect()
}

/// Each claim patch of the plan: (its step, the claim, the ownerReferences it writes).
fn claim_patches(plan: &Plan) -> Vec<(usize, String, Value)> {
    let mut found = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        for action in step {
            if let Action::Patch {
                resource: Resource::PersistentVolumeClaims,
                key,
                patch,
            } = action
            {
                found.push((
                    i,
                    key.name().to_string(),
                    patch["metadata"]["ownerReferences"].clone(),
                ));
            }
        }
    }
    found
}

/// The step deleting Pod `name`, if the plan deletes it.
fn delete_step(plan: &Plan, name: &str) -> Option<usize> {
    plan.steps.iter().position(|step| {
        step.iter()
            .any(|a| matches!(a, Action::Delete { resource: Resource::Pods, key, .. } if key.name() == name))
    })
}

#[test]
fn each_policy_creates_claims_owned_by_the_set_only_when_whendeleted_deletes() {
    for policy in POLICIES {
        for parallel in [false, true] {
            let s = set(1, parallel, policy);
            let created = created_claims(&plan(&s, vec![], vec![]));
            let wanted = if policy.1 == "Delete" {
                json!([set_ref()])
            } else {
                json!([])
            };
            assert_eq!(
                created,
                vec![("data-db-0".to_string(), wanted)],
                "{policy:?}"
            );
        }
    }
}

#[test]
fn scale_down_hands_the_condemned_claim_to_its_pod_before_deleting_it_when_whenscaled_deletes() {
    for policy in POLICIES {
        for parallel in [false, true] {
            let s = set(1, parallel, policy);
            let as_created = |ordinal| match policy.1 {
                "Delete" => claim(ordinal, json!([set_ref()])),
                _ => claim(ordinal, json!([])),
            };
            let p = plan(
                &s,
                vec![ready_pod(&s, 0), ready_pod(&s, 1)],
                vec![as_created(0), as_created(1)],
            );
            let deleting = delete_step(&p, "db-1").expect("db-1 is condemned");
            let patches = claim_patches(&p);
            if policy.0 == "Delete" {
                assert_eq!(patches.len(), 1, "{policy:?}: {patches:?}");
                let (step, name, refs) = &patches[0];
                assert_eq!(name, "data-db-1");
                assert_eq!(
                    refs,
                    &json!([pod_ref(1)]),
                    "{policy:?}: the Pod alone owns it"
                );
                assert!(*step < deleting, "{policy:?}: owned before the Pod goes");
            } else {
                assert!(patches.is_empty(), "{policy:?}: {patches:?}");
            }
        }
    }
}

#[test]
fn a_claim_left_from_before_is_brought_to_the_policy_of_its_wanted_pod() {
    let before = [json!([]), json!([set_ref()]), json!([pod_ref(0)])];
    for policy in POLICIES {
        let wanted = if policy.1 == "Delete" {
            json!([set_ref()])
        } else {
            json!([])
        };
        for refs in &before {
            let s = set(1, false, policy);
            let p = plan(&s, vec![ready_pod(&s, 0)], vec![claim(0, refs.clone())]);
            let patches = claim_patches(&p);
            if refs == &wanted {
                assert!(patches.is_empty(), "{policy:?} {refs}: {patches:?}");
            } else {
                assert_eq!(patches.len(), 1, "{policy:?} {refs}");
                assert_eq!(patches[0].2, wanted, "{policy:?} {refs}");
            }
            assert!(created_claims(&p).is_empty(), "the claim exists");
        }
    }
}

#[test]
fn a_claim_of_a_scaled_down_pod_keeps_its_pod_if_the_set_scales_back_before_it_goes() {
    // Scaled back up before the Pod was deleted: the Pod is wanted again, so its claim is the
    // set's (or nobody's), not the Pod's.
    let s = set(2, false, ("Delete", "Delete"));
    let p = plan(
        &s,
        vec![ready_pod(&s, 0), ready_pod(&s, 1)],
        vec![claim(0, json!([set_ref()])), claim(1, json!([pod_ref(1)]))],
    );
    assert_eq!(
        claim_patches(&p)
            .into_iter()
            .map(|(_, n, r)| (n, r))
            .collect::<Vec<_>>(),
        vec![("data-db-1".to_string(), json!([set_ref()]))]
    );
}

#[test]
fn a_claim_an_earlier_pod_of_that_name_owns_holds_the_pod_back_until_it_is_gone() {
    let s = set(2, true, ("Delete", "Retain"));
    let earlier = json!([{"apiVersion": "v1", "kind": "Pod", "name": "db-1", "uid": "uid-old",
                          "controller": true}]);
    let p = plan(&s, vec![ready_pod(&s, 0)], vec![claim(1, earlier.clone())]);
    let pods: Vec<&Action> = p
        .steps
        .iter()
        .flatten()
        .filter(|a| {
            matches!(
                a,
                Action::Create {
                    resource: Resource::Pods,
                    ..
                }
            )
        })
        .collect();
    assert!(pods.is_empty(), "{p:?}");
    assert!(
        claim_patches(&p).is_empty(),
        "a stale reference is not ours to touch"
    );
    let retained = set(2, true, ("Retain", "Retain"));
    let p = plan(
        &retained,
        vec![ready_pod(&retained, 0)],
        vec![claim(1, earlier)],
    );
    assert!(
        p.steps.iter().flatten().any(|a| matches!(
            a,
            Action::Create {
                resource: Resource::Pods,
                ..
            }
        )),
        "under whenScaled: Retain a claim is meant to be reused"
    );
}

#[test]
fn another_controller_s_claim_gets_no_reference_of_ours_and_loses_the_ones_it_had() {
    let other = json!({"apiVersion": "example.com/v1", "kind": "Backup", "name": "b",
                       "uid": "uid-b", "controller": true});
    let s = set(1, false, ("Retain", "Delete"));
    let p = plan(
        &s,
        vec![ready_pod(&s, 0)],
        vec![claim(0, json!([other.clone()]))],
    );
    assert!(claim_patches(&p).is_empty(), "{p:?}");
    let mixed = json!([other.clone(), {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
                                       "uid": "uid-db"}]);
    let p = plan(&s, vec![ready_pod(&s, 0)], vec![claim(0, mixed)]);
    let patches = claim_patches(&p);
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].2, json!([other]));
}

#[test]
fn references_of_other_owners_are_kept_and_the_patch_is_preconditioned() {
    let other =
        json!({"apiVersion": "example.com/v1", "kind": "Backup", "name": "b", "uid": "uid-b"});
    let s = set(1, false, ("Retain", "Delete"));
    let p = plan(
        &s,
        vec![ready_pod(&s, 0)],
        vec![claim(0, json!([other.clone()]))],
    );
    let patch = p
        .steps
        .iter()
        .flatten()
        .find_map(|a| match a {
            Action::Patch { patch, .. } => Some(patch.clone()),
            _ => None,
        })
        .expect("a patch");
    assert_eq!(
        patch["metadata"]["ownerReferences"],
        json!([other, set_ref()])
    );
    assert_eq!(patch["metadata"]["uid"], "uid-claim-0");
    assert_eq!(patch["metadata"]["resourceVersion"], "9");
}

#[test]
fn a_retention_policy_of_an_unknown_value_is_malformed_and_nothing_is_done() {
    let s = set(2, false, ("Remove", "Delete"));
    let malformed = s.malformed.as_ref().expect("malformed");
    assert_eq!(
        malformed.fields()[0].path,
        "spec.persistentVolumeClaimRetentionPolicy.whenScaled"
    );
    let result = reconcile(&s, &cache_of(&s, vec![], vec![]));
    assert!(
        matches!(result, Err(ReconcileError::Malformed { .. })),
        "{result:?}"
    );
}

#[test]
fn a_claim_event_reaches_its_set_by_reference_or_by_name() {
    let s = set(2, false, ("Delete", "Delete"));
    let cache = cache_of(&s, vec![], vec![]);
    let key = ObjectKey::new("ns", "db");
    for owned in [claim(1, json!([set_ref()])), claim(1, json!([pod_ref(1)]))] {
        let mut keys: SmallVec<[ObjectKey; 2]> = SmallVec::new();
        StatefulSetController.keys_for(&owned, &mut keys);
        assert_eq!(keys.as_slice(), std::slice::from_ref(&key));
    }
    let ownerless = claim(1, json!([]));
    let mut keys: SmallVec<[ObjectKey; 2]> = SmallVec::new();
    StatefulSetController.keys_for(&ownerless, &mut keys);
    assert!(keys.is_empty());
    let mut wide = Vec::new();
    StatefulSetController.keys_for_cache(&ownerless, &cache, &mut wide);
    assert_eq!(wide, vec![key]);
}
