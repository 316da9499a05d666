//! Controller references kept as upstream's `ControllerRefManager.ClaimPods` keeps them: an
//! owner adopts the orphans its selector matches and releases the Pods it owns that stop
//! matching, each by a strategic merge patch that names the Pod's UID.
//!
//! The UID in the patch is the precondition: `metadata.uid` is immutable, so a patch that reaches
//! a newer Pod of the same name is refused with 422. Adding a second reference with
//! `controller: true` is refused too (only one may be set), which is what makes two owners
//! racing for one orphan end with one owner. An owner being deleted adopts and releases nothing;
//! the live read that upstream's `RecheckDeletionTimestamp` makes before the first adoption is
//! [`Plan::adopts`](crate::action::Plan::adopts), carried out by the shard's gate.

use crate::action::Action;
use crate::cache::ShardCache;
use crate::key::{ObjectKey, Uid};
use crate::labels::LabelSelector;
use crate::object::PodView;
use crate::pod_template::ControllerRef;
use crate::resource::Resource;
use serde_json::json;

/// The owner that claims Pods.
#[derive(Clone, Copy, Debug)]
pub struct Claimant<'a> {
    /// Its resource (`ReplicaSets`, ...).
    pub resource: Resource,
    /// Its key; only Pods of its namespace are claimed.
    pub key: &'a ObjectKey,
    /// Its UID.
    pub uid: &'a Uid,
    /// Its selector; `None` claims nothing new and releases nothing (a Job the server has not
    /// given its generated selector).
    pub selector: Option<&'a LabelSelector>,
    /// It has a deletionTimestamp.
    pub terminating: bool,
    /// Finalizers the adopting patch adds (the Job's tracking finalizer, as upstream's Job
    /// controller passes to its `PodControllerRefManager`).
    pub finalizers: &'a [&'static str],
}

/// What a claim found.
#[derive(Debug, Default)]
pub struct Claimed<'a> {
    /// The Pods the owner counts: owned ones that still match, and the orphans it adopts (counted
    /// at once, as upstream counts a Pod its adopting patch has just claimed).
    pub pods: Vec<&'a PodView>,
    /// The adopting and releasing patches, to run before anything decided on `pods`.
    pub patches: Vec<Action>,
    /// How many of `pods` are adopted by `patches`.
    pub adopted: usize,
}

impl Claimant<'_> {
    /// Whether `pod` is one this owner would have: its selector matches and `member` accepts it.
    fn matches(&self, pod: &PodView, member: &impl Fn(&PodView) -> bool) -> bool {
        self.selector.is_some_and(|s| s.matches(&pod.labels)) && member(pod)
    }

    /// Whether this owner may adopt the orphan `pod`: same namespace, not being deleted either
    /// of them, well formed, matching.
    pub fn may_adopt(&self, pod: &PodView, member: &impl Fn(&PodView) -> bool) -> bool {
        pod.controller.is_none()
            && !self.terminating
            && !pod.terminating
            && pod.malformed.is_none()
            && pod.key.namespace() == self.key.namespace()
            && self.matches(pod, member)
    }

    /// Claims the Pods of `cache` that `considered` admits (upstream's ReplicaSet lists active
    /// Pods only; the others claim every Pod), `member` narrowing the selector (a StatefulSet's
    /// Pods are named after it).
    pub fn claim<'c>(
        &self,
        cache: &'c ShardCache,
        considered: impl Fn(&PodView) -> bool,
        member: impl Fn(&PodView) -> bool,
    ) -> Claimed<'c> {
        let mut claimed = Claimed::default();
        for pod in cache.pods.owned_by(self.uid).filter(|p| considered(p)) {
            if self.selector.is_none() || self.matches(pod, &member) {
                claimed.pods.push(pod);
            } else if !self.terminating {
                claimed.patches.push(self.release(pod));
            }
        }
        let mut orphans: Vec<&PodView> = cache
            .pods
            .orphans()
            .filter(|p| considered(p) && self.may_adopt(p, &member))
            .collect();
        // By name, so a replay adopts in the same order as the run it replays.
        orphans.sort_by(|a, b| a.key.name().cmp(b.key.name()));
        for pod in orphans {
            claimed.patches.push(self.adopt(pod));
            claimed.pods.push(pod);
            claimed.adopted += 1;
        }
        claimed
    }

    /// The patch that makes this owner `pod`'s controller.
    fn adopt(&self, pod: &PodView) -> Action {
        let reference = ControllerRef::to(self.resource, self.key.name(), self.uid);
        let mut patch =
            json!({"metadata": {"ownerReferences": [reference], "uid": pod.uid.text()}});
        if !self.finalizers.is_empty() {
            patch["metadata"]["finalizers"] = json!(self.finalizers);
        }
        Action::StrategicPatch {
            resource: Resource::Pods,
            key: pod.key.clone(),
            patch,
        }
    }

    /// The patch that removes this owner's reference from `pod`, and the finalizers its
    /// adoption adds: a released Job Pod is an orphan, whose tracking finalizer upstream's Job
    /// controller removes (`syncOrphanPod`), or it could never be deleted.
    fn release(&self, pod: &PodView) -> Action {
        let mut patch = json!({"metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": self.uid.text()}],
            "uid": pod.uid.text(),
        }});
        if !self.finalizers.is_empty() {
            patch["metadata"]["$deleteFromPrimitiveList/finalizers"] = json!(self.finalizers);
        }
        Action::StrategicPatch {
            resource: Resource::Pods,
            key: pod.key.clone(),
            patch,
        }
    }
}

/// The keys among `owners` that may adopt the Pod `pod` if it is an orphan: what a shard queues
/// when an orphan arrives (its owners' keys are not in it).
pub fn owners_of_orphan<'a>(
    pod: &PodView,
    owners: impl Iterator<Item = Claimant<'a>>,
    member: impl Fn(&Claimant<'a>, &PodView) -> bool,
    keys: &mut Vec<ObjectKey>,
) {
    if pod.controller.is_some() {
        return;
    }
    keys.extend(
        owners
            .filter(|o| o.may_adopt(pod, &|p: &PodView| member(o, p)))
            .map(|o| o.key.clone()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::test_support::{orphan_pod, pod, replicaset};

    fn claimant(rs: &crate::object::ReplicaSetView) -> Claimant<'_> {
        crate::controllers::claimants::replicaset(rs)
    }

    fn everything(_: &PodView) -> bool {
        true
    }

    #[test]
    fn the_adopting_patch_names_the_owner_as_controller_and_the_pod_uid() {
        let rs = replicaset("ns", "web", 1);
        let mut cache = ShardCache::default();
        cache
            .pods
            .apply(orphan_pod("ns", "loose", &[("app", "web")]));
        let claimed = claimant(&rs).claim(&cache, everything, everything);
        assert_eq!(claimed.adopted, 1);
        let Action::StrategicPatch { patch, key, .. } = &claimed.patches[0] else {
            panic!("a strategic merge patch")
        };
        assert_eq!(key.name(), "loose");
        assert_eq!(patch["metadata"]["uid"], "uid-loose");
        let reference = &patch["metadata"]["ownerReferences"][0];
        assert_eq!(reference["uid"], "uid-web");
        assert_eq!(reference["kind"], "ReplicaSet");
        assert_eq!(reference["controller"], true);
        assert_eq!(reference["blockOwnerDeletion"], true);
    }

    #[test]
    fn orphans_of_other_namespaces_or_selectors_or_being_deleted_stay_orphans() {
        let rs = replicaset("ns", "web", 1);
        let mut cache = ShardCache::default();
        cache
            .pods
            .apply(orphan_pod("other", "a", &[("app", "web")]));
        cache.pods.apply(orphan_pod("ns", "b", &[("app", "db")]));
        let mut going = orphan_pod("ns", "c", &[("app", "web")]);
        going.terminating = true;
        cache.pods.apply(going);
        let claimed = claimant(&rs).claim(&cache, everything, everything);
        assert!(claimed.patches.is_empty());
        assert!(claimed.pods.is_empty());
    }

    #[test]
    fn the_release_patch_deletes_only_this_owners_reference() {
        let rs = replicaset("ns", "web", 1);
        let mut cache = ShardCache::default();
        let mut moved = pod(&rs, "moved", 1, true);
        moved.labels = crate::object::test_support::labels(&[("app", "elsewhere")]);
        cache.pods.apply(moved);
        let claimed = claimant(&rs).claim(&cache, everything, everything);
        assert!(claimed.pods.is_empty());
        let Action::StrategicPatch { patch, .. } = &claimed.patches[0] else {
            panic!("a strategic merge patch")
        };
        assert_eq!(
            patch["metadata"]["ownerReferences"][0],
            json!({"$patch": "delete", "uid": "uid-web"})
        );
        assert_eq!(patch["metadata"]["uid"], "uid-moved");
    }

    #[test]
    fn a_job_releasing_a_pod_takes_its_tracking_finalizer_off_too() {
        let rs = replicaset("ns", "web", 1);
        let mut cache = ShardCache::default();
        let mut moved = pod(&rs, "moved", 1, true);
        moved.labels = crate::object::test_support::labels(&[("app", "elsewhere")]);
        cache.pods.apply(moved);
        let as_a_job = Claimant {
            finalizers: &["batch.kubernetes.io/job-tracking"],
            ..claimant(&rs)
        };
        let claimed = as_a_job.claim(&cache, everything, everything);
        let Action::StrategicPatch { patch, .. } = &claimed.patches[0] else {
            panic!("a strategic merge patch")
        };
        assert_eq!(
            patch["metadata"]["$deleteFromPrimitiveList/finalizers"],
            json!(["batch.kubernetes.io/job-tracking"])
        );
        let Action::StrategicPatch { patch, .. } =
            &claimant(&rs).claim(&cache, everything, everything).patches[0]
        else {
            panic!("a strategic merge patch")
        };
        assert!(
            patch["metadata"]
                .get("$deleteFromPrimitiveList/finalizers")
                .is_none(),
            "a ReplicaSet adds no finalizer, so it takes none off"
        );
    }

    #[test]
    fn an_orphan_queues_only_the_owners_whose_selector_matches() {
        let (web, db) = (replicaset("ns", "web", 1), replicaset("ns", "db", 1));
        let mut keys = Vec::new();
        owners_of_orphan(
            &orphan_pod("ns", "loose", &[("app", "db")]),
            [claimant(&web), claimant(&db)].into_iter(),
            |_, _| true,
            &mut keys,
        );
        assert_eq!(keys, std::slice::from_ref(&db.key));
    }
}
