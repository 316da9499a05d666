//! The built-in kinds' names on the wire and shapes: the static table behind [`Resource`].

use tidemark_kinds::builtin;

use super::{Info, Resource};

const SPEC_STATUS: &[&str] = &["apiVersion", "kind", "metadata", "spec", "status"];
const SPEC_ONLY: &[&str] = &["apiVersion", "kind", "metadata", "spec"];
const ROLE: &[&str] = &["apiVersion", "kind", "metadata", "rules", "aggregationRule"];
const BINDING: &[&str] = &["apiVersion", "kind", "metadata", "subjects", "roleRef"];

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

    /// What the server keeps of a built-in beyond its names: short names, subresources,
    /// category `all`, top-level fields. Names come from the workspace's one table
    /// ([`tidemark_kinds::builtin`]), in the order of [`Resource::ALL`].
    pub(super) fn builtin_info(self) -> Info {
        let Resource::Custom(id) = self else {
            let i = self.index();
            let (ty, derived) = (builtin::ALL[i], &DERIVED[i]);
            let base = Info {
                ty,
                singular: derived.singular,
                list_kind: derived.list_kind,
                api_version: derived.api_version,
                short_names: &[],
                status: true,
                scale: false,
                in_all: false,
                fields: SPEC_STATUS,
            };
            return self.served_as(base);
        };
        super::custom::info(id)
    }

    fn served_as(self, base: Info) -> Info {
        match self {
            Resource::Pods => Info {
                short_names: &["po"],
                in_all: true,
                ..base
            },
            Resource::ReplicaSets => Info {
                short_names: &["rs"],
                scale: true,
                in_all: true,
                ..base
            },
            Resource::Nodes => Info {
                short_names: &["no"],
                ..base
            },
            Resource::Namespaces => Info {
                short_names: &["ns"],
                ..base
            },
            Resource::PersistentVolumeClaims => Info {
                short_names: &["pvc"],
                ..base
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
                ..base
            },
            Resource::DaemonSets => Info {
                short_names: &["ds"],
                in_all: true,
                ..base
            },
            Resource::StatefulSets => Info {
                short_names: &["sts"],
                scale: true,
                in_all: true,
                ..base
            },
            Resource::ControllerRevisions => Info {
                status: false,
                fields: &["apiVersion", "kind", "metadata", "data", "revision"],
                ..base
            },
            Resource::Jobs => Info {
                in_all: true,
                ..base
            },
            Resource::Leases => Info {
                status: false,
                fields: SPEC_ONLY,
                ..base
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
                ..base
            },
            Resource::ClusterRoles | Resource::Roles => Info {
                status: false,
                fields: ROLE,
                ..base
            },
            Resource::ClusterRoleBindings | Resource::RoleBindings => Info {
                status: false,
                fields: BINDING,
                ..base
            },
            Resource::CustomResourceDefinitions => Info {
                short_names: &["crd", "crds"],
                ..base
            },
            Resource::Custom(_) => base,
        }
    }
}

/// The names a built-in's kind and group imply (`pod`, `PodList`, `v1`), made once.
struct Derived {
    singular: &'static str,
    list_kind: &'static str,
    api_version: &'static str,
}

static DERIVED: std::sync::LazyLock<Vec<Derived>> = std::sync::LazyLock::new(|| {
    let leak = |s: String| &*Box::leak(s.into_boxed_str());
    builtin::ALL
        .iter()
        .map(|ty| Derived {
            singular: leak(ty.kind.to_lowercase()),
            list_kind: leak(format!("{}List", ty.kind)),
            api_version: leak(ty.api_version()),
        })
        .collect()
});

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

    #[test]
    fn each_kind_is_named_as_the_workspace_table_names_it() {
        for (r, ty) in Resource::ALL.into_iter().zip(builtin::ALL) {
            assert_eq!(
                (r.group(), r.plural(), r.kind()),
                (ty.group, ty.plural, ty.kind)
            );
            assert_eq!(r.namespaced(), ty.namespaced);
        }
        assert_eq!(
            Resource::PersistentVolumeClaims.singular(),
            "persistentvolumeclaim"
        );
        assert_eq!(Resource::Roles.list_kind(), "RoleList");
        assert_eq!(
            Resource::CustomResourceDefinitions.short_names(),
            ["crd", "crds"]
        );
        assert_eq!(
            Resource::ClusterRoles.api_version(),
            "rbac.authorization.k8s.io/v1"
        );
    }
}
