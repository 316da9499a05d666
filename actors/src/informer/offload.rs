//! Decoding off the informer's I/O task: list pages and large watch batches are decoded on
//! tokio's blocking pool, one page or one slice of a batch per thread, and handed back in the
//! order they arrived. The I/O task only reads bytes, routes objects and talks to the shards,
//! so it fetches the next page while the pages before it decode.

use super::InformerState;
use super::decode::{decode, describe};
use super::event::{LineFault, WatchLine, read_line};
use super::event_proto::{describe as describe_protobuf, read_frame};
use super::page::{Item, LossyText, PageError, split};
use bytes::Bytes;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tidemark_engine::proto::{List, Unknown};
use tidemark_engine::{Object, Resource};
use tokio::sync::oneshot;
use tokio::task::{JoinError, JoinHandle};

/// A watch batch shorter than this is decoded on the I/O task. Measured on the bench's two
/// cores shared with the server (PERF.md): handing batches of 16 lines or more to other threads
/// lost about a tenth of the churn rate kept up with; from 256 on it costs nothing measurable,
/// and a backlog that large is when decoding on every core pays.
pub const OFFLOAD_LINES: usize = 256;

/// How many threads decode at once: one per core.
pub fn decoders() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// What the I/O task needs of a page before its objects are decoded.
#[derive(Debug)]
pub struct PageFrame {
    /// The list's resourceVersion.
    pub resource_version: Option<String>,
    /// The token of the next page.
    pub continue_token: Option<String>,
    /// The server applied the `shardSelector` (KEP-5866).
    pub shard_info: bool,
}

/// A page being decoded: its frame arrives first, then its objects.
pub struct PageDecode {
    /// The page's frame, as soon as the page is split (before its objects decode).
    pub frame: oneshot::Receiver<Result<PageFrame, PageError>>,
    /// The page's objects in order; the ones that do not decode are counted and skipped.
    pub objects: JoinHandle<Vec<Object>>,
}

/// Starts decoding a list page of `resource` on the blocking pool.
pub fn decode_page(resource: Resource, state: Arc<InformerState>, body: Bytes) -> PageDecode {
    let (frame_tx, frame) = oneshot::channel();
    let objects = tokio::task::spawn_blocking(move || {
        let text = LossyText::new(&body);
        let page = match split(&text) {
            Ok(page) => page,
            Err(e) => {
                let _ = frame_tx.send(Err(e));
                return Vec::new();
            }
        };
        let _ = frame_tx.send(Ok(PageFrame {
            resource_version: page.resource_version.clone(),
            continue_token: page.continue_token.clone(),
            shard_info: page.shard_info,
        }));
        page.items
            .iter()
            .filter_map(|item| decode_item(resource, &state, item))
            .collect()
    });
    PageDecode { frame, objects }
}

/// Starts decoding a protobuf list page (`k8s\0`, a `runtime.Unknown` around a `*List`) of
/// `resource` on the blocking pool; as [`decode_page`] for JSON.
pub fn decode_protobuf_page(
    resource: Resource,
    state: Arc<InformerState>,
    body: Bytes,
) -> PageDecode {
    let (frame_tx, frame) = oneshot::channel();
    let objects = tokio::task::spawn_blocking(move || {
        let list = match Unknown::read(&body).and_then(|unknown| List::read(unknown.raw)) {
            Ok(list) => list,
            Err(e) => {
                let _ = frame_tx.send(Err(PageError::from(e)));
                return Vec::new();
            }
        };
        let _ = frame_tx.send(Ok(PageFrame {
            resource_version: list.resource_version.map(str::to_string),
            continue_token: list.continue_token.map(str::to_string),
            shard_info: false,
        }));
        state
            .protobuf_reads
            .fetch_add(list.items.len() as u64, Ordering::Relaxed);
        list.items
            .iter()
            .filter_map(|item| match Object::decode_protobuf(resource, item) {
                Ok((object, flagged)) => Some(note_flagged(resource, &state, object, flagged)),
                Err(e) => {
                    state.malformed.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(resource = %resource, object = %describe_protobuf(item), error = %e, "object cannot be decoded");
                    None
                }
            })
            .collect()
    });
    PageDecode { frame, objects }
}

/// Decodes a watch batch of `resource` (JSON lines, or protobuf frames when `protobuf`), one
/// event at a time, in order: on the blocking pool in one slice per core when it is large, on
/// the calling task otherwise.
pub async fn read_lines(
    resource: Resource,
    protobuf: bool,
    lines: Vec<Bytes>,
) -> Result<Vec<Result<WatchLine, LineFault>>, JoinError> {
    let read_line: fn(Resource, &[u8]) -> Result<WatchLine, LineFault> =
        if protobuf { read_frame } else { read_line };
    if lines.len() < OFFLOAD_LINES {
        return Ok(lines.iter().map(|line| read_line(resource, line)).collect());
    }
    let per_thread = lines.len().div_ceil(decoders());
    let mut lines = lines;
    let mut slices = Vec::new();
    while !lines.is_empty() {
        let rest = lines.split_off(per_thread.min(lines.len()));
        slices.push(std::mem::replace(&mut lines, rest));
    }
    let handles: Vec<_> = slices
        .into_iter()
        .map(|slice| {
            tokio::task::spawn_blocking(move || {
                slice
                    .iter()
                    .map(|line| read_line(resource, line))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut read = Vec::new();
    for handle in handles {
        read.extend(handle.await?);
    }
    Ok(read)
}

/// Counts and logs an object read leniently (a field of the wrong type, or marked malformed).
fn note_flagged(
    resource: Resource,
    state: &InformerState,
    object: Object,
    flagged: bool,
) -> Object {
    if flagged {
        state.lenient.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(resource = %resource, key = %object.key(), "object read leniently: a field has the wrong type");
    }
    object
}

fn decode_item(resource: Resource, state: &InformerState, item: &Item<'_>) -> Option<Object> {
    match item {
        Item::Json(raw) => decode_or_report(resource, state, raw),
        Item::InvalidUtf8(raw) => {
            state.malformed.fetch_add(1, Ordering::Relaxed);
            tracing::error!(resource = %resource, object = %describe(raw.get()),
                "object skipped: it holds bytes that are not UTF-8");
            None
        }
    }
}

fn decode_or_report(resource: Resource, state: &InformerState, raw: &RawValue) -> Option<Object> {
    match decode(resource, raw) {
        Ok((object, lenient)) => Some(note_flagged(resource, state, object, lenient)),
        Err(e) => {
            state.malformed.fetch_add(1, Ordering::Relaxed);
            tracing::error!(resource = %resource, object = %describe(raw.get()), error = %e, "object cannot be decoded");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(i: usize) -> String {
        format!(
            r#"{{"metadata":{{"namespace":"demo","name":"web-{i}","uid":"u{i}","resourceVersion":"{v}"}},"status":{{"phase":"Running"}}}}"#,
            v = i + 1
        )
    }

    fn page(items: &[String], next: Option<&str>) -> Bytes {
        let next = next.map_or(String::new(), |c| format!(r#","continue":"{c}""#));
        Bytes::from(format!(
            r#"{{"kind":"PodList","metadata":{{"resourceVersion":"99"{next}}},"items":[{}]}}"#,
            items.join(",")
        ))
    }

    #[tokio::test]
    async fn a_page_gives_its_frame_then_its_objects_in_order_skipping_a_bad_one() {
        let state = Arc::new(InformerState::default());
        let mut items: Vec<String> = (0..5).map(pod).collect();
        items[2] = r#"{"metadata":{"namespace":"demo","name":"odd","uid":[1]}}"#.to_string();
        let decode = decode_page(Resource::Pods, state.clone(), page(&items, Some("next")));
        let frame = decode.frame.await.expect("sent").expect("splits");
        assert_eq!(frame.continue_token.as_deref(), Some("next"));
        assert_eq!(frame.resource_version.as_deref(), Some("99"));
        let names: Vec<String> = decode
            .objects
            .await
            .expect("joins")
            .iter()
            .map(|o| o.key().name().to_string())
            .collect();
        assert_eq!(names, ["web-0", "web-1", "web-3", "web-4"]);
        assert_eq!(state.malformed.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_page_that_is_not_a_list_fails_through_its_frame() {
        let state = Arc::new(InformerState::default());
        let decode = decode_page(Resource::Pods, state, Bytes::from_static(b"[1,2"));
        assert!(decode.frame.await.expect("sent").is_err());
        assert!(decode.objects.await.expect("joins").is_empty());
    }

    #[tokio::test]
    async fn a_large_batch_decodes_on_several_threads_and_keeps_its_order() {
        let lines: Vec<Bytes> = (0..1000)
            .map(|i| Bytes::from(format!(r#"{{"type":"MODIFIED","object":{}}}"#, pod(i))))
            .collect();
        let read = read_lines(Resource::Pods, false, lines)
            .await
            .expect("joins");
        let versions: Vec<u64> = read
            .iter()
            .map(|line| match line {
                Ok(WatchLine::Applied(object, _)) => {
                    object.resource_version().map_or(0, |v| v.get())
                }
                other => panic!("not applied: {other:?}"),
            })
            .collect();
        assert_eq!(versions, (1..=1000).collect::<Vec<u64>>());
    }

    #[tokio::test]
    async fn a_small_batch_with_a_bad_line_keeps_its_place() {
        let lines = vec![
            Bytes::from(format!(r#"{{"type":"ADDED","object":{}}}"#, pod(0))),
            Bytes::from_static(b"garbage"),
            Bytes::from(format!(r#"{{"type":"DELETED","object":{}}}"#, pod(1))),
        ];
        let read = read_lines(Resource::Pods, false, lines)
            .await
            .expect("joins");
        assert!(matches!(read[0], Ok(WatchLine::Applied(..))));
        assert!(matches!(read[1], Err(LineFault::Malformed { .. })));
        assert!(matches!(read[2], Ok(WatchLine::Deleted(..))));
    }
}
