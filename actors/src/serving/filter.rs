//! The middleware of the secure port: always-allowed paths pass; otherwise authenticate
//! (client certificate, then bearer token) or 401, authorize `get` on the path or 403, both
//! answered with upstream's Status bodies.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;
use serde_json::json;
use tidemark_tls::{PeerCertificates, client_identity};

use super::delegated::{Caller, DelegatedAuth, Verdict};

pub(super) struct Guard {
    pub(super) auth: Arc<DelegatedAuth>,
    pub(super) always_allow: Vec<String>,
    pub(super) client_certificates: bool,
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// `/healthz` allows `/healthz`; `/healthz/*` allows everything under it (upstream's rule).
fn always_allowed(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => p == path,
    })
}

pub(super) async fn authenticate_and_authorize(
    State(guard): State<Arc<Guard>>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    if always_allowed(&guard.always_allow, &path) {
        return next.run(req).await;
    }
    let from_certificate = if guard.client_certificates {
        req.extensions()
            .get::<PeerCertificates>()
            .and_then(|PeerCertificates(chain)| chain.first().cloned())
            .and_then(|leaf| client_identity(&leaf).ok())
            .map(|id| Caller {
                user: id.user,
                uid: String::new(),
                groups: id.groups,
            })
    } else {
        None
    };
    let caller = match from_certificate {
        Some(c) => c,
        None => {
            let token = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim)
                .filter(|t| !t.is_empty());
            let Some(token) = token else {
                return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
            };
            match guard.auth.authenticate_token(token).await {
                Ok(Verdict::Yes(c)) => c,
                Ok(Verdict::No(_)) => {
                    return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot authenticate a scrape");
                    return status(
                        StatusCode::UNAUTHORIZED,
                        "Unauthorized",
                        "Unauthorized: the token could not be reviewed",
                    );
                }
            }
        }
    };
    match guard.auth.authorize_path(&caller, "get", &path).await {
        Ok(Verdict::Yes(_)) => next.run(req).await,
        Ok(Verdict::No(reason)) => {
            let mut message = format!(
                "forbidden: User {:?} cannot get path {:?}",
                caller.user, path
            );
            if !reason.is_empty() {
                message.push_str(": ");
                message.push_str(&reason);
            }
            status(StatusCode::FORBIDDEN, "Forbidden", &message)
        }
        Err(e) => {
            tracing::warn!(error = %e, user = %caller.user, "cannot authorize a scrape");
            status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                &format!(
                    "forbidden: User {:?} cannot get path {:?}: the access review failed",
                    caller.user, path
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_allowed_paths_match_exactly_or_by_a_trailing_star() {
        let p = vec!["/healthz".to_string(), "/readyz/*".to_string()];
        assert!(always_allowed(&p, "/healthz"));
        assert!(!always_allowed(&p, "/healthz/ping"));
        assert!(always_allowed(&p, "/readyz/informers"));
        assert!(!always_allowed(&p, "/metrics"));
    }
}
