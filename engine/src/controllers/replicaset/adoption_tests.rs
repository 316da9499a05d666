//! The ReplicaSet's controller references: orphans adopted and counted, Pods that stop
//! matching released, nothing claimed by a set being deleted.

use super::*;
use crate::object::test_support::{labels, orphan_pod, pod, replicaset, replicaset_json};
use std::time::Instant;

fn ctx() -> Context {
    Context {
        now: Instant::now(),
        unix_secs: 1_000,
    }
}

fn plan_for(rs: &ReplicaSetView, pods: Vec<PodView>) -> Plan {
    let mut cache = ShardCache::default();
    cache.replicasets.apply(rs.clone());
    for p in pods {
        cache.pods.apply(p);
    }
    ReplicaSetController
        .reconcile(&rs.key, &cache, &ctx())
        .expect("plan")
}

fn patched(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::StrategicPatch { key, .. } => Some(key.name().to_string()),
            _ => None,
        })
        .collect()
}

fn count(plan: &Plan, what: fn(&Action) -> bool) -> usize {
    plan.steps.iter().flatten().filter(|a| what(a)).count()
}

#[test]
fn an_orphan_matching_the_selector_is_adopted_not_duplicated() {
    let rs = replicaset("ns", "web", 3);
    let pods = vec![
        pod(&rs, "owned", 1, true),
        orphan_pod("ns", "loose", &[("app", "web")]),
    ];
    let plan = plan_for(&rs, pods);
    assert!(plan.adopts, "the owner is read live before it adopts");
    assert_eq!(patched(&plan.steps[0]), ["loose"], "adoption comes first");
    assert_eq!(
        count(&plan, |a| matches!(a, Action::Create { .. })),
        1,
        "3 wanted, 1 owned, 1 adopted: one Pod to create"
    );
}

#[test]
fn adopted_pods_beyond_the_replica_count_are_deleted_as_surplus() {
    let rs = replicaset("ns", "web", 1);
    let pods = vec![
        pod(&rs, "owned", 1, true),
        orphan_pod("ns", "loose", &[("app", "web")]),
    ];
    let plan = plan_for(&rs, pods);
    assert_eq!(patched(&plan.steps[0]), ["loose"]);
    assert_eq!(count(&plan, |a| matches!(a, Action::Create { .. })), 0);
    assert_eq!(count(&plan, |a| matches!(a, Action::Delete { .. })), 1);
}

#[test]
fn an_owner_being_deleted_adopts_nothing() {
    let mut rs = replicaset("ns", "web", 3);
    rs.terminating = true;
    let plan = plan_for(&rs, vec![orphan_pod("ns", "loose", &[("app", "web")])]);
    assert!(!plan.adopts);
    assert!(patched(&plan.steps.concat()).is_empty());
}

#[test]
fn a_pod_that_stops_matching_is_released() {
    let rs = replicaset("ns", "web", 1);
    let mut moved = pod(&rs, "moved", 1, true);
    moved.labels = labels(&[("app", "debugging")]);
    let plan = plan_for(&rs, vec![moved]);
    assert!(!plan.adopts, "a release needs no live read of the owner");
    assert_eq!(patched(&plan.steps[0]), ["moved"]);
    let Action::StrategicPatch { patch, .. } = &plan.steps[0][0] else {
        panic!("a patch")
    };
    assert_eq!(patch["metadata"]["ownerReferences"][0]["$patch"], "delete");
    assert_eq!(
        count(&plan, |a| matches!(a, Action::Create { .. })),
        1,
        "a released Pod no longer counts: its replacement is created"
    );
}

#[test]
fn finished_and_foreign_pods_are_left_alone() {
    let rs = replicaset("ns", "web", 1);
    let other = replicaset_json("ns", "other", 1, 1);
    let mut done = orphan_pod("ns", "done", &[("app", "web")]);
    done.phase = PodPhase::Succeeded;
    let mut foreign = pod(&other, "foreign", 1, true);
    foreign.labels = labels(&[("app", "web")]);
    let plan = plan_for(&rs, vec![done, foreign, pod(&rs, "mine", 1, true)]);
    assert!(patched(&plan.steps.concat()).is_empty());
    assert_eq!(count(&plan, |a| matches!(a, Action::Create { .. })), 0);
}

#[test]
fn an_orphan_queues_the_sets_that_would_adopt_it() {
    let (web, db) = (replicaset("ns", "web", 1), replicaset("ns", "db", 1));
    let mut cache = ShardCache::default();
    cache.replicasets.apply(web.clone());
    cache.replicasets.apply(db);
    let mut keys = Vec::new();
    let orphan = Object::Pod(orphan_pod("ns", "loose", &[("app", "web")]));
    ReplicaSetController.keys_for_cache(&orphan, &cache, &mut keys);
    assert_eq!(keys, std::slice::from_ref(&web.key));
}
