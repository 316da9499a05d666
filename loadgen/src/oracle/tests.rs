//! The oracle's invariants, each shown caught on a breach and quiet on fair play.

use super::*;
use serde_json::json;

fn rs(replicas: i64) -> Value {
    json!({"metadata": {"name": "web", "namespace": "ns", "uid": "rs-1"}, "spec": {"replicas": replicas}})
}

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns", "uid": name,
        "ownerReferences": [{"uid": "rs-1", "controller": true}]}})
}

/// A store in miniature: every write takes the next revision.
#[derive(Default)]
struct Store {
    oracle: Oracle,
    revision: u64,
}

impl Store {
    fn commit(
        &mut self,
        verb: Verb,
        resource: Resource,
        prev: Option<&Value>,
        new: Option<&Value>,
        arrival: Option<RequestId>,
    ) {
        self.revision += 1;
        self.oracle.observe(&Commit {
            revision: self.revision,
            verb,
            resource,
            prev,
            new,
            user_agent: Some("ctl"),
            request: arrival,
        });
    }
    fn scale(&mut self, from: i64, to: i64) {
        let (prev, new) = (rs(from), rs(to));
        let verb = if from < 0 { Verb::Create } else { Verb::Update };
        let prev = (from >= 0).then_some(&prev);
        self.commit(verb, Resource::ReplicaSets, prev, Some(&new), None);
    }
    fn create(&mut self, name: &str) {
        self.commit(Verb::Create, Resource::Pods, None, Some(&pod(name)), None);
    }
    fn delete(&mut self, name: &str) {
        self.commit(Verb::Delete, Resource::Pods, Some(&pod(name)), None, None);
    }
    fn create_arrives(&mut self) -> RequestId {
        let body = json!({"metadata": {"generateName": "web-",
            "ownerReferences": [{"uid": "rs-1", "controller": true}]}});
        self.oracle.arrive("ns", Decision::Create(&body))
    }
    fn delete_arrives(&mut self, name: &str) -> RequestId {
        self.oracle.arrive("ns", Decision::Delete(&pod(name)))
    }
    fn create_commits(&mut self, id: RequestId, name: &str) {
        self.commit(
            Verb::Create,
            Resource::Pods,
            None,
            Some(&pod(name)),
            Some(id),
        );
        self.oracle.depart(id);
    }
    fn delete_commits(&mut self, id: RequestId, name: &str) {
        self.commit(
            Verb::Delete,
            Resource::Pods,
            Some(&pod(name)),
            None,
            Some(id),
        );
        self.oracle.depart(id);
    }
    fn kinds(&self) -> Vec<ViolationKind> {
        self.oracle.violations().iter().map(|v| v.kind).collect()
    }
}

#[test]
fn one_pod_too_many_is_an_over_create() {
    let mut s = Store::default();
    s.scale(-1, 2);
    s.create("a");
    s.create("b");
    assert!(s.kinds().is_empty());
    s.create("c");
    let v = &s.oracle.violations()[0];
    assert_eq!(
        (v.kind, v.revision, v.live, v.desired, v.pod.as_str()),
        (ViolationKind::OverCreate, 4, 2, 2, "c")
    );
    assert_eq!(v.user_agent.as_deref(), Some("ctl"));
    assert_eq!(s.oracle.live_pods("rs-1"), 3);
    assert_eq!(s.oracle.writes().len(), 4);
}

#[test]
fn a_replicaset_being_deleted_wants_no_pods() {
    let mut s = Store::default();
    s.scale(-1, 2);
    s.create("a");
    let mut terminating = rs(2);
    terminating["metadata"]["deletionTimestamp"] = "2026-12-02T16:00:00Z".into();
    s.commit(
        Verb::Update,
        Resource::ReplicaSets,
        Some(&rs(2)),
        Some(&terminating),
        None,
    );
    s.delete("a");
    assert!(s.kinds().is_empty(), "foreground GC of its Pods is wanted");
    s.create("b");
    assert_eq!(
        s.kinds(),
        [ViolationKind::OverCreate],
        "a Pod for a terminating owner is an over-create"
    );
}

#[test]
fn deleting_a_wanted_pod_is_a_violation_but_gc_after_the_owner_is_not() {
    let mut s = Store::default();
    s.scale(-1, 1);
    s.create("a");
    s.create("b");
    s.delete("b");
    assert_eq!(s.kinds().len(), 1, "the over-create only");
    s.delete("a");
    assert_eq!(s.kinds()[1], ViolationKind::WantedPodDeleted);
    s.create("c");
    s.commit(
        Verb::Delete,
        Resource::ReplicaSets,
        Some(&rs(1)),
        None,
        None,
    );
    s.delete("c");
    assert_eq!(s.kinds().len(), 2);
    assert_eq!(s.oracle.live_pods("rs-1"), 0);
}

#[test]
fn a_failed_pod_is_not_live() {
    let mut s = Store::default();
    s.scale(-1, 1);
    s.create("a");
    let mut failed = pod("a");
    failed["status"] = json!({"phase": "Failed"});
    s.commit(
        Verb::UpdateStatus,
        Resource::Pods,
        Some(&pod("a")),
        Some(&failed),
        None,
    );
    s.create("b");
    s.commit(Verb::Delete, Resource::Pods, Some(&failed), None, None);
    assert!(s.kinds().is_empty());
}

#[test]
fn a_create_delayed_in_flight_while_the_user_scales_down_is_an_unavoidable_race_and_not_counted() {
    let mut s = Store::default();
    s.scale(-1, 3);
    s.create("a");
    s.create("b");
    let late = s.create_arrives();
    s.scale(3, 2);
    s.create_commits(late, "c");
    assert!(s.kinds().is_empty(), "{:?}", s.oracle.violations());
    assert_eq!(s.oracle.live_pods("rs-1"), 3);
    assert_eq!(s.oracle.in_flight(), 0);
}

#[test]
fn a_create_that_arrives_when_live_and_in_flight_pods_already_suffice_is_counted() {
    let mut s = Store::default();
    s.scale(-1, 3);
    s.create("a");
    s.create("b");
    let needed = s.create_arrives();
    let extra = s.create_arrives();
    s.create_commits(extra, "d");
    s.create_commits(needed, "c");
    let v = &s.oracle.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (v[0].kind, v[0].live, v[0].in_flight, v[0].pod.as_str()),
        (ViolationKind::OverCreate, 2, 1, "d"),
        "the second create for one missing Pod, whichever commits first"
    );
    assert!(v[0].at_arrival);
}

#[test]
fn a_delete_delayed_while_the_user_scales_up_is_not_counted_but_one_that_arrives_wanted_is() {
    let mut s = Store::default();
    s.scale(-1, 3);
    for p in ["a", "b", "c"] {
        s.create(p);
    }
    s.scale(3, 2);
    let surplus = s.delete_arrives("c");
    s.scale(2, 3);
    s.delete_commits(surplus, "c");
    assert!(s.kinds().is_empty(), "{:?}", s.oracle.violations());
    let wanted = s.delete_arrives("b");
    s.scale(3, 1);
    s.delete_commits(wanted, "b");
    assert_eq!(s.kinds(), [ViolationKind::WantedPodDeleted]);
}

#[test]
fn a_request_that_never_commits_is_no_longer_in_flight() {
    let mut s = Store::default();
    s.scale(-1, 2);
    s.create("a");
    let refused = s.create_arrives();
    s.oracle.depart(refused);
    let needed = s.create_arrives();
    s.create_commits(needed, "b");
    assert!(s.kinds().is_empty(), "{:?}", s.oracle.violations());
}

#[test]
fn a_create_arriving_moments_after_the_user_scaled_down_is_a_race_the_allowance_forgives() {
    let mut s = Store::default();
    s.oracle
        .set_delivery_allowance(std::time::Duration::from_secs(3600));
    s.scale(-1, 3);
    s.create("a");
    s.create("b");
    s.scale(3, 2);
    let id = s.create_arrives();
    s.create_commits(id, "c");
    assert!(s.kinds().is_empty(), "{:?}", s.oracle.violations());
}

#[test]
fn without_the_allowance_the_same_create_is_counted() {
    let mut s = Store::default();
    s.scale(-1, 3);
    s.create("a");
    s.create("b");
    s.scale(3, 2);
    let id = s.create_arrives();
    s.create_commits(id, "c");
    assert_eq!(s.kinds(), [ViolationKind::OverCreate]);
}

#[test]
fn a_create_while_an_older_orphan_would_make_up_the_replicas_is_an_adoption_over_create() {
    let mut s = Store::default();
    let orphan = json!({"metadata": {"name": "loose", "namespace": "ns", "uid": "loose",
        "labels": {"app": "web"}}});
    s.commit(Verb::Create, Resource::Pods, None, Some(&orphan), None);
    let mut set = rs(2);
    set["spec"]["selector"] = json!({"matchLabels": {"app": "web"}});
    s.commit(Verb::Create, Resource::ReplicaSets, None, Some(&set), None);
    s.create("a");
    let id = s.create_arrives();
    s.create_commits(id, "b");
    let kinds: Vec<_> = s.oracle.violations().iter().map(|v| v.kind).collect();
    assert_eq!(
        kinds,
        [ViolationKind::AdoptionOverCreate],
        "one owned, one orphan to adopt: the second create is one too many"
    );
    let mut adopted = orphan.clone();
    adopted["metadata"]["ownerReferences"] = json!([{"uid": "rs-1", "controller": true}]);
    s.commit(
        Verb::Update,
        Resource::Pods,
        Some(&orphan),
        Some(&adopted),
        None,
    );
    assert_eq!(
        s.oracle.violations().len(),
        1,
        "adopting by a live set is fair"
    );
}
