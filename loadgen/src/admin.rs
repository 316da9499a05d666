//! The loopback admin endpoint (its own listener): read and change faults at run time, read the oracle.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde::Deserialize;
use serde_json::json;

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
    /// Node Lease renewal of the kubelet emulation.
    pub leases: Arc<crate::nodes::LeaseControl>,
}

#[derive(Debug, Deserialize)]
struct WatchDelay {
    resource: String,
    millis: u64,
}

fn bad(message: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": message}))).into_response()
}

/// Decodes a JSON request body, or says which shape was `expected`.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], expected: &str) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("expected {expected}: {e}"))
}

/// The resource with plural `name`.
fn resource_named(name: &str) -> Result<Resource, String> {
    Resource::from_plural(name).ok_or_else(|| format!("unknown resource {name:?}"))
}

async fn get_faults(State(s): State<AdminState>) -> Json<serde_json::Value> {
    Json(s.faults.to_json())
}

async fn put_watch_delay(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: WatchDelay = match parse(&body, "{{\"resource\":\"pods\",\"millis\":N}}") {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    let resource = match resource_named(&req.resource) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    s.faults
        .set_watch_delay(resource, Duration::from_millis(req.millis));
    log_fault(&s, &format!("watch delay {resource} {} ms", req.millis));
    Json(s.faults.to_json()).into_response()
}

#[derive(serde::Deserialize)]
struct ExpireWatches {
    resource: String,
    count: u64,
}

async fn post_drop_watches(State(s): State<AdminState>) -> Json<serde_json::Value> {
    s.faults.drop_watches();
    log_fault(&s, "watches dropped");
    Json(s.faults.to_json())
}

async fn put_expire_watches(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: ExpireWatches = match parse(&body, "{{\"resource\":\"pods\",\"count\":N}}") {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    let resource = match resource_named(&req.resource) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    s.faults.expire_next_watches(resource, req.count);
    log_fault(
        &s,
        &format!("next {} {resource} watches get 410", req.count),
    );
    Json(s.faults.to_json()).into_response()
}

#[derive(serde::Deserialize)]
struct WatchStall {
    resource: String,
    stalled: bool,
}

async fn put_watch_stall(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: WatchStall = match parse(&body, "{{\"resource\":\"pods\",\"stalled\":true}}") {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    let resource = match resource_named(&req.resource) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    s.faults.set_watch_stall(resource, req.stalled);
    log_fault(&s, &format!("watch stall {resource} {}", req.stalled));
    Json(s.faults.to_json()).into_response()
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestFaultSettings {
    #[serde(default)]
    errors: Vec<crate::request_faults::ErrorRule>,
    #[serde(default)]
    latency: Vec<crate::request_faults::LatencyRule>,
    #[serde(default)]
    lose_write_responses: f64,
}

/// Replaces the request faults (`DELETE` clears them).
async fn put_request_faults(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: RequestFaultSettings = match parse(
        &body,
        "{{\"errors\":[..],\"latency\":[..],\"loseWriteResponses\":F}}",
    ) {
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

#[derive(serde::Deserialize)]
struct LaggingReplica {
    resource: String,
    millis: u64,
}

async fn put_lagging_replica(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: LaggingReplica = match parse(&body, "{{\"resource\":\"pods\",\"millis\":N}}") {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    let resource = match resource_named(&req.resource) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    s.faults
        .set_lagging_replica(resource, Duration::from_millis(req.millis));
    log_fault(&s, &format!("lagging replica {resource} {} ms", req.millis));
    Json(s.faults.to_json()).into_response()
}

#[derive(serde::Deserialize)]
struct DropAfter {
    resource: String,
    events: u64,
}

async fn put_drop_after(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: DropAfter = match parse(&body, "{{\"resource\":\"pods\",\"events\":N}}") {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    let resource = match resource_named(&req.resource) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    s.faults.set_drop_watches_after(resource, req.events);
    log_fault(
        &s,
        &format!("{resource} watches dropped after {} events", req.events),
    );
    Json(s.faults.to_json()).into_response()
}

async fn put_object_delay(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: crate::faults::ObjectDelay = match parse(
        &body,
        "{{\"resource\":\"pods\",\"label\":K,\"value\":V,\"millis\":N}}",
    ) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    if let Err(message) = resource_named(&req.resource) {
        return bad(message);
    }
    log_fault(
        &s,
        &format!(
            "watch delay {} {}={} {} ms",
            req.resource, req.label, req.value, req.millis
        ),
    );
    s.faults.set_object_watch_delay(req);
    Json(s.faults.to_json()).into_response()
}

async fn put_jitter(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: WatchDelay = match parse(&body, "{{\"resource\":\"pods\",\"millis\":N}}") {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    let resource = match resource_named(&req.resource) {
        Ok(r) => r,
        Err(message) => return bad(message),
    };
    s.faults
        .set_watch_jitter(resource, Duration::from_millis(req.millis));
    log_fault(
        &s,
        &format!("watch jitter {resource} up to {} ms", req.millis),
    );
    Json(s.faults.to_json()).into_response()
}

#[derive(serde::Deserialize)]
struct LeaseRenewal {
    nodes: Vec<String>,
    renew: bool,
}

async fn put_lease_renewal(State(s): State<AdminState>, body: Bytes) -> Response {
    let req: LeaseRenewal = match parse(&body, "{{\"nodes\":[\"node-0\"],\"renew\":false}}") {
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
        "writes": s.store.write_count(),
        "violations": s.store.violations(),
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
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}
