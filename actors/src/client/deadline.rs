//! A deadline on every request but watches, as a tower layer around the kube client: a request
//! not answered in full in time (headers and body) fails with an error that names its method
//! and URL, and the layer logs it. kube-rs sets none, so a list body trickled a byte at a time
//! or a write the server never answers would hang for ever. Watches are long by design; the
//! informer gives them an idle timeout instead.

use bytes::Bytes;
use http::{Method, Request, Response};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long a request may take, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestTimeouts {
    /// Reads (a list page, a get, a barrier read): kube-apiserver's own `--request-timeout`
    /// (60 s) ends them first on a healthy server.
    pub read: Duration,
    /// Writes (create, update, patch, delete).
    pub write: Duration,
}

impl Default for RequestTimeouts {
    fn default() -> Self {
        Self {
            read: Duration::from_secs(60),
            write: Duration::from_secs(30),
        }
    }
}

impl RequestTimeouts {
    /// The deadline of `request`; none for a watch.
    pub fn for_request<B>(&self, request: &Request<B>) -> Option<Duration> {
        let watch = request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|pair| pair == "watch=true"));
        match *request.method() {
            _ if watch => None,
            Method::GET | Method::HEAD => Some(self.read),
            _ => Some(self.write),
        }
    }
}

/// A request that ran out of time.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{method} {url} was not answered within {after:?}")]
pub struct TimedOut {
    /// The method.
    pub method: Method,
    /// The URL.
    pub url: String,
    /// The deadline it had.
    pub after: Duration,
}

impl TimedOut {
    fn log(&self, phase: &'static str) {
        tracing::warn!(method = %self.method, url = %self.url, timeout_ms = self.after.as_millis() as u64,
            phase, "request timed out");
    }
}

/// The layer: `server` prefixes the paths in logs.
#[derive(Clone, Debug)]
pub struct DeadlineLayer {
    timeouts: RequestTimeouts,
    server: Arc<str>,
}

impl DeadlineLayer {
    /// Deadlines `timeouts` for requests to `server`.
    pub fn new(timeouts: RequestTimeouts, server: &str) -> Self {
        Self {
            timeouts,
            server: Arc::from(server.trim_end_matches('/')),
        }
    }
}

impl<S> tower::Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`DeadlineLayer`] wraps around the client's stack.
#[derive(Clone, Debug)]
pub struct Deadline<S> {
    inner: S,
    layer: DeadlineLayer,
}

impl<S, ReqBody, B> tower::Service<Request<ReqBody>> for Deadline<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<DeadlineBody<B>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let limit = self.layer.timeouts.for_request(&request);
        let timed_out = limit.map(|after| TimedOut {
            method: request.method().clone(),
            url: format!(
                "{}{}",
                self.layer.server,
                request
                    .uri()
                    .path_and_query()
                    .map_or(request.uri().path(), |p| p.as_str())
            ),
            after,
        });
        let call = self.inner.call(request);
        Box::pin(async move {
            let Some(timed_out) = timed_out else {
                let response = call.await.map_err(Into::into)?;
                return Ok(response.map(|body| DeadlineBody {
                    inner: body,
                    deadline: None,
                }));
            };
            let deadline = tokio::time::Instant::now() + timed_out.after;
            match tokio::time::timeout_at(deadline, call).await {
                Err(_) => {
                    timed_out.log("waiting for the response");
                    Err(Box::new(timed_out) as BoxError)
                }
                Ok(Err(e)) => Err(e.into()),
                Ok(Ok(response)) => Ok(response.map(|body| DeadlineBody {
                    inner: body,
                    deadline: Some((Box::pin(tokio::time::sleep_until(deadline)), timed_out)),
                })),
            }
        })
    }
}

/// A response body that fails once the request's deadline passes.
pub struct DeadlineBody<B> {
    inner: B,
    deadline: Option<(Pin<Box<tokio::time::Sleep>>, TimedOut)>,
}

impl<B> http_body::Body for DeadlineBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let expired = this
            .deadline
            .as_mut()
            .is_some_and(|(sleep, _)| sleep.as_mut().poll(cx).is_ready());
        if expired && let Some((_, timed_out)) = this.deadline.take() {
            timed_out.log("reading the body");
            return Poll::Ready(Some(Err(Box::new(timed_out))));
        }
        Pin::new(&mut this.inner).poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, uri: &str) -> Request<()> {
        Request::builder()
            .method(method)
            .uri(uri)
            .body(())
            .expect("request")
    }

    #[test]
    fn watches_have_no_deadline_reads_and_writes_have_theirs() {
        let t = RequestTimeouts::default();
        let watch = request(Method::GET, "/api/v1/pods?watch=true&resourceVersion=5");
        assert_eq!(t.for_request(&watch), None);
        let list = request(Method::GET, "/api/v1/pods?limit=500");
        assert_eq!(t.for_request(&list), Some(t.read));
        let create = request(Method::POST, "/api/v1/namespaces/a/pods");
        assert_eq!(t.for_request(&create), Some(t.write));
        let not_a_watch = request(Method::GET, "/api/v1/pods?watch=false");
        assert_eq!(t.for_request(&not_a_watch), Some(t.read));
    }
}
