//! The built-in kinds Tidemark reads, writes or serves, with their names as the Kubernetes API
//! spells them.

use crate::ResourceType;

const RBAC: &str = "rbac.authorization.k8s.io";

/// core/v1 `pods`.
pub const PODS: ResourceType = ResourceType::namespaced("", "v1", "Pod", "pods");
/// apps/v1 `replicasets`.
pub const REPLICA_SETS: ResourceType =
    ResourceType::namespaced("apps", "v1", "ReplicaSet", "replicasets");
/// core/v1 `nodes`.
pub const NODES: ResourceType = ResourceType::cluster_scoped("", "v1", "Node", "nodes");
/// core/v1 `namespaces`.
pub const NAMESPACES: ResourceType =
    ResourceType::cluster_scoped("", "v1", "Namespace", "namespaces");
/// core/v1 `persistentvolumeclaims`.
pub const PERSISTENT_VOLUME_CLAIMS: ResourceType =
    ResourceType::namespaced("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims");
/// core/v1 `events`.
pub const EVENTS: ResourceType = ResourceType::namespaced("", "v1", "Event", "events");
/// apps/v1 `daemonsets`.
pub const DAEMON_SETS: ResourceType =
    ResourceType::namespaced("apps", "v1", "DaemonSet", "daemonsets");
/// apps/v1 `statefulsets`.
pub const STATEFUL_SETS: ResourceType =
    ResourceType::namespaced("apps", "v1", "StatefulSet", "statefulsets");
/// apps/v1 `controllerrevisions`.
pub const CONTROLLER_REVISIONS: ResourceType =
    ResourceType::namespaced("apps", "v1", "ControllerRevision", "controllerrevisions");
/// batch/v1 `jobs`.
pub const JOBS: ResourceType = ResourceType::namespaced("batch", "v1", "Job", "jobs");
/// coordination.k8s.io/v1 `leases`.
pub const LEASES: ResourceType =
    ResourceType::namespaced("coordination.k8s.io", "v1", "Lease", "leases");
/// core/v1 `serviceaccounts`.
pub const SERVICE_ACCOUNTS: ResourceType =
    ResourceType::namespaced("", "v1", "ServiceAccount", "serviceaccounts");
/// rbac.authorization.k8s.io/v1 `clusterroles`.
pub const CLUSTER_ROLES: ResourceType =
    ResourceType::cluster_scoped(RBAC, "v1", "ClusterRole", "clusterroles");
/// rbac.authorization.k8s.io/v1 `clusterrolebindings`.
pub const CLUSTER_ROLE_BINDINGS: ResourceType =
    ResourceType::cluster_scoped(RBAC, "v1", "ClusterRoleBinding", "clusterrolebindings");
/// rbac.authorization.k8s.io/v1 `roles`.
pub const ROLES: ResourceType = ResourceType::namespaced(RBAC, "v1", "Role", "roles");
/// rbac.authorization.k8s.io/v1 `rolebindings`.
pub const ROLE_BINDINGS: ResourceType =
    ResourceType::namespaced(RBAC, "v1", "RoleBinding", "rolebindings");
/// apiextensions.k8s.io/v1 `customresourcedefinitions`.
pub const CUSTOM_RESOURCE_DEFINITIONS: ResourceType = ResourceType::cluster_scoped(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
);

/// Every built-in kind above.
pub const ALL: [ResourceType; 17] = [
    PODS,
    REPLICA_SETS,
    NODES,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    EVENTS,
    DAEMON_SETS,
    STATEFUL_SETS,
    CONTROLLER_REVISIONS,
    JOBS,
    LEASES,
    SERVICE_ACCOUNTS,
    CLUSTER_ROLES,
    CLUSTER_ROLE_BINDINGS,
    ROLES,
    ROLE_BINDINGS,
    CUSTOM_RESOURCE_DEFINITIONS,
];

/// The built-in kind served as `group` and `plural`.
pub fn find(group: &str, plural: &str) -> Option<ResourceType> {
    ALL.into_iter().find(|ty| ty.is(group, plural))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_built_in_is_found_by_its_group_and_plural_alone() {
        for ty in ALL {
            assert_eq!(find(ty.group, ty.plural), Some(ty));
            let same_kind = ALL
                .iter()
                .filter(|o| o.group == ty.group && o.kind == ty.kind);
            assert_eq!(same_kind.count(), 1, "{} twice", ty.kind);
        }
        assert_eq!(find("apps", "pods"), None);
    }

    #[test]
    fn plurals_are_the_lowercase_kind_made_plural() {
        for ty in ALL {
            let lower = ty.kind.to_lowercase();
            assert!(
                ty.plural.starts_with(&lower[..lower.len() - 1]),
                "{}",
                ty.plural
            );
        }
    }
}
