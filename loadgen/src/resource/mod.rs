//! The kinds of object the simulated API server serves: the built-ins and custom resources.

mod builtin;
pub mod custom;

use std::fmt;

pub use tidemark_kinds::ResourceType;

pub use custom::{CustomId, Definition, MAX_CUSTOM, RegistryFull};

/// A kind of object the server stores. The store is generic over this enum: the built-ins are
/// unit variants with a static table, a custom resource is [`Resource::Custom`], whose names
/// come from the CustomResourceDefinition that declared it (see [`custom`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// core/v1 `pods`.
    Pods,
    /// apps/v1 `replicasets`.
    ReplicaSets,
    /// core/v1 `nodes` (cluster-scoped).
    Nodes,
    /// core/v1 `namespaces` (cluster-scoped).
    Namespaces,
    /// core/v1 `persistentvolumeclaims`.
    PersistentVolumeClaims,
    /// core/v1 `events`.
    Events,
    /// apps/v1 `daemonsets`.
    DaemonSets,
    /// apps/v1 `statefulsets`.
    StatefulSets,
    /// apps/v1 `controllerrevisions`.
    ControllerRevisions,
    /// batch/v1 `jobs`.
    Jobs,
    /// coordination.k8s.io/v1 `leases`.
    Leases,
    /// core/v1 `serviceaccounts` (with the `token` subresource, TokenRequest).
    ServiceAccounts,
    /// rbac.authorization.k8s.io/v1 `clusterroles` (cluster-scoped).
    ClusterRoles,
    /// rbac.authorization.k8s.io/v1 `clusterrolebindings` (cluster-scoped).
    ClusterRoleBindings,
    /// rbac.authorization.k8s.io/v1 `roles`.
    Roles,
    /// rbac.authorization.k8s.io/v1 `rolebindings`.
    RoleBindings,
    /// apiextensions.k8s.io/v1 `customresourcedefinitions` (cluster-scoped).
    CustomResourceDefinitions,
    /// A resource a CustomResourceDefinition declared.
    Custom(CustomId),
}

/// What the server knows of a kind: names, scope, subresources, top-level fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Info {
    /// Group, version, kind, plural and scope.
    ty: ResourceType,
    singular: &'static str,
    list_kind: &'static str,
    api_version: &'static str,
    short_names: &'static [&'static str],
    status: bool,
    scale: bool,
    in_all: bool,
    fields: &'static [&'static str],
}

impl Resource {
    /// How many per-resource slots a dense array needs: the built-ins, then every custom
    /// resource this process can intern.
    pub const SLOTS: usize = Resource::ALL.len() + MAX_CUSTOM;

    fn info(self) -> Info {
        self.builtin_info()
    }

    /// A dense index below [`Resource::SLOTS`], for per-resource arrays: the built-ins in the
    /// order of [`Resource::ALL`], then custom resources.
    pub fn index(self) -> usize {
        match self {
            Resource::Pods => 0,
            Resource::ReplicaSets => 1,
            Resource::Nodes => 2,
            Resource::Namespaces => 3,
            Resource::PersistentVolumeClaims => 4,
            Resource::Events => 5,
            Resource::DaemonSets => 6,
            Resource::StatefulSets => 7,
            Resource::ControllerRevisions => 8,
            Resource::Jobs => 9,
            Resource::Leases => 10,
            Resource::ServiceAccounts => 11,
            Resource::ClusterRoles => 12,
            Resource::ClusterRoleBindings => 13,
            Resource::Roles => 14,
            Resource::RoleBindings => 15,
            Resource::CustomResourceDefinitions => 16,
            Resource::Custom(id) => Resource::ALL.len() + id.slot(),
        }
    }

    /// Whether a CustomResourceDefinition declared it.
    pub fn is_custom(self) -> bool {
        matches!(self, Resource::Custom(_))
    }

    /// Its group, version, kind, plural and scope, as the workspace's one table (or the
    /// CustomResourceDefinition that declared it) names them.
    pub fn ty(self) -> ResourceType {
        self.info().ty
    }

    /// The plural resource name used in URLs, e.g. `pods`.
    pub fn plural(self) -> &'static str {
        self.info().ty.plural
    }

    /// The singular name, e.g. `pod`.
    pub fn singular(self) -> &'static str {
        self.info().singular
    }

    /// The object kind, e.g. `Pod`.
    pub fn kind(self) -> &'static str {
        self.info().ty.kind
    }

    /// The kind of a list of these objects, e.g. `PodList`.
    pub fn list_kind(self) -> &'static str {
        self.info().list_kind
    }

    /// The API group, empty for the core group.
    pub fn group(self) -> &'static str {
        self.info().ty.group
    }

    /// The API version within the group, e.g. `v1` (a custom resource's storage version).
    pub fn version(self) -> &'static str {
        self.info().ty.version
    }

    /// The `apiVersion` field of objects, e.g. `v1` or `apps/v1`.
    pub fn api_version(self) -> &'static str {
        self.info().api_version
    }

    /// Short names that kubectl accepts, e.g. `po`.
    pub fn short_names(self) -> &'static [&'static str] {
        self.info().short_names
    }

    /// Whether objects live in a namespace (false for Nodes and Namespaces).
    pub fn namespaced(self) -> bool {
        self.info().ty.namespaced
    }

    /// Whether the kind has a `/status` subresource (and a `status` that the main resource
    /// does not write).
    pub fn has_status(self) -> bool {
        self.info().status
    }

    /// Whether the kind has a `/scale` subresource.
    pub fn has_scale(self) -> bool {
        self.info().scale
    }

    /// Whether `kubectl get all` lists it (discovery category `all`).
    pub fn in_category_all(self) -> bool {
        self.info().in_all
    }

    /// The top-level fields of the kind's schema (for `fieldValidation`); empty for a custom
    /// resource whose schema keeps unknown fields at the root.
    pub fn top_level_fields(self) -> &'static [&'static str] {
        self.info().fields
    }

    /// Whether any top-level field is accepted (a custom resource without a structural
    /// schema at the root).
    pub fn preserves_unknown_fields(self) -> bool {
        self.is_custom() && self.info().fields.is_empty()
    }

    /// Finds a built-in resource from its group and plural name (the store resolves custom
    /// resources too: [`crate::store::Store::resource_for`]).
    pub fn from_group_plural(group: &str, plural: &str) -> Option<Resource> {
        Resource::ALL
            .into_iter()
            .find(|r| r.group() == group && r.plural() == plural)
    }

    /// The built-in resource described by `ty` (the engine's handles map to the server's this
    /// way: both are described by the one table).
    pub fn from_type(ty: ResourceType) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.ty() == ty)
    }

    /// Finds a built-in resource from its plural name alone.
    pub fn from_plural(plural: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.plural() == plural)
    }

    /// Finds a built-in resource from its kind, e.g. `Job` (for ownerReferences).
    pub fn from_kind(kind: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.kind() == kind)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.plural())
    }
}
