//! The four workloads as owners that claim Pods, each as its upstream controller calls
//! `ClaimPods`: the ReplicaSet claims active Pods only, the StatefulSet only Pods named after
//! it, the DaemonSet every Pod, the Job every Pod, adding its tracking finalizer to those it
//! adopts.

use crate::cache::ShardCache;
use crate::controllers::claim::{Claimant, owners_of_orphan};
use crate::key::ObjectKey;
use crate::object::{JOB_TRACKING_FINALIZER, Object, PodView, ReplicaSetView};
use crate::resource::Resource;
use crate::views::daemonset::DaemonSetView;
use crate::views::job::JobView;
use crate::views::statefulset::StatefulSetView;

/// A ReplicaSet as the owner that claims Pods.
pub fn replicaset(rs: &ReplicaSetView) -> Claimant<'_> {
    Claimant {
        resource: Resource::ReplicaSets,
        key: &rs.key,
        uid: &rs.uid,
        selector: Some(&rs.selector),
        terminating: rs.terminating,
        finalizers: &[],
    }
}

/// A StatefulSet as the owner that claims Pods.
pub fn statefulset(set: &StatefulSetView) -> Claimant<'_> {
    Claimant {
        resource: Resource::StatefulSets,
        key: &set.key,
        uid: &set.uid,
        selector: Some(&set.selector),
        terminating: set.terminating,
        finalizers: &[],
    }
}

/// Whether `pod` is named as a Pod of `set` (`<set>-<ordinal>`), upstream's `isMemberOf`: a
/// set claims no Pod whose name another set's ordinals would give.
pub fn is_member_of(set: &StatefulSetView, pod: &PodView) -> bool {
    set.ordinal_of(pod.key.name()).is_some()
}

/// A DaemonSet as the owner that claims Pods.
pub fn daemonset(ds: &DaemonSetView) -> Claimant<'_> {
    Claimant {
        resource: Resource::DaemonSets,
        key: &ds.key,
        uid: &ds.uid,
        selector: Some(&ds.selector),
        terminating: ds.terminating,
        finalizers: &[],
    }
}

/// A Job as the owner that claims Pods: what it adopts gets the tracking finalizer, so its
/// end is counted once like the Pods the Job created.
pub fn job(job: &JobView) -> Claimant<'_> {
    Claimant {
        resource: Resource::Jobs,
        key: &job.key,
        uid: &job.uid,
        selector: job.selector.as_ref(),
        terminating: job.terminating,
        finalizers: &[JOB_TRACKING_FINALIZER],
    }
}

/// The owners in `cache` of `resource`'s kind that may adopt `object` if it is an orphan Pod.
pub fn owners_of(
    resource: Resource,
    object: &Object,
    cache: &ShardCache,
    keys: &mut Vec<ObjectKey>,
) {
    let Object::Pod(pod) = object else {
        return;
    };
    if pod.controller.is_some() {
        return;
    }
    match resource {
        Resource::ReplicaSets => owners_of_orphan(
            pod,
            cache.replicasets.iter().map(replicaset),
            |_, _| true,
            keys,
        ),
        Resource::StatefulSets => {
            for set in cache.statefulsets.iter() {
                owners_of_orphan(
                    pod,
                    std::iter::once(statefulset(set)),
                    |_, p| is_member_of(set, p),
                    keys,
                );
            }
        }
        Resource::DaemonSets => owners_of_orphan(
            pod,
            cache.daemonsets.iter().map(daemonset),
            |_, _| true,
            keys,
        ),
        Resource::Jobs => owners_of_orphan(pod, cache.jobs.iter().map(job), |_, _| true, keys),
        _ => {}
    }
}
