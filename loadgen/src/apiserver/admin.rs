//! The loopback admin endpoint (its own listener): read and change faults at run time, read the oracle.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::apiserver::status::ApiError;
use crate::faults::Faults;
use crate::resource::Resource;
use crate::store::Store;

/// What the admin endpoint can reach.
#[derive(Debug, Clone)]
pub struct AdminState {
    /// Fault settings.
    pub faults: Arc<Faults>,
    /// The store (for the oracle).
    pub store: Arc<Store>,
    /// The invariant oracle observing it.
    pub oracle: crate::oracle::SharedOracle,
    /// Node Lease renewal of the kubelet emulation.
    pub leases: Arc<crate::kubelet::nodes::LeaseControl>,
}

/// A fault setting that names the resource it applies to.
trait Targeted: serde::de::DeserializeOwned {
    /// The resource plural in the body.
    fn resource(&self) -> &str;
}

macro_rules! targeted {
    ($($ty:ty),*) => {$(impl Targeted for $ty { fn resource(&self) -> &str { &self.resource } })*};
}

#[derive(Debug, Deserialize)]
struct Millis {
    resource: String,
    millis: u64,
}

#[derive(Debug, Deserialize)]
struct Count {
    resource: String,
    count: u64,
}

#[derive(Debug, Deserialize)]
struct Stall {
    resource: String,
    stalled: bool,
}

#[derive(Debug, Deserialize)]
struct Events {
    resource: String,
    events: u64,
}

targeted!(Millis, Count, Stall, Events, crate::faults::ObjectDelay);

fn bad(message: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": message}))).into_response()
}

/// Decodes a JSON request body, or says which shape was `expected`.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], expected: &str) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("expected {expected}: {e}"))
}

/// Decodes a per-resource fault setting, applies it, logs what changed with the revision, and
/// answers with the faults now in force (400 for a malformed body or an unknown resource).
fn set_fault<T: Targeted>(
    s: &AdminState,
    body: &[u8],
    expected: &str,
    apply: impl FnOnce(&Faults, Resource, T) -> String,
) -> Response {
    let req: T = match parse(body, expected) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    let Some(resource) = s.store.resource_named(req.resource()) else {
        return bad(format!("unknown resource {:?}", req.resource()));
    };
    let what = apply(&s.faults, resource, req);
    log_fault(s, &what);
    Json(s.faults.to_json()).into_response()
}

async fn get_faults(State(s): State<AdminState>) -> Json<serde_json::Value> {
    Json(s.faults.to_json())
}

async fn put_watch_delay(State(s): State<AdminState>, body: Bytes) -> Response {
    set_fault(
        &s,
        &body,
        r#"{"resource":"pods","millis":N}"#,
        |f, r, req: Millis| {
            f.set_watch_delay(r, Duration::from_millis(req.millis));
            format!("watch delay {r} {} ms", req.millis)
        },
    )
}

async fn post_drop_watches(State(s): State<AdminState>) -> Json<serde_json::Value> {
    s.faults.drop_watches();
    log_fault(&s, "watches dropped");
    Json(s.faults.to_json())
}

async fn put_expire_watches(State(s): State<AdminState>, body: Bytes) -> Response {
    set_fault(
        &s,
        &body,
        r#"{"resource":"pods","count":N}"#,
        |f, r, req: Count| {
            f.expire_next_watches(r, req.count);
            format!("next {} {r} watches get 410", req.count)
        },
    )
}

async fn put_watch_stall(State(s): State<AdminState>, body: Bytes) -> Response {
    set_fault(
        &s,
        &body,
        r#"{"resource":"pods","stalled":true}"#,
        |f, r, req: Stall| {
            f.set_watch_stall(r, req.stalled);
            format!("watch stall {r} {}", req.stalled)
        },
    )
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestFaultSettings {
    #[serde(default)]
    errors: Vec<crate::faults::request_faults::ErrorRule>,
    #[serde(default)]
    latency: Vec<crate::faults::request_faults::LatencyRule>,
    #[serde(default)]
    lose_write_responses: f64,
}

/// Replaces the request faults (`DELETE` clears them).
async fn put_request_faults(State(s): State<AdminState>, body: Bytes) -> Response {
    let expected = r#"{"errors":[..],"latency":[..],"loseWriteResponses":F}"#;
    let req: RequestFaultSettings = match parse(&body, expected) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    let requests = s.faults.requests();
    requests.clear();
    req.errors.into_iter().for_each(|r| requests.add_error(r));
    req.latency
        .into_iter()
        .for_each(|r| requests.add_latency(r));
    requests.lose_write_responses(req.lose_write_responses);
    log_fault(&s, &format!("request faults set: {}", requests.to_json()));
    Json(s.faults.to_json()).into_response()
}

async fn delete_request_faults(State(s): State<AdminState>) -> Json<serde_json::Value> {
    s.faults.requests().clear();
    log_fault(&s, "request faults cleared");
    Json(s.faults.to_json())
}

async fn put_lagging_replica(State(s): State<AdminState>, body: Bytes) -> Response {
    set_fault(
        &s,
        &body,
        r#"{"resource":"pods","millis":N}"#,
        |f, r, req: Millis| {
            f.set_lagging_replica(r, Duration::from_millis(req.millis));
            format!("lagging replica {r} {} ms", req.millis)
        },
    )
}

async fn put_drop_after(State(s): State<AdminState>, body: Bytes) -> Response {
    set_fault(
        &s,
        &body,
        r#"{"resource":"pods","events":N}"#,
        |f, r, req: Events| {
            f.set_drop_watches_after(r, req.events);
            format!("{r} watches dropped after {} events", req.events)
        },
    )
}

async fn put_object_delay(State(s): State<AdminState>, body: Bytes) -> Response {
    let expected = r#"{"resource":"pods","label":K,"value":V,"millis":N}"#;
    set_fault(
        &s,
        &body,
        expected,
        |f, r, req: crate::faults::ObjectDelay| {
            let what = format!(
                "watch delay {r} {}={} {} ms",
                req.label, req.value, req.millis
            );
            f.set_object_watch_delay(req);
            what
        },
    )
}

async fn put_jitter(State(s): State<AdminState>, body: Bytes) -> Response {
    set_fault(
        &s,
        &body,
        r#"{"resource":"pods","millis":N}"#,
        |f, r, req: Millis| {
            f.set_watch_jitter(r, Duration::from_millis(req.millis));
            format!("watch jitter {r} up to {} ms", req.millis)
        },
    )
}

#[derive(serde::Deserialize)]
struct LeaseRenewal {
    nodes: Vec<String>,
    renew: bool,
}

async fn put_lease_renewal(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: LeaseRenewal = match parse(&body, r#"{"nodes":["node-0"],"renew":false}"#) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    for node in &req.nodes {
        if req.renew {
            s.leases.resume(node);
        } else {
            s.leases.stop(node);
        }
    }
    log_fault(
        &s,
        &format!(
            "node Lease renewal {} for {:?}",
            if req.renew { "resumed" } else { "stopped" },
            req.nodes
        ),
    );
    Json(s.faults.to_json()).into_response()
}

/// Every fault change is logged with the revision it took effect at.
fn log_fault(s: &AdminState, what: &str) {
    tracing::info!(
        revision = s.store.current_revision(),
        fault = what,
        "fault changed"
    );
}

async fn get_violations(State(s): State<AdminState>) -> Json<serde_json::Value> {
    Json(json!({
        "revision": s.store.current_revision(),
        "writes": s.oracle.write_count(),
        "violations": s.oracle.violations(),
    }))
}

/// The admin router: `GET /faults`, `PUT /faults/watch-delay`, `GET /oracle`, `GET /healthz`.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/faults", get(get_faults))
        .route("/faults/watch-delay", put(put_watch_delay))
        .route("/faults/drop-watches", post(post_drop_watches))
        .route("/faults/watch-stall", put(put_watch_stall))
        .route("/faults/lagging-replica", put(put_lagging_replica))
        .route("/faults/object-watch-delay", put(put_object_delay))
        .route("/faults/watch-jitter", put(put_jitter))
        .route("/faults/lease-renewal", put(put_lease_renewal))
        .route("/faults/drop-watches-after", put(put_drop_after))
        .route(
            "/faults/requests",
            put(put_request_faults).delete(delete_request_faults),
        )
        .route("/faults/expire-watches", put(put_expire_watches))
        .route("/oracle", get(get_violations))
        .route("/raw/{plural}/{namespace}/{name}", put(put_raw))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}

/// `PUT /raw/{plural}/{namespace}/{name}`: [`store_raw`] over the admin listener; answers with
/// the stored object.
pub async fn put_raw(
    State(s): State<AdminState>,
    Path((plural, namespace, name)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    let Some(r) = s.store.resource_named(&plural) else {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": format!("unknown resource {plural:?}")})),
        )
            .into_response();
    };
    let ns = if namespace == "-" {
        ""
    } else {
        namespace.as_str()
    };
    let result = serde_json::from_slice::<Value>(&body)
        .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))
        .and_then(|v| crate::apiserver::raw::store_raw(&s.store, r, ns, &name, v));
    match result {
        Ok(stored) => {
            tracing::warn!(resource = %plural, namespace = ns, name, rv = stored.rv, "raw object stored without validation (hostile-server simulation)");
            (StatusCode::OK, Json(stored.value.clone())).into_response()
        }
        Err(e) => crate::apiserver::response::error_response(&e),
    }
}
