//! A hostile API server for the manager's I/O tests: plain HTTP on loopback, just enough of the
//! API for a manager to start (paged lists with a resourceVersion, watches, writes), and one
//! misbehaviour at a time: `ERROR 410` on every watch, a watch line that never ends, a silent
//! watch, list bodies trickled a byte at a time, list bodies and items that do not decode, and
//! writes that hang or are answered with garbage. It counts what it was asked, so a test can
//! say how often the manager relisted.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use parking_lot::Mutex;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

use crate::apiserver::response::json_response;

/// The resourceVersion of every list the server answers; objects are older.
pub const LIST_VERSION: u64 = 100;

/// What watches do.
#[derive(Clone, Debug)]
pub enum WatchBehaviour {
    /// Honest: a bookmark at [`LIST_VERSION`] this often, never an event.
    Bookmarks(Duration),
    /// `200`, then one `ERROR` event with a `410 Gone` Status, then the end of the stream.
    Gone,
    /// `200`, then `chunk` bytes of one JSON string this often, never a newline.
    EndlessLine {
        /// Bytes per write.
        chunk: usize,
        /// Time between writes.
        every: Duration,
    },
    /// `200` and headers, then nothing at all.
    Silent,
    /// `200` and an empty body: the watch ends as soon as it begins.
    Closed,
}

/// What writes (POST, PUT, PATCH, DELETE) get.
#[derive(Clone, Debug)]
pub enum WriteBehaviour {
    /// `201` with the sent object, a uid and a new resourceVersion.
    Accept,
    /// Never answered.
    Hang,
    /// `200` with this body.
    Answer(Vec<u8>),
}

/// How the server misbehaves.
#[derive(Clone, Debug)]
pub struct Hostile {
    /// Items of each resource's list, by plural (`pods`, `replicasets`), as raw JSON bytes:
    /// they may be invalid UTF-8 or not JSON at all.
    pub items: Vec<(String, Vec<Vec<u8>>)>,
    /// Items per list page (a `continue` token links the pages); 0 puts all in one page.
    pub page_size: usize,
    /// Replaces every list body of the resource (by plural) with these bytes.
    pub raw_list: Option<(String, Vec<u8>)>,
    /// List bodies go out one byte at a time, this far apart.
    pub trickle_lists: Option<Duration>,
    /// What watches do.
    pub watches: WatchBehaviour,
    /// What writes get.
    pub writes: WriteBehaviour,
}

impl Default for Hostile {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            page_size: 0,
            raw_list: None,
            trickle_lists: None,
            watches: WatchBehaviour::Bookmarks(Duration::from_millis(500)),
            writes: WriteBehaviour::Accept,
        }
    }
}

/// One request the server saw.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The method.
    pub method: Method,
    /// The resource's plural (`pods`), or the path when it names none.
    pub resource: String,
    /// A watch (`watch=true`).
    pub watch: bool,
    /// A list of more than one object (`limit` absent or above 1): not a probe or barrier.
    pub full_list: bool,
    /// When, from the server's start.
    pub at: Duration,
}

struct Shared {
    config: Hostile,
    started: Instant,
    seen: Mutex<Vec<Seen>>,
    watch_bytes: AtomicU64,
    next_version: AtomicU64,
}

/// A running hostile server.
pub struct HostileServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
}

impl HostileServer {
    /// Binds a loopback port and serves on the current tokio runtime.
    pub async fn start(config: Hostile) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            config,
            started: Instant::now(),
            seen: Mutex::new(Vec::new()),
            watch_bytes: AtomicU64::new(0),
            next_version: AtomicU64::new(LIST_VERSION + 1),
        });
        let router = Router::new().fallback(handle).with_state(shared.clone());
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(tidemark_tls::serve(
            listener,
            router,
            None,
            tidemark_tls::ServeOptions::default(),
            stopped,
        ));
        Ok(Self { addr, shared, stop })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().clone()
    }

    /// Full lists of `resource` started (first pages only).
    pub fn lists(&self, resource: &str) -> usize {
        self.shared
            .seen
            .lock()
            .iter()
            .filter(|s| s.resource == resource && s.full_list && !s.watch)
            .count()
    }

    /// Watches of `resource` opened.
    pub fn watches(&self, resource: &str) -> usize {
        self.shared
            .seen
            .lock()
            .iter()
            .filter(|s| s.resource == resource && s.watch)
            .count()
    }

    /// Writes received.
    pub fn writes(&self) -> usize {
        self.shared
            .seen
            .lock()
            .iter()
            .filter(|s| s.method != Method::GET)
            .count()
    }

    /// Bytes of never-ending watch lines sent so far.
    pub fn watch_bytes_sent(&self) -> u64 {
        self.shared.watch_bytes.load(Ordering::Relaxed)
    }

    /// Stops serving.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }
}

/// The plural a path names: `/api/v1/namespaces/ns/pods/name` is `pods`.
fn resource_of(path: &str) -> String {
    let rest = path
        .strip_prefix("/api/v1/")
        .or_else(|| {
            path.strip_prefix("/apis/")
                .and_then(|p| p.splitn(3, '/').nth(2))
        })
        .unwrap_or(path);
    let mut parts = rest.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("namespaces"), Some(_), Some(plural)) => plural.to_string(),
        (Some(plural), _, _) => plural.to_string(),
        _ => path.to_string(),
    }
}

fn query_value<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or("").to_string();
    let resource = resource_of(&path);
    let watch = query_value(&query, "watch") == Some("true");
    let limit = query_value(&query, "limit").and_then(|l| l.parse::<usize>().ok());
    let first_page = query_value(&query, "continue").is_none();
    shared.seen.lock().push(Seen {
        method: method.clone(),
        resource: resource.clone(),
        watch,
        full_list: method == Method::GET && first_page && limit.is_none_or(|l| l > 1),
        at: shared.started.elapsed(),
    });
    if method != Method::GET {
        let body = axum::body::to_bytes(request.into_body(), 4 << 20)
            .await
            .unwrap_or_default();
        return write(&shared, &body).await;
    }
    if watch {
        return watch_response(&shared);
    }
    let start = query_value(&query, "continue")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0);
    let body = match &shared.config.raw_list {
        Some((plural, raw)) if *plural == resource => raw.clone(),
        _ => list_body(&shared.config, &resource, start, limit),
    };
    let body = match shared.config.trickle_lists {
        Some(every) => trickled(body, every),
        None => Body::from(body),
    };
    json_response(StatusCode::OK, body)
}

fn list_body(config: &Hostile, resource: &str, start: usize, limit: Option<usize>) -> Vec<u8> {
    let items: &[Vec<u8>] = config
        .items
        .iter()
        .find(|(plural, _)| plural == resource)
        .map_or(&[], |(_, items)| items.as_slice());
    let page = match (config.page_size, limit) {
        (0, _) => items.len(),
        (size, Some(limit)) => size.min(limit),
        (size, None) => size,
    }
    .max(1);
    let end = (start + page).min(items.len());
    let continue_token = if end < items.len() {
        format!(",\"continue\":\"{end}\"")
    } else {
        String::new()
    };
    let mut body = format!(
        "{{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{LIST_VERSION}\"{continue_token}}},\"items\":["
    )
    .into_bytes();
    for (i, item) in items
        .get(start.min(end)..end)
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    body
}

fn trickled(body: Vec<u8>, every: Duration) -> Body {
    let bytes = futures::stream::iter(body).then(move |b| async move {
        tokio::time::sleep(every).await;
        Ok::<_, Infallible>(Bytes::from(vec![b]))
    });
    Body::from_stream(bytes)
}

fn watch_response(shared: &Arc<Shared>) -> Response {
    let body = match shared.config.watches.clone() {
        WatchBehaviour::Bookmarks(every) => {
            let line = format!(
                "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Bookmark\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{LIST_VERSION}\"}}}}}}\n"
            );
            let ticks = futures::stream::unfold((), move |()| {
                let line = line.clone();
                async move {
                    tokio::time::sleep(every).await;
                    Some((Ok::<_, Infallible>(Bytes::from(line)), ()))
                }
            });
            Body::from_stream(ticks)
        }
        WatchBehaviour::Gone => Body::from(
            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version\",\"reason\":\"Expired\",\"code\":410}}\n",
        ),
        WatchBehaviour::EndlessLine { chunk, every } => {
            let shared = shared.clone();
            let opening = Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":\"");
            let filler = Bytes::from(vec![b'x'; chunk]);
            let rest = futures::stream::unfold((), move |()| {
                let filler = filler.clone();
                let shared = shared.clone();
                async move {
                    tokio::time::sleep(every).await;
                    shared
                        .watch_bytes
                        .fetch_add(filler.len() as u64, Ordering::Relaxed);
                    Some((Ok::<_, Infallible>(filler), ()))
                }
            });
            Body::from_stream(futures::stream::once(async move { Ok(opening) }).chain(rest))
        }
        WatchBehaviour::Silent => {
            Body::from_stream(futures::stream::pending::<Result<Bytes, Infallible>>())
        }
        WatchBehaviour::Closed => Body::empty(),
    };
    json_response(StatusCode::OK, body)
}

async fn write(shared: &Arc<Shared>, body: &[u8]) -> Response {
    match &shared.config.writes {
        WriteBehaviour::Hang => std::future::pending::<Response>().await,
        WriteBehaviour::Answer(raw) => json_response(StatusCode::OK, Body::from(raw.clone())),
        WriteBehaviour::Accept => {
            let version = shared.next_version.fetch_add(1, Ordering::Relaxed);
            let mut object: serde_json::Value = serde_json::from_slice(body)
                .unwrap_or_else(|_| serde_json::json!({"metadata": {}}));
            if let Some(meta) = object
                .get_mut("metadata")
                .and_then(serde_json::Value::as_object_mut)
            {
                meta.insert("resourceVersion".into(), version.to_string().into());
                meta.entry("uid")
                    .or_insert_with(|| format!("hostile-{version}").into());
            }
            (StatusCode::CREATED, axum::Json(object)).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_its_resource() {
        assert_eq!(resource_of("/api/v1/pods"), "pods");
        assert_eq!(resource_of("/api/v1/namespaces/ns/pods/p/status"), "pods");
        assert_eq!(resource_of("/apis/apps/v1/replicasets"), "replicasets");
        assert_eq!(
            resource_of("/apis/apps/v1/namespaces/demo/replicasets/web"),
            "replicasets"
        );
    }

    #[test]
    fn lists_come_in_linked_pages() {
        let config = Hostile {
            items: vec![(
                "pods".into(),
                vec![b"1".to_vec(), b"2".to_vec(), b"3".to_vec()],
            )],
            page_size: 2,
            ..Hostile::default()
        };
        let first: serde_json::Value =
            serde_json::from_slice(&list_body(&config, "pods", 0, Some(500))).expect("json");
        assert_eq!(first["items"], serde_json::json!([1, 2]));
        assert_eq!(first["metadata"]["continue"], "2");
        let last: serde_json::Value =
            serde_json::from_slice(&list_body(&config, "pods", 2, Some(500))).expect("json");
        assert_eq!(last["items"], serde_json::json!([3]));
        assert!(last["metadata"].get("continue").is_none());
    }
}
