//! Objects a broken or hostile API server could send, through a whole shard: a malformed object
//! is cached, counted and reported once, and nothing is done for the keys that read it, while
//! every other key goes on.

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tidemark_engine::controllers::nodelifecycle::NodeLifecycleController;
use tidemark_engine::{
    Action, Change, Context, ControllerSpec, LeaseView, MALFORMED_REASON, NodeView, Object, Output,
    PodView, ReplicaSetController, ReplicaSetView, Resource, ResourceVersion, Shard, ShardId,
};

fn rv(v: u64) -> Option<ResourceVersion> {
    ResourceVersion::new(v)
}

fn ctx(now: Instant) -> Context {
    Context {
        now,
        unix_secs: 1_800_000_000,
    }
}

fn replicaset(name: &str, replicas: Value) -> Object {
    let json = json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                     "resourceVersion": "10", "generation": 1},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"replicas": 9, "observedGeneration": 1},
    });
    Object::ReplicaSet(ReplicaSetView::from_json(json.to_string().as_bytes()).expect("identity"))
}

fn pod(owner: &str, i: usize) -> Object {
    let json = json!({
        "metadata": {"name": format!("{owner}-{i}"), "namespace": "ns", "uid": format!("uid-{owner}-{i}"),
                     "resourceVersion": format!("{}", 20 + i), "labels": {"app": owner},
                     "creationTimestamp": "2026-01-01T00:00:00Z",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                          "uid": format!("uid-{owner}"), "controller": true}]},
        "spec": {"nodeName": "node-0"},
        "status": {"phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    });
    Object::Pod(PodView::from_json(json.to_string().as_bytes()).expect("pod"))
}

fn replicaset_shard() -> Shard {
    Shard::new(
        ShardId(0),
        vec![ControllerSpec {
            reconciler: Box::new(ReplicaSetController),
            // The gate off: a destructive plan would go out at once, so nothing hides a delete.
            mode: tidemark_engine::ConsistencyMode::Naive,
        }],
    )
}

#[test]
fn a_replicaset_with_an_unusable_replica_count_deletes_none_of_its_nine_pods() {
    for bad in [json!("five"), json!(3.0), json!("3"), json!(-2)] {
        let now = Instant::now();
        let mut shard = replicaset_shard();
        let mut pods: Vec<Object> = (0..9).map(|i| pod("web", i)).collect();
        pods.extend((0..2).map(|i| pod("api", i)));
        shard.replace(Resource::Pods, pods, rv(40), now);
        shard.replace(
            Resource::ReplicaSets,
            vec![replicaset("web", bad.clone()), replicaset("api", json!(1))],
            rv(40),
            now,
        );
        let mut out = Vec::new();
        shard.poll(&ctx(now), &mut out);
        shard.poll(&ctx(now + Duration::from_secs(60)), &mut out);
        let writes: Vec<&Action> = out
            .iter()
            .filter_map(|o| match o {
                Output::Write(w) => Some(&w.action),
                _ => None,
            })
            .collect();
        assert!(
            writes.iter().all(|a| match a {
                Action::Delete { key, .. } => key.name().starts_with("api-"),
                Action::UpdateStatus { key, .. } => key.name() == "api",
                _ => false,
            }),
            "{bad}: nothing is written for the malformed ReplicaSet: {writes:?}"
        );
        assert_eq!(
            writes
                .iter()
                .filter(|a| matches!(a, Action::Delete { .. }))
                .count(),
            1,
            "{bad}: the well-formed ReplicaSet next to it still scales down"
        );
        let warnings: Vec<_> = out
            .iter()
            .filter_map(|o| match o {
                Output::Degraded {
                    key,
                    reason,
                    message,
                    ..
                } if *reason == MALFORMED_REASON => Some((key.name().to_string(), message.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(warnings.len(), 1, "{bad}: one Warning Event: {warnings:?}");
        assert_eq!(warnings[0].0, "web");
        assert!(warnings[0].1.contains("spec.replicas"), "{warnings:?}");
        let stats = &shard.stats(now)[0];
        assert_eq!(stats.malformed_skips, 1, "{bad}");
    }
}

#[test]
fn a_malformed_replicaset_is_acted_on_again_once_it_is_fixed() {
    let now = Instant::now();
    let mut shard = replicaset_shard();
    shard.replace(
        Resource::Pods,
        (0..3).map(|i| pod("web", i)).collect(),
        rv(40),
        now,
    );
    shard.replace(
        Resource::ReplicaSets,
        vec![replicaset("web", json!("two"))],
        rv(40),
        now,
    );
    let mut out = Vec::new();
    shard.poll(&ctx(now), &mut out);
    assert!(!out.iter().any(|o| matches!(o, Output::Write(_))));
    shard.apply(Change::Applied(replicaset("web", json!(2))), now);
    out.clear();
    shard.poll(&ctx(now), &mut out);
    let deletes = out
        .iter()
        .filter(|o| {
            matches!(
                o,
                Output::Write(w) if matches!(w.action, Action::Delete { .. })
            )
        })
        .count();
    assert_eq!(deletes, 1, "{out:?}");
}

fn node(name: &str, status: Value) -> Object {
    let json = json!({"metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "5"},
                      "status": status});
    Object::Node(NodeView::from_json(json.to_string().as_bytes()).expect("identity"))
}

fn lease(name: &str) -> Object {
    let json = json!({"metadata": {"name": name, "namespace": "kube-node-lease",
                                   "uid": format!("lease-{name}"), "resourceVersion": "6"},
                      "spec": {"holderIdentity": name}});
    Object::Lease(LeaseView::from_json(json.to_string().as_bytes()).expect("lease"))
}

#[test]
fn a_node_whose_status_is_a_string_does_not_stop_the_shard_and_the_other_node_is_marked() {
    let t0 = Instant::now();
    let mut shard = Shard::new(
        ShardId(0),
        vec![ControllerSpec {
            reconciler: Box::new(NodeLifecycleController::default()),
            mode: tidemark_engine::ConsistencyMode::Naive,
        }],
    );
    let ready = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    shard.replace(
        Resource::Nodes,
        vec![node("bad", json!("not-an-object")), node("good", ready)],
        rv(10),
        t0,
    );
    shard.replace(
        Resource::Leases,
        vec![lease("bad"), lease("good")],
        rv(10),
        t0,
    );
    let mut out = Vec::new();
    shard.poll(&ctx(t0), &mut out);
    let later = t0 + Duration::from_secs(60);
    shard.poll(&ctx(later), &mut out);
    let marked: Vec<String> = out
        .iter()
        .filter_map(|o| match o {
            Output::Write(w) => Some(w.owner.name().to_string()),
            _ => None,
        })
        .collect();
    assert!(
        !marked.is_empty(),
        "the good Node goes silent and is marked"
    );
    assert!(marked.iter().all(|n| n == "good"), "{marked:?}");
    assert!(shard.stats(later)[0].malformed_skips >= 1);
}
