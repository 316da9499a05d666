//! The DaemonSet controller's decisions, one situation a test: placement, updates, takeover.

use super::*;
use crate::key::Uid;
use crate::labels::Labels;
use crate::object::{OwnerRef, PodPhase};
use crate::template_hash::template_hash;
use crate::views::nodes::NodeView;
use std::time::Instant;

fn ds(selector: Value) -> DaemonSetView {
    DaemonSetView::from_value(json!({
        "metadata": {"name": "agent", "namespace": "ns", "uid": "d1", "generation": 2},
        "spec": {"template": {"metadata": {"labels": {"app": "agent"}},
            "spec": {"nodeSelector": selector, "containers": [{"name": "a", "image": "a"}]}}},
    }))
    .expect("ds")
}

fn node(name: &str, labels: Value) -> NodeView {
    NodeView::from_value(
        json!({"metadata": {"name": name, "uid": format!("u-{name}"), "labels": labels}}),
    )
    .expect("node")
}

fn pod(name: &str, node: &str, created: i64, revision: &str) -> PodView {
    let mut labels = std::collections::BTreeMap::new();
    labels.insert(REVISION_LABEL.to_string(), revision.to_string());
    PodView {
        key: ObjectKey::new("ns", name),
        uid: Uid::new(format!("uid-{name}")),
        resource_version: None,
        labels: Labels::from_map(labels),
        controller: Some(OwnerRef {
            kind: "DaemonSet".into(),
            name: "agent".into(),
            uid: Uid::new("d1"),
        }),
        node_name: Some(node.into()),
        phase: PodPhase::Running,
        ready: true,
        ready_since: None,
        restarts: 0,
        created,
        terminating: false,
        job_tracking: false,
        completion_index: None,
        index_failures: Default::default(),
        failure: None,
        malformed: None,
    }
}

fn plan(ds: &DaemonSetView, nodes: Vec<NodeView>, pods: Vec<PodView>) -> Plan {
    plan_with(ds, nodes, pods, Vec::new())
}

fn plan_with(
    ds: &DaemonSetView,
    nodes: Vec<NodeView>,
    pods: Vec<PodView>,
    revisions: Vec<Object>,
) -> Plan {
    let mut cache = ShardCache::default();
    for r in revisions {
        cache.apply(r);
    }
    cache.apply(Object::DaemonSet(ds.clone()));
    for n in nodes {
        cache.apply(Object::Node(n));
    }
    for p in pods {
        cache.apply(Object::Pod(p));
    }
    let ctx = Context {
        now: Instant::now(),
        unix_secs: 0,
    };
    DaemonSetController
        .reconcile(&ds.key, &cache, &ctx)
        .expect("plan")
}

fn created_on(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::Create { body, .. } => body["spec"]["nodeName"].as_str().map(str::to_string),
            _ => None,
        })
        .collect()
}

fn deleted(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::Delete { key, .. } => Some(key.name().to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn each_eligible_node_gets_one_pod_and_a_second_one_is_removed() {
    let d = ds(json!({"pool": "a"}));
    let revision = template_hash(Some(&d.pod_template));
    let nodes = vec![
        node("n1", json!({"pool": "a"})),
        node("n2", json!({"pool": "a"})),
        node("n3", json!({"pool": "b"})),
    ];
    let pods = vec![
        pod("p1", "n1", 1, &revision),
        pod("p1b", "n1", 2, &revision),
        pod("p3", "n3", 1, &revision),
    ];
    let p = plan(&d, nodes, pods);
    assert_eq!(created_on(&p), vec!["n2"]);
    let mut gone = deleted(&p);
    gone.sort();
    assert_eq!(
        gone,
        vec!["p1b", "p3"],
        "the younger duplicate and the Pod on an unwanted Node"
    );
}

#[test]
fn a_template_spec_that_is_not_an_object_is_malformed_not_a_panic() {
    for spec in [json!("not-an-object"), json!([1]), json!(7)] {
        let d = DaemonSetView::from_value(json!({
            "metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
            "spec": {"template": {"spec": spec}},
        }))
        .expect("identity");
        let mut cache = ShardCache::default();
        cache.apply(Object::DaemonSet(d.clone()));
        cache.apply(Object::Node(node("n1", json!({}))));
        let ctx = Context {
            now: Instant::now(),
            unix_secs: 0,
        };
        let result = DaemonSetController.reconcile(&d.key, &cache, &ctx);
        assert!(
            matches!(result, Err(ReconcileError::Malformed { .. })),
            "{spec}: {result:?}"
        );
    }
}

#[test]
fn a_malformed_node_gets_no_pod_and_keeps_the_one_it_has() {
    let d = ds(json!({}));
    let revision = template_hash(Some(&d.pod_template));
    let bad = NodeView::from_value(
        json!({"metadata": {"name": "n2", "uid": "u-n2", "labels": {"a": 1}}}),
    )
    .expect("identity");
    assert!(bad.malformed.is_some());
    let p = plan(
        &d,
        vec![node("n1", json!({})), bad],
        vec![pod("p2", "n2", 1, &revision)],
    );
    assert_eq!(created_on(&p), vec!["n1"]);
    assert!(deleted(&p).is_empty(), "{p:?}");
}

#[test]
fn on_delete_never_deletes_old_pods_for_an_update() {
    let d = DaemonSetView::from_value(json!({
        "metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
        "spec": {"template": {"spec": {}}, "updateStrategy": {"type": "OnDelete"}},
    }))
    .expect("ds");
    let nodes = (0..4).map(|i| node(&format!("n{i}"), json!({}))).collect();
    let pods = (0..4)
        .map(|i| pod(&format!("p{i}"), &format!("n{i}"), i, "old"))
        .collect();
    let p = plan(&d, nodes, pods);
    assert!(deleted(&p).is_empty(), "{p:?}");
}

#[test]
fn a_rollout_replaces_old_pods_within_max_unavailable() {
    let d = ds(json!({}));
    let nodes = (0..4).map(|i| node(&format!("n{i}"), json!({}))).collect();
    let pods = (0..4)
        .map(|i| pod(&format!("p{i}"), &format!("n{i}"), i, "old"))
        .collect();
    let p = plan(&d, nodes, pods);
    assert_eq!(
        deleted(&p).len(),
        1,
        "maxUnavailable defaults to one Node at a time"
    );
    assert!(p.is_destructive());
}

const KCM_HASH: &str = "6b8f7c9d5";

/// The ControllerRevision kube-controller-manager wrote for `ds`'s template.
fn kcm_revision(ds: &DaemonSetView) -> Object {
    let mut template = (*ds.pod_template).clone();
    template["$patch"] = json!("replace");
    let body = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": format!("agent-{KCM_HASH}"), "namespace": "ns", "uid": "uid-rev", "resourceVersion": "2",
            "labels": {"app": "agent", REVISION_LABEL: KCM_HASH},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "d1", "controller": true}]},
        "data": {"spec": {"template": template}},
        "revision": 1,
    });
    let bytes = serde_json::to_vec(&body).expect("json");
    Object::decode(Resource::ControllerRevisions, &bytes)
        .expect("a revision")
        .0
}

fn left_by_kcm() -> (DaemonSetView, Vec<NodeView>, Vec<PodView>) {
    let nodes = (0..4).map(|i| node(&format!("n{i}"), json!({}))).collect();
    let pods = (0..4)
        .map(|i| pod(&format!("p{i}"), &format!("n{i}"), i, KCM_HASH))
        .collect();
    (ds(json!({})), nodes, pods)
}

fn revisions_created(plan: &Plan) -> usize {
    plan.steps
        .iter()
        .flatten()
        .filter(|a| {
            matches!(
                a,
                Action::Create {
                    resource: Resource::ControllerRevisions,
                    ..
                }
            )
        })
        .count()
}

#[test]
fn pods_kcm_made_are_current_when_its_revision_records_the_template() {
    let (d, nodes, pods) = left_by_kcm();
    let p = plan_with(&d, nodes, pods, vec![kcm_revision(&d)]);
    assert!(deleted(&p).is_empty(), "{p:?}");
    assert_eq!(revisions_created(&p), 0);
}

#[test]
fn without_kcm_s_revision_the_same_pods_would_be_rolled() {
    let (d, nodes, pods) = left_by_kcm();
    let p = plan(&d, nodes, pods);
    assert_eq!(
        deleted(&p).len(),
        1,
        "the rollout a takeover must not start"
    );
    assert_eq!(revisions_created(&p), 1, "and a revision of its own first");
}

#[test]
fn a_pod_at_the_set_s_template_generation_is_current_whatever_its_hash() {
    let mut value = ds(json!({}))
        .raw
        .to_value()
        .expect("the kept object parses");
    value["metadata"]["annotations"] = json!({"deprecated.daemonset.template.generation": "2"});
    let d = DaemonSetView::from_value(value).expect("ds");
    let nodes = vec![node("n0", json!({})), node("n1", json!({}))];
    let mut pods = vec![pod("p0", "n0", 0, "other"), pod("p1", "n1", 1, "other")];
    let generation = BTreeMap::from([
        (REVISION_LABEL.to_string(), "other".to_string()),
        (TEMPLATE_GENERATION_LABEL.to_string(), "2".to_string()),
    ]);
    pods[0].labels = Labels::from_map(generation);
    let p = plan(&d, nodes, pods);
    assert_eq!(
        deleted(&p),
        vec!["p1"],
        "only the Pod of another generation rolls"
    );
    let created = plan(&d, vec![node("n2", json!({}))], Vec::new());
    let body = created
        .steps
        .iter()
        .flatten()
        .find_map(|a| match a {
            Action::Create {
                resource: Resource::Pods,
                body,
                ..
            } => Some(body),
            _ => None,
        })
        .expect("a Pod for n2");
    assert_eq!(body["metadata"]["labels"][TEMPLATE_GENERATION_LABEL], "2");
}

/// A DaemonSet that surges one Node at a time and never has one unavailable.
fn surging() -> DaemonSetView {
    let mut value = ds(json!({}))
        .raw
        .to_value()
        .expect("the kept object parses");
    value["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    DaemonSetView::from_value(value).expect("ds")
}

fn three_nodes() -> Vec<NodeView> {
    (0..3).map(|i| node(&format!("n{i}"), json!({}))).collect()
}

fn not_ready(mut p: PodView) -> PodView {
    p.ready = false;
    p
}

#[test]
fn with_max_surge_an_updated_pod_starts_beside_the_old_one_on_one_node_at_a_time() {
    let d = surging();
    let current = template_hash(Some(&d.pod_template));
    let old: Vec<PodView> = (0..3)
        .map(|i| pod(&format!("old{i}"), &format!("n{i}"), i, "old"))
        .collect();
    let p = plan(&d, three_nodes(), old.clone());
    assert_eq!(created_on(&p), vec!["n0"]);
    assert!(
        deleted(&p).is_empty(),
        "nothing goes before its replacement: {p:?}"
    );

    let mut starting = old.clone();
    starting.push(not_ready(pod("new0", "n0", 9, &current)));
    let p = plan(&d, three_nodes(), starting);
    assert!(created_on(&p).is_empty() && deleted(&p).is_empty(), "{p:?}");

    let mut ready = old;
    ready.push(pod("new0", "n0", 9, &current));
    let p = plan(&d, three_nodes(), ready);
    assert_eq!(
        deleted(&p),
        vec!["old0"],
        "the old Pod goes once the new one is ready"
    );
    assert!(
        created_on(&p).is_empty(),
        "n0 still counts against the surge"
    );
}

#[test]
fn with_max_surge_a_second_updated_pod_goes_and_an_unready_old_pod_is_replaced_at_once() {
    let d = surging();
    let current = template_hash(Some(&d.pod_template));
    let pods = vec![
        pod("new0", "n0", 1, &current),
        pod("new0b", "n0", 2, &current),
        not_ready(pod("old1", "n1", 1, "old")),
        pod("old2", "n2", 1, "old"),
    ];
    let p = plan(&d, three_nodes(), pods);
    assert_eq!(deleted(&p), vec!["new0b"]);
    let mut on = created_on(&p);
    on.sort();
    assert_eq!(
        on,
        vec!["n1", "n2"],
        "n1 out of budget (its old Pod is not ready), n2 in it"
    );
}

#[test]
fn without_surge_or_unavailability_one_node_may_be_unavailable_as_upstream_defaults() {
    let mut value = ds(json!({}))
        .raw
        .to_value()
        .expect("the kept object parses");
    value["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}});
    let d = DaemonSetView::from_value(value).expect("ds");
    let old: Vec<PodView> = (0..3)
        .map(|i| pod(&format!("old{i}"), &format!("n{i}"), i, "old"))
        .collect();
    assert_eq!(deleted(&plan(&d, three_nodes(), old)).len(), 1);
}

fn revision_of(d: &DaemonSetView, hash: &str, number: i64, image: &str) -> Object {
    let body = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": format!("agent-{hash}"), "namespace": "ns", "uid": format!("uid-{hash}"), "resourceVersion": "2",
            "labels": {REVISION_LABEL: hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": d.uid.text(), "controller": true}]},
        "data": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": image}]}}}},
        "revision": number,
    });
    Object::decode(
        Resource::ControllerRevisions,
        &serde_json::to_vec(&body).expect("json"),
    )
    .expect("a revision")
    .0
}

#[test]
fn old_revisions_beyond_the_history_limit_go_unless_a_pod_carries_their_hash() {
    let mut value = ds(json!({}))
        .raw
        .to_value()
        .expect("the kept object parses");
    value["spec"]["revisionHistoryLimit"] = json!(1);
    let d = DaemonSetView::from_value(value).expect("ds");
    let current = kcm_revision(&d);
    let revisions = vec![
        revision_of(&d, "h1", 1, "a:1"),
        revision_of(&d, "h2", 2, "a:2"),
        revision_of(&d, "h3", 3, "a:3"),
        current,
    ];
    let pods = vec![pod("p0", "n0", 0, KCM_HASH), pod("p1", "n1", 1, "h1")];
    let nodes = vec![node("n0", json!({})), node("n1", json!({}))];
    let p = plan_with(&d, nodes, pods, revisions);
    let gone: Vec<String> = p
        .steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::Delete {
                resource: Resource::ControllerRevisions,
                key,
                ..
            } => Some(key.name().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        gone,
        vec!["agent-h2", "agent-h3"],
        "h1 is a live Pod's; two of three old go"
    );
}

fn adopted(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::StrategicPatch { key, patch, .. }
                if patch["metadata"]["ownerReferences"][0]["controller"] == true =>
            {
                Some(key.name().to_string())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn an_orphan_on_a_node_is_adopted_and_the_node_gets_no_second_pod() {
    let d = ds(json!({}));
    let nodes = vec![node("n0", json!({})), node("n1", json!({}))];
    let mut loose = pod("loose", "n0", 0, "any");
    loose.controller = None;
    let p = plan(&d, nodes, vec![loose]);
    assert!(p.adopts);
    assert_eq!(adopted(&p), ["loose"]);
    assert_eq!(created_on(&p), ["n1"]);
}

#[test]
fn a_daemonset_being_deleted_adopts_nothing() {
    let mut d = ds(json!({}));
    d.terminating = true;
    let mut loose = pod("loose", "n0", 0, "any");
    loose.controller = None;
    let p = plan(&d, vec![node("n0", json!({}))], vec![loose]);
    assert!(adopted(&p).is_empty());
}
