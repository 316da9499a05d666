//! Fuzzing every controller's reconcile over arbitrary caches built from mutated real objects:
//! no panic; a malformed owner or dependent stops that key with a `Malformed` error naming a
//! really malformed object; otherwise a plan deletes only the key's own Pods, writes only its own
//! status, stamps its own owner reference on what it creates, and stays bounded.

mod fuzz_support;

use fuzz_support::{corpus, mutate, mutations, run};
use proptest::prelude::*;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tidemark_engine::controllers::nodelifecycle::NodeLifecycleController;
use tidemark_engine::{
    Action, Context, DaemonSetController, DaemonSetView, JobController, JobView, LeaseView,
    NodeView, Object, ObjectKey, PodView, ReconcileError, Reconciler, ReplicaSetController,
    ReplicaSetView, Resource, ShardCache, StatefulSetController, StatefulSetView, Uid,
};

/// What the run met, to show the fuzzer reaches the interesting cases.
static RECONCILES: AtomicUsize = AtomicUsize::new(0);
static REFUSED: AtomicUsize = AtomicUsize::new(0);
static DELETING: AtomicUsize = AtomicUsize::new(0);

/// More actions than this in one plan is a runaway.
const MAX_ACTIONS: usize = 5_000;

fn decode(kind: &str, value: &Value) -> Option<Object> {
    let bytes = serde_json::to_vec(value).ok()?;
    match kind {
        "pod" => PodView::from_json(&bytes).ok().map(Object::Pod),
        "replicaset" => ReplicaSetView::from_json(&bytes)
            .ok()
            .map(Object::ReplicaSet),
        "statefulset" => StatefulSetView::from_json(&bytes)
            .ok()
            .map(Object::StatefulSet),
        "daemonset" => DaemonSetView::from_json(&bytes).ok().map(Object::DaemonSet),
        "job" => JobView::from_json(&bytes).ok().map(Object::Job),
        "node" => NodeView::from_json(&bytes).ok().map(Object::Node),
        "lease" => LeaseView::from_json(&bytes).ok().map(Object::Lease),
        _ => None,
    }
}

/// One object of the generated cache: a corpus entry, maybe mutated, maybe renamed (a second
/// Pod of the same owner).
#[derive(Clone, Debug)]
struct Pick {
    index: usize,
    edits: Vec<fuzz_support::Mutation>,
    mutated: bool,
    copy: Option<u8>,
}

fn picks(n: usize) -> impl Strategy<Value = Vec<Pick>> {
    prop::collection::vec(
        (
            0..n,
            mutations(),
            prop::bool::weighted(0.2),
            prop::option::weighted(0.3, any::<u8>()),
        )
            .prop_map(|(index, edits, mutated, copy)| Pick {
                index,
                edits,
                mutated,
                copy,
            }),
        1..24,
    )
}

fn build(corpus: &[(String, Value)], picks: &[Pick], t0: Instant) -> ShardCache {
    let mut cache = ShardCache::default();
    for p in picks {
        let (name, original) = &corpus[p.index];
        let kind = name.split(['-', '.']).next().unwrap_or("");
        let mut value = original.clone();
        if let (Some(copy), Some(Value::Object(m))) = (p.copy, value.get_mut("metadata")) {
            let base = m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("x")
                .to_string();
            m.insert("name".into(), Value::from(format!("{base}-c{copy}")));
            m.insert("uid".into(), Value::from(format!("copy-{copy}-{base}")));
        }
        if p.mutated {
            mutate(&mut value, &p.edits);
        }
        if let Some(object) = decode(kind, &value) {
            let lease = matches!(object, Object::Lease(_)).then(|| object.key().clone());
            cache.apply(object);
            if let Some(key) = lease {
                cache.observe_lease(&key, t0);
            }
        }
    }
    cache
}

fn is_malformed(cache: &ShardCache, resource: Resource, key: &ObjectKey, uid: &Uid) -> bool {
    let found = match resource {
        Resource::Pods => cache.pods.get(key).map(|o| (o.malformed.is_some(), &o.uid)),
        Resource::ReplicaSets => cache
            .replicasets
            .get(key)
            .map(|o| (o.malformed.is_some(), &o.uid)),
        Resource::StatefulSets => cache
            .statefulsets
            .get(key)
            .map(|o| (o.malformed.is_some(), &o.uid)),
        Resource::DaemonSets => cache
            .daemonsets
            .get(key)
            .map(|o| (o.malformed.is_some(), &o.uid)),
        Resource::Jobs => cache.jobs.get(key).map(|o| (o.malformed.is_some(), &o.uid)),
        Resource::Nodes => cache
            .nodes
            .get(key)
            .map(|o| (o.malformed.is_some(), &o.uid)),
        Resource::Leases => cache
            .leases
            .get(key)
            .map(|o| (o.malformed.is_some(), &o.uid)),
        _ => None,
    };
    found.is_some_and(|(m, u)| m && u == uid)
}

/// The primary object of `key`: its UID, whether it or a Pod it owns is malformed.
fn owner_state(cache: &ShardCache, resource: Resource, key: &ObjectKey) -> Option<(Uid, bool)> {
    let (uid, malformed) = match resource {
        Resource::ReplicaSets => cache
            .replicasets
            .get(key)
            .map(|o| (o.uid.clone(), o.malformed.is_some()))?,
        Resource::StatefulSets => cache
            .statefulsets
            .get(key)
            .map(|o| (o.uid.clone(), o.malformed.is_some()))?,
        Resource::DaemonSets => cache
            .daemonsets
            .get(key)
            .map(|o| (o.uid.clone(), o.malformed.is_some()))?,
        Resource::Jobs => cache
            .jobs
            .get(key)
            .map(|o| (o.uid.clone(), o.malformed.is_some()))?,
        Resource::Nodes => {
            let node = cache.nodes.get(key)?;
            let lease = cache
                .leases
                .get(&node.lease_key())
                .is_some_and(|l| l.malformed.is_some());
            return Some((node.uid.clone(), node.malformed.is_some() || lease));
        }
        _ => return None,
    };
    let dependents = cache.pods.owned_by(&uid).any(|p| p.malformed.is_some());
    Some((uid, malformed || dependents))
}

fn check_plan(
    controller: &dyn Reconciler,
    cache: &ShardCache,
    key: &ObjectKey,
    ctx: &Context,
) -> Result<(), TestCaseError> {
    let resource = controller.primary();
    let Some((uid, malformed)) = owner_state(cache, resource, key) else {
        return Ok(());
    };
    let result = controller.reconcile(key, cache, ctx);
    RECONCILES.fetch_add(1, Ordering::Relaxed);
    prop_assert_eq!(
        &result,
        &controller.reconcile(key, cache, ctx),
        "deterministic"
    );
    let plan = match result {
        Err(ReconcileError::Malformed {
            resource,
            key: bad,
            uid: bad_uid,
            ..
        }) => {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            prop_assert!(
                is_malformed(cache, resource, &bad, &bad_uid),
                "{} blamed {resource} {bad}, which is not malformed",
                controller.name()
            );
            return Ok(());
        }
        Err(other) => return Err(TestCaseError::fail(format!("{other}"))),
        Ok(plan) => plan,
    };
    prop_assert!(
        !malformed,
        "{}: acted on malformed {key}: {plan:?}",
        controller.name()
    );
    let actions: Vec<&Action> = plan.steps.iter().flatten().collect();
    // Orphans the plan adopts (a claim patch comes before any other step): upstream's
    // controllers count a Pod they have just claimed, surplus ones deleted too.
    let adopted: Vec<&ObjectKey> = actions
        .iter()
        .filter_map(|a| match a {
            Action::StrategicPatch {
                resource: Resource::Pods,
                key,
                patch,
            } if patch["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| refs.iter().any(|r| r["uid"] == *uid.text())) =>
            {
                Some(key)
            }
            _ => None,
        })
        .collect();
    if actions.iter().any(|a| matches!(a, Action::Delete { .. })) {
        DELETING.fetch_add(1, Ordering::Relaxed);
    }
    prop_assert!(actions.len() <= MAX_ACTIONS, "{} actions", actions.len());
    for action in actions {
        match action {
            Action::Delete {
                resource,
                key: target,
                uid: target_uid,
            } => {
                prop_assert_eq!(*resource, Resource::Pods);
                let pod = cache.pods.get(target);
                prop_assert!(
                    pod.is_some_and(|p| &p.uid == target_uid
                        && (p.controller.as_ref().is_some_and(|o| o.uid == uid)
                            || p.controller.is_none() && adopted.contains(&target))),
                    "{} deletes {target}, not a Pod of {key}",
                    controller.name()
                );
                if let (Some(p), Some(node)) = (pod, pod.and_then(|p| p.node_name.as_deref())) {
                    let on_malformed = cache
                        .nodes
                        .get(&ObjectKey::new("", node))
                        .is_some_and(|n| n.malformed.is_some());
                    prop_assert!(
                        !(on_malformed
                            && resource == &Resource::Pods
                            && controller.name() == "daemonset"),
                        "daemonset deletes {} on a malformed Node",
                        p.key
                    );
                }
            }
            Action::UpdateStatus {
                key: target, body, ..
            } => {
                prop_assert_eq!(target, key);
                prop_assert!(body.is_object());
            }
            Action::Patch {
                key: target,
                resource: r,
                ..
            }
            | Action::StrategicPatch {
                key: target,
                resource: r,
                ..
            } => {
                prop_assert!(
                    target == key
                        || *r == Resource::Pods
                        || (*r == Resource::PersistentVolumeClaims
                            && names_a_claim_of(target.name(), key.name())),
                    "{target}"
                );
            }
            Action::Create {
                resource: Resource::PersistentVolumeClaims,
                body,
                ..
            } if body["metadata"].get("ownerReferences").is_none() => {
                // A claim under a Retain policy belongs to nobody; its name says whose it is.
                let name = body["metadata"]["name"].as_str().unwrap_or("");
                prop_assert!(names_a_claim_of(name, key.name()), "{}", body);
            }
            Action::Create { body, .. } => {
                let owner = &body["metadata"]["ownerReferences"][0]["uid"];
                prop_assert_eq!(owner.as_str(), Some(&*uid.text()), "{}", body);
            }
        }
    }
    Ok(())
}

/// Whether `claim` is named as a claim of the set `set`: `<template>-<set>-<ordinal>`.
fn names_a_claim_of(claim: &str, set: &str) -> bool {
    claim.rsplit_once('-').is_some_and(|(stem, ordinal)| {
        !ordinal.is_empty()
            && ordinal.bytes().all(|b| b.is_ascii_digit())
            && stem.ends_with(&format!("-{set}"))
    })
}

#[test]
fn every_controller_survives_arbitrary_caches_and_never_acts_on_a_malformed_owner() {
    let corpus = corpus();
    let controllers: Vec<Box<dyn Reconciler>> = vec![
        Box::new(ReplicaSetController),
        Box::new(StatefulSetController),
        Box::new(DaemonSetController),
        Box::new(JobController),
        Box::new(NodeLifecycleController::default()),
    ];
    let t0 = Instant::now();
    run(
        "reconcile/arbitrary-caches",
        600,
        (
            picks(corpus.len()),
            0u64..120,
            prop::sample::select(&[0i64, 1_767_225_600, 1_767_226_200, i64::MAX][..]),
        ),
        |(picks, after, unix_secs)| {
            let cache = build(&corpus, &picks, t0);
            let ctx = Context {
                now: t0 + Duration::from_secs(after),
                unix_secs,
            };
            for c in &controllers {
                for key in cache.keys(c.primary()) {
                    check_plan(c.as_ref(), &cache, &key, &ctx)?;
                }
            }
            Ok(())
        },
    );
    eprintln!(
        "fuzz reconcile/arbitrary-caches: {} reconciles, {} refused as malformed, {} plans with deletes",
        RECONCILES.load(Ordering::Relaxed),
        REFUSED.load(Ordering::Relaxed),
        DELETING.load(Ordering::Relaxed)
    );
}
