//! The simulated server's side of a request: the engine's writes and reads carried out with the
//! same `Store` calls loadgen's HTTP handlers make, answered as the runtime's writer classifies
//! them (actors/src/errors.rs), and objects decoded as the informer decodes them.

use loadgen::oracle::{Arriving, SharedOracle};
use loadgen::store::{Preconditions, RequestId, Store, Subresource, WriteOptions};
use loadgen::{ApiError, DeleteOptions};
use tidemark_engine::{
    Action, DecodeError, Object, Resource, WriteError, WriteErrorKind, WriteResult,
};

/// loadgen's handle for an engine resource: the one the same description names.
pub fn api_resource(resource: Resource) -> loadgen::Resource {
    loadgen::Resource::from_type(resource.ty())
        .unwrap_or_else(|| panic!("the simulation serves only built-in resources, not {resource}"))
}

/// Decodes one stored object into the engine's view of it, as the informer does.
pub fn decode(resource: Resource, bytes: &[u8]) -> Result<Object, DecodeError> {
    Object::decode(resource, bytes).map(|(object, _)| object)
}

/// The write error the runtime's writer reports for an API error (by HTTP code and reason).
fn classify(error: &ApiError) -> WriteError {
    let kind = match error {
        ApiError::AlreadyExists { .. } => WriteErrorKind::AlreadyExists,
        ApiError::Conflict { .. } => WriteErrorKind::Conflict,
        _ => match error.code() {
            404 => WriteErrorKind::NotFound,
            400 | 422 => WriteErrorKind::Invalid,
            429 => WriteErrorKind::Throttled,
            _ => WriteErrorKind::Server,
        },
    };
    WriteError {
        kind,
        message: error.to_string(),
    }
}

/// A Pod create or delete reaching the server: the oracle judges it now. `None` for other
/// writes, and for deletes of Pods that are not live.
pub fn arrive(store: &Store, oracle: &SharedOracle, action: &Action) -> Option<RequestId> {
    match action {
        Action::Create {
            resource: Resource::Pods,
            namespace,
            body,
        } => oracle.arrive(store, namespace, Arriving::Create(body)),
        Action::Delete {
            resource: Resource::Pods,
            key,
            ..
        } => oracle.arrive(store, key.namespace(), Arriving::Delete(key.name())),
        _ => None,
    }
}

/// Carries out `action` for the process whose User-Agent is `user_agent`, as loadgen's handler
/// for its request does, and answers as the writer would.
pub fn perform(store: &Store, action: &Action, user_agent: &str) -> WriteResult {
    let ua = Some(user_agent);
    let opts = WriteOptions::request(false);
    let written = |r: Result<std::sync::Arc<loadgen::store::Stored>, ApiError>| match r {
        Ok(stored) => WriteResult::Written {
            resource_version: stored.rv.to_string(),
        },
        Err(e) => WriteResult::Failed(classify(&e)),
    };
    match action {
        Action::Create {
            resource,
            namespace,
            body,
        } => written(store.create_with(api_resource(*resource), namespace, body.clone(), ua, opts)),
        Action::UpdateStatus {
            resource,
            key,
            body,
        } => written(store.update_opts(
            api_resource(*resource),
            key.namespace(),
            key.name(),
            body.clone(),
            Subresource::Status,
            ua,
            opts,
        )),
        Action::Patch {
            resource,
            key,
            patch,
        } => written(patch_object(
            store,
            api_resource(*resource),
            key,
            patch,
            Merge::Json,
            user_agent,
        )),
        Action::StrategicPatch {
            resource,
            key,
            patch,
        } => written(patch_object(
            store,
            api_resource(*resource),
            key,
            patch,
            Merge::Strategic,
            user_agent,
        )),
        Action::Delete { resource, key, uid } => {
            let delete = DeleteOptions {
                preconditions: Preconditions {
                    uid: Some(uid.to_string()),
                    resource_version: None,
                },
                ..DeleteOptions::default()
            };
            match store.delete_opts(
                api_resource(*resource),
                key.namespace(),
                key.name(),
                &delete,
                ua,
            ) {
                Ok(_) => WriteResult::Deleted,
                Err(e) => WriteResult::Failed(classify(&e)),
            }
        }
    }
}

/// A merge PATCH: read, patch, update, again on a conflict (the handler's loop, without the
/// type checks a simulated manager's own patches never need).
/// How a PATCH body applies, as its content type says.
#[derive(Clone, Copy)]
enum Merge {
    Json,
    Strategic,
}

fn patch_object(
    store: &Store,
    resource: loadgen::Resource,
    key: &tidemark_engine::ObjectKey,
    patch: &serde_json::Value,
    merge: Merge,
    user_agent: &str,
) -> Result<std::sync::Arc<loadgen::store::Stored>, ApiError> {
    let (ns, name) = (key.namespace(), key.name());
    for _ in 0..16 {
        let Some(current) = store.get(resource, ns, name) else {
            return Err(ApiError::not_found(resource.plural(), name));
        };
        let mut object = current.value.clone();
        match merge {
            Merge::Json => loadgen::store::patch::merge_patch(&mut object, patch),
            Merge::Strategic => loadgen::store::patch::strategic_merge(&mut object, patch, ""),
        }
        match store.update_opts(
            resource,
            ns,
            name,
            object,
            Subresource::Main,
            Some(user_agent),
            WriteOptions::request(false),
        ) {
            Err(ApiError::Conflict { .. }) => continue,
            other => return other,
        }
    }
    Err(ApiError::conflict_modified(resource.plural(), name))
}
