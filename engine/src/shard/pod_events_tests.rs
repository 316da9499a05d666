//! Which Pod events queue their owner: only those that change what the owner's controller
//! reads of the Pod.

use super::*;

/// The ReplicaSet `web` of two replicas, its status saying both are there, ready and available.
fn replicaset() -> ReplicaSetView {
    ReplicaSetView::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "uid-web",
                     "resourceVersion": "1", "generation": 1},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "status": {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2,
                   "availableReplicas": 2, "observedGeneration": 1}
    }))
    .expect("valid replicaset")
}

/// A converged ReplicaSet `web` of two ready Pods, reconciled once; returns the shard and how
/// many reconciles that took.
fn steady(now: Instant) -> (Shard, u64) {
    let rs = replicaset();
    let pods = vec![pod(&rs, "web-a", 5, true), pod(&rs, "web-b", 6, true)];
    let mut s = synced(true, &rs, pods);
    let out = outputs(&mut s, now);
    assert!(
        out.iter().all(|o| !matches!(o, Output::Write(_))),
        "already converged: {out:?}"
    );
    let reconciles = s.stats(now)[0].reconciles;
    assert!(reconciles >= 1, "the list queued the ReplicaSet");
    (s, reconciles)
}

fn changed(s: &mut Shard, pod: PodView, version: u64, now: Instant) -> u64 {
    s.apply(Change::Applied(Object::Pod(pod)), now);
    s.advance(Resource::Pods, rv(version), now);
    outputs(s, now);
    s.stats(now)[0].reconciles
}

#[test]
fn a_restart_or_a_new_resource_version_does_not_queue_the_replicaset() {
    let now = Instant::now();
    let (mut s, before) = steady(now);
    let rs = replicaset();
    let restarted = PodView {
        restarts: 3,
        ..pod(&rs, "web-a", 20, true)
    };
    assert_eq!(changed(&mut s, restarted, 20, now), before, "a restart");
    let touched = pod(&rs, "web-b", 21, true);
    assert_eq!(
        changed(&mut s, touched, 21, now),
        before,
        "only the version"
    );
    assert_eq!(s.stats(now)[0].unchanged_pod_events, 2);
}

#[test]
fn a_pod_turning_unready_queues_its_replicaset() {
    let now = Instant::now();
    let (mut s, before) = steady(now);
    let rs = replicaset();
    let unready = pod(&rs, "web-a", 20, false);
    assert_eq!(
        changed(&mut s, unready, 20, now),
        before + 1,
        "readyReplicas changes"
    );
}

#[test]
fn a_pod_losing_its_labels_queues_its_replicaset() {
    let now = Instant::now();
    let (mut s, before) = steady(now);
    let rs = replicaset();
    let relabelled = PodView {
        labels: crate::object::test_support::labels(&[("app", "other")]),
        ..pod(&rs, "web-a", 20, true)
    };
    assert_eq!(changed(&mut s, relabelled, 20, now), before + 1);
}
