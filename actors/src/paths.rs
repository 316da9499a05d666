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

#[cfg(test)]
mod tests {
    use super::*;

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
