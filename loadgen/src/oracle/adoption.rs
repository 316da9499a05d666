//! The controller-reference invariants: no Pod ever has two controllers, no Pod is adopted by an
//! owner being deleted (or gone), and no Pod is created for a ReplicaSet while orphans it would
//! adopt were already there: an orphan older than its set is the set's to count, as upstream
//! claims before it manages replicas.

use std::collections::HashMap;

use serde_json::Value;

use crate::admission::validation::selector_matches;
use crate::meta::{controller_uid, meta_str};
use crate::oracle::{Violation, ViolationKind, pod_is_live};
use crate::resource::Resource;

/// An owner of Pods, as the oracle follows it.
#[derive(Debug, Clone)]
struct Owner {
    namespace: String,
    name: String,
    /// A ReplicaSet's `spec.selector` (the other kinds are not judged for over-creation here).
    selector: Option<Value>,
    /// The revision it was created at: orphans older than it were there to be counted.
    created: u64,
    terminating: bool,
}

/// A live Pod no controller owns.
#[derive(Debug, Clone)]
struct Orphan {
    labels: serde_json::Map<String, Value>,
    /// The revision since which it has been an orphan.
    since: u64,
}

/// What the oracle knows of owners and orphans.
#[derive(Debug, Default)]
pub struct AdoptionOracle {
    owners: HashMap<String, Owner>,
    /// By namespace, then name.
    orphans: HashMap<String, HashMap<String, Orphan>>,
}

/// How many ownerReferences of `pod` say `controller: true`.
fn controllers(pod: &Value) -> usize {
    pod["metadata"]["ownerReferences"]
        .as_array()
        .map_or(0, |refs| {
            refs.iter()
                .filter(|r| r["controller"].as_bool() == Some(true))
                .count()
        })
}

fn violation(kind: ViolationKind, owner: Option<&Owner>, pod: &Value) -> Violation {
    Violation {
        kind,
        revision: 0,
        namespace: meta_str(pod, "namespace").to_string(),
        replicaset: owner.map(|o| o.name.clone()).unwrap_or_default(),
        live: 0,
        in_flight: 0,
        desired: 0,
        at_arrival: false,
        pod: meta_str(pod, "name").to_string(),
        user_agent: None,
    }
}

impl AdoptionOracle {
    /// An owner of `resource` was written at `revision` (`new` absent: deleted).
    pub fn record_owner(
        &mut self,
        resource: Resource,
        prev: Option<&Value>,
        new: Option<&Value>,
        revision: u64,
    ) {
        let Some(obj) = new.or(prev) else { return };
        let uid = meta_str(obj, "uid").to_string();
        let Some(owner) = new else {
            self.owners.remove(&uid);
            return;
        };
        let created = self.owners.get(&uid).map_or(revision, |o| o.created);
        self.owners.insert(
            uid,
            Owner {
                namespace: meta_str(owner, "namespace").to_string(),
                name: meta_str(owner, "name").to_string(),
                selector: (resource == Resource::ReplicaSets)
                    .then(|| owner["spec"]["selector"].clone()),
                created,
                terminating: !owner["metadata"]["deletionTimestamp"].is_null(),
            },
        );
    }

    /// Live orphans older than the ReplicaSet `owner` that its selector matches: Pods it was to
    /// adopt and count before creating any.
    pub fn adoptable(&self, owner: &str) -> i64 {
        let Some(set) = self.owners.get(owner) else {
            return 0;
        };
        let Some(selector) = set.selector.as_ref() else {
            return 0;
        };
        self.orphans.get(&set.namespace).map_or(0, |orphans| {
            orphans
                .values()
                .filter(|o| o.since < set.created && selector_matches(selector, &o.labels))
                .count() as i64
        })
    }

    /// A Pod was written at `revision`: what it breaks, and the orphans follow.
    pub fn record_pod(
        &mut self,
        prev: Option<&Value>,
        new: Option<&Value>,
        revision: u64,
    ) -> Vec<Violation> {
        let mut broken = Vec::new();
        if let Some(pod) = new {
            if controllers(pod) > 1 {
                broken.push(violation(ViolationKind::TwoControllers, None, pod));
            }
            let before = prev.and_then(controller_uid);
            if let Some(after) = controller_uid(pod)
                && prev.is_some()
                && before.is_none()
            {
                let owner = self.owners.get(after);
                if owner.is_none_or(|o| o.terminating) {
                    broken.push(violation(
                        ViolationKind::AdoptedByOwnerBeingDeleted,
                        owner,
                        pod,
                    ));
                }
            }
        }
        let Some(obj) = new.or(prev) else {
            return broken;
        };
        let (namespace, name) = (meta_str(obj, "namespace"), meta_str(obj, "name"));
        let orphan_now = new.filter(|p| controller_uid(p).is_none() && pod_is_live(p));
        let orphans = self.orphans.entry(namespace.to_string()).or_default();
        match orphan_now {
            Some(pod) => {
                let since = orphans.get(name).map_or(revision, |o| o.since);
                let labels = pod["metadata"]["labels"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                orphans.insert(name.to_string(), Orphan { labels, since });
            }
            None => {
                orphans.remove(name);
            }
        }
        broken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(uid: &str, deleting: bool) -> Value {
        let mut rs = json!({"metadata": {"namespace": "ns", "name": "web", "uid": uid},
            "spec": {"selector": {"matchLabels": {"app": "web"}}}});
        if deleting {
            rs["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        rs
    }

    fn pod(name: &str, owners: Value) -> Value {
        json!({"metadata": {"namespace": "ns", "name": name, "labels": {"app": "web"},
            "ownerReferences": owners}})
    }

    fn controller(uid: &str) -> Value {
        json!({"kind": "ReplicaSet", "name": uid, "uid": uid, "controller": true})
    }

    #[test]
    fn an_orphan_older_than_a_set_is_the_sets_to_count() {
        let mut oracle = AdoptionOracle::default();
        oracle.record_pod(None, Some(&pod("early", json!([]))), 5);
        oracle.record_owner(Resource::ReplicaSets, None, Some(&rs("u1", false)), 7);
        oracle.record_pod(None, Some(&pod("late", json!([]))), 9);
        assert_eq!(
            oracle.adoptable("u1"),
            1,
            "only the orphan from before the set"
        );
        let adopted = pod("early", json!([controller("u1")]));
        oracle.record_pod(Some(&pod("early", json!([]))), Some(&adopted), 10);
        assert_eq!(oracle.adoptable("u1"), 0);
    }

    #[test]
    fn two_controllers_and_an_adoption_by_a_set_being_deleted_are_violations() {
        let mut oracle = AdoptionOracle::default();
        oracle.record_owner(Resource::ReplicaSets, None, Some(&rs("u1", true)), 3);
        let orphan = pod("p", json!([]));
        let adopted = pod("p", json!([controller("u1")]));
        let kinds: Vec<_> = oracle
            .record_pod(Some(&orphan), Some(&adopted), 4)
            .into_iter()
            .map(|v| v.kind)
            .collect();
        assert_eq!(kinds, [ViolationKind::AdoptedByOwnerBeingDeleted]);
        let twice = pod("q", json!([controller("u1"), controller("u2")]));
        let kinds: Vec<_> = oracle
            .record_pod(None, Some(&twice), 5)
            .into_iter()
            .map(|v| v.kind)
            .collect();
        assert_eq!(kinds, [ViolationKind::TwoControllers]);
    }
}
