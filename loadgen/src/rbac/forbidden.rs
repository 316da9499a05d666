//! The body of a 403 from the authorization filter: `responsewriters.Forbidden`'s message
//! wrapped in `apierrors.NewForbidden`'s Status.

use super::attributes::Attributes;
use super::user::UserInfo;
use serde_json::{Map, Value, json};

/// The Status kube-apiserver answers a denied request with. The message is
/// `forbiddenMessage` (`User "u" cannot VERB resource "res[/sub]" in API group "g" in the
/// namespace "ns"` / `at the cluster scope`, or `User "u" cannot VERB path "/p"`), followed by
/// `: REASON` when the authorizer gave one, and prefixed as `NewForbidden` does: `res[.group]
/// is forbidden: `, `res[.group] "name" is forbidden: `, or `forbidden: ` for non-resource
/// requests. `details` holds name, group and kind (the plural resource), each only when set.
pub fn forbidden_status(user: &UserInfo, attrs: &Attributes, reason: &str) -> Value {
    let mut message = forbidden_message(user, attrs);
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let (group, resource, name) = match attrs {
        Attributes::Resource(r) => (r.api_group.as_str(), r.resource.as_str(), r.name.as_str()),
        Attributes::NonResource { .. } => ("", "", ""),
    };
    let qualified = match group {
        "" => resource.to_string(),
        g => format!("{resource}.{g}"),
    };
    let message = if qualified.is_empty() {
        format!("forbidden: {message}")
    } else if name.is_empty() {
        format!("{qualified} is forbidden: {message}")
    } else {
        format!("{qualified} {name:?} is forbidden: {message}")
    };
    let mut details = Map::new();
    for (key, value) in [("name", name), ("group", group), ("kind", resource)] {
        if !value.is_empty() {
            details.insert(key.into(), value.into());
        }
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403
    })
}

/// Upstream's `forbiddenMessage`: who cannot do what, where.
fn forbidden_message(user: &UserInfo, attrs: &Attributes) -> String {
    let username = &user.name;
    match attrs {
        Attributes::NonResource { verb, path } => {
            format!("User {username:?} cannot {verb} path {path:?}")
        }
        Attributes::Resource(r) => {
            let resource = if r.subresource.is_empty() {
                r.resource.clone()
            } else {
                format!("{}/{}", r.resource, r.subresource)
            };
            let (verb, group) = (&r.verb, &r.api_group);
            if r.namespace.is_empty() {
                format!(
                    "User {username:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
                )
            } else {
                format!(
                    "User {username:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
                    r.namespace
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::attributes::request_attributes;
    use http::Method;

    fn sa() -> UserInfo {
        UserInfo::service_account("kube-system", "tidemark", "")
    }

    #[test]
    fn a_denied_list_in_a_namespace_names_the_namespace() {
        let attrs = request_attributes(&Method::GET, "/api/v1/namespaces/default/pods", None);
        assert_eq!(
            forbidden_status(&sa(), &attrs, ""),
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "pods is forbidden: User \"system:serviceaccount:kube-system:tidemark\" \
                            cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
                "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403
            })
        );
    }

    #[test]
    fn a_denied_cluster_wide_request_says_at_the_cluster_scope() {
        let attrs = request_attributes(&Method::GET, "/apis/apps/v1/replicasets", Some("watch=1"));
        let status = forbidden_status(&sa(), &attrs, "");
        assert_eq!(
            status["message"],
            "replicasets.apps is forbidden: User \"system:serviceaccount:kube-system:tidemark\" \
             cannot watch resource \"replicasets\" in API group \"apps\" at the cluster scope"
        );
        assert_eq!(
            status["details"],
            json!({"group": "apps", "kind": "replicasets"})
        );
    }

    #[test]
    fn a_denied_named_request_quotes_the_name_and_shows_the_subresource() {
        let attrs = request_attributes(
            &Method::POST,
            "/api/v1/namespaces/default/pods/web-1/eviction",
            None,
        );
        let status = forbidden_status(&sa(), &attrs, "");
        assert_eq!(
            status["message"],
            "pods \"web-1\" is forbidden: User \"system:serviceaccount:kube-system:tidemark\" \
             cannot create resource \"pods/eviction\" in API group \"\" in the namespace \"default\""
        );
        assert_eq!(status["details"], json!({"name": "web-1", "kind": "pods"}));
    }

    #[test]
    fn a_denied_path_is_forbidden_with_empty_details() {
        let attrs = request_attributes(&Method::GET, "/metrics", None);
        let status = forbidden_status(&UserInfo::user("x", &[]), &attrs, "");
        assert_eq!(
            status["message"],
            "forbidden: User \"x\" cannot get path \"/metrics\""
        );
        assert_eq!(status["details"], json!({}));
    }

    #[test]
    fn the_authorizer_reason_follows_the_message() {
        let attrs = request_attributes(&Method::GET, "/api/v1/nodes/n1", None);
        let status = forbidden_status(
            &UserInfo::user("x", &[]),
            &attrs,
            "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found",
        );
        assert_eq!(
            status["message"],
            "nodes \"n1\" is forbidden: User \"x\" cannot get resource \"nodes\" in API group \"\" \
             at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found"
        );
    }
}
