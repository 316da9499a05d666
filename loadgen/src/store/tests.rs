//! The store's revision, history and write rules.

use super::*;
use crate::meta::meta_str;
use serde_json::{Value, json};

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
}

fn all(_: &Value) -> bool {
    true
}

#[test]
fn every_write_takes_the_next_revision() {
    let s = Store::new(100, None);
    let a = s.create(Resource::Pods, "ns", pod("a"), None).unwrap();
    let b = s.create(Resource::Pods, "ns", pod("b"), None).unwrap();
    assert_eq!(b.rv, a.rv + 1);
    assert_eq!(a.value["metadata"]["resourceVersion"], a.rv.to_string());
    let d = s
        .delete(Resource::Pods, "ns", "a", &Preconditions::default(), None)
        .unwrap();
    assert_eq!(d.rv, b.rv + 1);
    assert_eq!(s.current_revision(), d.rv);
}

#[test]
fn generate_name_creates_distinct_names() {
    let s = Store::new(100, None);
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..50 {
        let p = s
            .create(
                Resource::Pods,
                "ns",
                json!({"metadata": {"generateName": "web-"}}),
                None,
            )
            .unwrap();
        let n = meta_str(&p.value, "name").to_string();
        assert!(n.starts_with("web-") && n.len() == 9, "{n}");
        names.insert(n);
    }
    assert_eq!(names.len(), 50);
}

#[test]
fn a_no_op_update_takes_no_revision() {
    let s = Store::new(100, None);
    let a = s.create(Resource::Pods, "ns", pod("a"), None).unwrap();
    let same = s
        .update(
            Resource::Pods,
            "ns",
            "a",
            a.value.clone(),
            Subresource::Main,
            None,
        )
        .unwrap();
    assert_eq!(same.rv, a.rv);
}

#[test]
fn the_main_resource_keeps_status_and_bumps_generation_on_spec_changes() {
    let s = Store::new(100, None);
    let a = s
        .create(
            Resource::ReplicaSets,
            "ns",
            json!({"metadata": {"name": "r"}, "spec": {"replicas": 1}}),
            None,
        )
        .unwrap();
    let mut body = a.value.clone();
    body["spec"]["replicas"] = json!(3);
    body["status"] = json!({"replicas": 7});
    body["metadata"]["uid"] = json!("forged");
    let u = s
        .update(
            Resource::ReplicaSets,
            "ns",
            "r",
            body,
            Subresource::Main,
            None,
        )
        .unwrap();
    assert_eq!(u.value["status"], json!({"replicas": 0}));
    assert_eq!(u.value["metadata"]["generation"], 2);
    assert_eq!(u.value["metadata"]["uid"], a.value["metadata"]["uid"]);
}

#[test]
fn a_snapshot_undoes_later_writes() {
    let s = Store::new(100, None);
    for n in ["a", "b", "c"] {
        s.create(Resource::Pods, "ns", pod(n), None).unwrap();
    }
    let rev = s.current_revision();
    s.delete(Resource::Pods, "ns", "b", &Preconditions::default(), None)
        .unwrap();
    s.create(Resource::Pods, "ns", pod("bb"), None).unwrap();
    s.update_with(
        Resource::Pods,
        "ns",
        "a",
        |v| v["spec"]["x"] = json!(1),
        None,
    )
    .unwrap();
    let (items, more) = s
        .list_page(Resource::Pods, Some("ns"), rev, None, 10, &all)
        .unwrap();
    assert!(!more);
    let names: Vec<_> = items
        .iter()
        .map(|i| meta_str(&i.value, "name").to_string())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(items.iter().all(|i| i.rv <= rev));
    let (now, _) = s
        .list_page(Resource::Pods, None, s.current_revision(), None, 10, &all)
        .unwrap();
    assert_eq!(now.len(), 3);
}

#[test]
fn history_beyond_the_window_is_expired() {
    let s = Store::new(2, None);
    let rev = s.current_revision();
    for n in ["a", "b", "c"] {
        s.create(Resource::Pods, "ns", pod(n), None).unwrap();
    }
    let e = s
        .list_page(Resource::Pods, None, rev, None, 10, &all)
        .unwrap_err();
    assert_eq!(e.code(), 410);
    assert!(matches!(
        s.events_after(Resource::Pods, rev),
        LogRead::Compacted(_)
    ));
    match s.events_after(Resource::Pods, s.compacted_revision()) {
        LogRead::Events(ev, to) => {
            assert_eq!(ev.len(), 2);
            assert_eq!(to, s.current_revision());
        }
        LogRead::Compacted(_) => panic!("compacted"),
    }
}

#[test]
fn deleting_a_replicaset_collects_its_pods() {
    let s = Store::new(100, None);
    let oracle = crate::oracle::SharedOracle::observing(&s);
    let rs = s
        .create(
            Resource::ReplicaSets,
            "ns",
            json!({"metadata": {"name": "r"}, "spec": {"replicas": 1}}),
            None,
        )
        .unwrap();
    let uid = meta_str(&rs.value, "uid").to_string();
    let mut p = pod("p");
    p["metadata"]["ownerReferences"] = json!([{"uid": uid, "controller": true, "kind": "ReplicaSet", "name": "r", "apiVersion": "apps/v1"}]);
    s.create(Resource::Pods, "ns", p, None).unwrap();
    s.create(Resource::Pods, "ns", pod("other"), None).unwrap();
    s.delete(
        Resource::ReplicaSets,
        "ns",
        "r",
        &Preconditions::default(),
        None,
    )
    .unwrap();
    assert!(s.get(Resource::Pods, "ns", "p").is_none());
    assert!(s.get(Resource::Pods, "ns", "other").is_some());
    assert!(oracle.violations().is_empty());
    assert_eq!(
        oracle.writes().last().map(|w| w.user_agent.clone()),
        Some(Some(GC_USER_AGENT.to_string()))
    );
}

/// What an observer is told of one commit: revision, verb, request.
type Seen = (u64, Verb, Option<RequestId>);

/// Records what it is told, in order.
#[derive(Clone, Default)]
struct Recorder(std::sync::Arc<parking_lot::Mutex<Vec<Seen>>>);

impl CommitObserver for Recorder {
    fn committed(&mut self, c: &Commit<'_>) {
        self.0.lock().push((c.revision, c.verb, c.request));
    }
}

#[test]
fn observers_see_every_commit_in_revision_order_with_the_request_it_belongs_to() {
    let s = Store::new(100, None);
    let seen = Recorder::default();
    s.observe_commits(seen.clone());
    let p = s.create(Resource::Pods, "ns", pod("p"), None).unwrap();
    crate::store::commit::sync_scope(RequestId(9), || {
        s.delete(Resource::Pods, "ns", "p", &Preconditions::default(), None)
            .unwrap();
    });
    let first = p.rv;
    assert_eq!(
        *seen.0.lock(),
        vec![
            (first, Verb::Create, None),
            (first + 1, Verb::Delete, Some(RequestId(9)))
        ]
    );
}
