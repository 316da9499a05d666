//! client-go's request metrics (component-base `metrics/prometheus/restclient`), counted by a
//! tower layer around every kube client of the process: `rest_client_requests_total{code,
//! method,host}` (code `<error>` when no response came) and
//! `rest_client_request_duration_seconds{verb,host}` (request sent to response headers, in
//! client-go's buckets). Process-wide, as client-go's are, because informers, writers and
//! leader election each have clients.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::Instant;

/// client-go's buckets for `rest_client_request_duration_seconds`, in seconds.
pub const REQUEST_DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

/// One histogram: observations per bucket (not cumulative), then above the last bound.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Latency {
    /// Observations that fell in each bucket of [`REQUEST_DURATION_BUCKETS`] alone, and a last
    /// one above them all.
    pub per_bucket: [u64; REQUEST_DURATION_BUCKETS.len() + 1],
    /// Sum of the observations, in seconds.
    pub sum: f64,
    /// Observations.
    pub count: u64,
}

impl Latency {
    /// Counts one observation of `seconds`.
    pub fn observe(&mut self, seconds: f64) {
        let slot = REQUEST_DURATION_BUCKETS
            .iter()
            .position(|le| seconds <= *le)
            .unwrap_or(REQUEST_DURATION_BUCKETS.len());
        self.per_bucket[slot] += 1;
        self.sum += seconds;
        self.count += 1;
    }
}

/// The figures, keyed as upstream labels them.
#[derive(Clone, Debug, Default)]
pub struct RestFigures {
    /// (code, method, host) to requests.
    pub requests: BTreeMap<(String, String, String), u64>,
    /// (verb, host) to latency.
    pub latency: BTreeMap<(String, String), Latency>,
}

static FIGURES: LazyLock<Mutex<RestFigures>> = LazyLock::new(Mutex::default);

/// A copy of the process's figures so far.
pub fn snapshot() -> RestFigures {
    FIGURES.lock().clone()
}

fn record(code: String, method: &str, host: &Arc<str>, seconds: f64) {
    let mut f = FIGURES.lock();
    *f.requests
        .entry((code, method.to_string(), host.to_string()))
        .or_default() += 1;
    f.latency
        .entry((method.to_string(), host.to_string()))
        .or_default()
        .observe(seconds);
}

/// The layer; `host` is the API server's `host:port`, as client-go's `url.Host`.
#[derive(Clone, Debug)]
pub struct RestMetricsLayer {
    host: Arc<str>,
}

impl RestMetricsLayer {
    /// Counts requests to `cluster_url`.
    pub fn new(cluster_url: &http::Uri) -> Self {
        let host = cluster_url
            .authority()
            .map_or_else(|| cluster_url.to_string(), |a| a.to_string());
        Self {
            host: Arc::from(host),
        }
    }
}

impl<S> tower::Layer<S> for RestMetricsLayer {
    type Service = RestMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RestMetrics {
            inner,
            host: self.host.clone(),
        }
    }
}

/// The service [`RestMetricsLayer`] wraps around the client's stack.
#[derive(Clone, Debug)]
pub struct RestMetrics<S> {
    inner: S,
    host: Arc<str>,
}

impl<S, ReqBody, B> tower::Service<http::Request<ReqBody>> for RestMetrics<S>
where
    S: tower::Service<http::Request<ReqBody>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let method = request.method().as_str().to_string();
        let host = self.host.clone();
        let started = Instant::now();
        let call = self.inner.call(request);
        Box::pin(async move {
            let result = call.await;
            let code = match &result {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            record(code, &method, &host, started.elapsed().as_secs_f64());
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observation_lands_in_the_first_bucket_that_holds_it() {
        let mut l = Latency::default();
        l.observe(0.005);
        l.observe(0.2);
        l.observe(61.0);
        assert_eq!(l.per_bucket[0], 1, "le=0.005 holds 0.005");
        assert_eq!(l.per_bucket[3], 1, "le=0.25 holds 0.2");
        assert_eq!(l.per_bucket[12], 1, "only +Inf holds 61 s");
        assert_eq!(l.count, 3);
    }
}
