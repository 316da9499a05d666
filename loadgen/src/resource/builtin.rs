//! The built-in kinds' names on the wire and shapes: the static table behind [`Resource`].

use super::{Info, Resource};

const SPEC_STATUS: &[&str] = &["apiVersion", "kind", "metadata", "spec", "status"];
const SPEC_ONLY: &[&str] = &["apiVersion", "kind", "metadata", "spec"];
const ROLE: &[&str] = &["apiVersion", "kind", "metadata", "rules", "aggregationRule"];
const BINDING: &[&str] = &["apiVersion", "kind", "metadata", "subjects", "roleRef"];
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const RBAC_VERSION: &str = "rbac.authorization.k8s.io/v1";

impl Resource {
    /// Every resource, in a fixed order (the order of [`Resource::index`]).
    pub const ALL: [Resource; 17] = [
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
        Resource::CustomResourceDefinitions,
    ];

    /// The kinds RBAC decisions are made from.
    pub const RBAC: [Resource; 4] = [
        Resource::ClusterRoles,
        Resource::ClusterRoleBindings,
        Resource::Roles,
        Resource::RoleBindings,
    ];

    pub(super) fn builtin_info(self) -> Info {
        let base = |plural, singular, kind, list_kind, group, api_version| Info {
            plural,
            singular,
            kind,
            list_kind,
            group,
            api_version,
            version: "v1",
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
            Resource::CustomResourceDefinitions => Info {
                short_names: &["crd", "crds"],
                namespaced: false,
                ..base(
                    "customresourcedefinitions",
                    "customresourcedefinition",
                    "CustomResourceDefinition",
                    "CustomResourceDefinitionList",
                    "apiextensions.k8s.io",
                    "apiextensions.k8s.io/v1",
                )
            },
            Resource::Custom(id) => super::custom::info(id),
        }
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
            assert!(!r.is_custom() && r.index() < Resource::ALL.len());
        }
        assert_eq!(Resource::from_group_plural("", "replicasets"), None);
        assert!(!Resource::Nodes.namespaced());
        assert!(Resource::StatefulSets.has_scale());
    }
}
