//! The bootstrap ClusterRoles and ClusterRoleBindings every cluster has that matter to a
//! controller manager's client (upstream's `bootstrappolicy/policy.go`), as the API serves them:
//! labelled `kubernetes.io/bootstrapping: rbac-defaults`, annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "true"`; each binding is named after its role.

use serde_json::{Value, json};

/// The rules of one bootstrap ClusterRole and who it is bound to.
struct Bootstrap {
    name: &'static str,
    rules: Value,
    groups: &'static [&'static str],
}

fn policy() -> [Bootstrap; 4] {
    [
        Bootstrap {
            name: "cluster-admin",
            rules: json!([
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                {"verbs": ["*"], "nonResourceURLs": ["*"]}
            ]),
            groups: &["system:masters"],
        },
        Bootstrap {
            name: "system:discovery",
            rules: json!([{"verbs": ["get"], "nonResourceURLs": [
                "/livez", "/readyz", "/healthz", "/version", "/version/",
                "/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"
            ]}]),
            groups: &["system:authenticated"],
        },
        Bootstrap {
            name: "system:basic-user",
            rules: json!([
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                 "resources": ["selfsubjectreviews"]}
            ]),
            groups: &["system:authenticated"],
        },
        Bootstrap {
            name: "system:public-info-viewer",
            rules: json!([{"verbs": ["get"], "nonResourceURLs": [
                "/livez", "/readyz", "/healthz", "/version", "/version/"
            ]}]),
            groups: &["system:authenticated", "system:unauthenticated"],
        },
    ]
}

fn metadata(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    })
}

/// `cluster-admin`, `system:discovery`, `system:basic-user` and `system:public-info-viewer`.
pub fn bootstrap_cluster_roles() -> Vec<Value> {
    policy()
        .into_iter()
        .map(|b| {
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata(b.name),
                "rules": b.rules
            })
        })
        .collect()
}

/// `cluster-admin` to `system:masters`; `system:discovery` and `system:basic-user` to
/// `system:authenticated`; `system:public-info-viewer` to `system:authenticated` and
/// `system:unauthenticated`.
pub fn bootstrap_cluster_role_bindings() -> Vec<Value> {
    policy()
        .into_iter()
        .map(|b| {
            let subjects: Vec<Value> = b
                .groups
                .iter()
                .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
                .collect();
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata(b.name),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": b.name},
                "subjects": subjects
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::attributes::request_attributes;
    use crate::rbac::policy::{Decision, RbacPolicy};
    use crate::rbac::user::UserInfo;
    use http::Method;

    fn bootstrap_policy() -> RbacPolicy {
        RbacPolicy::from_objects(
            &bootstrap_cluster_roles(),
            &bootstrap_cluster_role_bindings(),
            &[],
            &[],
        )
    }

    #[test]
    fn every_authenticated_user_may_discover_and_check_health() {
        let policy = bootstrap_policy();
        let user = UserInfo::user("alice", &[]);
        for path in [
            "/api",
            "/apis/apps/v1",
            "/openapi/v3",
            "/version",
            "/healthz",
        ] {
            let attrs = request_attributes(&Method::GET, path, None);
            assert_eq!(policy.authorize(&user, &attrs), Decision::Allow, "{path}");
        }
        let metrics = request_attributes(&Method::GET, "/metrics", None);
        assert!(matches!(
            policy.authorize(&user, &metrics),
            Decision::Deny { .. }
        ));
        let pods = request_attributes(&Method::GET, "/api/v1/pods", None);
        assert!(matches!(
            policy.authorize(&user, &pods),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn an_anonymous_user_may_only_read_public_info() {
        let policy = bootstrap_policy();
        let anonymous = UserInfo {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
        };
        let version = request_attributes(&Method::GET, "/version", None);
        assert_eq!(policy.authorize(&anonymous, &version), Decision::Allow);
        let api = request_attributes(&Method::GET, "/api", None);
        assert!(matches!(
            policy.authorize(&anonymous, &api),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn bootstrap_objects_carry_the_rbac_defaults_label_and_autoupdate() {
        for object in bootstrap_cluster_roles()
            .into_iter()
            .chain(bootstrap_cluster_role_bindings())
        {
            let meta = &object["metadata"];
            assert_eq!(
                meta["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
            assert_eq!(
                meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
                "true"
            );
        }
    }
}
