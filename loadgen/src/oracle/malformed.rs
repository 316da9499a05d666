//! The hostile-object invariant: no Pod of an owner whose decisive fields are malformed is created
//! or deleted while it is malformed (judged at the request's arrival), whatever the controller.

use std::collections::HashSet;

use serde_json::Value;

use crate::meta::{controller_uid, meta_str};
use crate::oracle::in_flight::Decision;
use crate::oracle::{Violation, ViolationKind};
use crate::resource::Resource;

/// The fields each owner's controller decides on, as JSON pointers, with what a well-formed value
/// is: absent (upstream's default) or a non-negative integer that fits an int32.
fn decisive_counts(resource: Resource) -> &'static [&'static str] {
    match resource {
        Resource::ReplicaSets | Resource::StatefulSets => &["/spec/replicas"],
        Resource::Jobs => &["/spec/parallelism", "/spec/completions"],
        Resource::DaemonSets => &["/spec/minReadySeconds"],
        _ => &[],
    }
}

/// Whether `owner`, an object of `resource`, has a decisive field present with the wrong type
/// or out of range, or a selector that is not an object.
pub fn is_malformed(resource: Resource, owner: &Value) -> bool {
    let bad_count = decisive_counts(resource).iter().any(|pointer| {
        owner.pointer(pointer).is_some_and(|v| {
            !v.is_null()
                && !v
                    .as_i64()
                    .is_some_and(|n| (0..=i64::from(i32::MAX)).contains(&n))
        })
    });
    let bad_selector = !decisive_counts(resource).is_empty()
        && owner
            .pointer("/spec/selector")
            .is_some_and(|s| !s.is_null() && !s.is_object());
    bad_count || bad_selector
}

/// The owners malformed now, by uid.
#[derive(Debug, Default)]
pub struct MalformedOwners {
    uids: HashSet<String>,
    names: std::collections::HashMap<String, (String, String)>,
}

impl MalformedOwners {
    /// An owner of `resource` was written (`new` absent: deleted).
    pub fn record_owner(&mut self, resource: Resource, prev: Option<&Value>, new: Option<&Value>) {
        let Some(obj) = new.or(prev) else { return };
        let uid = meta_str(obj, "uid").to_string();
        match new.filter(|o| is_malformed(resource, o)) {
            Some(owner) => {
                self.names.insert(
                    uid.clone(),
                    (
                        meta_str(owner, "namespace").to_string(),
                        meta_str(owner, "name").to_string(),
                    ),
                );
                self.uids.insert(uid);
            }
            None => {
                self.uids.remove(&uid);
                self.names.remove(&uid);
            }
        }
    }

    /// A create or delete of a Pod whose controlling owner is malformed breaks the invariant.
    pub fn judge(&self, decision: Decision<'_>) -> Option<Violation> {
        let pod = decision.pod();
        let owner = controller_uid(pod)?;
        if !self.uids.contains(owner) {
            return None;
        }
        let (namespace, name) = self.names.get(owner).cloned().unwrap_or_default();
        Some(Violation {
            kind: ViolationKind::ActionOnMalformedOwner,
            revision: 0,
            namespace,
            replicaset: name,
            live: 0,
            in_flight: 0,
            desired: 0,
            pod: meta_str(pod, "name").to_string(),
            user_agent: None,
            at_arrival: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(replicas: Value) -> Value {
        json!({"metadata": {"uid": "u1", "namespace": "ns", "name": "web"},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}}})
    }

    fn pod_of(uid: &str) -> Value {
        json!({"metadata": {"name": "p", "ownerReferences": [{"uid": uid, "controller": true}]}})
    }

    #[test]
    fn a_count_of_the_wrong_type_or_range_is_malformed_and_an_absent_one_is_not() {
        for bad in [
            json!("five"),
            json!("3"),
            json!(3.5),
            json!(-2),
            json!(1u64 << 40),
        ] {
            assert!(
                is_malformed(Resource::ReplicaSets, &rs(bad.clone())),
                "{bad}"
            );
        }
        assert!(!is_malformed(Resource::ReplicaSets, &rs(json!(3))));
        assert!(!is_malformed(Resource::ReplicaSets, &rs(Value::Null)));
        assert!(
            !is_malformed(Resource::Pods, &rs(json!("five"))),
            "not an owner"
        );
    }

    #[test]
    fn touching_a_pod_of_a_malformed_owner_is_a_violation_until_it_is_repaired() {
        let mut owners = MalformedOwners::default();
        let pod = pod_of("u1");
        owners.record_owner(Resource::ReplicaSets, None, Some(&rs(json!("five"))));
        let v = owners.judge(Decision::Delete(&pod)).expect("a violation");
        assert_eq!(v.kind, ViolationKind::ActionOnMalformedOwner);
        assert_eq!(v.replicaset, "web");
        assert!(owners.judge(Decision::Create(&pod_of("u2"))).is_none());
        owners.record_owner(Resource::ReplicaSets, None, Some(&rs(json!(5))));
        assert!(owners.judge(Decision::Delete(&pod)).is_none(), "repaired");
    }
}
