//! ControllerRevisions claimed as upstream's `ControllerRevisionControllerRefManager` claims them
//! for StatefulSets and DaemonSets: a set adopts the orphan revisions its selector matches (a
//! set deleted with `propagationPolicy: Orphan` and created again finds its history, so the hash
//! labels of the Pods it adopts stay current and nothing rolls) and releases those it owns that
//! its selector stops matching. An owner being deleted adopts nothing and releases nothing.

use crate::action::Action;
use crate::cache::ShardCache;
use crate::controllers::history::{self, OwnedRevision};
use crate::key::{ObjectKey, Uid};
use crate::labels::LabelSelector;
use crate::pod_template::ControllerRef;
use crate::resource::Resource;
use crate::views::custom::CustomObject;
use crate::views::revision::Revision;
use serde_json::json;

/// The set whose revisions are claimed.
#[derive(Clone, Copy, Debug)]
pub struct RevisionOwner<'a> {
    /// `StatefulSets` or `DaemonSets`.
    pub resource: Resource,
    /// Its key; only revisions of its namespace are claimed.
    pub key: &'a ObjectKey,
    /// Its UID.
    pub uid: &'a Uid,
    /// Its selector (an empty one, which the API refuses for these kinds, adopts and releases
    /// nothing).
    pub selector: &'a LabelSelector,
    /// It has a deletionTimestamp.
    pub terminating: bool,
}

/// What a claim found.
#[derive(Default)]
pub struct ClaimedRevisions<'a> {
    /// The set's revisions, oldest first: those it owns and still matches, and the orphans it
    /// adopts (counted at once, as upstream counts what its adopting patch claims).
    pub revisions: Vec<OwnedRevision<'a>>,
    /// The adopting and releasing patches.
    pub patches: Vec<Action>,
    /// How many of `revisions` `patches` adopt.
    pub adopted: usize,
}

impl RevisionOwner<'_> {
    /// Claims the revisions of `cache` as this set's.
    pub fn claim<'c>(&self, cache: &'c ShardCache) -> ClaimedRevisions<'c> {
        let mut claimed = ClaimedRevisions::default();
        // An empty selector (which the API refuses for these kinds) adopts and releases nothing.
        let selecting =
            !self.selector.match_labels.is_empty() || !self.selector.match_expressions.is_empty();
        let selects = |object: &CustomObject| selecting && self.selector.matches(&object.labels);
        for object in cache.customs(Resource::ControllerRevisions) {
            if object.key.namespace() != self.key.namespace() || object.malformed.is_some() {
                continue;
            }
            let Some(revision) = object.get::<Revision>() else {
                continue;
            };
            match &object.controller {
                Some(c) if c.uid == *self.uid => {
                    if self.terminating || !selecting || selects(object) {
                        claimed.revisions.push(OwnedRevision { object, revision });
                    } else {
                        claimed.patches.push(self.release(object));
                    }
                }
                None if !self.terminating && !object.terminating && selects(object) => {
                    claimed.patches.push(self.adopt(object));
                    claimed.revisions.push(OwnedRevision { object, revision });
                    claimed.adopted += 1;
                }
                _ => {}
            }
        }
        history::oldest_first(&mut claimed.revisions);
        claimed
    }

    /// The patch that makes this set `revision`'s controller, on the revision's UID.
    fn adopt(&self, revision: &CustomObject) -> Action {
        let reference = ControllerRef::to(self.resource, self.key.name(), self.uid);
        Action::StrategicPatch {
            resource: Resource::ControllerRevisions,
            key: revision.key.clone(),
            patch: json!({"metadata": {
                "ownerReferences": [reference],
                "uid": revision.uid.text(),
            }}),
        }
    }

    /// The patch that removes this set's reference from `revision`.
    fn release(&self, revision: &CustomObject) -> Action {
        Action::StrategicPatch {
            resource: Resource::ControllerRevisions,
            key: revision.key.clone(),
            patch: json!({"metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": self.uid.text()}],
                "uid": revision.uid.text(),
            }}),
        }
    }
}

/// The owners among `owners` that may adopt `revision` if it is an orphan: what a shard queues
/// when one arrives.
pub fn owners_of_orphan_revision<'a>(
    revision: &CustomObject,
    owners: impl Iterator<Item = RevisionOwner<'a>>,
    keys: &mut Vec<ObjectKey>,
) {
    if revision.resource != Resource::ControllerRevisions || revision.controller.is_some() {
        return;
    }
    keys.extend(
        owners
            .filter(|o| {
                !o.terminating
                    && o.key.namespace() == revision.key.namespace()
                    && !(o.selector.match_labels.is_empty()
                        && o.selector.match_expressions.is_empty())
                    && o.selector.matches(&revision.labels)
            })
            .map(|o| o.key.clone()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Object;

    fn revision(name: &str, labels: serde_json::Value, owner_uid: Option<&str>) -> CustomObject {
        let mut meta = json!({"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "resourceVersion": "3", "labels": labels});
        if let Some(uid) = owner_uid {
            meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet",
                "name": "agent", "uid": uid, "controller": true}]);
        }
        let body = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta,
            "data": {"spec": {"template": {"$patch": "replace", "metadata": {}, "spec": {}}}},
            "revision": 1});
        CustomObject::from_json(Resource::ControllerRevisions, body.to_string().as_bytes())
            .expect("revision")
    }

    fn owner<'a>(
        key: &'a ObjectKey,
        uid: &'a Uid,
        selector: &'a LabelSelector,
    ) -> RevisionOwner<'a> {
        RevisionOwner {
            resource: Resource::DaemonSets,
            key,
            uid,
            selector,
            terminating: false,
        }
    }

    #[test]
    fn a_set_adopts_its_matching_orphans_and_releases_what_stops_matching() {
        let mut cache = ShardCache::default();
        cache.apply(Object::Custom(revision(
            "agent-old",
            json!({"app": "agent"}),
            None,
        )));
        cache.apply(Object::Custom(revision(
            "other",
            json!({"app": "web"}),
            None,
        )));
        cache.apply(Object::Custom(revision(
            "agent-moved",
            json!({"app": "gone"}),
            Some("uid-ds"),
        )));
        cache.apply(Object::Custom(revision(
            "agent-kept",
            json!({"app": "agent"}),
            Some("uid-ds"),
        )));
        let (key, uid) = (ObjectKey::new("ns", "agent"), Uid::new("uid-ds"));
        let selector = LabelSelector::parse("app=agent").expect("selector");
        let claimed = owner(&key, &uid, &selector).claim(&cache);
        let names: Vec<&str> = claimed
            .revisions
            .iter()
            .map(|r| r.object.key.name())
            .collect();
        assert_eq!(names, ["agent-kept", "agent-old"]);
        assert_eq!(claimed.adopted, 1);
        let patches: Vec<(&str, &serde_json::Value)> = claimed
            .patches
            .iter()
            .map(|a| match a {
                Action::StrategicPatch { key, patch, .. } => (key.name(), patch),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(patches.len(), 2);
        let (released, release) = patches
            .iter()
            .find(|(n, _)| *n == "agent-moved")
            .expect("released");
        assert_eq!(*released, "agent-moved");
        assert_eq!(
            release["metadata"]["ownerReferences"][0],
            json!({"$patch": "delete", "uid": "uid-ds"})
        );
        let (_, adopt) = patches
            .iter()
            .find(|(n, _)| *n == "agent-old")
            .expect("adopted");
        assert_eq!(adopt["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            adopt["metadata"]["uid"], "uid-agent-old",
            "only that very revision"
        );
    }

    #[test]
    fn a_set_being_deleted_claims_nothing_and_an_orphan_queues_the_sets_it_matches() {
        let mut cache = ShardCache::default();
        let orphan = revision("agent-old", json!({"app": "agent"}), None);
        cache.apply(Object::Custom(orphan.clone()));
        let (key, uid) = (ObjectKey::new("ns", "agent"), Uid::new("uid-ds"));
        let selector = LabelSelector::parse("app=agent").expect("selector");
        let deleting = RevisionOwner {
            terminating: true,
            ..owner(&key, &uid, &selector)
        };
        let claimed = deleting.claim(&cache);
        assert!(claimed.revisions.is_empty() && claimed.patches.is_empty());

        let other_key = ObjectKey::new("ns", "web");
        let web = LabelSelector::parse("app=web").expect("selector");
        let mut keys = Vec::new();
        owners_of_orphan_revision(
            &orphan,
            [owner(&key, &uid, &selector), owner(&other_key, &uid, &web)].into_iter(),
            &mut keys,
        );
        assert_eq!(keys, vec![key.clone()]);
    }
}
