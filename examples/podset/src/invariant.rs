//! The example's safety invariant, checked on every commit the API server makes: a PodSet
//! never has more live Pods than the most replicas it has asked for. A controller that acts on
//! a cache missing its own creates breaks it (it creates the same Pods again).

use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// One commit that left a PodSet with more live Pods than it ever asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    /// namespace/name of the PodSet.
    pub podset: String,
    /// Its live Pods after the commit.
    pub live: usize,
    /// The most replicas it has asked for.
    pub most_asked: u32,
    /// The commit's revision.
    pub revision: u64,
}

/// Fed every committed PodSet and Pod in revision order, it keeps what the invariant needs and
/// reports each breach.
#[derive(Debug, Default)]
pub struct NoExcessPods {
    podsets: HashMap<String, (String, u32)>,
    live: HashMap<String, HashSet<String>>,
    breaches: Vec<Breach>,
}

impl NoExcessPods {
    /// A committed PodSet (created or changed).
    pub fn podset(&mut self, object: &Value) {
        let (Some(uid), Some(name)) = (text(object, "/metadata/uid"), namespaced_name(object))
        else {
            return;
        };
        let asked = object
            .pointer("/spec/replicas")
            .and_then(Value::as_u64)
            .and_then(|r| u32::try_from(r).ok())
            .unwrap_or(0);
        let entry = self.podsets.entry(uid.to_string()).or_insert((name, 0));
        entry.1 = entry.1.max(asked);
    }

    /// A committed Pod at `revision`; `deleted` when the commit removed it.
    pub fn pod(&mut self, object: &Value, deleted: bool, revision: u64) {
        let (Some(uid), Some(owner)) = (text(object, "/metadata/uid"), controller_uid(object))
        else {
            return;
        };
        let live = !deleted && is_live(object);
        let pods = self.live.entry(owner.to_string()).or_default();
        if !live {
            pods.remove(uid);
            return;
        }
        pods.insert(uid.to_string());
        if let Some((name, most_asked)) = self.podsets.get(owner)
            && pods.len() > *most_asked as usize
        {
            self.breaches.push(Breach {
                podset: name.clone(),
                live: pods.len(),
                most_asked: *most_asked,
                revision,
            });
        }
    }

    /// Every breach so far.
    pub fn breaches(&self) -> &[Breach] {
        &self.breaches
    }
}

fn text<'v>(object: &'v Value, pointer: &str) -> Option<&'v str> {
    object.pointer(pointer).and_then(Value::as_str)
}

fn namespaced_name(object: &Value) -> Option<String> {
    let name = text(object, "/metadata/name")?;
    Some(format!(
        "{}/{name}",
        text(object, "/metadata/namespace").unwrap_or_default()
    ))
}

fn controller_uid(pod: &Value) -> Option<&str> {
    pod.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
}

/// Not being deleted and not finished.
fn is_live(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp").is_none()
        && !matches!(
            text(pod, "/status/phase"),
            Some("Succeeded") | Some("Failed")
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn podset(replicas: u32) -> Value {
        json!({"metadata": {"name": "web", "namespace": "ns", "uid": "set"},
               "spec": {"replicas": replicas}})
    }

    fn pod(uid: &str) -> Value {
        json!({"metadata": {"name": uid, "namespace": "ns", "uid": uid,
               "ownerReferences": [{"kind": "PodSet", "name": "web", "uid": "set",
                                    "controller": true}]}})
    }

    #[test]
    fn pods_up_to_the_most_replicas_asked_are_no_breach_even_after_a_scale_down() {
        let mut check = NoExcessPods::default();
        check.podset(&podset(3));
        for (i, uid) in ["a", "b", "c"].into_iter().enumerate() {
            check.pod(&pod(uid), false, i as u64);
        }
        check.podset(&podset(1));
        assert!(check.breaches().is_empty());
    }

    #[test]
    fn a_pod_beyond_the_most_asked_is_a_breach_and_a_deleted_one_frees_its_place() {
        let mut check = NoExcessPods::default();
        check.podset(&podset(2));
        check.pod(&pod("a"), false, 1);
        check.pod(&pod("b"), false, 2);
        check.pod(&pod("b"), true, 3);
        check.pod(&pod("c"), false, 4);
        assert!(check.breaches().is_empty());
        check.pod(&pod("d"), false, 5);
        assert_eq!(
            check.breaches(),
            [Breach {
                podset: "ns/web".into(),
                live: 3,
                most_asked: 2,
                revision: 5
            }]
        );
    }
}
