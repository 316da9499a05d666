//! The HTTP handler of the API listener: decodes requests, calls the store, encodes responses.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use serde_json::Value;

use crate::admission::typecheck;
use crate::apiserver::discovery;
use crate::apiserver::openapi;
use crate::apiserver::options::{
    Query, dry_run, field_validation, parse_delete_options, parse_json, warn,
};
use crate::apiserver::protobuf_responses::{self, ProtobufPods};
use crate::apiserver::response::{error_response, json_response, value_response};
use crate::apiserver::routes::{self, Route};
use crate::apiserver::status::ApiError;
use crate::apiserver::write_ops::{
    PatchTarget, custom_strategic_merge, delete_collection, evict, patch_object, scale_of,
    scale_target,
};
use crate::resource::Resource;
use crate::store::deletion::Deleted;
use crate::store::list::{self, ContinueToken, ListRequest};
use crate::store::patch::{self, PatchKind};
use crate::store::selector::Selectors;
use crate::store::watch_stream::{self as watch, WatchContext, WatchRequest, WatchStart};
use crate::store::{Store, Subresource, WriteOptions};

/// Request bodies larger than this are refused with 413 (as upstream's 3 MiB limit).
pub const MAX_BODY: usize = 3 * 1024 * 1024;
/// Watches without `timeoutSeconds` close after this.
pub const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// State shared by every request.
#[derive(Debug, Clone)]
pub struct App {
    /// The store.
    pub store: Arc<Store>,
    /// Context for watch streams.
    pub watch: WatchContext,
    /// Authentication, RBAC and the request log.
    pub door: Arc<crate::apiserver::door::Door>,
    /// Whether Pods are still answered in protobuf to clients that ask for it.
    pub protobuf_pods: ProtobufPods,
}

fn user_agent(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

pub(crate) async fn read_body(body: Body, headers: &HeaderMap) -> Result<Bytes, ApiError> {
    let too_large = || ApiError::RequestEntityTooLarge {
        message: format!("Request entity too large: limit is {MAX_BODY}"),
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY) {
        return Err(too_large());
    }
    axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| too_large())
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
}

fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    match content_type(headers).as_deref() {
        None | Some("" | "application/json" | "*/*") => Ok(()),
        Some(other) => Err(ApiError::UnsupportedMediaType {
            message: format!(
                "the body of the request was in an unknown format - accepted media types include: application/json (got {other})"
            ),
        }),
    }
}

/// The single handler for every path of the API listener.
pub async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    match dispatch(&app, req).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    }
}

fn not_found_path(path: &str) -> ApiError {
    ApiError::NotFound {
        kind: String::new(),
        name: String::new(),
        message: format!("the server could not find the requested resource ({path})"),
    }
}

fn method_not_allowed(method: &Method) -> ApiError {
    ApiError::MethodNotAllowed {
        message: format!(
            "the server does not allow this method on the requested resource ({method})"
        ),
    }
}

async fn dispatch(app: &App, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let lookup = |group: &str, plural: &str| app.store.resource_for(group, plural);
    let route = routes::parse_with(&path, &lookup).ok_or_else(|| not_found_path(&path))?;
    let customs = app.store.custom_resources();
    let method = parts.method.clone();
    let ua = user_agent(&parts.headers);
    let ua = ua.as_deref();
    let is_get = method == Method::GET || method == Method::HEAD;
    match route {
        Route::Root => Ok(value_response(
            StatusCode::OK,
            &discovery::root_paths(&customs),
        )),
        Route::Version if is_get => Ok(value_response(StatusCode::OK, &discovery::version())),
        Route::Health if is_get => {
            let mut r = Response::new(Body::from("ok"));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            Ok(r)
        }
        Route::OpenApiV2 if is_get => {
            let accept = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let json_ok = accept.is_empty() || accept.contains("json") || accept.contains("*/*");
            if !json_ok {
                // client-go asks for protobuf only; 406 sends it to its fallback.
                let mut r = Response::new(Body::from("only application/json is served"));
                *r.status_mut() = StatusCode::NOT_ACCEPTABLE;
                return Ok(r);
            }
            Ok(value_response(StatusCode::OK, &openapi::v2(&customs)))
        }
        Route::OpenApiV3Index if is_get => {
            Ok(value_response(StatusCode::OK, &openapi::v3_index(&customs)))
        }
        Route::OpenApiV3(gv) if is_get => openapi::v3_group_version(&gv, &customs)
            .map(|v| value_response(StatusCode::OK, &v))
            .ok_or_else(|| not_found_path(&path)),
        Route::CoreVersions if is_get => {
            Ok(value_response(StatusCode::OK, &discovery::core_versions()))
        }
        Route::Groups if is_get => Ok(value_response(StatusCode::OK, &discovery::groups(&customs))),
        Route::Group(g) if is_get => discovery::group(&g, &customs)
            .map(|v| value_response(StatusCode::OK, &v))
            .ok_or_else(|| not_found_path(&path)),
        Route::Resources { group, version } if is_get => {
            discovery::resources(&group, &version, &customs)
                .map(|v| value_response(StatusCode::OK, &v))
                .ok_or_else(|| not_found_path(&path))
        }
        Route::Collection {
            resource,
            namespace,
        } => {
            let query = Query::parse(&parts.uri)?;
            match (method, &namespace) {
                (Method::GET, _) => {
                    let accept = parts
                        .headers
                        .get(header::ACCEPT)
                        .and_then(|v| v.to_str().ok());
                    let protobuf = resource == Resource::Pods && app.protobuf_pods.serves(accept);
                    match list_or_watch(app, resource, namespace, &query, ua, protobuf).await {
                        Err(e) if protobuf => {
                            Ok(protobuf_responses::error(e.code(), &e.to_status()))
                        }
                        answer => answer,
                    }
                }
                (Method::POST, ns) if ns.is_some() || !resource.namespaced() => {
                    require_json(&parts.headers)?;
                    let body = parse_json(&read_body(body, &parts.headers).await?)?;
                    let (body, warning) = field_validation(resource, body, &query)?;
                    typecheck::check_body(resource, &body)?;
                    let opts = WriteOptions::request(dry_run(&query)?);
                    let ns = ns.as_deref().unwrap_or("");
                    let stored = app.store.create_with(resource, ns, body, ua, opts)?;
                    Ok(warn(
                        json_response(StatusCode::CREATED, stored.bytes.clone()),
                        warning,
                    ))
                }
                (Method::DELETE, ns) if ns.is_some() || !resource.namespaced() => {
                    let raw = read_body(body, &parts.headers).await?;
                    let opts = parse_delete_options(&raw, &query)?;
                    let selectors = Selectors::parse_for(
                        resource,
                        query.get("labelSelector"),
                        query.get("fieldSelector"),
                    )?;
                    delete_collection(&app.store, resource, ns.as_deref(), &selectors, &opts, ua)
                        .map(|b| json_response(StatusCode::OK, b))
                }
                (m, _) => Err(method_not_allowed(&m)),
            }
        }
        Route::Object {
            resource,
            namespace,
            name,
            status,
        } => {
            let sub = if status {
                Subresource::Status
            } else {
                Subresource::Main
            };
            let query = Query::parse(&parts.uri)?;
            match method {
                Method::GET => app
                    .store
                    .get(resource, &namespace, &name)
                    .map(|s| json_response(StatusCode::OK, s.bytes.clone()))
                    .ok_or_else(|| ApiError::not_found(resource.plural(), &name)),
                Method::PUT => {
                    require_json(&parts.headers)?;
                    let body = parse_json(&read_body(body, &parts.headers).await?)?;
                    let (body, warning) = field_validation(resource, body, &query)?;
                    typecheck::check_body(resource, &body)?;
                    if sub == Subresource::Status {
                        crate::admission::field_rules::check_status(resource, &name, &body)?;
                    }
                    let opts = WriteOptions::request(dry_run(&query)?);
                    let stored = app
                        .store
                        .update_opts(resource, &namespace, &name, body, sub, ua, opts)?;
                    Ok(warn(
                        json_response(StatusCode::OK, stored.bytes.clone()),
                        warning,
                    ))
                }
                Method::PATCH => {
                    let kind = content_type(&parts.headers).unwrap_or_default();
                    let mut patch = patch::parse(&kind, &read_body(body, &parts.headers).await?)?;
                    if resource.is_custom() && patch.kind == PatchKind::Strategic {
                        return Err(custom_strategic_merge());
                    }
                    let mut warning = None;
                    if patch.kind != PatchKind::Json {
                        let body = std::mem::take(&mut patch.body);
                        (patch.body, warning) = field_validation(resource, body, &query)?;
                    }
                    if patch.kind == PatchKind::Apply
                        && query.get("fieldManager").unwrap_or("").is_empty()
                    {
                        return Err(ApiError::invalid(
                            "PatchOptions.meta.k8s.io",
                            "",
                            "fieldManager: Required value: is required for apply patch",
                        ));
                    }
                    let opts = WriteOptions::request(dry_run(&query)?);
                    let target = PatchTarget {
                        store: &app.store,
                        resource,
                        namespace: &namespace,
                        name: &name,
                        sub,
                    };
                    patch_object(&target, &patch, ua, opts)
                        .map(|(code, b)| warn(json_response(code, b), warning))
                }
                Method::DELETE if !status => {
                    let raw = read_body(body, &parts.headers).await?;
                    let opts = parse_delete_options(&raw, &query)?;
                    match app
                        .store
                        .delete_opts(resource, &namespace, &name, &opts, ua)?
                    {
                        Deleted::Gone(s) => Ok(json_response(StatusCode::OK, s.bytes.clone())),
                        Deleted::Pending(s) => {
                            Ok(json_response(StatusCode::ACCEPTED, s.bytes.clone()))
                        }
                    }
                }
                m => Err(method_not_allowed(&m)),
            }
        }
        Route::Review { plural } if method == Method::POST => {
            require_json(&parts.headers)?;
            let body = parse_json(&read_body(body, &parts.headers).await?)?;
            let caller = parts.extensions.get::<crate::rbac::UserInfo>();
            let answer = crate::apiserver::door::review(&app.door, plural, caller, &body)?;
            Ok(value_response(StatusCode::CREATED, &answer))
        }
        Route::ServiceAccountToken { namespace, name } if method == Method::POST => {
            require_json(&parts.headers)?;
            let body = parse_json(&read_body(body, &parts.headers).await?)?;
            let answer =
                crate::apiserver::door::token_request(&app.door, &namespace, &name, &body)?;
            Ok(value_response(StatusCode::CREATED, &answer))
        }
        Route::Eviction { namespace, name } if method == Method::POST => {
            require_json(&parts.headers)?;
            let body = parse_json(&read_body(body, &parts.headers).await?)?;
            evict(&app.store, &namespace, &name, &body, ua)
        }
        Route::Scale {
            resource,
            namespace,
            name,
        } => {
            let store = &app.store;
            let scale = || {
                store
                    .get(resource, &namespace, &name)
                    .map(|s| scale_of(&s.value))
                    .ok_or_else(|| ApiError::not_found(resource.plural(), &name))
            };
            let body = match method {
                Method::GET => return Ok(value_response(StatusCode::OK, &scale()?)),
                Method::PUT => {
                    require_json(&parts.headers)?;
                    parse_json(&read_body(body, &parts.headers).await?)?
                }
                Method::PATCH => {
                    let kind = content_type(&parts.headers).unwrap_or_default();
                    let patch = patch::parse(&kind, &read_body(body, &parts.headers).await?)?;
                    let mut current = scale()?;
                    if let Some(m) = current["metadata"].as_object_mut() {
                        m.remove("resourceVersion");
                    }
                    patch.apply_to(&mut current)?;
                    current
                }
                m => return Err(method_not_allowed(&m)),
            };
            let replicas = body["spec"]["replicas"].as_i64().ok_or_else(|| {
                ApiError::invalid("Scale", &name, "spec.replicas: Required value")
            })?;
            if replicas < 0 {
                return Err(ApiError::invalid(
                    "Scale",
                    &name,
                    "spec.replicas: Invalid value: must be greater than or equal to 0",
                ));
            }
            let mut rs = scale_target(store, resource, &namespace, &name)?;
            rs["spec"]["replicas"] = Value::from(replicas);
            let rv = body["metadata"]["resourceVersion"].as_str().unwrap_or("");
            rs["metadata"]["resourceVersion"] = Value::from(rv);
            let stored = store.update(resource, &namespace, &name, rs, Subresource::Main, ua)?;
            Ok(value_response(StatusCode::OK, &scale_of(&stored.value)))
        }
        _ => Err(method_not_allowed(&method)),
    }
}

async fn list_or_watch(
    app: &App,
    resource: Resource,
    namespace: Option<String>,
    q: &Query,
    user_agent: Option<&str>,
    protobuf: bool,
) -> Result<Response, ApiError> {
    let mut selectors =
        Selectors::parse_for(resource, q.get("labelSelector"), q.get("fieldSelector"))?;
    if app.watch.sharded_list_and_watch {
        selectors = selectors.with_shard(q.get("shardSelector"))?;
    }
    let rv = q.get("resourceVersion");
    if q.flag("watch") {
        let parsed = match rv {
            None | Some("" | "0") => None,
            Some(s) => Some(s.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "resourceVersion: Invalid value: \"{s}\": must be an integer"
                ))
            })?),
        };
        let send_initial = q.flag("sendInitialEvents");
        let start = match parsed {
            // A watch-list (`sendInitialEvents=true`) sends the state not older than the
            // given version: wait for it, then start from the current state.
            Some(want) if send_initial => {
                if !app
                    .store
                    .wait_for_revision(want, list::FUTURE_RV_WAIT)
                    .await
                {
                    return Err(ApiError::Timeout {
                        message: format!(
                            "Too large resource version: {want}, current: {}",
                            app.store.current_revision()
                        ),
                    });
                }
                WatchStart::Current
            }
            Some(after) => WatchStart::After(after),
            None => WatchStart::Current,
        };
        let timeout = watch::timeout(q.get("timeoutSeconds"), DEFAULT_WATCH_TIMEOUT)?;
        if let WatchStart::After(r) = start {
            let compacted = app.store.compacted_revision();
            if r < compacted || app.watch.faults.take_forced_expiry(resource) {
                let body = watch::expired_body(r, compacted);
                return Ok(if protobuf {
                    app.protobuf_pods.watch(body)
                } else {
                    json_response(StatusCode::OK, body)
                });
            }
        }
        let req = WatchRequest {
            resource,
            namespace,
            selectors,
            start,
            bookmarks: q.flag("allowWatchBookmarks"),
            initial_events_end: send_initial,
            timeout,
            user_agent: user_agent.unwrap_or_default().to_string(),
        };
        let body = watch::watch_body(app.watch.clone(), req);
        return Ok(if protobuf {
            app.protobuf_pods.watch(body)
        } else {
            json_response(StatusCode::OK, body)
        });
    }
    let continue_token = match q.get("continue") {
        None | Some("") => None,
        Some(c) => {
            if rv.is_some_and(|v| !v.is_empty()) {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            Some(ContinueToken::decode(c)?)
        }
    };
    let limit = match q.get("limit") {
        None | Some("") => 0,
        Some(s) => s
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request("limit must be a non-negative integer"))?,
    };
    let req = ListRequest {
        resource,
        namespace,
        selectors,
        limit,
        continue_token,
        read_at: list::read_at(rv, q.get("resourceVersionMatch"))?,
        lag: app.watch.faults.lagging_replica(resource),
    };
    let body = list::list(&app.store, &req).await?;
    if protobuf && let Some(answer) = app.protobuf_pods.list(&body) {
        return Ok(answer);
    }
    Ok(json_response(StatusCode::OK, body))
}
