//! The RBAC manifests Tidemark ships (`deploy/rbac.yaml` and scale-out's
//! `deploy/scale-out/rbac.yaml`), embedded so tests and stress reports can build a policy from
//! them and audit it.

/// The text of `deploy/rbac.yaml` and `deploy/scale-out/rbac.yaml`, one YAML stream.
pub const TIDEMARK_RBAC_YAML: &str = concat!(
    include_str!("../../../deploy/rbac.yaml"),
    "---\n",
    include_str!("../../../deploy/scale-out/rbac.yaml")
);

/// The namespace of Tidemark's ServiceAccount.
pub const TIDEMARK_NAMESPACE: &str = "kube-system";

/// The name of Tidemark's ServiceAccount (and of its leader-election Lease).
pub const TIDEMARK_SERVICE_ACCOUNT: &str = "tidemark";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::attributes::{Attributes, request_attributes};
    use crate::rbac::audit::audit;
    use crate::rbac::bootstrap::{bootstrap_cluster_role_bindings, bootstrap_cluster_roles};
    use crate::rbac::manifests::parse_manifests;
    use crate::rbac::policy::{Decision, RbacPolicy};
    use crate::rbac::request_log::RequestLog;
    use crate::rbac::user::UserInfo;
    use http::Method;
    use serde_json::Value;

    fn manifests() -> Vec<Value> {
        parse_manifests(TIDEMARK_RBAC_YAML).expect("deploy/rbac.yaml parses")
    }

    fn policy() -> RbacPolicy {
        let mut objects = manifests();
        objects.extend(bootstrap_cluster_roles());
        objects.extend(bootstrap_cluster_role_bindings());
        RbacPolicy::from_manifests(&objects)
    }

    fn tidemark() -> UserInfo {
        UserInfo::service_account(TIDEMARK_NAMESPACE, TIDEMARK_SERVICE_ACCOUNT, "uid")
    }

    /// What the controller manager sends, one request of each kind (paths as actors/src build
    /// them: informers and barriers cluster-wide, writes in the object's namespace).
    fn what_tidemark_does() -> Vec<(Method, &'static str, Option<&'static str>)> {
        let mut requests = Vec::new();
        for collection in [
            "/api/v1/pods",
            "/api/v1/nodes",
            "/apis/coordination.k8s.io/v1/leases",
            "/apis/apps/v1/replicasets",
            "/apis/apps/v1/statefulsets",
            "/apis/apps/v1/daemonsets",
            "/apis/apps/v1/controllerrevisions",
            "/api/v1/persistentvolumeclaims",
            "/apis/batch/v1/jobs",
        ] {
            requests.push((Method::GET, collection, Some("limit=500")));
            requests.push((
                Method::GET,
                collection,
                Some("watch=true&allowWatchBookmarks=true"),
            ));
        }
        requests.extend([
            (Method::POST, "/api/v1/namespaces/default/pods", None),
            (
                Method::DELETE,
                "/api/v1/namespaces/default/pods/web-1",
                None,
            ),
            (Method::PATCH, "/api/v1/namespaces/default/pods/job-1", None),
            (
                Method::PUT,
                "/apis/apps/v1/namespaces/default/replicasets/web/status",
                None,
            ),
            (
                Method::PUT,
                "/apis/apps/v1/namespaces/default/statefulsets/db/status",
                None,
            ),
            (
                Method::PUT,
                "/apis/apps/v1/namespaces/default/daemonsets/agent/status",
                None,
            ),
            (
                Method::PUT,
                "/apis/batch/v1/namespaces/default/jobs/batch/status",
                None,
            ),
            (
                Method::POST,
                "/api/v1/namespaces/default/persistentvolumeclaims",
                None,
            ),
            (
                Method::PATCH,
                "/api/v1/namespaces/default/persistentvolumeclaims/data-db-0",
                None,
            ),
            (
                Method::POST,
                "/apis/apps/v1/namespaces/default/controllerrevisions",
                None,
            ),
            (
                Method::DELETE,
                "/apis/apps/v1/namespaces/default/controllerrevisions/db-1",
                None,
            ),
            (Method::PUT, "/api/v1/nodes/node-1/status", None),
            (Method::PATCH, "/api/v1/nodes/node-1", None),
            (Method::POST, "/api/v1/namespaces/default/events", None),
            // A repeat of an Event is a PATCH of its count (client-go's recorder).
            (Method::PATCH, "/api/v1/namespaces/default/events/e1", None),
            (
                Method::GET,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tidemark",
                None,
            ),
            (
                Method::POST,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                None,
            ),
            (
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tidemark",
                None,
            ),
            (
                Method::POST,
                "/apis/coordination.k8s.io/v1/namespaces/tidemark-ranges/leases",
                None,
            ),
            (
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/tidemark-ranges/leases/tidemark-range-07",
                None,
            ),
            (
                Method::POST,
                "/apis/authentication.k8s.io/v1/tokenreviews",
                None,
            ),
            (
                Method::POST,
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                None,
            ),
        ]);
        requests
    }

    fn decide(method: Method, path: &str) -> Decision {
        policy().authorize(&tidemark(), &request_attributes(&method, path, None))
    }

    fn denied(method: Method, path: &str) -> bool {
        matches!(decide(method, path), Decision::Deny { .. })
    }

    #[test]
    fn the_manifest_allows_everything_tidemark_does() {
        let policy = policy();
        for (method, path, query) in what_tidemark_does() {
            let attrs = request_attributes(&method, path, query);
            assert_eq!(
                policy.authorize(&tidemark(), &attrs),
                Decision::Allow,
                "{attrs:?}"
            );
        }
    }

    #[test]
    fn the_manifest_denies_what_tidemark_never_does() {
        assert!(denied(Method::GET, "/api/v1/namespaces/default/secrets"));
        assert!(denied(
            Method::POST,
            "/api/v1/namespaces/default/pods/web-1/eviction"
        ));
        assert!(denied(Method::DELETE, "/api/v1/namespaces/default/pods"));
        assert!(denied(
            Method::PUT,
            "/apis/apps/v1/namespaces/default/replicasets/web"
        ));
        assert!(denied(Method::DELETE, "/api/v1/nodes/node-1"));
        assert!(denied(Method::PUT, "/api/v1/namespaces/default/events/e1"));
        assert!(denied(
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/other"
        ));
        assert!(
            denied(
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
            ),
            "scale-out's Leases are in a namespace of their own"
        );
        assert!(denied(
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1"
        ));
        assert!(denied(Method::GET, "/metrics"));
    }

    #[test]
    fn the_bootstrap_policy_lets_the_service_account_discover() {
        assert_eq!(decide(Method::GET, "/apis/apps/v1"), Decision::Allow);
        assert_eq!(decide(Method::GET, "/version"), Decision::Allow);
    }

    #[test]
    fn what_tidemark_does_uses_every_grant_of_the_manifest() {
        let policy = policy();
        let log = RequestLog::new();
        for (method, path, query) in what_tidemark_does() {
            let attrs = request_attributes(&method, path, query);
            let allowed = policy.authorize(&tidemark(), &attrs) == Decision::Allow;
            log.record(&tidemark(), &attrs, allowed);
        }
        log.record(
            &tidemark(),
            &Attributes::NonResource {
                verb: "get".into(),
                path: "/version".into(),
            },
            true,
        );
        let report = audit(&manifests(), &tidemark(), &log.for_user(&tidemark().name));
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.allowed_elsewhere.len(), 1, "{report}");
    }
}
