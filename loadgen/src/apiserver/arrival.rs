//! The moment a Pod create or delete reaches the server, before anything (injected latency, the
//! door, the handler) can hold it: an axum middleware that shows the request to the oracle, and
//! names it to the store's commits through a task-local ([`crate::store::commit::during`]), so
//! the oracle judges the commit as the request arrived.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::Method;

use crate::apiserver::routes::{Route, parse};
use crate::oracle::{Arriving, SharedOracle};
use crate::resource::Resource;
use crate::store::{RequestId, Store};

/// What the middleware needs: the store to read a Pod from, the oracle to show it to.
#[derive(Clone)]
pub struct Arrivals {
    /// The store.
    pub store: Arc<Store>,
    /// The oracle observing it.
    pub oracle: SharedOracle,
}

/// What kind of Pod write a request is, if it is one the oracle judges.
enum PodWrite {
    Create(String),
    Delete(String, String),
}

fn pod_write(method: &Method, path: &str) -> Option<PodWrite> {
    match (method, parse(path)?) {
        (
            &Method::POST,
            Route::Collection {
                resource: Resource::Pods,
                namespace: Some(ns),
            },
        ) => Some(PodWrite::Create(ns)),
        (
            &Method::DELETE,
            Route::Object {
                resource: Resource::Pods,
                namespace,
                name,
                status: false,
            },
        ) => Some(PodWrite::Delete(namespace, name)),
        _ => None,
    }
}

/// The middleware, outermost on the API listener.
pub async fn layer(State(arrivals): State<Arrivals>, request: Request, next: Next) -> Response {
    let Arrivals { store, oracle } = arrivals;
    let Some(write) = pod_write(request.method(), request.uri().path()) else {
        return next.run(request).await;
    };
    let (request, id) = match write {
        PodWrite::Delete(ns, name) => {
            let id = oracle.arrive(&store, &ns, Arriving::Delete(&name));
            (request, id)
        }
        PodWrite::Create(ns) => {
            let (parts, body) = request.into_parts();
            let bytes = match crate::apiserver::handlers::read_body(body, &parts.headers).await {
                Ok(b) => b,
                Err(e) => return crate::apiserver::response::error_response(&e),
            };
            // A body that is not JSON is refused by the handler; there is nothing to judge.
            let id = serde_json::from_slice(&bytes)
                .ok()
                .and_then(|pod| oracle.arrive(&store, &ns, Arriving::Create(&pod)));
            (Request::from_parts(parts, Body::from(bytes)), id)
        }
    };
    let Some(id) = id else {
        return next.run(request).await;
    };
    let _departs = Departure { oracle, id };
    crate::store::commit::during(id, next.run(request)).await
}

/// Ends the request's arrival when it is answered, or dropped (its client went away): a request
/// that never commits must not stay in flight.
struct Departure {
    oracle: SharedOracle,
    id: RequestId,
}

impl Drop for Departure {
    fn drop(&mut self) {
        self.oracle.depart(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pod_creates_and_deletes_are_judged() {
        assert!(matches!(
            pod_write(&Method::POST, "/api/v1/namespaces/ns/pods"),
            Some(PodWrite::Create(ns)) if ns == "ns"
        ));
        assert!(matches!(
            pod_write(&Method::DELETE, "/api/v1/namespaces/ns/pods/web-1"),
            Some(PodWrite::Delete(ns, name)) if ns == "ns" && name == "web-1"
        ));
        assert!(pod_write(&Method::PUT, "/api/v1/namespaces/ns/pods/web-1").is_none());
        assert!(pod_write(&Method::DELETE, "/api/v1/namespaces/ns/pods").is_none());
        assert!(pod_write(&Method::POST, "/apis/apps/v1/namespaces/ns/replicasets").is_none());
    }
}
