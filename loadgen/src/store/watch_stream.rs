//! Watch streams: newline-delimited JSON events in revision order, with bookmarks, the
//! per-resource watch delay fault, timeouts and `410 Expired` for compacted versions.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use crate::apiserver::status::ApiError;
use crate::faults::Faults;
use crate::resource::Resource;
use crate::store::selector::Selectors;
use crate::store::watch_traffic::WatchTraffic;
use crate::store::{Event, EventType, LogRead, Store};

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// Synthetic ADDED events for every current object, then live events.
    Current,
    /// Every event after this revision.
    After(u64),
}

/// A parsed watch request.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// The resource watched.
    pub resource: Resource,
    /// Restrict to one namespace.
    pub namespace: Option<String>,
    /// Label and field selectors.
    pub selectors: Selectors,
    /// Where to start.
    pub start: WatchStart,
    /// Whether to send periodic bookmarks.
    pub bookmarks: bool,
    /// Whether to end the initial events with the `k8s.io/initial-events-end` bookmark.
    pub initial_events_end: bool,
    /// When to close the stream.
    pub timeout: Duration,
    /// The client's `User-Agent` (`""` when it sent none), to count its traffic apart.
    pub user_agent: String,
}

/// The longest a watch stays open. Upstream multiplies `timeoutSeconds` into a Go `Duration`,
/// which wraps around beyond 292 years; the simulator caps it instead of overflowing.
pub const MAX_WATCH_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// A watch's `timeoutSeconds`, read as upstream's `ListOptions` reads it: an int64 (anything
/// else is `400 BadRequest` with `strconv`'s words); absent or `0` is `default`; a negative
/// value ends the watch at once (upstream's timer fires immediately); at most
/// [`MAX_WATCH_TIMEOUT`].
pub fn timeout(text: Option<&str>, default: Duration) -> Result<Duration, ApiError> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(default);
    };
    let seconds = text.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!("strconv.ParseInt: parsing {text:?}: {why}"))
    })?;
    Ok(match seconds {
        0 => default,
        n if n < 0 => Duration::ZERO,
        n => Duration::from_secs(n.unsigned_abs()).min(MAX_WATCH_TIMEOUT),
    })
}

/// What a watch connection shares with the server.
#[derive(Debug, Clone)]
pub struct WatchContext {
    /// The store.
    pub store: Arc<Store>,
    /// Fault settings.
    pub faults: Arc<Faults>,
    /// How often bookmarks go out.
    pub bookmark_interval: Duration,
    /// Becomes true when the server shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// `ShardedListAndWatch`: whether `shardSelector` is honoured.
    pub sharded_list_and_watch: bool,
    /// What the watches sent.
    pub traffic: Arc<WatchTraffic>,
}

fn frame(kind: &str, object: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(object.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(kind.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(object);
    b.put_slice(b"}\n");
    b.freeze()
}

fn bookmark(r: Resource, rev: u64, initial_end: bool) -> Bytes {
    let mut meta = serde_json::json!({"resourceVersion": rev.to_string()});
    if initial_end {
        meta["annotations"] = serde_json::json!({"k8s.io/initial-events-end": "true"});
    }
    let obj =
        serde_json::json!({"kind": r.kind(), "apiVersion": r.api_version(), "metadata": meta});
    frame("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
}

/// The `ERROR` frame for a failure inside a watch stream.
pub fn error_frame(e: &ApiError) -> Bytes {
    frame(
        "ERROR",
        &serde_json::to_vec(&e.to_status()).unwrap_or_default(),
    )
}

fn too_old(rev: u64, compacted: u64) -> ApiError {
    ApiError::expired(format!("too old resource version: {rev} ({compacted})"))
}

/// The frame a watcher with this namespace and selectors sees for `e`, if any. A change that
/// makes an object start or stop matching the selector is an ADDED or DELETED, as upstream.
fn encode_event(e: &Event, ns: Option<&str>, sel: &Selectors) -> Option<Bytes> {
    if ns.is_some_and(|ns| e.key.0 != ns) {
        return None;
    }
    let now = e.kind != EventType::Deleted && sel.matches(&e.object.value);
    let before = e.prev.as_ref().is_some_and(|p| sel.matches(&p.value));
    let kind = match (e.kind, before, now) {
        (EventType::Added, _, true) => "ADDED",
        (EventType::Deleted, true, _) => "DELETED",
        (EventType::Modified, true, true) => "MODIFIED",
        (EventType::Modified, false, true) => "ADDED",
        (EventType::Modified, true, false) => "DELETED",
        _ => return None,
    };
    Some(frame(kind, &e.object.bytes))
}

/// Starts a watch and returns its streaming body.
pub fn watch_body(ctx: WatchContext, req: WatchRequest) -> Body {
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    tokio::spawn(run(ctx, req, tx));
    Body::from_stream(ReceiverStream::new(rx))
}

async fn run(
    mut ctx: WatchContext,
    req: WatchRequest,
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
) {
    let deadline = Instant::now() + req.timeout.min(MAX_WATCH_TIMEOUT);
    let r = req.resource;
    let ns = req.namespace.as_deref();
    let mut rev_rx = ctx.store.subscribe();
    let mut faults_rx = ctx.faults.subscribe();
    let epoch = ctx.faults.drop_epoch();
    let mut sent_events: u64 = 0;
    let shard_selector = req.selectors.shard.as_ref().map_or("", |s| s.text());
    let counter = ctx.traffic.counter(r, shard_selector, &req.user_agent);
    let send = |b: Bytes| {
        let tx = tx.clone();
        async move { tx.send(Ok(b)).await.is_ok() }
    };
    let send_event = |b: Bytes| {
        counter.sent(b.len());
        send(b)
    };
    let mut fetched = match req.start {
        WatchStart::Current => {
            rev_rx.borrow_and_update();
            let (items, rev) = ctx.store.all(r, ns);
            for item in items {
                if req.selectors.matches(&item.value)
                    && !send_event(frame("ADDED", &item.bytes)).await
                {
                    return;
                }
            }
            if req.initial_events_end && !send(bookmark(r, rev, true)).await {
                return;
            }
            rev
        }
        WatchStart::After(rev) => rev,
    };
    let mut pending: VecDeque<Arc<Event>> = VecDeque::new();
    let mut ticker = tokio::time::interval(ctx.bookmark_interval.max(Duration::from_millis(1)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.reset();
    loop {
        let latest = *rev_rx.borrow_and_update();
        match ctx.store.events_after(r, fetched) {
            LogRead::Events(events, to) => {
                pending.extend(events);
                fetched = to;
            }
            LogRead::Compacted(c) => {
                let _ = send(error_frame(&too_old(fetched, c))).await;
                return;
            }
        }
        let stalled = ctx.faults.is_stalled(r);
        let now = Instant::now();
        while let Some(e) = pending.front().filter(|_| !stalled) {
            if Instant::from_std(e.at) + ctx.faults.event_delay(r, e.rev, &e.object.value) > now {
                break;
            }
            if let Some(b) = encode_event(e, ns, &req.selectors) {
                if !send_event(b).await {
                    return;
                }
                sent_events += 1;
                let limit = ctx.faults.drop_watches_after(r);
                if limit > 0 && sent_events >= limit {
                    return;
                }
            }
            pending.pop_front();
        }
        if fetched < latest {
            continue;
        }
        // Every event of this resource at or below `through` has been sent.
        let through = pending.front().map_or(fetched, |e| e.rev - 1);
        let due = pending
            .front()
            .filter(|_| !stalled)
            .map(|e| Instant::from_std(e.at) + ctx.faults.event_delay(r, e.rev, &e.object.value));
        tokio::select! {
            changed = rev_rx.changed() => if changed.is_err() { return },
            _ = faults_rx.changed() => if ctx.faults.drop_epoch() != epoch { return },
            _ = tokio::time::sleep_until(due.unwrap_or(deadline)), if due.is_some() => {},
            _ = ticker.tick(), if req.bookmarks && !stalled => {
                if !send(bookmark(r, through, false)).await { return }
            },
            _ = tokio::time::sleep_until(deadline) => return,
            _ = ctx.shutdown.changed() => return,
            _ = tx.closed() => return,
        }
    }
}

/// A body with a single ERROR frame, for a watch that starts from a compacted revision.
pub fn expired_body(rev: u64, compacted: u64) -> Body {
    Body::from(error_frame(&too_old(rev, compacted)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_seconds_is_an_int64_capped_at_a_year() {
        let default = Duration::from_secs(1800);
        assert_eq!(timeout(None, default), Ok(default));
        assert_eq!(timeout(Some("0"), default), Ok(default));
        assert_eq!(timeout(Some("5"), default), Ok(Duration::from_secs(5)));
        assert_eq!(timeout(Some("-5"), default), Ok(Duration::ZERO));
        assert_eq!(
            timeout(Some("9223372036854775807"), default),
            Ok(MAX_WATCH_TIMEOUT)
        );
        let e = timeout(Some("18446744073709551615"), default).expect_err("out of range");
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.to_string(),
            "strconv.ParseInt: parsing \"18446744073709551615\": value out of range"
        );
        assert!(timeout(Some("soon"), default).is_err());
    }
    use crate::store::Key;
    use serde_json::json;

    fn event(kind: EventType, labels: serde_json::Value, prev: Option<serde_json::Value>) -> Event {
        let mk = |labels: serde_json::Value| {
            Arc::new(crate::store::Stored {
                value: json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}}),
                bytes: Bytes::from_static(b"{}"),
                rv: 5,
            })
        };
        let key: Key = ("ns".into(), "a".into());
        Event {
            rev: 5,
            resource: Resource::Pods,
            kind,
            key,
            object: mk(labels),
            prev: prev.map(mk),
            at: std::time::Instant::now(),
        }
    }

    fn kind_of(b: Option<Bytes>) -> Option<String> {
        b.and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["type"].as_str().map(str::to_string))
    }

    #[test]
    fn an_object_leaving_the_selector_is_deleted_for_that_watcher() {
        let sel = Selectors::parse(Some("app=web"), None).unwrap();
        let e = event(
            EventType::Modified,
            json!({"app": "db"}),
            Some(json!({"app": "web"})),
        );
        assert_eq!(
            kind_of(encode_event(&e, None, &sel)).as_deref(),
            Some("DELETED")
        );
        let e = event(
            EventType::Modified,
            json!({"app": "web"}),
            Some(json!({"app": "db"})),
        );
        assert_eq!(
            kind_of(encode_event(&e, None, &sel)).as_deref(),
            Some("ADDED")
        );
        let e = event(
            EventType::Modified,
            json!({"app": "web"}),
            Some(json!({"app": "web"})),
        );
        assert_eq!(kind_of(encode_event(&e, Some("other"), &sel)), None);
    }
}
