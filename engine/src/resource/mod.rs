//! The resources the engine caches and writes: the built-in kinds and any a user registers, each
//! a two-byte handle that indexes per-resource arrays.

mod per_resource;
mod registry;

pub use per_resource::PerResource;
pub use registry::{Projection, ProjectionError, RegisterError};

use std::fmt;

pub use tidemark_kinds::ResourceType;
use tidemark_kinds::builtin;

/// A resource the engine caches or writes. Built-in kinds are constants (`Resource::Pods`); a
/// user's kind gets its handle from [`Resource::register`]. Copy, two bytes, and an index into
/// [`PerResource`] arrays, so the shard's per-resource bookkeeping costs the same for both.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Resource(u16);

/// The engine's own kinds, in handle order, described by the workspace's one table
/// ([`tidemark_kinds::builtin`]).
const BUILT_IN: [ResourceType; 9] = [
    builtin::PODS,
    builtin::REPLICA_SETS,
    builtin::NODES,
    builtin::LEASES,
    builtin::STATEFUL_SETS,
    builtin::PERSISTENT_VOLUME_CLAIMS,
    builtin::CONTROLLER_REVISIONS,
    builtin::JOBS,
    builtin::DAEMON_SETS,
];

/// The built-ins' `apiVersion`s, made once from their groups and versions.
static BUILT_IN_API_VERSIONS: std::sync::LazyLock<[&'static str; BUILT_IN.len()]> =
    std::sync::LazyLock::new(|| BUILT_IN.map(|ty| &*Box::leak(ty.api_version().into_boxed_str())));

#[allow(non_upper_case_globals)]
impl Resource {
    /// core/v1 Pods.
    pub const Pods: Resource = Resource(0);
    /// apps/v1 ReplicaSets.
    pub const ReplicaSets: Resource = Resource(1);
    /// core/v1 Nodes (cluster-scoped, cached by every shard).
    pub const Nodes: Resource = Resource(2);
    /// coordination.k8s.io/v1 Leases (node Leases in `kube-node-lease`).
    pub const Leases: Resource = Resource(3);
    /// apps/v1 StatefulSets.
    pub const StatefulSets: Resource = Resource(4);
    /// core/v1 PersistentVolumeClaims (written from claim templates; cached with their owners'
    /// references, for a StatefulSet's retention policy).
    pub const PersistentVolumeClaims: Resource = Resource(5);
    /// apps/v1 ControllerRevisions (cached with their owners, to find a template's revision).
    pub const ControllerRevisions: Resource = Resource(6);
    /// batch/v1 Jobs.
    pub const Jobs: Resource = Resource(7);
    /// apps/v1 DaemonSets.
    pub const DaemonSets: Resource = Resource(8);

    /// The built-in resources, in index order.
    pub const BUILT_IN: [Resource; BUILT_IN.len()] = [
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

    /// Every resource known now: the built-ins, then the registered ones in registration order.
    pub fn all() -> impl Iterator<Item = Resource> {
        (0..registry::count()).map(|i| Resource(i as u16))
    }

    /// How many resources are known now; the length of a [`PerResource`] built now.
    pub fn count() -> usize {
        registry::count()
    }

    /// Position in per-resource arrays.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Whether this is one of the engine's own kinds.
    pub const fn is_built_in(self) -> bool {
        (self.0 as usize) < BUILT_IN.len()
    }

    /// Registers a user's resource whose cached projection is `T`, decoded with serde from each
    /// object's JSON; returns its handle. Registering the same resource with the same `T` again
    /// returns the same handle, so every test or controller may register what it reads.
    ///
    /// ```
    /// use tidemark_engine::resource::{Resource, ResourceType};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Widget {
    ///     spec: WidgetSpec,
    /// }
    /// #[derive(serde::Deserialize)]
    /// struct WidgetSpec {
    ///     size: u32,
    /// }
    ///
    /// let widgets = Resource::register::<Widget>(ResourceType::namespaced(
    ///     "example.com", "v1", "Widget", "widgets",
    /// ))
    /// .expect("a new resource");
    /// assert_eq!(widgets.plural(), "widgets");
    /// assert_eq!(widgets.api_version(), "example.com/v1");
    /// assert!(!widgets.is_built_in());
    /// ```
    pub fn register<T>(ty: ResourceType) -> Result<Resource, RegisterError>
    where
        T: serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        registry::register(ty, Projection::of::<T>(), false).map(|i| Resource(i as u16))
    }

    /// Registers a cluster-wide input every shard reads whole (as Nodes are for DaemonSets):
    /// each shard caches all of its objects and reconciles only the keys it owns. Otherwise as
    /// [`Resource::register`]; the same resource cannot be registered both ways.
    pub fn register_broadcast<T>(ty: ResourceType) -> Result<Resource, RegisterError>
    where
        T: serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        registry::register(ty, Projection::of::<T>(), true).map(|i| Resource(i as u16))
    }

    /// The registered resource served as `group` and `plural`, if any.
    pub fn find(group: &str, plural: &str) -> Option<Resource> {
        registry::find(group, plural).map(|i| Resource(i as u16))
    }

    /// Its description.
    pub fn ty(self) -> ResourceType {
        match BUILT_IN.get(self.index()) {
            Some(ty) => *ty,
            None => registry::entry(self.index()).ty,
        }
    }

    /// How objects are projected when they are cached as [`crate::views::custom::CustomObject`]s:
    /// a registered resource's, ControllerRevisions' ([`crate::views::revision::Revision`]) and
    /// PersistentVolumeClaims' ([`crate::views::volume_claim::VolumeClaim`]); `None` for the
    /// other built-ins, which have hand-written projections.
    pub fn projection(self) -> Option<Projection> {
        match self {
            Resource::ControllerRevisions => {
                Some(Projection::of::<crate::views::revision::Revision>())
            }
            Resource::PersistentVolumeClaims => {
                Some(Projection::of::<crate::views::volume_claim::VolumeClaim>())
            }
            r if r.is_built_in() => None,
            r => Some(registry::entry(r.index()).projection),
        }
    }

    /// The API group ("" for core).
    pub fn group(self) -> &'static str {
        self.ty().group
    }

    /// The plural name used in URLs and metrics labels.
    pub fn plural(self) -> &'static str {
        self.ty().plural
    }

    /// The object kind.
    pub fn kind(self) -> &'static str {
        self.ty().kind
    }

    /// The apiVersion of objects of this resource.
    pub fn api_version(self) -> &'static str {
        match BUILT_IN_API_VERSIONS.get(self.index()) {
            Some(api_version) => api_version,
            None => registry::entry(self.index()).api_version,
        }
    }

    /// Cluster-wide inputs every shard reads (Nodes, for DaemonSets): each shard caches all of
    /// them and reconciles only the keys it owns. Decoded once; the copies share their JSON.
    pub fn broadcast(self) -> bool {
        match self.is_built_in() {
            true => self == Resource::Nodes,
            false => registry::entry(self.index()).broadcast,
        }
    }

    /// Whether objects of this resource live in a namespace.
    pub fn namespaced(self) -> bool {
        self.ty().namespaced
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.plural())
    }
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Resource({})", self.plural())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_resource_has_its_own_index_and_names() {
        for (i, r) in Resource::BUILT_IN.iter().enumerate() {
            assert_eq!(r.index(), i);
            assert_eq!(r.api_version(), r.ty().api_version());
        }
        assert_eq!(Resource::Nodes.plural(), "nodes");
        assert!(Resource::Nodes.broadcast() && !Resource::Nodes.namespaced());
        assert_eq!(Resource::Jobs.api_version(), "batch/v1");
    }

    #[test]
    fn built_in_handles_match_in_patterns() {
        let name = |r: Resource| match r {
            Resource::Pods => "pods",
            Resource::Nodes => "nodes",
            _ => "other",
        };
        assert_eq!(name(Resource::Pods), "pods");
        assert_eq!(name(Resource::Jobs), "other");
    }
}
