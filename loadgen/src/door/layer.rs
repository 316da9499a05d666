//! The middleware every API request passes: authenticate (401), authorize with RBAC (403),
//! record the decision in the request log, and hand the user to the handler.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use super::Door;
use super::authn::authenticate;
use crate::rbac::{Decision, forbidden_status, request_attributes};

fn status_response(code: StatusCode, status: &Value) -> Response {
    let body = serde_json::to_vec(status).unwrap_or_else(|_| b"{}".to_vec());
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn unauthorized() -> Response {
    status_response(
        StatusCode::UNAUTHORIZED,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }),
    )
}

/// The axum middleware of the API listener.
pub async fn layer(State(door): State<Arc<Door>>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let user = match authenticate(&door, &parts) {
        Ok(u) => u,
        Err(why) => {
            tracing::debug!(path = %parts.uri.path(), %why, "unauthenticated request");
            return unauthorized();
        }
    };
    let attrs = request_attributes(&parts.method, parts.uri.path(), parts.uri.query());
    let decision = door.authorize(&user, &attrs);
    let allowed = matches!(decision, Decision::Allow);
    door.log.record(&user, &attrs, allowed);
    if let Decision::Deny { reason } = decision {
        tracing::info!(user = %user.name, ?attrs, "forbidden");
        return status_response(
            StatusCode::FORBIDDEN,
            &forbidden_status(&user, &attrs, &reason),
        );
    }
    parts.extensions.insert(user);
    next.run(Request::from_parts(parts, body)).await
}
