//! Node lifecycle's decisions, one Node at a time over a hand-built cache.

use super::*;
use crate::views::nodes::LeaseView;
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
        ..NodeLifecycleController::default()
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
fn a_silent_lease_marks_the_node_unknown_then_taints_it_keeping_other_taints() {
    let t0 = Instant::now();
    let controller = grace();
    let key = ObjectKey::new("", "n1");
    let late = ctx(t0 + Duration::from_secs(40));
    let plan = controller
        .reconcile(
            &key,
            &cache_with(node("n1", "True", false), Some(t0)),
            &late,
        )
        .expect("plan");
    assert!(plan.is_destructive(), "marking NotReady needs proof");
    assert_eq!(
        plan.rests_on,
        vec![(Resource::Leases, ObjectKey::new("kube-node-lease", "n1"))],
        "a live read checks the Lease it judges silent"
    );
    assert_eq!(plan.steps.len(), 1, "the status alone: {plan:?}");
    let Action::UpdateStatus { body, .. } = &plan.steps[0][0] else {
        panic!("status first: {plan:?}");
    };
    assert_eq!(body["status"]["conditions"][0]["status"], "Unknown");

    // The status written and seen: the taints follow, in a decision of their own.
    let plan = controller
        .reconcile(
            &key,
            &cache_with(node("n1", "Unknown", false), Some(t0)),
            &late,
        )
        .expect("plan");
    assert!(plan.is_destructive(), "evicting needs proof");
    let Action::Patch { patch, .. } = &plan.steps[0][0] else {
        panic!("then the taints: {plan:?}");
    };
    assert_eq!(
        patch["metadata"]["resourceVersion"], "5",
        "optimistic concurrency"
    );
    let taints = patch["spec"]["taints"].as_array().expect("taints");
    assert_eq!(taints.len(), 3, "{taints:?}");
    assert!(taints.iter().any(|t| t["key"] == "dedicated"));
    assert!(
        taints
            .iter()
            .any(|t| t["key"] == UNREACHABLE_TAINT && t["effect"] == "NoSchedule")
    );
    assert!(
        taints
            .iter()
            .any(|t| t["key"] == UNREACHABLE_TAINT && t["effect"] == "NoExecute")
    );
}

fn zoned(name: &str, zone: &str, ready: &str) -> NodeView {
    NodeView::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "5",
            "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }))
    .expect("node")
}

fn cache_of(nodes: &[NodeView], lease_seen: Instant) -> ShardCache {
    let mut cache = ShardCache::default();
    for node in nodes {
        let lease = lease(node.key.name(), 7);
        let lease_key = lease.key.clone();
        cache.apply(Object::Node(node.clone()));
        cache.apply(Object::Lease(lease));
        cache.observe_lease(&lease_key, lease_seen);
    }
    cache
}

fn adds_no_execute(plan: &Plan) -> bool {
    plan.steps.iter().flatten().any(|a| match a {
        Action::Patch { patch, .. } => patch["spec"]["taints"]
            .as_array()
            .is_some_and(|ts| ts.iter().any(|t| t["effect"] == "NoExecute")),
        _ => false,
    })
}

fn evicting(name: &str, zone: &str) -> NodeView {
    NodeView::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "6",
            "labels": {"topology.kubernetes.io/zone": zone}},
        "spec": {"taints": [{"key": UNREACHABLE_TAINT, "effect": "NoSchedule"},
                            {"key": UNREACHABLE_TAINT, "effect": "NoExecute"}]},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    }))
    .expect("node")
}

#[test]
fn silent_nodes_of_one_zone_are_tainted_no_execute_a_period_apart_and_the_rest_wait() {
    let t0 = Instant::now();
    let s = Duration::from_secs;
    let (a, b) = (ObjectKey::new("", "a"), ObjectKey::new("", "b"));
    let mut nodes = vec![
        zoned("a", "z1", "Unknown"),
        zoned("b", "z1", "Unknown"),
        zoned("c", "z1", "True"),
        zoned("d", "z2", "True"),
    ];
    let controller = grace();
    let cache = cache_of(&nodes, t0);
    let first = controller
        .reconcile(&a, &cache, &ctx(t0 + s(60)))
        .expect("plan");
    assert!(
        adds_no_execute(&first) && first.is_destructive(),
        "{first:?}"
    );
    let proven = controller
        .reconcile(&a, &cache, &ctx(t0 + s(62)))
        .expect("plan");
    assert!(
        adds_no_execute(&proven),
        "planned again once its proof came, it keeps the zone's token: {proven:?}"
    );
    let second = controller
        .reconcile(&b, &cache, &ctx(t0 + s(62)))
        .expect("plan");
    assert!(
        !adds_no_execute(&second),
        "a holds the zone's token: {second:?}"
    );
    assert!(!second.is_empty(), "its NoSchedule taint does not wait");
    assert_eq!(second.requeue_after, Some(HELD_RETRY));

    // a's taint is seen at 63 s: b's token comes ten seconds on (0.1 per second).
    nodes[0] = evicting("a", "z1");
    let cache = cache_of(&nodes, t0);
    controller
        .reconcile(&a, &cache, &ctx(t0 + s(63)))
        .expect("plan");
    let early = controller
        .reconcile(&b, &cache, &ctx(t0 + s(70)))
        .expect("plan");
    assert!(!adds_no_execute(&early), "{early:?}");
    assert_eq!(early.requeue_after, Some(s(3)));
    let then = controller
        .reconcile(&b, &cache, &ctx(t0 + s(73)))
        .expect("plan");
    assert!(adds_no_execute(&then), "a token ten seconds on: {then:?}");
}

#[test]
fn at_a_much_higher_rate_the_second_node_follows_the_first_at_once() {
    // The pace nearly off (1000 per second) shows what the default pace prevents.
    let t0 = Instant::now();
    let mut nodes = vec![
        zoned("a", "z1", "Unknown"),
        zoned("b", "z1", "Unknown"),
        zoned("c", "z1", "True"),
    ];
    let unpaced = NodeLifecycleController {
        evictions: Arc::new(Evictions::new(EvictionRates {
            eviction_rate: 1000.0,
            ..EvictionRates::default()
        })),
        ..grace()
    };
    let late = |ms| ctx(t0 + Duration::from_secs(60) + Duration::from_millis(ms));
    let a = unpaced
        .reconcile(&ObjectKey::new("", "a"), &cache_of(&nodes, t0), &late(0))
        .expect("plan");
    assert!(adds_no_execute(&a), "{a:?}");
    nodes[0] = evicting("a", "z1");
    let cache = cache_of(&nodes, t0);
    unpaced
        .reconcile(&ObjectKey::new("", "a"), &cache, &late(1))
        .expect("plan");
    let b = unpaced
        .reconcile(&ObjectKey::new("", "b"), &cache, &late(2))
        .expect("plan");
    assert!(
        adds_no_execute(&b),
        "b a millisecond after a was seen: {b:?}"
    );
}

#[test]
fn when_every_node_is_dark_no_execute_taints_come_off_and_none_go_on() {
    let t0 = Instant::now();
    let raw = json!({
        "metadata": {"name": "a", "uid": "uid-a", "resourceVersion": "5",
            "labels": {"topology.kubernetes.io/zone": "z1"}},
        "spec": {"taints": [{"key": UNREACHABLE_TAINT, "effect": "NoExecute"},
                            {"key": UNREACHABLE_TAINT, "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    });
    let tainted = NodeView::from_value(raw).expect("node");
    let nodes = [tainted, zoned("b", "z2", "Unknown")];
    let cache = cache_of(&nodes, t0);
    let controller = grace();
    let late = ctx(t0 + Duration::from_secs(60));
    let plan = controller
        .reconcile(&ObjectKey::new("", "a"), &cache, &late)
        .expect("plan");
    let Action::Patch { patch, .. } = &plan.steps[0][0] else {
        panic!("the NoExecute taint comes off: {plan:?}");
    };
    assert_eq!(
        patch["spec"]["taints"],
        json!([{"key": UNREACHABLE_TAINT, "effect": "NoSchedule"}])
    );
    let plan = controller
        .reconcile(&ObjectKey::new("", "b"), &cache, &late)
        .expect("plan");
    assert!(!adds_no_execute(&plan), "{plan:?}");
}

#[test]
fn a_node_ready_again_loses_the_taints_and_a_reported_not_ready_node_is_tainted_not_ready() {
    let t0 = Instant::now();
    let back = NodeView::from_value(json!({
        "metadata": {"name": "a", "uid": "uid-a", "resourceVersion": "5"},
        "spec": {"taints": [{"key": UNREACHABLE_TAINT, "effect": "NoExecute"},
                            {"key": UNREACHABLE_TAINT, "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .expect("node");
    let nodes = [back, zoned("b", "z1", "False"), zoned("c", "z1", "True")];
    let cache = cache_of(&nodes, t0);
    let controller = grace();
    let now = ctx(t0 + Duration::from_secs(1));
    let plan = controller
        .reconcile(&ObjectKey::new("", "a"), &cache, &now)
        .expect("plan");
    let Action::Patch { patch, .. } = &plan.steps[0][0] else {
        panic!("untainted: {plan:?}");
    };
    assert_eq!(patch["spec"]["taints"], json!([]));
    assert!(!plan.is_destructive(), "taking taints off evicts nothing");

    let plan = controller
        .reconcile(&ObjectKey::new("", "b"), &cache, &now)
        .expect("plan");
    let Action::Patch { patch, .. } = &plan.steps[0][0] else {
        panic!("tainted: {plan:?}");
    };
    let keys: Vec<(&str, &str)> = patch["spec"]["taints"]
        .as_array()
        .expect("taints")
        .iter()
        .map(|t| {
            (
                t["key"].as_str().unwrap_or(""),
                t["effect"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (NOT_READY_TAINT, "NoSchedule"),
            (NOT_READY_TAINT, "NoExecute")
        ],
        "the kubelet's own NotReady: no silence needed"
    );
}

#[test]
fn an_unknown_node_whose_lease_is_renewed_again_is_not_tainted_no_execute() {
    let t0 = Instant::now();
    let nodes = [zoned("a", "z1", "Unknown"), zoned("b", "z1", "True")];
    let cache = cache_of(&nodes, t0);
    let plan = grace()
        .reconcile(
            &ObjectKey::new("", "a"),
            &cache,
            &ctx(t0 + Duration::from_secs(1)),
        )
        .expect("plan");
    assert!(!adds_no_execute(&plan), "the kubelet is back: {plan:?}");
    assert!(!plan.is_destructive());
}

#[test]
fn a_silent_node_outside_the_node_selector_is_left_to_its_other_manager() {
    let t0 = Instant::now();
    let late = ctx(t0 + Duration::from_secs(60));
    let key = ObjectKey::new("", "n1");
    let canary_only = NodeLifecycleController {
        node_selector: Arc::new(LabelSelector::parse("pool=canary").expect("selector")),
        ..grace()
    };
    let unlabelled = cache_with(node("n1", "True", false), Some(t0));
    let plan = canary_only
        .reconcile(&key, &unlabelled, &late)
        .expect("plan");
    assert!(plan.is_empty() && plan.requeue_after.is_none(), "{plan:?}");

    let mut labelled = node("n1", "True", false);
    labelled.labels =
        crate::labels::Labels::from_map([("pool".to_string(), "canary".to_string())].into());
    let plan = canary_only
        .reconcile(&key, &cache_with(labelled, Some(t0)), &late)
        .expect("plan");
    assert!(plan.is_destructive(), "the canary's own Node is marked");
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
fn a_node_whose_status_is_not_an_object_is_malformed_and_left_alone() {
    let t0 = Instant::now();
    let value = json!({
        "metadata": {"name": "n1", "uid": "uid-n1", "resourceVersion": "5"},
        "status": "not-an-object",
    });
    let cache = cache_with(NodeView::from_value(value).expect("identity"), Some(t0));
    let result = grace().reconcile(
        &ObjectKey::new("", "n1"),
        &cache,
        &ctx(t0 + Duration::from_secs(100)),
    );
    assert!(
        matches!(
            result,
            Err(ReconcileError::Malformed {
                resource: Resource::Nodes,
                ..
            })
        ),
        "{result:?}"
    );
}

#[test]
fn a_marked_node_is_left_as_it_is_and_leases_route_to_their_node() {
    let t0 = Instant::now();
    let marked = NodeView::from_value(json!({
        "metadata": {"name": "n1", "uid": "uid-n1", "resourceVersion": "5"},
        "spec": {"taints": [{"key": UNREACHABLE_TAINT, "effect": "NoExecute"},
                            {"key": UNREACHABLE_TAINT, "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    }))
    .expect("node");
    // Another Node is Ready, so not every zone is dark.
    let cache = cache_of(&[marked, zoned("n2", "", "True")], t0);
    let plan = grace()
        .reconcile(
            &ObjectKey::new("", "n1"),
            &cache,
            &ctx(t0 + Duration::from_secs(100)),
        )
        .expect("plan");
    assert!(plan.is_empty(), "{plan:?}");
    assert_eq!(
        plan.requeue_after,
        Some(SURVEY_PERIOD),
        "looked at again while not Ready"
    );
    let mut keys = SmallVec::new();
    grace().keys_for(&Object::Lease(lease("n1", 9)), &mut keys);
    assert_eq!(keys.as_slice(), &[ObjectKey::new("", "n1")]);
}
