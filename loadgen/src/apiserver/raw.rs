//! Hostile-server simulation: storing an object exactly as given, skipping the type checks,
//! validation and defaulting every API request goes through, so tests can show what the manager
//! does with objects kube-apiserver would refuse (`spec.replicas: "five"`, a Node whose `status`
//! is a string). Reachable only in process and through the loopback admin listener
//! (`PUT /raw/{plural}/{namespace}/{name}`, namespace `-` for cluster-scoped kinds), never
//! through the API listener.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::apiserver::status::ApiError;
use crate::resource::Resource;
use crate::store::{Store, Stored};

/// The user agent raw writes are recorded with.
pub const RAW_USER_AGENT: &str = "loadgen-raw";

/// Stores `body` as the `r` object `ns/name`, as given: only the server-owned metadata (name,
/// namespace, uid, creationTimestamp, generation, resourceVersion) is the store's. Creates the
/// object if it does not exist (an ADDED event with the store's defaults, then a MODIFIED one
/// with `body`). The body must be a JSON object: the store keys objects by their metadata.
pub fn store_raw(
    store: &Store,
    r: Resource,
    ns: &str,
    name: &str,
    body: Value,
) -> Result<Arc<Stored>, ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "a raw object must be a JSON object (the store keys it by its metadata)",
        ));
    }
    if store.get(r, ns, name).is_none() {
        store.create(
            r,
            ns,
            json!({"metadata": {"name": name}}),
            Some(RAW_USER_AGENT),
        )?;
    }
    store.update_with(r, ns, name, |v| *v = body, Some(RAW_USER_AGENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_object_is_stored_as_given_with_the_stores_identity() {
        let store = Store::new(100, None);
        let stored = store_raw(
            &store,
            Resource::ReplicaSets,
            "ns",
            "web",
            json!({"metadata": {"name": "web", "uid": "forged"},
                   "spec": {"replicas": "five", "selector": "app=web"},
                   "status": "lots"}),
        )
        .expect("stored");
        assert_eq!(stored.value["spec"]["replicas"], "five");
        assert_eq!(stored.value["status"], "lots");
        assert_ne!(stored.value["metadata"]["uid"], "forged");
        let again = store_raw(
            &store,
            Resource::Nodes,
            "",
            "n1",
            json!({"metadata": {"name": "n1"}, "status": "not-an-object"}),
        )
        .expect("stored");
        assert_eq!(again.value["status"], "not-an-object");
        assert!(store_raw(&store, Resource::Nodes, "", "n2", json!([1])).is_err());
    }
}
