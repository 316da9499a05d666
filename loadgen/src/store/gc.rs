//! The garbage collector's index: the dependents of every controlling owner, by owner uid,
//! for every kind (a ReplicaSet's or Job's Pods, a StatefulSet's ControllerRevisions, ...).

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::meta::controller_uid;
use crate::resource::Resource;
use crate::store::Key;

/// User agent of garbage collector writes.
pub const GC_USER_AGENT: &str = "generic-garbage-collector";

/// A dependent: its kind and key.
pub type Dependent = (Resource, Key);

/// Owner uid to the objects whose controller ownerReference names it.
#[derive(Debug, Default)]
pub struct Dependents {
    by_owner: HashMap<String, BTreeSet<Dependent>>,
}

impl Dependents {
    /// Updates the index for a write of `key` from `prev` to `new` (None for absent).
    pub fn track(&mut self, r: Resource, key: &Key, prev: Option<&Value>, new: Option<&Value>) {
        let before = prev.and_then(controller_uid);
        let after = new.and_then(controller_uid);
        if before == after {
            return;
        }
        if let Some(b) = before
            && let Some(set) = self.by_owner.get_mut(b)
        {
            set.remove(&(r, key.clone()));
            if set.is_empty() {
                self.by_owner.remove(b);
            }
        }
        if let Some(a) = after {
            self.by_owner
                .entry(a.to_string())
                .or_default()
                .insert((r, key.clone()));
        }
    }

    /// The dependents of the owner with `uid`, in a fixed order.
    pub fn of(&self, uid: &str) -> Vec<Dependent> {
        self.by_owner
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether the owner with `uid` has any dependents left.
    pub fn has_any(&self, uid: &str) -> bool {
        self.by_owner.get(uid).is_some_and(|s| !s.is_empty())
    }
}

/// `obj` without the ownerReferences that name `owner_uid` (orphaning it).
pub fn without_owner(obj: &Value, owner_uid: &str) -> Value {
    let mut out = obj.clone();
    if let Some(refs) = out["metadata"]["ownerReferences"].as_array_mut() {
        refs.retain(|o| o["uid"].as_str() != Some(owner_uid));
        if refs.is_empty()
            && let Some(m) = out["metadata"].as_object_mut()
        {
            m.remove("ownerReferences");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dependents_follow_the_controller_reference() {
        let mut d = Dependents::default();
        let key: Key = ("ns".into(), "p".into());
        let owned = json!({"metadata": {"ownerReferences": [{"uid": "o", "controller": true}]}});
        d.track(Resource::Pods, &key, None, Some(&owned));
        assert_eq!(d.of("o"), vec![(Resource::Pods, key.clone())]);
        let orphan = without_owner(&owned, "o");
        assert!(orphan["metadata"]["ownerReferences"].is_null());
        d.track(Resource::Pods, &key, Some(&owned), Some(&orphan));
        assert!(!d.has_any("o"));
    }
}
