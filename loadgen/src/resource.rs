//! The kinds of object the simulated API server serves, and their names on the wire.

use std::fmt;

/// A kind of object the server stores. The store is generic over this enum.
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
}

struct Info {
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    list_kind: &'static str,
    group: &'static str,
    api_version: &'static str,
    short_names: &'static [&'static str],
    namespaced: bool,
    status: bool,
    scale: bool,
    in_all: bool,
    fields: &'static [&'static str],
}

const SPEC_STATUS: &[&str] = &["apiVersion", "kind", "metadata", "spec", "status"];
const SPEC_ONLY: &[&str] = &["apiVersion", "kind", "metadata", "spec"];
const ROLE: &[&str] = &["apiVersion", "kind", "metadata", "rules", "aggregationRule"];
const BINDING: &[&str] = &["apiVersion", "kind", "metadata", "subjects", "roleRef"];
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const RBAC_VERSION: &str = "rbac.authorization.k8s.io/v1";

impl Resource {
    /// Every resource, in a fixed order (the order of [`Resource::index`]).
    pub const ALL: [Resource; 16] = [
        Resource::Pods,
        Resource::ReplicaSets,
        Resource::Nodes,
        Resource::Namespaces,
        Resource::PersistentVolumeClaims,
        Resource::Events,
        Resource::DaemonSets,
        Resource::StatefulSets,
        Resource::ControllerRevisions,
        Resource::Jobs,
        Resource::Leases,
        Resource::ServiceAccounts,
        Resource::ClusterRoles,
        Resource::ClusterRoleBindings,
        Resource::Roles,
        Resource::RoleBindings,
    ];

    /// The kinds RBAC decisions are made from.
    pub const RBAC: [Resource; 4] = [
        Resource::ClusterRoles,
        Resource::ClusterRoleBindings,
        Resource::Roles,
        Resource::RoleBindings,
    ];

    fn info(self) -> Info {
        let base = |plural, singular, kind, list_kind, group, api_version| Info {
            plural,
            singular,
            kind,
            list_kind,
            group,
            api_version,
            short_names: &[],
            namespaced: true,
            status: true,
            scale: false,
            in_all: false,
            fields: SPEC_STATUS,
        };
        match self {
            Resource::Pods => Info {
                short_names: &["po"],
                in_all: true,
                ..base("pods", "pod", "Pod", "PodList", "", "v1")
            },
            Resource::ReplicaSets => Info {
                short_names: &["rs"],
                scale: true,
                in_all: true,
                ..base(
                    "replicasets",
                    "replicaset",
                    "ReplicaSet",
                    "ReplicaSetList",
                    "apps",
                    "apps/v1",
                )
            },
            Resource::Nodes => Info {
                short_names: &["no"],
                namespaced: false,
                ..base("nodes", "node", "Node", "NodeList", "", "v1")
            },
            Resource::Namespaces => Info {
                short_names: &["ns"],
                namespaced: false,
                ..base(
                    "namespaces",
                    "namespace",
                    "Namespace",
                    "NamespaceList",
                    "",
                    "v1",
                )
            },
            Resource::PersistentVolumeClaims => Info {
                short_names: &["pvc"],
                ..base(
                    "persistentvolumeclaims",
                    "persistentvolumeclaim",
                    "PersistentVolumeClaim",
                    "PersistentVolumeClaimList",
                    "",
                    "v1",
                )
            },
            Resource::Events => Info {
                short_names: &["ev"],
                status: false,
                fields: &[
                    "apiVersion",
                    "kind",
                    "metadata",
                    "involvedObject",
                    "reason",
                    "message",
                    "source",
                    "firstTimestamp",
                    "lastTimestamp",
                    "count",
                    "type",
                    "eventTime",
                    "series",
                    "action",
                    "related",
                    "reportingComponent",
                    "reportingInstance",
                ],
                ..base("events", "event", "Event", "EventList", "", "v1")
            },
            Resource::DaemonSets => Info {
                short_names: &["ds"],
                in_all: true,
                ..base(
                    "daemonsets",
                    "daemonset",
                    "DaemonSet",
                    "DaemonSetList",
                    "apps",
                    "apps/v1",
                )
            },
            Resource::StatefulSets => Info {
                short_names: &["sts"],
                scale: true,
                in_all: true,
                ..base(
                    "statefulsets",
                    "statefulset",
                    "StatefulSet",
                    "StatefulSetList",
                    "apps",
                    "apps/v1",
                )
            },
            Resource::ControllerRevisions => Info {
                status: false,
                fields: &["apiVersion", "kind", "metadata", "data", "revision"],
                ..base(
                    "controllerrevisions",
                    "controllerrevision",
                    "ControllerRevision",
                    "ControllerRevisionList",
                    "apps",
                    "apps/v1",
                )
            },
            Resource::Jobs => Info {
                in_all: true,
                ..base("jobs", "job", "Job", "JobList", "batch", "batch/v1")
            },
            Resource::Leases => Info {
                status: false,
                fields: SPEC_ONLY,
                ..base(
                    "leases",
                    "lease",
                    "Lease",
                    "LeaseList",
                    "coordination.k8s.io",
                    "coordination.k8s.io/v1",
                )
            },
            Resource::ServiceAccounts => Info {
                short_names: &["sa"],
                status: false,
                fields: &[
                    "apiVersion",
                    "kind",
                    "metadata",
                    "secrets",
                    "imagePullSecrets",
                    "automountServiceAccountToken",
                ],
                ..base(
                    "serviceaccounts",
                    "serviceaccount",
                    "ServiceAccount",
                    "ServiceAccountList",
                    "",
                    "v1",
                )
            },
            Resource::ClusterRoles => Info {
                namespaced: false,
                status: false,
                fields: ROLE,
                ..base(
                    "clusterroles",
                    "clusterrole",
                    "ClusterRole",
                    "ClusterRoleList",
                    RBAC_GROUP,
                    RBAC_VERSION,
                )
            },
            Resource::ClusterRoleBindings => Info {
                namespaced: false,
                status: false,
                fields: BINDING,
                ..base(
                    "clusterrolebindings",
                    "clusterrolebinding",
                    "ClusterRoleBinding",
                    "ClusterRoleBindingList",
                    RBAC_GROUP,
                    RBAC_VERSION,
                )
            },
            Resource::Roles => Info {
                status: false,
                fields: ROLE,
                ..base(
                    "roles",
                    "role",
                    "Role",
                    "RoleList",
                    RBAC_GROUP,
                    RBAC_VERSION,
                )
            },
            Resource::RoleBindings => Info {
                status: false,
                fields: BINDING,
                ..base(
                    "rolebindings",
                    "rolebinding",
                    "RoleBinding",
                    "RoleBindingList",
                    RBAC_GROUP,
                    RBAC_VERSION,
                )
            },
        }
    }

    /// A dense index, for per-resource arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The plural resource name used in URLs, e.g. `pods`.
    pub fn plural(self) -> &'static str {
        self.info().plural
    }

    /// The singular name, e.g. `pod`.
    pub fn singular(self) -> &'static str {
        self.info().singular
    }

    /// The object kind, e.g. `Pod`.
    pub fn kind(self) -> &'static str {
        self.info().kind
    }

    /// The kind of a list of these objects, e.g. `PodList`.
    pub fn list_kind(self) -> &'static str {
        self.info().list_kind
    }

    /// The API group, empty for the core group.
    pub fn group(self) -> &'static str {
        self.info().group
    }

    /// The API version within the group, e.g. `v1`.
    pub fn version(self) -> &'static str {
        "v1"
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
        self.info().namespaced
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

    /// The top-level fields of the kind's schema (for `fieldValidation`).
    pub fn top_level_fields(self) -> &'static [&'static str] {
        self.info().fields
    }

    /// Finds a resource from its group and plural name.
    pub fn from_group_plural(group: &str, plural: &str) -> Option<Resource> {
        Resource::ALL
            .into_iter()
            .find(|r| r.group() == group && r.plural() == plural)
    }

    /// Finds a resource from its plural name alone.
    pub fn from_plural(plural: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.plural() == plural)
    }

    /// Finds a resource from its kind, e.g. `Job` (for ownerReferences).
    pub fn from_kind(kind: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.kind() == kind)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.plural())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_is_found_by_its_group_and_plural() {
        for r in Resource::ALL {
            assert_eq!(Resource::from_group_plural(r.group(), r.plural()), Some(r));
            assert_eq!(Resource::ALL[r.index()], r);
            assert_eq!(Resource::from_kind(r.kind()), Some(r));
        }
        assert_eq!(Resource::from_group_plural("", "replicasets"), None);
        assert!(!Resource::Nodes.namespaced());
        assert!(Resource::StatefulSets.has_scale());
    }
}
