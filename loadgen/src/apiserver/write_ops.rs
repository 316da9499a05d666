//! The writes that are more than one store call: PATCH (with retry on conflict, and apply's
//! create), eviction, deletecollection, and the `scale` subresource's view.

use axum::response::Response;
use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;

use crate::admission::typecheck;
use crate::apiserver::options::{Query, parse_delete_options};
use crate::apiserver::response::value_response;
use crate::apiserver::status::ApiError;
use crate::resource::Resource;
use crate::store::deletion::DeleteOptions;
use crate::store::patch::{Patch, PatchKind};
use crate::store::selector::Selectors;
use crate::store::{Store, Subresource, WriteOptions};

/// Custom resources have no strategic merge patch (no patch strategies in their schema):
/// `415`, as apiextensions-apiserver answers.
pub(super) fn custom_strategic_merge() -> ApiError {
    ApiError::UnsupportedMediaType {
        message: "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".into(),
    }
}

pub(super) fn scale_target(
    store: &Store,
    r: Resource,
    ns: &str,
    name: &str,
) -> Result<Value, ApiError> {
    let mut rs = store
        .get(r, ns, name)
        .map(|s| s.value.clone())
        .ok_or_else(|| ApiError::not_found(r.plural(), name))?;
    if !rs["spec"].is_object() {
        rs["spec"] = Value::Object(Default::default());
    }
    Ok(rs)
}

/// The autoscaling/v1 `Scale` view of a ReplicaSet.
pub fn scale_of(rs: &Value) -> Value {
    let selector = rs["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let meta = &rs["metadata"];
    serde_json::json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": rs["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {"replicas": rs["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector},
    })
}

/// Evicts a Pod (policy/v1 `Eviction`): no PodDisruptionBudgets are served, so an eviction
/// is always allowed and deletes the Pod as a DELETE with the Eviction's `deleteOptions`.
pub(super) fn evict(
    store: &Store,
    ns: &str,
    name: &str,
    eviction: &Value,
    ua: Option<&str>,
) -> Result<Response, ApiError> {
    let body_name = eviction["metadata"]["name"].as_str().unwrap_or(name);
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in Eviction object: {name} != {body_name}"
        )));
    }
    let raw = serde_json::to_vec(&eviction["deleteOptions"]).unwrap_or_default();
    let raw: &[u8] = if eviction["deleteOptions"].is_object() {
        &raw
    } else {
        b""
    };
    let opts = parse_delete_options(raw, &Query(Vec::new()))?;
    store.delete_opts(Resource::Pods, ns, name, &opts, ua)?;
    let status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201,
    });
    Ok(value_response(StatusCode::CREATED, &status))
}

/// `deletecollection`: deletes every object of the collection the selectors match, each as
/// a DELETE with `opts` would, and answers with the list of them (gone or terminating).
pub(super) fn delete_collection(
    store: &Store,
    r: Resource,
    ns: Option<&str>,
    selectors: &Selectors,
    opts: &DeleteOptions,
    ua: Option<&str>,
) -> Result<Bytes, ApiError> {
    let (current, _) = store.all(r, ns);
    let mut items = Vec::new();
    for obj in current.iter().filter(|o| selectors.matches(&o.value)) {
        let name = crate::meta::meta_str(&obj.value, "name");
        let obj_ns = crate::meta::meta_str(&obj.value, "namespace");
        match store.delete_opts(r, obj_ns, name, opts, ua) {
            Ok(d) => items.push(d.stored().value.clone()),
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let list = serde_json::json!({
        "kind": r.list_kind(),
        "apiVersion": r.api_version(),
        "metadata": {"resourceVersion": store.current_revision().to_string()},
        "items": items,
    });
    Ok(Bytes::from(serde_json::to_vec(&list).unwrap_or_default()))
}

/// The object a PATCH addresses.
pub(super) struct PatchTarget<'a> {
    pub(super) store: &'a Store,
    pub(super) resource: Resource,
    pub(super) namespace: &'a str,
    pub(super) name: &'a str,
    pub(super) sub: Subresource,
}

/// Applies `patch` to the current object and updates it, retrying on a conflict unless the
/// patch pinned a resourceVersion. An apply patch of a missing object creates it.
pub(super) fn patch_object(
    t: &PatchTarget<'_>,
    patch: &Patch,
    ua: Option<&str>,
    opts: WriteOptions,
) -> Result<(StatusCode, Bytes), ApiError> {
    let (r, ns, name) = (t.resource, t.namespace, t.name);
    let pinned = patch.pins_resource_version();
    for _ in 0..16 {
        let Some(current) = t.store.get(r, ns, name) else {
            if patch.kind == PatchKind::Apply && t.sub == Subresource::Main {
                let mut obj = patch.body.clone();
                let body_name = obj["metadata"]["name"].as_str().unwrap_or("");
                if !body_name.is_empty() && body_name != name {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({body_name}) does not match the name on the URL ({name})"
                    )));
                }
                crate::meta::meta_mut(&mut obj).insert("name".into(), Value::from(name));
                let stored = t.store.create_with(r, ns, obj, ua, opts)?;
                return Ok((StatusCode::CREATED, stored.bytes.clone()));
            }
            return Err(ApiError::not_found(r.plural(), name));
        };
        let mut obj = current.value.clone();
        patch.apply_to(&mut obj)?;
        typecheck::check_patched(r, &obj)?;
        let causes = crate::admission::validation::validate_patched_uid(&current.value, &obj);
        if !causes.is_empty() {
            return Err(ApiError::invalid_causes(r.kind(), name, causes));
        }
        if t.sub == Subresource::Status {
            crate::admission::field_rules::check_status(r, name, &obj)?;
        }
        match t.store.update_opts(r, ns, name, obj, t.sub, ua, opts) {
            Err(ApiError::Conflict { .. }) if !pinned => continue,
            other => return other.map(|s| (StatusCode::OK, s.bytes.clone())),
        }
    }
    Err(ApiError::conflict_modified(r.plural(), name))
}
