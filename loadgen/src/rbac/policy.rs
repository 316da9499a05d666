//! The RBAC authorizer: which bindings apply to a user, and whether one of their rules allows
//! the request (upstream's `RBACAuthorizer` over `DefaultRuleResolver.VisitRulesFor`).
//!
//! Built once from the stored objects; bindings are indexed by subject (username, with
//! ServiceAccounts as theirs, and group), so an authorization looks up the user's name and
//! groups and walks only the rules bound to them, allocating nothing unless it denies with
//! errors to report.
//!
//! Aggregated ClusterRoles (`aggregationRule`) get the rules the aggregation controller would
//! write ([`aggregation`](super::aggregation)): selectors match labels (`matchLabels` and
//! `matchExpressions`), the stored `rules` of such a role are ignored.

use super::aggregation::aggregate;
use super::attributes::Attributes;
use super::objects::{BindingObject, SubjectKey, decode_bindings, decode_roles, of_kind};
use super::rule::PolicyRule;
use super::user::{PRIVILEGED_GROUP, UserInfo};
use ahash::AHashMap;
use std::sync::Arc;

/// The authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A rule bound to the user allows the request (or the user is in `system:masters`).
    Allow,
    /// Nothing allows it.
    Deny {
        /// Upstream's reason: empty, or `RBAC: ` and the errors met on the way (a binding
        /// whose role does not exist), which the 403 message appends.
        reason: String,
    },
}

/// The rules one binding grants, or why it grants nothing.
#[derive(Clone, Debug)]
struct Grant {
    rules: Result<Arc<[PolicyRule]>, String>,
}

/// Bindings of one scope (the cluster, or one namespace), indexed by subject.
#[derive(Debug, Default)]
struct Scope {
    grants: Vec<Grant>,
    by_user: AHashMap<String, Vec<usize>>,
    by_group: AHashMap<String, Vec<usize>>,
}

impl Scope {
    fn add(
        &mut self,
        binding: &BindingObject,
        namespace: &str,
        rules: Result<Arc<[PolicyRule]>, String>,
    ) {
        let index = self.grants.len();
        self.grants.push(Grant { rules });
        for subject in &binding.subjects {
            let (map, key) = match subject.key(namespace) {
                Some(SubjectKey::User(name)) => (&mut self.by_user, name),
                Some(SubjectKey::Group(group)) => (&mut self.by_group, group),
                None => continue,
            };
            let list = map.entry(key).or_default();
            if list.last() != Some(&index) {
                list.push(index);
            }
        }
    }

    /// The grants bound to `user`, user first then groups (a grant may come twice).
    fn for_user<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = usize> + 'a {
        let own = self.by_user.get(user.name.as_str()).into_iter().flatten();
        let groups = user
            .groups
            .iter()
            .filter_map(|g| self.by_group.get(g.as_str()))
            .flatten();
        own.chain(groups).copied()
    }

    /// Allowed, or the indices of the grants that failed to resolve.
    fn check(
        &self,
        user: &UserInfo,
        attrs: &Attributes,
        errors: &mut Vec<(usize, usize)>,
        scope: usize,
    ) -> bool {
        for index in self.for_user(user) {
            match &self.grants[index].rules {
                Ok(rules) => {
                    if rules.iter().any(|r| r.allows(attrs)) {
                        return true;
                    }
                }
                Err(_) => errors.push((scope, index)),
            }
        }
        false
    }
}

/// A cluster's RBAC policy, ready to authorize.
#[derive(Debug, Default)]
pub struct RbacPolicy {
    cluster: Scope,
    namespaces: AHashMap<String, Scope>,
}

impl RbacPolicy {
    /// Builds the policy from stored rbac.authorization.k8s.io/v1 objects (JSON as the API
    /// serves them). Objects that do not decode or lack a name are skipped; a binding whose
    /// role is missing or whose `roleRef.kind` is unknown grants nothing and is reported in
    /// the reason of a denial, as upstream.
    pub fn from_objects(
        cluster_roles: &[serde_json::Value],
        cluster_role_bindings: &[serde_json::Value],
        roles: &[serde_json::Value],
        role_bindings: &[serde_json::Value],
    ) -> RbacPolicy {
        let mut cluster_roles = decode_roles(cluster_roles);
        aggregate(&mut cluster_roles);
        let cluster_roles: AHashMap<String, Arc<[PolicyRule]>> = cluster_roles
            .into_iter()
            .map(|r| (r.metadata.name, r.rules.into()))
            .collect();
        let roles: AHashMap<(String, String), Arc<[PolicyRule]>> = decode_roles(roles)
            .into_iter()
            .map(|r| ((r.metadata.namespace, r.metadata.name), r.rules.into()))
            .collect();
        let resolve = |binding: &BindingObject, namespace: &str| {
            let name = &binding.role_ref.name;
            match binding.role_ref.kind.as_str() {
                "ClusterRole" => cluster_roles.get(name).cloned().ok_or_else(|| {
                    format!("clusterrole.rbac.authorization.k8s.io {name:?} not found")
                }),
                "Role" => roles
                    .get(&(namespace.to_string(), name.clone()))
                    .cloned()
                    .ok_or_else(|| format!("role.rbac.authorization.k8s.io {name:?} not found")),
                kind => Err(format!("unsupported role reference kind: {kind:?}")),
            }
        };
        let mut policy = RbacPolicy::default();
        for binding in decode_bindings(cluster_role_bindings) {
            let rules = resolve(&binding, "");
            policy.cluster.add(&binding, "", rules);
        }
        for binding in decode_bindings(role_bindings) {
            let namespace = binding.metadata.namespace.clone();
            if namespace.is_empty() {
                continue;
            }
            let rules = resolve(&binding, &namespace);
            let scope = policy.namespaces.entry(namespace).or_default();
            scope.add(&binding, &binding.metadata.namespace, rules);
        }
        policy
    }

    /// Builds the policy from a mixed list of objects (a parsed manifest file, maybe with the
    /// [bootstrap](super::bootstrap) objects added), sorted by `kind`; other kinds are ignored.
    pub fn from_manifests(objects: &[serde_json::Value]) -> RbacPolicy {
        RbacPolicy::from_objects(
            &of_kind(objects, "ClusterRole"),
            &of_kind(objects, "ClusterRoleBinding"),
            &of_kind(objects, "Role"),
            &of_kind(objects, "RoleBinding"),
        )
    }

    /// Authorizes the request: `system:masters` is allowed everything (the apiserver's
    /// privileged-group authorizer, before RBAC); otherwise ClusterRoleBindings apply
    /// everywhere and RoleBindings in the request's namespace only (non-resource requests have
    /// none, so their URLs count only when bound cluster-wide).
    pub fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
        if user.in_group(PRIVILEGED_GROUP) {
            return Decision::Allow;
        }
        let mut errors = Vec::new();
        if self.cluster.check(user, attrs, &mut errors, 0) {
            return Decision::Allow;
        }
        let namespace = attrs.namespace();
        let scope = (!namespace.is_empty())
            .then(|| self.namespaces.get(namespace))
            .flatten();
        if let Some(scope) = scope
            && scope.check(user, attrs, &mut errors, 1)
        {
            return Decision::Allow;
        }
        Decision::Deny {
            reason: self.reason(errors, scope),
        }
    }

    /// Upstream's `RBAC: <aggregate of errors>`, or empty without errors.
    fn reason(&self, mut errors: Vec<(usize, usize)>, namespace: Option<&Scope>) -> String {
        if errors.is_empty() {
            return String::new();
        }
        errors.sort_unstable();
        errors.dedup();
        let messages: Vec<&str> = errors
            .iter()
            .filter_map(|&(scope, index)| {
                let scope = if scope == 0 {
                    Some(&self.cluster)
                } else {
                    namespace
                }?;
                scope.grants[index].rules.as_ref().err().map(String::as_str)
            })
            .collect();
        match messages.as_slice() {
            [one] => format!("RBAC: {one}"),
            many => format!("RBAC: [{}]", many.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::attributes::request_attributes;
    use http::Method;
    use serde_json::{Value, json};

    fn cluster_role(name: &str, rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules})
    }

    fn binding(
        kind: &str,
        name: &str,
        ns: &str,
        role_kind: &str,
        role: &str,
        subjects: Value,
    ) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
               "metadata": {"name": name, "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
               "subjects": subjects})
    }

    fn get(path: &str) -> Attributes {
        request_attributes(&Method::GET, path, None)
    }

    fn sa() -> UserInfo {
        UserInfo::service_account("kube-system", "tidemark", "uid")
    }

    fn pod_reader_policy() -> RbacPolicy {
        RbacPolicy::from_objects(
            &[cluster_role(
                "pod-reader",
                json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]),
            )],
            &[binding(
                "ClusterRoleBinding",
                "readers",
                "",
                "ClusterRole",
                "pod-reader",
                json!([{"kind": "ServiceAccount", "name": "tidemark", "namespace": "kube-system"}]),
            )],
            &[
                json!({"kind": "Role", "metadata": {"name": "lease", "namespace": "kube-system"},
                     "rules": [{"verbs": ["update"], "apiGroups": ["coordination.k8s.io"],
                                "resources": ["leases"], "resourceNames": ["tidemark"]}]}),
            ],
            &[
                binding(
                    "RoleBinding",
                    "lease",
                    "kube-system",
                    "Role",
                    "lease",
                    json!([{"kind": "ServiceAccount", "name": "tidemark"}]),
                ),
                binding(
                    "RoleBinding",
                    "ops-edit",
                    "apps",
                    "ClusterRole",
                    "pod-reader",
                    json!([{"kind": "Group", "name": "ops"}]),
                ),
            ],
        )
    }

    #[test]
    fn a_cluster_role_binding_allows_its_rules_in_every_namespace() {
        let policy = pod_reader_policy();
        assert_eq!(
            policy.authorize(&sa(), &get("/api/v1/namespaces/a/pods")),
            Decision::Allow
        );
        assert_eq!(
            policy.authorize(&sa(), &get("/api/v1/pods/")),
            Decision::Allow
        );
        assert_eq!(
            policy.authorize(&sa(), &get("/api/v1/nodes")),
            Decision::Deny {
                reason: String::new()
            }
        );
        let other = UserInfo::service_account("default", "tidemark", "");
        assert!(matches!(
            policy.authorize(&other, &get("/api/v1/pods")),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn a_role_binding_allows_its_role_only_in_its_namespace_and_names() {
        let policy = pod_reader_policy();
        let update = |ns: &str, name: &str| {
            request_attributes(
                &Method::PUT,
                &format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}"),
                None,
            )
        };
        assert_eq!(
            policy.authorize(&sa(), &update("kube-system", "tidemark")),
            Decision::Allow
        );
        assert!(matches!(
            policy.authorize(&sa(), &update("kube-system", "other")),
            Decision::Deny { .. }
        ));
        assert!(matches!(
            policy.authorize(&sa(), &update("default", "tidemark")),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn a_role_binding_to_a_cluster_role_scopes_it_to_the_binding_namespace() {
        let policy = pod_reader_policy();
        let ops = UserInfo::user("carol", &["ops"]);
        assert_eq!(
            policy.authorize(&ops, &get("/api/v1/namespaces/apps/pods")),
            Decision::Allow
        );
        assert!(matches!(
            policy.authorize(&ops, &get("/api/v1/namespaces/b/pods")),
            Decision::Deny { .. }
        ));
        assert!(matches!(
            policy.authorize(&ops, &get("/api/v1/pods")),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn system_masters_is_allowed_everything() {
        let policy = RbacPolicy::from_objects(&[], &[], &[], &[]);
        let root = UserInfo::user("root", &["system:masters"]);
        assert_eq!(policy.authorize(&root, &get("/metrics")), Decision::Allow);
        assert_eq!(
            policy.authorize(&root, &get("/api/v1/secrets")),
            Decision::Allow
        );
    }

    #[test]
    fn non_resource_urls_count_only_from_cluster_role_bindings() {
        let metrics = cluster_role(
            "metrics",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]),
        );
        let subjects = json!([{"kind": "User", "name": "alice"}]);
        let alice = UserInfo::user("alice", &[]);
        let via_role_binding = RbacPolicy::from_objects(
            std::slice::from_ref(&metrics),
            &[],
            &[],
            &[binding(
                "RoleBinding",
                "m",
                "default",
                "ClusterRole",
                "metrics",
                subjects.clone(),
            )],
        );
        assert!(matches!(
            via_role_binding.authorize(&alice, &get("/metrics")),
            Decision::Deny { .. }
        ));
        let via_cluster_binding = RbacPolicy::from_objects(
            &[metrics],
            &[binding(
                "ClusterRoleBinding",
                "m",
                "",
                "ClusterRole",
                "metrics",
                subjects,
            )],
            &[],
            &[],
        );
        assert_eq!(
            via_cluster_binding.authorize(&alice, &get("/metrics")),
            Decision::Allow
        );
    }

    #[test]
    fn a_binding_to_a_missing_role_is_the_reason_of_the_denial() {
        let subjects = json!([{"kind": "User", "name": "alice"}]);
        let policy = RbacPolicy::from_objects(
            &[],
            &[binding(
                "ClusterRoleBinding",
                "a",
                "",
                "ClusterRole",
                "gone",
                subjects.clone(),
            )],
            &[],
            &[binding(
                "RoleBinding",
                "b",
                "ns",
                "Role",
                "missing",
                subjects,
            )],
        );
        let alice = UserInfo::user("alice", &[]);
        assert_eq!(
            policy.authorize(&alice, &get("/api/v1/namespaces/ns/pods")),
            Decision::Deny {
                reason: "RBAC: [clusterrole.rbac.authorization.k8s.io \"gone\" not found, \
                         role.rbac.authorization.k8s.io \"missing\" not found]"
                    .into()
            }
        );
        assert_eq!(
            policy.authorize(&alice, &get("/api/v1/nodes")),
            Decision::Deny {
                reason: "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found".into()
            }
        );
    }

    #[test]
    fn malformed_objects_never_panic_and_grant_nothing() {
        let policy = RbacPolicy::from_objects(
            &[
                json!(null),
                json!({"metadata": {"name": "x"}, "rules": [{"verbs": 3}]}),
            ],
            &[
                json!("x"),
                json!({"metadata": {}, "roleRef": {}, "subjects": [{"kind": "User", "name": "a"}]}),
            ],
            &[json!([])],
            &[
                json!({"metadata": {"name": "no-namespace"}, "roleRef": {"kind": "Role", "name": "r"},
                     "subjects": [{"kind": "User", "name": "a"}]}),
            ],
        );
        let a = UserInfo::user("a", &[]);
        assert!(matches!(
            policy.authorize(&a, &get("/api/v1/pods")),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn an_aggregated_cluster_role_allows_what_it_aggregates() {
        let policy = RbacPolicy::from_objects(
            &[
                json!({"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors":
                    [{"matchLabels": {"aggregate-to-view": "true"}}]}}),
                json!({"metadata": {"name": "pods", "labels": {"aggregate-to-view": "true"}},
                    "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]}),
            ],
            &[binding(
                "ClusterRoleBinding",
                "v",
                "",
                "ClusterRole",
                "view",
                json!([{"kind": "Group", "name": "system:authenticated"}]),
            )],
            &[],
            &[],
        );
        assert_eq!(
            policy.authorize(&UserInfo::user("bob", &[]), &get("/api/v1/pods")),
            Decision::Allow
        );
    }
}
