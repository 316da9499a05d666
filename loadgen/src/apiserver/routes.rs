//! URL paths of the Kubernetes REST API, parsed into what they address.

use crate::resource::Resource;

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/`.
    Root,
    /// `/version`.
    Version,
    /// `/healthz`, `/readyz`, `/livez` (and their sub-checks).
    Health,
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`: the index.
    OpenApiV3Index,
    /// `/openapi/v3/{api/v1 | apis/group/version}`.
    OpenApiV3(String),
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`.
    Resources {
        /// API group (empty for core).
        group: String,
        /// Version.
        version: String,
    },
    /// A collection: all namespaces (`namespace == None`) or one.
    Collection {
        /// The resource.
        resource: Resource,
        /// The namespace, if namespaced.
        namespace: Option<String>,
    },
    /// One object, or its `/status` subresource (`namespace` is empty for cluster-scoped kinds).
    Object {
        /// The resource.
        resource: Resource,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// Whether the path ends in `/status`.
        status: bool,
    },
    /// The `/eviction` subresource of a Pod (policy/v1 Eviction).
    Eviction {
        /// The namespace.
        namespace: String,
        /// The Pod's name.
        name: String,
    },
    /// A create-only review: TokenReview, SubjectAccessReview, SelfSubjectAccessReview.
    Review {
        /// The plural, e.g. `tokenreviews`.
        plural: &'static str,
    },
    /// `serviceaccounts/{name}/token`: a TokenRequest.
    ServiceAccountToken {
        /// The namespace.
        namespace: String,
        /// The ServiceAccount's name.
        name: String,
    },
    /// The `/scale` subresource of a ReplicaSet or StatefulSet.
    Scale {
        /// The resource (only ReplicaSets and StatefulSets have one).
        resource: Resource,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
    },
}

/// Parses a request path addressing the built-in resources; `None` is a 404.
pub fn parse(path: &str) -> Option<Route> {
    parse_with(path, &Resource::from_group_plural)
}

/// Parses a request path, finding resources by group and plural with `lookup` (the store's
/// [`resource_for`](crate::store::Store::resource_for), which knows custom resources).
pub fn parse_with(path: &str, lookup: &dyn Fn(&str, &str) -> Option<Resource>) -> Option<Route> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        [] => return Some(Route::Root),
        ["version"] => return Some(Route::Version),
        ["healthz" | "readyz" | "livez", ..] => return Some(Route::Health),
        ["openapi", "v2"] => return Some(Route::OpenApiV2),
        ["openapi", "v3"] => return Some(Route::OpenApiV3Index),
        ["openapi", "v3", rest @ ..] => return Some(Route::OpenApiV3(rest.join("/"))),
        ["api"] => return Some(Route::CoreVersions),
        ["apis"] => return Some(Route::Groups),
        ["apis", g] => return Some(Route::Group((*g).to_string())),
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    if let [plural] = rest
        && version == "v1"
        && let Some((_, p, _)) = crate::apiserver::discovery::REVIEWS
            .iter()
            .find(|(g, p, _)| *g == group && p == plural)
    {
        return Some(Route::Review { plural: p });
    }
    if let ["namespaces", ns, "serviceaccounts", name, "token"] = rest
        && group.is_empty()
        && version == "v1"
    {
        return Some(Route::ServiceAccountToken {
            namespace: (*ns).to_string(),
            name: (*name).to_string(),
        });
    }
    let known = |plural: &str| lookup(group, plural).filter(|r| r.version() == version);
    let namespaced = |plural: &str| known(plural).filter(|r| r.namespaced());
    let cluster = |plural: &str| known(plural).filter(|r| !r.namespaced());
    let object = |resource: Resource, ns: &str, name: &str, status: bool| Route::Object {
        resource,
        namespace: ns.to_string(),
        name: name.to_string(),
        status,
    };
    let scale = |resource: Resource, ns: &str, name: &str| {
        resource.has_scale().then(|| Route::Scale {
            resource,
            namespace: ns.to_string(),
            name: name.to_string(),
        })
    };
    match rest {
        [] => Some(Route::Resources {
            group: group.to_string(),
            version: version.to_string(),
        }),
        [plural] => known(plural).map(|resource| Route::Collection {
            resource,
            namespace: None,
        }),
        ["namespaces", ns, plural] if namespaced(plural).is_some() => {
            namespaced(plural).map(|resource| Route::Collection {
                resource,
                namespace: Some((*ns).to_string()),
            })
        }
        ["namespaces", ns, plural, name] => namespaced(plural).map(|r| object(r, ns, name, false)),
        ["namespaces", ns, plural, name, "status"] => namespaced(plural)
            .filter(|r| r.has_status())
            .map(|r| object(r, ns, name, true)),
        ["namespaces", ns, plural, name, "eviction"]
            if namespaced(plural) == Some(Resource::Pods) =>
        {
            Some(Route::Eviction {
                namespace: (*ns).to_string(),
                name: (*name).to_string(),
            })
        }
        ["namespaces", ns, plural, name, "scale"] => {
            namespaced(plural).and_then(|r| scale(r, ns, name))
        }
        [plural, name] => cluster(plural).map(|r| object(r, "", name, false)),
        [plural, name, "status"] => cluster(plural)
            .filter(|r| r.has_status())
            .map(|r| object(r, "", name, true)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_and_cluster_wide_paths_parse() {
        assert_eq!(
            parse("/api/v1/pods"),
            Some(Route::Collection {
                resource: Resource::Pods,
                namespace: None
            })
        );
        assert_eq!(
            parse("/apis/apps/v1/namespaces/ns/replicasets/web/status"),
            Some(Route::Object {
                resource: Resource::ReplicaSets,
                namespace: "ns".into(),
                name: "web".into(),
                status: true
            })
        );
        assert_eq!(parse("/api/v1/replicasets"), None);
        assert_eq!(parse("/apis/apps/v2/replicasets"), None);
        assert_eq!(parse("/api/v1/namespaces/ns/pods/a/log"), None);
        assert_eq!(
            parse("/api/v1"),
            Some(Route::Resources {
                group: "".into(),
                version: "v1".into()
            })
        );
        assert_eq!(parse("/nope"), None);
        assert_eq!(
            parse("/api/v1/namespaces/kube-system"),
            Some(Route::Object {
                resource: Resource::Namespaces,
                namespace: "".into(),
                name: "kube-system".into(),
                status: false
            })
        );
        assert_eq!(
            parse("/api/v1/nodes/n1/status"),
            Some(Route::Object {
                resource: Resource::Nodes,
                namespace: "".into(),
                name: "n1".into(),
                status: true
            })
        );
        assert_eq!(
            parse("/api/v1/namespaces"),
            Some(Route::Collection {
                resource: Resource::Namespaces,
                namespace: None
            })
        );
        assert_eq!(parse("/api/v1/namespaces/ns/nodes"), None);
        assert_eq!(parse("/api/v1/pods/a"), None);
        assert!(matches!(
            parse("/apis/apps/v1/namespaces/ns/statefulsets/s/scale"),
            Some(Route::Scale { .. })
        ));
    }
}
