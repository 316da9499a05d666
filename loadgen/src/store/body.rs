//! What the server does to a body it is given: type meta, namespace and status checks, the
//! status a new object starts with, and the metadata a write may not change.

use serde_json::Value;

use crate::apiserver::status::ApiError;
use crate::meta::{meta_mut, meta_str};
use crate::resource::Resource;

pub(super) fn check_type_meta(r: Resource, obj: &Value) -> Result<(), ApiError> {
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str)
        && av != r.api_version()
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            r.api_version()
        )));
    }
    if let Some(k) = obj.get("kind").and_then(Value::as_str)
        && k != r.kind()
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            r.kind()
        )));
    }
    Ok(())
}

pub(super) fn set_type_meta(r: Resource, obj: &mut Value) {
    if let Value::Object(m) = obj {
        m.insert("apiVersion".into(), Value::from(r.api_version()));
        m.insert("kind".into(), Value::from(r.kind()));
    }
}

pub(super) fn check_body(r: Resource, ns: &str, obj: &Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(format!(
            "the body of the request was not a JSON object for kind {}",
            r.kind()
        )));
    }
    if !obj["metadata"].is_null() && !obj["metadata"].is_object() {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    check_type_meta(r, obj)?;
    let body_ns = meta_str(obj, "namespace");
    if r.namespaced() && !body_ns.is_empty() && body_ns != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// The status a new object starts with; `given` is the status in the request body.
pub(super) fn status_on_create(r: Resource, given: Option<Value>) -> Option<Value> {
    use serde_json::json;
    match r {
        Resource::Pods => Some(json!({"phase": "Pending"})),
        Resource::ReplicaSets => Some(json!({"replicas": 0})),
        Resource::StatefulSets => Some(json!({"replicas": 0, "availableReplicas": 0})),
        Resource::DaemonSets => Some(json!({
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        })),
        Resource::Jobs => Some(json!({})),
        Resource::PersistentVolumeClaims => Some(json!({"phase": "Pending"})),
        Resource::Namespaces => Some(json!({"phase": "Active"})),
        // A kubelet registers its Node with a status; kinds without a status keep the body.
        Resource::Nodes
        | Resource::Events
        | Resource::ControllerRevisions
        | Resource::Leases
        | Resource::ServiceAccounts
        | Resource::ClusterRoles
        | Resource::ClusterRoleBindings
        | Resource::Roles
        | Resource::RoleBindings => given,
        // The CRD's status is set when it is admitted.
        Resource::CustomResourceDefinitions => None,
        // With the status subresource a custom object starts without a status, as upstream.
        Resource::Custom(_) if r.has_status() => None,
        Resource::Custom(_) => given,
    }
}

pub(super) fn take_status(obj: &mut Value) -> Option<Value> {
    obj.as_object_mut().and_then(|m| m.remove("status"))
}

pub(super) fn put_status(obj: &mut Value, status: Option<Value>) {
    if let (Value::Object(m), Some(s)) = (obj, status) {
        m.insert("status".into(), s);
    }
}

/// Keeps the server-owned metadata of `stored` in `new`; bumps generation when spec changed.
pub(super) fn carry_metadata(new: &mut Value, stored: &Value, bump: bool) {
    let spec_changed = bump && new.get("spec") != stored.get("spec");
    let old_meta = &stored["metadata"];
    let generation = old_meta["generation"].as_i64().unwrap_or(1) + i64::from(spec_changed);
    let meta = meta_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "name",
        "namespace",
    ] {
        match old_meta.get(field) {
            Some(v) if !v.is_null() => {
                meta.insert(field.to_string(), v.clone());
            }
            _ => {
                meta.remove(field);
            }
        }
    }
    meta.insert("generation".into(), Value::from(generation));
}

pub(super) fn set_rv(obj: &mut Value, rv: u64) {
    meta_mut(obj).insert("resourceVersion".into(), Value::from(rv.to_string()));
}
