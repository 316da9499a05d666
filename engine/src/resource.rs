//! The resource kinds the engine caches, as a small enum that indexes per-resource arrays.

use std::fmt;

/// A resource the engine caches and gates on. Adding one means adding a variant here.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Resource {
    /// core/v1 Pods.
    Pods,
    /// apps/v1 ReplicaSets.
    ReplicaSets,
    /// core/v1 Nodes (cluster-scoped).
    Nodes,
    /// coordination.k8s.io/v1 Leases (node Leases in `kube-node-lease`).
    Leases,
    /// apps/v1 StatefulSets.
    StatefulSets,
    /// core/v1 PersistentVolumeClaims (written from claim templates, not cached).
    PersistentVolumeClaims,
    /// apps/v1 ControllerRevisions (written for update revisions, not cached).
    ControllerRevisions,
    /// batch/v1 Jobs.
    Jobs,
    /// apps/v1 DaemonSets.
    DaemonSets,
}

impl Resource {
    /// How many resources there are; the length of per-resource arrays.
    pub const COUNT: usize = 9;
    /// Every resource, in index order.
    pub const ALL: [Resource; Self::COUNT] = [
        Resource::Pods,
        Resource::ReplicaSets,
        Resource::Nodes,
        Resource::Leases,
        Resource::StatefulSets,
        Resource::PersistentVolumeClaims,
        Resource::ControllerRevisions,
        Resource::Jobs,
        Resource::DaemonSets,
    ];

    /// Position in per-resource arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The API group ("" for core).
    pub const fn group(self) -> &'static str {
        match self {
            Resource::Pods | Resource::Nodes | Resource::PersistentVolumeClaims => "",
            Resource::ReplicaSets | Resource::StatefulSets | Resource::ControllerRevisions => {
                "apps"
            }
            Resource::Leases => "coordination.k8s.io",
            Resource::Jobs => "batch",
            Resource::DaemonSets => "apps",
        }
    }

    /// The plural name used in URLs and metrics labels.
    pub const fn plural(self) -> &'static str {
        match self {
            Resource::Pods => "pods",
            Resource::ReplicaSets => "replicasets",
            Resource::Nodes => "nodes",
            Resource::Leases => "leases",
            Resource::StatefulSets => "statefulsets",
            Resource::PersistentVolumeClaims => "persistentvolumeclaims",
            Resource::ControllerRevisions => "controllerrevisions",
            Resource::Jobs => "jobs",
            Resource::DaemonSets => "daemonsets",
        }
    }

    /// The object kind.
    pub const fn kind(self) -> &'static str {
        match self {
            Resource::Pods => "Pod",
            Resource::ReplicaSets => "ReplicaSet",
            Resource::Nodes => "Node",
            Resource::Leases => "Lease",
            Resource::StatefulSets => "StatefulSet",
            Resource::PersistentVolumeClaims => "PersistentVolumeClaim",
            Resource::ControllerRevisions => "ControllerRevision",
            Resource::Jobs => "Job",
            Resource::DaemonSets => "DaemonSet",
        }
    }

    /// The apiVersion of objects of this resource.
    pub const fn api_version(self) -> &'static str {
        match self {
            Resource::Pods | Resource::Nodes | Resource::PersistentVolumeClaims => "v1",
            Resource::ReplicaSets | Resource::StatefulSets | Resource::ControllerRevisions => {
                "apps/v1"
            }
            Resource::Leases => "coordination.k8s.io/v1",
            Resource::Jobs => "batch/v1",
            Resource::DaemonSets => "apps/v1",
        }
    }

    /// Cluster-wide inputs every shard reads (Nodes, for DaemonSets): each shard caches all of
    /// them and reconciles only the keys it owns. Decoded once; the copies share their JSON.
    pub const fn broadcast(self) -> bool {
        matches!(self, Resource::Nodes)
    }

    /// Whether objects of this resource live in a namespace.
    pub const fn namespaced(self) -> bool {
        !matches!(self, Resource::Nodes)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.plural())
    }
}

/// A value per resource, indexed by [`Resource`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerResource<T>([T; Resource::COUNT]);

impl<T> PerResource<T> {
    /// Builds the array from a function of the resource.
    pub fn from_fn(mut f: impl FnMut(Resource) -> T) -> Self {
        Self(std::array::from_fn(|i| f(Resource::ALL[i])))
    }
    /// The value for `resource`.
    pub fn get(&self, resource: Resource) -> &T {
        &self.0[resource.index()]
    }
    /// The value for `resource`, mutably.
    pub fn get_mut(&mut self, resource: Resource) -> &mut T {
        &mut self.0[resource.index()]
    }
    /// Every (resource, value) pair.
    pub fn iter(&self) -> impl Iterator<Item = (Resource, &T)> {
        Resource::ALL.into_iter().zip(self.0.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_has_its_own_index() {
        for (i, r) in Resource::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }
}
