//! REST paths of the resources the engine reads and writes.

use tidemark_engine::Resource;

/// The collection path of `resource` in `namespace` (all namespaces when `None`).
pub fn collection(resource: Resource, namespace: Option<&str>) -> String {
    let prefix = match resource.group() {
        "" => format!("/api/{}", resource.api_version()),
        _ => format!("/apis/{}", resource.api_version()),
    };
    match namespace.filter(|ns| resource.namespaced() && !ns.is_empty()) {
        Some(ns) => format!("{prefix}/namespaces/{ns}/{}", resource.plural()),
        None => format!("{prefix}/{}", resource.plural()),
    }
}

/// Adds `timeout=<deadline>` to a request's query, as kube-apiserver reads it.
pub(crate) fn with_server_timeout(
    mut request: http::Request<Vec<u8>>,
    deadline: Option<std::time::Duration>,
) -> http::Request<Vec<u8>> {
    let Some(deadline) = deadline else {
        return request;
    };
    let millis = deadline.as_millis().max(1);
    let uri = request.uri().to_string();
    let separator = if uri.contains('?') { '&' } else { '?' };
    if let Ok(uri) = format!("{uri}{separator}timeout={millis}ms").parse() {
        *request.uri_mut() = uri;
    }
    request
}

/// `request` asking only for the objects `selector` picks (KEP-5866's `shardSelector`,
/// form-encoded into the query).
pub(crate) fn with_shard_selector(
    mut request: http::Request<Vec<u8>>,
    selector: Option<&str>,
) -> http::Request<Vec<u8>> {
    let Some(selector) = selector else {
        return request;
    };
    let encoded: String = form_urlencoded::byte_serialize(selector.as_bytes()).collect();
    let uri = request.uri().to_string();
    let separator = if uri.contains('?') { '&' } else { '?' };
    if let Ok(uri) = format!("{uri}{separator}shardSelector={encoded}").parse() {
        *request.uri_mut() = uri;
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_selector_is_form_encoded_into_the_query() {
        let request = http::Request::get("/api/v1/pods?limit=500")
            .body(Vec::new())
            .expect("static request");
        let request = with_shard_selector(
            request,
            Some("shardRange(object.metadata.namespace, '0x00', '0x80')"),
        );
        let query = request.uri().query().expect("a query");
        let selector = form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "shardSelector")
            .map(|(_, v)| v.into_owned());
        assert_eq!(
            selector.as_deref(),
            Some("shardRange(object.metadata.namespace, '0x00', '0x80')")
        );
        assert!(query.starts_with("limit=500&"));
    }

    #[test]
    fn core_and_grouped_resources_have_their_api_prefix() {
        assert_eq!(
            collection(Resource::Pods, Some("ns")),
            "/api/v1/namespaces/ns/pods"
        );
        assert_eq!(collection(Resource::Pods, None), "/api/v1/pods");
        assert_eq!(
            collection(Resource::ReplicaSets, Some("a")),
            "/apis/apps/v1/namespaces/a/replicasets"
        );
        assert_eq!(collection(Resource::Nodes, Some("")), "/api/v1/nodes");
        assert_eq!(
            collection(Resource::Leases, Some("kube-node-lease")),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        );
    }
}
