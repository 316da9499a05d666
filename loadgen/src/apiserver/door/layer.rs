//! The middleware every API request passes: authenticate (401), authorize with RBAC (403),
//! record the decision in the request log, and hand the user to the handler.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;

use super::Door;
use super::authn::authenticate;
use crate::apiserver::response::value_response;
use crate::apiserver::status::ApiError;
use crate::rbac::{Decision, forbidden_status, request_attributes};

/// The axum middleware of the API listener.
pub async fn layer(State(door): State<Arc<Door>>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let user = match authenticate(&door, &parts) {
        Ok(u) => u,
        Err(why) => {
            tracing::debug!(path = %parts.uri.path(), %why, "unauthenticated request");
            return crate::apiserver::response::error_response(&ApiError::Unauthorized);
        }
    };
    let attrs = request_attributes(&parts.method, parts.uri.path(), parts.uri.query());
    let decision = door.authorize(&user, &attrs);
    let allowed = matches!(decision, Decision::Allow);
    door.log.record(&user, &attrs, allowed);
    if let Decision::Deny { reason } = decision {
        tracing::info!(user = %user.name, ?attrs, "forbidden");
        return value_response(
            StatusCode::FORBIDDEN,
            &forbidden_status(&user, &attrs, &reason),
        );
    }
    parts.extensions.insert(user);
    next.run(Request::from_parts(parts, body)).await
}
