//! What a request asks to do, as the authorizer sees it: `k8s.io/apiserver`'s `RequestInfo`
//! reduced to the attributes RBAC reads, and the factory that derives it from method and URL.

use serde::{Deserialize, Serialize};

/// A resource request's attributes. Every field is empty when the request has none
/// (`api_group` is empty for the core group, `namespace` for cluster-scoped requests).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or a
    /// special verb from the path (`proxy`).
    pub verb: String,
    /// The API group, empty for core.
    pub api_group: String,
    /// The API version (`v1`).
    pub api_version: String,
    /// The plural resource (`pods`).
    pub resource: String,
    /// The subresource (`status`, `scale`, `eviction`, ...).
    pub subresource: String,
    /// The namespace; for `namespaces/NS` requests, NS itself.
    pub namespace: String,
    /// The object's name; for lists and watches, the name a `metadata.name` field selector pins.
    pub name: String,
}

/// What one request asks to do.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum Attributes {
    /// A request under `/api/v1` or `/apis/GROUP/VERSION` naming a resource.
    Resource(ResourceAttributes),
    /// Anything else (`/healthz`, `/version`, discovery documents).
    NonResource {
        /// The lowercase HTTP method (`get`, `post`, `head`, ...).
        verb: String,
        /// The URL path.
        path: String,
    },
}

impl Attributes {
    /// The verb RBAC rules must grant.
    pub fn verb(&self) -> &str {
        match self {
            Attributes::Resource(r) => &r.verb,
            Attributes::NonResource { verb, .. } => verb,
        }
    }

    /// The namespace whose RoleBindings apply; empty for cluster-scoped and non-resource requests.
    pub fn namespace(&self) -> &str {
        match self {
            Attributes::Resource(r) => &r.namespace,
            Attributes::NonResource { .. } => "",
        }
    }
}

/// Path prefixes of resource requests; only `api` is without a group.
const API_PREFIXES: [&str; 2] = ["api", "apis"];
/// Verbs a path may carry right after the version (`/api/v1/watch/...`).
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// Subresources of a Namespace (`/api/v1/namespaces/NS/status`), not resources inside it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Derives a request's attributes as upstream's `RequestInfoFactory.NewRequestInfo` does:
///
/// - `/api/VERSION/...` and `/apis/GROUP/VERSION/...` with at least a resource are resource
///   requests; everything else is non-resource with the lowercase method as verb (so `HEAD
///   /healthz` is verb `head`).
/// - The verb comes from the method (POST create, GET and HEAD get, PUT update, PATCH patch,
///   DELETE delete, anything else empty), or from a `watch`/`proxy` segment after the version.
/// - `namespaces/NS/RESOURCE/...` sets the namespace; `namespaces/NS[/status|/finalize]` is the
///   Namespace NS itself (namespace and name NS).
/// - `RESOURCE/NAME/SUBRESOURCE`: the third part is the subresource (not for `proxy`).
/// - A `get` without a name is `list`, or `watch` when the query's `watch` is set to anything
///   but `false`/`0`; then a field selector requiring `metadata.name=X` sets the name X.
/// - A `delete` without a name is `deletecollection`.
///
/// Upstream answers `/api/v1/watch` and `/api/v1/proxy` without a resource with an error
/// (500); here they are non-resource requests. Upstream also drops the field selector's name
/// when any list option fails to decode (`limit=abc`); here only `watch` and `fieldSelector`
/// are read.
pub fn request_attributes(method: &http::Method, path: &str, query: Option<&str>) -> Attributes {
    let non_resource = || Attributes::NonResource {
        verb: method.as_str().to_ascii_lowercase(),
        path: path.to_string(),
    };
    let parts: Vec<&str> = split_path(path);
    if parts.len() < 3 || !API_PREFIXES.contains(&parts[0]) {
        return non_resource();
    }
    let mut rest = &parts[1..];
    let mut api_group = "";
    if parts[0] != "api" {
        if rest.len() < 3 {
            return non_resource();
        }
        api_group = rest[0];
        rest = &rest[1..];
    }
    let api_version = rest[0];
    rest = &rest[1..];
    let mut verb = match *method {
        http::Method::POST => "create",
        http::Method::GET | http::Method::HEAD => "get",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "",
    };
    if SPECIAL_VERBS.contains(&rest[0]) {
        if rest.len() < 2 {
            return non_resource();
        }
        verb = rest[0];
        rest = &rest[1..];
    }
    let mut namespace = "";
    if rest[0] == "namespaces" && rest.len() > 1 {
        namespace = rest[1];
        if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
            rest = &rest[2..];
        }
    }
    let resource = rest[0];
    let mut name = rest.get(1).copied().unwrap_or("").to_string();
    let subresource = match rest.get(2) {
        Some(sub) if verb != "proxy" => *sub,
        _ => "",
    };
    if name.is_empty() && verb == "get" {
        let list = ListQuery::parse(query.unwrap_or(""));
        verb = if list.watch { "watch" } else { "list" };
        if let Some(pinned) = list.name {
            name = pinned;
        }
    }
    if name.is_empty() && verb == "delete" {
        verb = "deletecollection";
    }
    Attributes::Resource(ResourceAttributes {
        verb: verb.to_string(),
        api_group: api_group.to_string(),
        api_version: api_version.to_string(),
        resource: resource.to_string(),
        subresource: subresource.to_string(),
        namespace: namespace.to_string(),
        name,
    })
}

/// The path's segments without empty ones at either end (upstream's `splitPath`: trims `/`
/// then splits, so `//` inside the path yields an empty segment).
fn split_path(path: &str) -> Vec<&str> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed.split('/').collect()
}

/// The list options that change the verb or the name.
struct ListQuery {
    watch: bool,
    name: Option<String>,
}

impl ListQuery {
    /// Reads the first `watch` and `fieldSelector` values, as the parameter codec does.
    fn parse(query: &str) -> Self {
        let mut watch = None;
        let mut selector = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match percent_decode(key).as_str() {
                "watch" if watch.is_none() => watch = Some(percent_decode(value)),
                "fieldSelector" if selector.is_none() => selector = Some(percent_decode(value)),
                _ => {}
            }
        }
        let watch = watch.is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"));
        let name = selector
            .as_deref()
            .and_then(|s| exact_match(s, "metadata.name"))
            .filter(|n| valid_path_segment_name(n));
        Self { watch, name }
    }
}

/// The value a field selector requires `field` to equal, as `fields.ParseSelector` and
/// `RequiresExactMatch`: terms split at unescaped commas and sorted, each split at its first
/// `!=`, `==` or `=`, values unescaped (`\\`, `\,`, `\=`; any other escape, or a bare `,` or `=`,
/// makes the whole selector invalid, so None); the first `field=v` or `field==v` term wins.
fn exact_match(selector: &str, field: &str) -> Option<String> {
    let mut terms = split_terms(selector);
    terms.sort_unstable();
    let mut found = None;
    for term in terms.into_iter().filter(|t| !t.is_empty()) {
        let (key, op, value) = split_term(term)?;
        let value = unescape(value)?;
        if op != "!=" && key == field && found.is_none() {
            found = Some(value);
        }
    }
    found
}

/// `selector` split at every comma not escaped by a backslash.
fn split_terms(selector: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in selector.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                out.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&selector[start..]);
    out
}

/// A term split at its first operator (escapes are not considered, as upstream's `splitTerm`).
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    (0..term.len())
        .filter(|&i| term.is_char_boundary(i))
        .find_map(|i| {
            ["!=", "==", "="]
                .into_iter()
                .find(|op| term[i..].starts_with(op))
                .map(|op| (&term[..i], op, &term[i + op.len()..]))
        })
}

/// Upstream's `UnescapeValue`.
fn unescape(value: &str) -> Option<String> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        match c {
            '\\' | ',' | '=' if escaped => {
                out.push(c);
                escaped = false;
            }
            _ if escaped => return None,
            '\\' => escaped = true,
            ',' | '=' => return None,
            c => out.push(c),
        }
    }
    (!escaped).then_some(out)
}

/// Whether `name` may be a path segment (upstream's `path.IsValidPathSegmentName`).
fn valid_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// Decodes `%XX` escapes and `+` (a space in a query); invalid escapes stay as they are.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn resource(method: Method, path: &str, query: Option<&str>) -> ResourceAttributes {
        match request_attributes(&method, path, query) {
            Attributes::Resource(r) => r,
            other => panic!("{path} is not a resource request: {other:?}"),
        }
    }

    fn attrs(
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> ResourceAttributes {
        ResourceAttributes {
            verb: verb.into(),
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    #[test]
    fn getting_a_collection_lists_it() {
        assert_eq!(
            resource(Method::GET, "/api/v1/namespaces/default/pods", None),
            attrs("list", "", "pods", "", "default", "")
        );
        assert_eq!(
            resource(Method::GET, "/api/v1/pods", Some("limit=500")),
            attrs("list", "", "pods", "", "", "")
        );
    }

    #[test]
    fn getting_a_collection_with_watch_set_watches_it() {
        for query in ["watch=true", "watch=1", "limit=1&watch=yes", "watch="] {
            assert_eq!(
                resource(Method::GET, "/apis/apps/v1/replicasets", Some(query)).verb,
                "watch",
                "{query}"
            );
        }
        for query in ["watch=false", "watch=0", "watch=FALSE"] {
            assert_eq!(
                resource(Method::GET, "/apis/apps/v1/replicasets", Some(query)).verb,
                "list",
                "{query}"
            );
        }
    }

    #[test]
    fn the_legacy_watch_prefix_watches() {
        assert_eq!(
            resource(Method::GET, "/api/v1/watch/namespaces/ns/pods", None),
            attrs("watch", "", "pods", "", "ns", "")
        );
        assert_eq!(
            resource(Method::GET, "/api/v1/watch/namespaces/ns/pods/web-1", None),
            attrs("watch", "", "pods", "", "ns", "web-1")
        );
    }

    #[test]
    fn a_name_field_selector_names_the_list() {
        assert_eq!(
            resource(
                Method::GET,
                "/api/v1/namespaces/ns/pods",
                Some("fieldSelector=metadata.name%3Dweb-1&watch=1")
            ),
            attrs("watch", "", "pods", "", "ns", "web-1")
        );
        assert_eq!(
            resource(
                Method::GET,
                "/api/v1/nodes",
                Some("fieldSelector=spec.unschedulable=false,metadata.name==n1")
            )
            .name,
            "n1"
        );
        assert_eq!(
            resource(
                Method::GET,
                "/api/v1/pods",
                Some("fieldSelector=metadata.name%3Db%2Cmetadata.name%3Da")
            )
            .name,
            "a",
            "terms are sorted first"
        );
        assert_eq!(
            resource(
                Method::GET,
                "/api/v1/pods",
                Some("fieldSelector=metadata.name%3Dweb%5C%2C1")
            )
            .name,
            "web,1"
        );
        for query in [
            "fieldSelector=metadata.name!=web-1",
            "fieldSelector=spec.nodeName=web-1",
            "fieldSelector=metadata.name=a%2Fb",
            "fieldSelector=metadata.name=a=b",
            "fieldSelector=metadata.name=a,nonsense",
            "fieldSelector=metadata.name=a\\x",
            "fieldSelector=%20metadata.name=a",
        ] {
            assert_eq!(
                resource(Method::GET, "/api/v1/pods", Some(query)).name,
                "",
                "{query}"
            );
        }
    }

    #[test]
    fn an_object_is_got_created_updated_patched_and_deleted() {
        let path = "/apis/apps/v1/namespaces/ns/replicasets/web";
        let verb = |m: Method| resource(m, path, None).verb;
        assert_eq!(verb(Method::GET), "get");
        assert_eq!(verb(Method::HEAD), "get");
        assert_eq!(verb(Method::PUT), "update");
        assert_eq!(verb(Method::PATCH), "patch");
        assert_eq!(verb(Method::DELETE), "delete");
        assert_eq!(
            resource(
                Method::POST,
                "/apis/apps/v1/namespaces/ns/replicasets",
                None
            ),
            attrs("create", "apps", "replicasets", "", "ns", "")
        );
        assert_eq!(
            resource(Method::DELETE, "/api/v1/namespaces/ns/pods", None).verb,
            "deletecollection"
        );
    }

    #[test]
    fn the_fifth_segment_is_the_subresource() {
        for sub in ["status", "scale", "eviction", "binding", "log"] {
            assert_eq!(
                resource(
                    Method::POST,
                    &format!("/api/v1/namespaces/ns/pods/web-1/{sub}"),
                    None
                ),
                attrs("create", "", "pods", sub, "ns", "web-1")
            );
        }
        assert_eq!(
            resource(
                Method::POST,
                "/api/v1/namespaces/kube-system/serviceaccounts/tidemark/token",
                None
            ),
            attrs(
                "create",
                "",
                "serviceaccounts",
                "token",
                "kube-system",
                "tidemark"
            )
        );
        assert_eq!(
            resource(Method::PUT, "/api/v1/nodes/n1/status", None),
            attrs("update", "", "nodes", "status", "", "n1")
        );
    }

    #[test]
    fn a_namespace_is_in_itself() {
        assert_eq!(
            resource(Method::GET, "/api/v1/namespaces/ns", None),
            attrs("get", "", "namespaces", "", "ns", "ns")
        );
        assert_eq!(
            resource(Method::PUT, "/api/v1/namespaces/ns/finalize", None),
            attrs("update", "", "namespaces", "finalize", "ns", "ns")
        );
        assert_eq!(
            resource(Method::GET, "/api/v1/namespaces", None),
            attrs("list", "", "namespaces", "", "", "")
        );
    }

    #[test]
    fn proxy_keeps_the_rest_of_the_path_out_of_the_subresource() {
        assert_eq!(
            resource(
                Method::GET,
                "/api/v1/proxy/namespaces/ns/pods/web-1/metrics",
                None
            ),
            attrs("proxy", "", "pods", "", "ns", "web-1")
        );
    }

    #[test]
    fn other_paths_are_non_resource_with_the_lowercase_method() {
        for (method, path, verb) in [
            (Method::GET, "/healthz", "get"),
            (Method::HEAD, "/readyz", "head"),
            (Method::GET, "/api", "get"),
            (Method::GET, "/api/v1", "get"),
            (Method::GET, "/apis/apps/v1", "get"),
            (Method::POST, "/metrics", "post"),
            (Method::GET, "/openapi/v2", "get"),
        ] {
            assert_eq!(
                request_attributes(&method, path, None),
                Attributes::NonResource {
                    verb: verb.into(),
                    path: path.into()
                }
            );
        }
    }
}
