//! JSON responses: a body, a value, and the `Status` of an error.

use axum::body::Body;
use axum::response::Response;
use http::{StatusCode, header};
use serde_json::Value;

use crate::apiserver::status::ApiError;

/// A response with a JSON body.
pub fn json_response(code: StatusCode, body: impl Into<Body>) -> Response {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// A response with `v` encoded as its JSON body.
pub fn value_response(code: StatusCode, v: &Value) -> Response {
    json_response(code, serde_json::to_vec(v).unwrap_or_default())
}

/// The `Status` response for an error.
pub fn error_response(e: &ApiError) -> Response {
    let code = StatusCode::from_u16(e.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    value_response(code, &e.to_status())
}
