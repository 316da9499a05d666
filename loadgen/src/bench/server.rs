//! A lean API server for the bench: Pods and ReplicaSets held only as pre-encoded JSON, paged
//! lists, and watches fed by an in-process event log (the churn generator appends to it).
//!
//! The full simulated server ([`crate::store`]) keeps a `serde_json::Value` beside every
//! object's bytes, several times the JSON's size: at a million 5 KB Pods that does not fit in
//! the machine's memory. This one keeps the bytes only, serves the requests a kube-rs watcher
//! and Tidemark's informer send (`limit`/`continue` lists with `metadata.resourceVersion`,
//! `watch=true&resourceVersion=R&allowWatchBookmarks=true&timeoutSeconds=T`, `410 Gone` for a
//! compacted version), and refuses every write (`405`). One writer appends events at a time.

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Events handed to a watch per chunk at most.
const CHUNK_EVENTS: usize = 512;

/// One kind's objects and watch history.
#[derive(Debug, Default)]
struct Kind {
    /// Current objects, in list order.
    objects: RwLock<Vec<Bytes>>,
    /// Watch lines (`{"type":...,"object":...}\n`) of revisions `first..`, contiguous.
    log: RwLock<Log>,
}

#[derive(Debug, Default)]
struct Log {
    /// Revision of `lines[0]`.
    first: u64,
    /// In the kind's wire format: JSON lines, or protobuf frames for Pods of a protobuf server.
    lines: VecDeque<Bytes>,
}

/// The shared state.
#[derive(Debug)]
struct Shared {
    /// Pods, as JSON or (on a protobuf server) as `Pod` messages.
    pods: Kind,
    /// How Pods are held and served.
    pod_wire: Wire,
    replicasets: Kind,
    revision: AtomicU64,
    head: watch::Sender<u64>,
    window: usize,
    bookmark_interval: Duration,
}

/// A running bench server.
#[derive(Debug)]
pub struct BenchServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    door: Option<BenchDoor>,
}

/// How the bench server is seeded and run.
#[derive(Debug, Clone)]
pub struct BenchServerConfig {
    /// Watch events kept for watches that fall behind (older ones are compacted: `410`).
    pub window: usize,
    /// How often a watch asking for bookmarks gets one.
    pub bookmark_interval: Duration,
    /// Plain HTTP without credentials (default false: HTTPS, a bearer token required), to
    /// measure what TLS costs.
    pub plain_http: bool,
    /// Pods are held and served in protobuf only, as `Pod` messages (to clients that ask for
    /// protobuf first: Tidemark, the null client); a Pod request that does not gets `406`.
    /// A run serves its Pods in one format so the generator renders each change once, as
    /// kube-apiserver encodes an event once per format asked for.
    pub protobuf: bool,
}

impl Default for BenchServerConfig {
    fn default() -> Self {
        Self {
            window: 200_000,
            bookmark_interval: Duration::from_millis(500),
            plain_http: false,
            protobuf: false,
        }
    }
}

/// What the bench server holds at start.
#[derive(Debug, Clone, Default)]
pub struct BenchObjects {
    /// The Pods in list order, resourceVersions at most `revision`: JSON, or `Pod` messages
    /// when the server serves protobuf.
    pub pods: Vec<Bytes>,
    /// The ReplicaSets' JSON.
    pub replicasets: Vec<Bytes>,
    /// The revision after them.
    pub revision: u64,
}

/// Which kind an event or a seed is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchKind {
    /// `/api/v1/pods`.
    Pods,
    /// `/apis/apps/v1/replicasets`.
    ReplicaSets,
}

/// The bench server's TLS and its one accepted token.
struct BenchDoor {
    ca: tidemark_tls::CertificateAuthority,
    serving: tidemark_tls::IssuedCertificate,
    token: String,
}

impl std::fmt::Debug for BenchDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BenchDoor").finish_non_exhaustive()
    }
}

impl BenchDoor {
    fn generate() -> Result<Self, tidemark_tls::TlsError> {
        let ca = tidemark_tls::CertificateAuthority::generate("loadgen-bench-ca")?;
        let serving = ca.issue_server(&["127.0.0.1".into(), "localhost".into()])?;
        let token = crate::apiserver::door::new_token();
        Ok(Self { ca, serving, token })
    }

    fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, tidemark_tls::TlsError> {
        tidemark_tls::server_config(
            tidemark_tls::ServerIdentity::from_issued(&self.serving)?,
            None,
        )
    }
}

/// 401 unless the request carries the bench token (the server's whole authentication).
async fn bearer_only(
    State(token): State<Arc<String>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given == Some(token.as_str()) {
        next.run(req).await
    } else {
        crate::apiserver::response::error_response(
            &crate::apiserver::status::ApiError::Unauthorized,
        )
    }
}

impl BenchServer {
    /// Binds loopback and serves `objects` on the current tokio runtime.
    pub async fn start(config: BenchServerConfig, objects: BenchObjects) -> std::io::Result<Self> {
        let BenchObjects {
            pods,
            replicasets,
            revision,
        } = objects;
        let (head, _) = watch::channel(revision);
        let kind = |objects| Kind {
            objects: RwLock::new(objects),
            log: RwLock::new(Log {
                first: revision + 1,
                ..Log::default()
            }),
        };
        let shared = Arc::new(Shared {
            pod_wire: if config.protobuf {
                Wire::Protobuf
            } else {
                Wire::Json
            },
            pods: kind(pods),
            replicasets: kind(replicasets),
            revision: AtomicU64::new(revision),
            head,
            window: config.window.max(1),
            bookmark_interval: config.bookmark_interval,
        });
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        tracing::info!(%addr, plain_http = config.plain_http, "bench server listening");
        let router = Router::new()
            .route("/api/v1/pods", get(serve_pods).fallback(refuse))
            .route(
                "/apis/apps/v1/replicasets",
                get(serve_replicasets).fallback(refuse),
            )
            .fallback(not_found)
            .with_state(shared.clone());
        let (stop, stopped) = watch::channel(false);
        let (router, tls, door) = if config.plain_http {
            (router, None, None)
        } else {
            let door = BenchDoor::generate().map_err(std::io::Error::other)?;
            let tls = door.server_config().map_err(std::io::Error::other)?;
            let token = Arc::new(door.token.clone());
            let router = router.layer(axum::middleware::from_fn_with_state(token, bearer_only));
            (router, Some(tls), Some(door))
        };
        tokio::spawn(tidemark_tls::serve(
            listener,
            router,
            tls,
            tidemark_tls::ServeOptions::default(),
            stopped,
        ));
        Ok(Self {
            addr,
            shared,
            stop,
            door,
        })
    }

    /// `https://127.0.0.1:port` (`http://` with `plain_http`).
    pub fn url(&self) -> String {
        let scheme = if self.door.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// A kubeconfig for this server: its CA and bearer token (nothing for plain HTTP).
    pub fn kubeconfig_yaml(&self) -> String {
        use crate::apiserver::kubeconfig::{KubeconfigTrust, KubeconfigUser, kubeconfig};
        match &self.door {
            Some(d) => kubeconfig(
                &self.url(),
                &KubeconfigTrust::CaData(d.ca.cert_pem().to_string()),
                &KubeconfigUser::Token(d.token.clone()),
            ),
            None => crate::apiserver::kubeconfig::kubeconfig_yaml(&self.url()),
        }
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.shared.revision.load(Ordering::Acquire)
    }

    /// Replaces Pod `index` with `object` (in the server's Pod format, rendered at the next
    /// revision, which the caller takes from [`revision`](Self::revision) + 1) and appends its
    /// MODIFIED event. Objects must be appended by one writer at a time. Returns the new
    /// revision.
    pub fn modify_pods(&self, batch: Vec<(usize, Bytes)>) -> u64 {
        let kind = &self.shared.pods;
        let wire = self.shared.pod_wire;
        let lines: Vec<Bytes> = batch
            .iter()
            .map(|(_, object)| event(wire, "MODIFIED", object))
            .collect();
        {
            let mut objects = kind.objects.write();
            for (index, object) in batch {
                if let Some(slot) = objects.get_mut(index) {
                    *slot = object;
                }
            }
        }
        let n = lines.len() as u64;
        {
            let mut log = kind.log.write();
            log.lines.extend(lines);
            while log.lines.len() > self.shared.window {
                log.lines.pop_front();
                log.first += 1;
            }
        }
        let rev = self.shared.revision.fetch_add(n, Ordering::AcqRel) + n;
        self.shared.head.send_replace(rev);
        rev
    }

    /// Stops serving.
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }
}

/// A watch event of `kind` around `object`, in `wire`.
fn event(wire: Wire, kind: &str, object: &[u8]) -> Bytes {
    match wire {
        Wire::Json => event_line(kind, object),
        Wire::Protobuf => Bytes::from(crate::protobuf::pod_watch_frame(kind, object)),
    }
}

fn event_line(kind: &str, object: &[u8]) -> Bytes {
    let mut line = BytesMut::with_capacity(object.len() + 32);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object);
    line.extend_from_slice(b"}\n");
    line.freeze()
}

fn json(status: StatusCode, body: impl Into<Body>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.into(),
    )
        .into_response()
}

fn status_body(code: u16, reason: &str, message: &str) -> String {
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code})
    .to_string()
}

async fn refuse() -> Response {
    json(
        StatusCode::METHOD_NOT_ALLOWED,
        status_body(405, "MethodNotAllowed", "the bench server is read-only"),
    )
}

async fn not_found() -> Response {
    json(
        StatusCode::NOT_FOUND,
        status_body(404, "NotFound", "not served by the bench server"),
    )
}

async fn serve_pods(
    State(s): State<Arc<Shared>>,
    Query(q): Query<HashMap<String, String>>,
    headers: axum::http::HeaderMap,
) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    match s.pod_wire {
        Wire::Json => serve(&s, BenchKind::Pods, &q),
        Wire::Protobuf if !crate::protobuf::prefers_protobuf(accept) => json(
            StatusCode::NOT_ACCEPTABLE,
            status_body(
                406,
                "NotAcceptable",
                "this bench server holds its Pods in protobuf only",
            ),
        ),
        Wire::Protobuf if q.get("watch").is_some_and(|w| w == "true" || w == "1") => {
            watch_response(&s, BenchKind::Pods, &q)
        }
        Wire::Protobuf => protobuf_list(&s, &q),
    }
}

/// Which page a list request asks for.
struct Window {
    /// The list's revision (the continue token's, or the current one).
    revision: u64,
    /// The first object's index.
    offset: usize,
    /// How many objects at most.
    limit: usize,
}

/// The page `q` asks for: the continue token is `revision:offset`; the bench lists before it
/// churns, so an offset into the current objects is the snapshot.
fn window(s: &Shared, q: &HashMap<String, String>) -> Result<Window, Box<Response>> {
    let (revision, offset) = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => token
            .split_once(':')
            .and_then(|(r, o)| Some((r.parse::<u64>().ok()?, o.parse::<usize>().ok()?)))
            .ok_or_else(|| {
                Box::new(json(
                    StatusCode::BAD_REQUEST,
                    status_body(400, "BadRequest", "malformed continue token"),
                ))
            })?,
        None => (s.revision.load(Ordering::Acquire), 0),
    };
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|&l| l > 0)
        .unwrap_or(usize::MAX);
    Ok(Window {
        revision,
        offset,
        limit,
    })
}

/// A page of the Pods in protobuf: the pages and continue tokens of [`list_response`].
fn protobuf_list(s: &Shared, q: &HashMap<String, String>) -> Response {
    let Window {
        revision,
        offset,
        limit,
    } = match window(s, q) {
        Ok(w) => w,
        Err(refused) => return *refused,
    };
    let objects = s.pods.objects.read();
    let end = offset.saturating_add(limit).min(objects.len());
    let items: Vec<&[u8]> = objects
        .get(offset.min(end)..end)
        .unwrap_or_default()
        .iter()
        .map(|b| b.as_ref())
        .collect();
    let token = (end < objects.len()).then(|| format!("{revision}:{end}"));
    let list = crate::protobuf::list(&revision.to_string(), token.as_deref(), &items);
    drop(objects);
    let body = crate::protobuf::wrap("v1", "PodList", &list);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, crate::protobuf::MEDIA_TYPE)],
        body,
    )
        .into_response()
}

async fn serve_replicasets(
    State(s): State<Arc<Shared>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    serve(&s, BenchKind::ReplicaSets, &q)
}

fn serve(s: &Arc<Shared>, which: BenchKind, q: &HashMap<String, String>) -> Response {
    if q.get("watch").is_some_and(|w| w == "true" || w == "1") {
        watch_response(s, which, q)
    } else {
        list_response(s, which, q)
    }
}

fn kind_of(s: &Shared, which: BenchKind) -> &Kind {
    match which {
        BenchKind::Pods => &s.pods,
        BenchKind::ReplicaSets => &s.replicasets,
    }
}

/// A page of the list, in JSON (see [`window`]).
fn list_response(s: &Shared, which: BenchKind, q: &HashMap<String, String>) -> Response {
    let (list_kind, api_version) = match which {
        BenchKind::Pods => ("PodList", "v1"),
        BenchKind::ReplicaSets => ("ReplicaSetList", "apps/v1"),
    };
    let Window {
        revision,
        offset,
        limit,
    } = match window(s, q) {
        Ok(w) => w,
        Err(refused) => return *refused,
    };
    let objects = kind_of(s, which).objects.read();
    let end = offset.saturating_add(limit).min(objects.len());
    let items = objects.get(offset.min(end)..end).unwrap_or_default();
    let continue_field = if end < objects.len() {
        format!(",\"continue\":\"{revision}:{end}\"")
    } else {
        String::new()
    };
    let size: usize = items.iter().map(|i| i.len() + 1).sum();
    let mut body = BytesMut::with_capacity(size + 256);
    body.extend_from_slice(
        format!(
            "{{\"kind\":\"{list_kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{{\"resourceVersion\":\"{revision}\"{continue_field}}},\"items\":["
        )
        .as_bytes(),
    );
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.extend_from_slice(b",");
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    drop(objects);
    json(StatusCode::OK, body.freeze())
}

/// How a watch is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    /// JSON lines.
    Json,
    /// Length-prefixed protobuf frames (Pods only).
    Protobuf,
}

fn bookmark(which: BenchKind, revision: u64, wire: Wire) -> Bytes {
    match wire {
        Wire::Json => bookmark_line(which, revision),
        Wire::Protobuf => Bytes::from(crate::protobuf::watch_frame(
            "BOOKMARK",
            &crate::protobuf::bookmark_pod(&revision.to_string()),
        )),
    }
}

fn gone(revision: u64, wire: Wire) -> Bytes {
    match wire {
        Wire::Json => gone_line(revision),
        Wire::Protobuf => Bytes::from(crate::protobuf::watch_frame(
            "ERROR",
            &crate::protobuf::status(
                410,
                "Expired",
                &format!("too old resource version: {revision}"),
            ),
        )),
    }
}

fn bookmark_line(which: BenchKind, revision: u64) -> Bytes {
    let (kind, api_version) = match which {
        BenchKind::Pods => ("Pod", "v1"),
        BenchKind::ReplicaSets => ("ReplicaSet", "apps/v1"),
    };
    Bytes::from(format!(
        "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"{kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{{\"resourceVersion\":\"{revision}\"}}}}}}\n"
    ))
}

fn gone_line(revision: u64) -> Bytes {
    let status = status_body(
        410,
        "Expired",
        &format!("too old resource version: {revision}"),
    );
    Bytes::from(format!("{{\"type\":\"ERROR\",\"object\":{status}}}\n"))
}

/// What a watch reads next from the log.
enum Next {
    Lines(Bytes, u64),
    Gone,
    Nothing,
}

fn read_after(kind: &Kind, from: u64) -> Next {
    let log = kind.log.read();
    let events = &log.lines;
    if from + 1 < log.first {
        return Next::Gone;
    }
    let start = (from + 1 - log.first) as usize;
    if start >= events.len() {
        return Next::Nothing;
    }
    let end = (start + CHUNK_EVENTS).min(events.len());
    let size: usize = events.range(start..end).map(Bytes::len).sum();
    let mut chunk = BytesMut::with_capacity(size);
    for line in events.range(start..end) {
        chunk.extend_from_slice(line);
    }
    Next::Lines(chunk.freeze(), log.first + end as u64 - 1)
}

fn watch_response(s: &Arc<Shared>, which: BenchKind, q: &HashMap<String, String>) -> Response {
    let wire = match which {
        BenchKind::Pods => s.pod_wire,
        BenchKind::ReplicaSets => Wire::Json,
    };
    let from = q
        .get("resourceVersion")
        .and_then(|r| r.parse::<u64>().ok())
        .unwrap_or_else(|| s.revision.load(Ordering::Acquire));
    let bookmarks = q.get("allowWatchBookmarks").is_some_and(|b| b == "true");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map_or(Duration::from_secs(290), Duration::from_secs);
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(8);
    let shared = s.clone();
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut head = shared.head.subscribe();
        let mut pos = from;
        let mut next_bookmark = tokio::time::Instant::now() + shared.bookmark_interval;
        loop {
            let kind = kind_of(&shared, which);
            let next = match which {
                BenchKind::Pods => read_after(kind, pos),
                // ReplicaSets do not change in the bench: the global revision moves past them.
                BenchKind::ReplicaSets => Next::Nothing,
            };
            match next {
                Next::Lines(chunk, last) => {
                    pos = last;
                    if tx.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                    continue;
                }
                Next::Gone => {
                    let _ = tx.send(Ok(gone(pos, wire))).await;
                    return;
                }
                Next::Nothing => {}
            }
            tokio::select! {
                changed = head.changed() => if changed.is_err() { return; },
                _ = tokio::time::sleep_until(next_bookmark) => {
                    next_bookmark = tokio::time::Instant::now() + shared.bookmark_interval;
                    if bookmarks {
                        let revision = match which {
                            BenchKind::Pods => pos,
                            BenchKind::ReplicaSets => shared.revision.load(Ordering::Acquire),
                        };
                        pos = pos.max(revision);
                        if tx.send(Ok(bookmark(which, revision, wire))).await.is_err() {
                            return;
                        }
                    }
                }
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    });
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    match wire {
        Wire::Json => json(StatusCode::OK, body),
        Wire::Protobuf => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, crate::protobuf::WATCH_MEDIA_TYPE)],
            body,
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, rv: u64) -> Bytes {
        Bytes::from(format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"b\",\"resourceVersion\":\"{rv}\"}}}}"
        ))
    }

    #[tokio::test]
    async fn a_paged_list_returns_every_pod_once_at_one_revision() {
        let pods: Vec<Bytes> = (1..=5).map(|i| pod(&format!("p{i}"), i)).collect();
        let objects = BenchObjects {
            pods,
            revision: 5,
            ..BenchObjects::default()
        };
        let server = BenchServer::start(BenchServerConfig::default(), objects)
            .await
            .expect("start");
        let shared = server.shared.clone();
        let mut q = HashMap::from([("limit".to_string(), "2".to_string())]);
        let mut names = Vec::new();
        loop {
            let response = list_response(&shared, BenchKind::Pods, &q);
            let body = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .expect("body");
            let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
            assert_eq!(v["metadata"]["resourceVersion"], "5");
            for item in v["items"].as_array().expect("items") {
                names.push(item["metadata"]["name"].as_str().unwrap_or("").to_string());
            }
            match v["metadata"]["continue"].as_str() {
                Some(c) => {
                    q.insert("continue".into(), c.into());
                }
                None => break,
            }
        }
        assert_eq!(names, ["p1", "p2", "p3", "p4", "p5"]);
        server.shutdown();
    }

    #[tokio::test]
    async fn a_watch_replays_events_after_its_version_and_a_compacted_one_is_gone() {
        let config = BenchServerConfig {
            window: 2,
            ..BenchServerConfig::default()
        };
        let objects = BenchObjects {
            pods: vec![pod("p0", 1)],
            revision: 1,
            ..BenchObjects::default()
        };
        let server = BenchServer::start(config, objects).await.expect("start");
        for rv in 2..=4 {
            server.modify_pods(vec![(0, pod("p0", rv))]);
        }
        assert_eq!(server.revision(), 4);
        let kind = &server.shared.pods;
        match read_after(kind, 2) {
            Next::Lines(chunk, last) => {
                assert_eq!(last, 4);
                assert_eq!(chunk.iter().filter(|b| **b == b'\n').count(), 2);
            }
            _ => panic!("expected lines"),
        }
        assert!(matches!(read_after(kind, 1), Next::Gone));
        assert!(matches!(read_after(kind, 4), Next::Nothing));
        server.shutdown();
    }

    #[tokio::test]
    async fn a_protobuf_server_writes_each_change_as_the_frame_of_its_json_and_refuses_json() {
        let json = crate::bench::pods::PodTemplates::new(4);
        let protobuf =
            crate::bench::pods_protobuf::PodProtobufTemplates::new(&json).expect("templates");
        let config = BenchServerConfig {
            protobuf: true,
            ..BenchServerConfig::default()
        };
        let objects = BenchObjects {
            pods: (0..8)
                .map(|i| Bytes::from(protobuf.render(i, i + 1, 0)))
                .collect(),
            revision: 8,
            ..BenchObjects::default()
        };
        let server = BenchServer::start(config, objects).await.expect("start");
        let mut expected = Vec::new();
        for (rv, index) in [(9, 3u64), (10, 5), (11, 3)] {
            server.modify_pods(vec![(
                index as usize,
                Bytes::from(protobuf.render(index, rv, rv)),
            )]);
            let value: serde_json::Value =
                serde_json::from_slice(&json.render(index, rv, rv)).expect("JSON");
            let message = crate::protobuf::encode_pod(&value).expect("encode");
            expected.extend(crate::protobuf::watch_frame(
                "MODIFIED",
                &crate::protobuf::wrap("v1", "Pod", &message),
            ));
        }
        match read_after(&server.shared.pods, 8) {
            Next::Lines(chunk, last) => assert_eq!((chunk.to_vec(), last), (expected, 11)),
            _ => panic!("expected frames"),
        }
        let refused = serve_pods(
            State(server.shared.clone()),
            Query(HashMap::new()),
            axum::http::HeaderMap::new(),
        )
        .await;
        assert_eq!(refused.status(), StatusCode::NOT_ACCEPTABLE);
        server.shutdown();
    }
}
