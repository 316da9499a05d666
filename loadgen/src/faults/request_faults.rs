//! Request faults: `429`/`5xx` with `Retry-After` on a fraction of requests, added latency, and
//! writes whose response is lost (applied, but the client sees a `504`). An axum middleware.
//! Latency stands for the time before a request reaches storage: a request whose `timeout`
//! passes first is answered `504 Timeout` and not applied, as kube-apiserver does.

use crate::apiserver::routes::{Route, parse};
use crate::faults::Faults;
use crate::resource::Resource;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, Method, StatusCode, header};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// Which requests a rule applies to; `None` matches all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Match {
    /// A Kubernetes verb: get, list, watch, create, update, patch, delete.
    #[serde(default)]
    pub verb: Option<String>,
    /// A resource plural (`pods`).
    #[serde(default)]
    pub resource: Option<String>,
}

/// Fail a fraction of the matching requests with `code` and a `Retry-After`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRule {
    /// Which requests.
    #[serde(flatten)]
    pub matching: Match,
    /// Fraction of them, 0..=1.
    pub fraction: f64,
    /// 429, 500 or 503.
    pub code: u16,
    /// The `Retry-After` seconds (429 and 503).
    #[serde(default)]
    pub retry_after_seconds: u64,
}

/// Delay the matching requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRule {
    /// Which requests.
    #[serde(flatten)]
    pub matching: Match,
    /// How long.
    pub millis: u64,
}

#[derive(Debug, Default)]
struct Rules {
    errors: Vec<ErrorRule>,
    latency: Vec<LatencyRule>,
    lose_write_responses: f64,
}

/// The request faults in force, with a seeded random source so runs reproduce.
#[derive(Debug)]
pub struct RequestFaults {
    rules: Mutex<Rules>,
    rng: Mutex<fastrand::Rng>,
}

impl Default for RequestFaults {
    fn default() -> Self {
        Self {
            rules: Mutex::default(),
            rng: Mutex::new(fastrand::Rng::with_seed(1)),
        }
    }
}

impl RequestFaults {
    /// Reseeds the random source.
    pub fn seed(&self, seed: u64) {
        *self.rng.lock() = fastrand::Rng::with_seed(seed);
    }
    /// Adds an error rule.
    pub fn add_error(&self, rule: ErrorRule) {
        self.rules.lock().errors.push(rule);
    }
    /// Adds a latency rule.
    pub fn add_latency(&self, rule: LatencyRule) {
        self.rules.lock().latency.push(rule);
    }
    /// Loses the response of this fraction of writes (the write is applied).
    pub fn lose_write_responses(&self, fraction: f64) {
        self.rules.lock().lose_write_responses = fraction.clamp(0.0, 1.0);
    }
    /// Removes every request fault.
    pub fn clear(&self) {
        *self.rules.lock() = Rules::default();
    }
    /// The rules as JSON (admin endpoint).
    pub fn to_json(&self) -> serde_json::Value {
        let rules = self.rules.lock();
        serde_json::json!({
            "errors": rules.errors,
            "latency": rules.latency,
            "loseWriteResponses": rules.lose_write_responses,
        })
    }

    fn roll(&self, fraction: f64) -> bool {
        fraction > 0.0 && self.rng.lock().f64() < fraction
    }

    fn decide(&self, verb: &str, resource: Option<Resource>) -> Decision {
        let rules = self.rules.lock();
        let hits = |m: &Match| {
            m.verb.as_deref().is_none_or(|v| v == verb)
                && m.resource
                    .as_deref()
                    .is_none_or(|r| resource.is_some_and(|res| res.plural() == r))
        };
        let latency: u64 = rules
            .latency
            .iter()
            .filter(|l| hits(&l.matching))
            .map(|l| l.millis)
            .sum();
        let error = rules
            .errors
            .iter()
            .filter(|e| hits(&e.matching))
            .find(|e| self.roll(e.fraction))
            .cloned();
        let is_write = matches!(verb, "create" | "update" | "patch" | "delete");
        let lose = is_write && self.roll(rules.lose_write_responses);
        Decision {
            latency: Duration::from_millis(latency),
            error,
            lose,
        }
    }
}

struct Decision {
    latency: Duration,
    error: Option<ErrorRule>,
    lose: bool,
}

/// The Kubernetes verb of a request.
pub fn verb_of(method: &Method, route: Option<&Route>, query: &str) -> &'static str {
    let watch = query
        .split('&')
        .any(|kv| kv == "watch=true" || kv == "watch=1");
    match (method, route) {
        (&Method::GET, Some(Route::Collection { .. })) if watch => "watch",
        (&Method::GET, Some(Route::Collection { .. })) => "list",
        (&Method::GET, _) => "get",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, _) => "delete",
        _ => "other",
    }
}

fn resource_of(route: Option<&Route>) -> Option<Resource> {
    match route? {
        Route::Collection { resource, .. }
        | Route::Object { resource, .. }
        | Route::Scale { resource, .. } => Some(*resource),
        _ => None,
    }
}

fn status(code: u16, reason: &str, message: &str, retry_after: u64) -> Response {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
        "details": {"retryAfterSeconds": retry_after},
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if retry_after > 0 {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    }
    response
}

/// The request's `timeout` query parameter (a Go duration such as `4s`, `250ms` or `1m30s`,
/// as kube-apiserver reads it); `None` when absent or unreadable.
pub fn request_timeout(query: &str) -> Option<Duration> {
    let value = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("timeout="))?;
    go_duration(value)
}

/// A Go duration of whole-number parts (`1h2m3s`, `250ms`, `10us`, `5ns`).
fn go_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let number: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let part = match &rest[..unit_len] {
            "h" => Duration::from_secs(number.checked_mul(3600)?),
            "m" => Duration::from_secs(number.checked_mul(60)?),
            "s" => Duration::from_secs(number),
            "ms" => Duration::from_millis(number),
            "us" | "µs" => Duration::from_micros(number),
            "ns" => Duration::from_nanos(number),
            _ => return None,
        };
        total = total.checked_add(part)?;
        rest = &rest[unit_len..];
    }
    Some(total)
}

/// The middleware.
pub async fn layer(State(faults): State<Arc<Faults>>, request: Request, next: Next) -> Response {
    let route = parse(request.uri().path());
    let verb = verb_of(
        request.method(),
        route.as_ref(),
        request.uri().query().unwrap_or(""),
    );
    let decision = faults.requests().decide(verb, resource_of(route.as_ref()));
    let deadline = (verb != "watch")
        .then(|| request_timeout(request.uri().query().unwrap_or("")))
        .flatten();
    if let Some(deadline) = deadline
        && decision.latency >= deadline
    {
        // kube-apiserver's deadline filter: the storage call is cancelled before it commits,
        // and the client hears 504.
        tokio::time::sleep(deadline).await;
        tracing::debug!(verb, ?deadline, "request timed out before it committed");
        return status(
            504,
            "Timeout",
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
            0,
        );
    }
    if !decision.latency.is_zero() {
        let deadline =
            crate::apiserver::request_timeout::of_query(request.uri().query().unwrap_or(""))
                .filter(|d| verb != "watch" && *d < decision.latency);
        if let Some(deadline) = deadline {
            tokio::time::sleep(deadline).await;
            return status(
                504,
                "Timeout",
                "Timeout: request did not complete within requested timeout - context deadline exceeded",
                0,
            );
        }
        tokio::time::sleep(decision.latency).await;
    }
    if let Some(rule) = decision.error {
        let (reason, message) = match rule.code {
            429 => (
                "TooManyRequests",
                "too many requests, please try again later",
            ),
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            _ => (
                "InternalError",
                "an error on the server has prevented the request from succeeding",
            ),
        };
        return status(rule.code, reason, message, rule.retry_after_seconds);
    }
    let response = next.run(request).await;
    if decision.lose {
        tracing::debug!(verb, "write applied, response lost");
        return status(
            504,
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
            0,
        );
    }
    response
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_request_timeout_reads_as_a_go_duration() {
        assert_eq!(
            super::request_timeout("timeout=2500ms"),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            super::request_timeout("a=b&timeout=1m30s"),
            Some(Duration::from_secs(90))
        );
        assert_eq!(super::request_timeout("timeout=soon"), None);
        assert_eq!(super::request_timeout("timeoutSeconds=5"), None);
    }

    use super::*;

    #[test]
    fn verbs_follow_method_route_and_watch_flag() {
        let pods = Some(Route::Collection {
            resource: Resource::Pods,
            namespace: None,
        });
        assert_eq!(verb_of(&Method::GET, pods.as_ref(), "watch=1&x=y"), "watch");
        assert_eq!(verb_of(&Method::GET, pods.as_ref(), "limit=500"), "list");
        assert_eq!(verb_of(&Method::POST, pods.as_ref(), ""), "create");
        assert_eq!(verb_of(&Method::DELETE, None, ""), "delete");
    }

    #[test]
    fn an_error_rule_hits_about_its_fraction_of_matching_requests_only() {
        let f = RequestFaults::default();
        f.add_error(ErrorRule {
            matching: Match {
                verb: Some("create".into()),
                resource: Some("pods".into()),
            },
            fraction: 0.3,
            code: 429,
            retry_after_seconds: 1,
        });
        let hits = (0..10_000)
            .filter(|_| f.decide("create", Some(Resource::Pods)).error.is_some())
            .count();
        assert!((2_500..3_500).contains(&hits), "{hits}");
        assert!(f.decide("list", Some(Resource::Pods)).error.is_none());
        assert!(
            f.decide("create", Some(Resource::ReplicaSets))
                .error
                .is_none()
        );
        f.clear();
        assert!(f.decide("create", Some(Resource::Pods)).error.is_none());
    }

    #[test]
    fn lost_responses_are_only_for_writes() {
        let f = RequestFaults::default();
        f.lose_write_responses(1.0);
        assert!(f.decide("update", None).lose);
        assert!(!f.decide("get", None).lose);
    }
}
