//! The watch of an informer: opened from the last version, read line by line under the line
//! cap and the idle timeout, each batch routed to the shards with its progress marker.

use super::event::{LineFault, WatchLine};
use super::frames::{FrameReader, WatchReader};
use super::lines::{LineError, LineReader};
use super::offload::read_lines;
use super::{
    ERROR_BODY_LIMIT, ERROR_BODY_TIMEOUT, Informer, MAX_BATCH, VERY_SHORT_WATCH,
    WATCH_TIMEOUT_SECS, WatchEnd,
};
use crate::client::response::{read_at_most, status_error};
use crate::paths::{collection, with_shard_selector};
use crate::shard_actor::Batch;
use futures::future::join_all;
use kube::api::WatchParams;
use kube::core::Request;
use std::sync::atomic::Ordering;
use tidemark_engine::{Change, Object, ResourceVersion};
use tokio::sync::watch;
use tokio::time::Instant;

impl Informer {
    /// Opens a watch from `from`: its lines, or how it ended before it began.
    pub(super) async fn open_watch(
        &self,
        from: &str,
    ) -> Result<WatchReader<kube::client::Body>, WatchEnd> {
        let params = WatchParams {
            bookmarks: true,
            timeout: Some(WATCH_TIMEOUT_SECS),
            ..WatchParams::default()
        };
        let request = Request::new(collection(self.resource, None))
            .watch(&params, from)
            .map_err(|e| WatchEnd::Failed(format!("building the watch request: {e}")))?;
        let request = self.accepting(with_shard_selector(request, self.selector()));
        self.limiter.acquire().await;
        let response = self
            .client
            .send(request.map(kube::client::Body::from))
            .await
            .map_err(|e| WatchEnd::Failed(crate::errors::describe(&e)))?;
        let status = response.status();
        if status.is_success() {
            let protobuf = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with(tidemark_engine::proto::MEDIA_TYPE));
            let body = response.into_body();
            let limit = self.limits.watch_line;
            return Ok(if protobuf {
                WatchReader::Frames(FrameReader::new(body, limit))
            } else {
                WatchReader::Lines(LineReader::new(body, limit))
            });
        }
        if status.as_u16() == 410 {
            return Err(WatchEnd::relist("410 Gone"));
        }
        let body = tokio::time::timeout(
            ERROR_BODY_TIMEOUT,
            read_at_most(response.into_body(), ERROR_BODY_LIMIT),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
        Err(WatchEnd::Failed(
            status_error(status.as_u16(), &body).to_string(),
        ))
    }

    pub(super) async fn watch(
        &mut self,
        from: &mut String,
        shutdown: &mut watch::Receiver<bool>,
    ) -> WatchEnd {
        if self.holds_nothing() {
            return self.wait_for_ranges(shutdown).await;
        }
        if self.ranges_moved() {
            return WatchEnd::Relist {
                why: "the ranges held changed",
                backoff: false,
            };
        }
        let idle = self.limits.watch_idle;
        let mut lines = match tokio::time::timeout(idle, self.open_watch(from)).await {
            Ok(Ok(lines)) => lines,
            Ok(Err(end)) => return end,
            Err(_) => {
                return WatchEnd::Failed(format!("the watch was not answered within {idle:?}"));
            }
        };
        let opened = Instant::now();
        let mut lines_seen = false;
        let mut last_progress = Instant::now();
        let mut per_shard: Vec<Vec<Change>> = vec![Vec::new(); self.shards.len()];
        loop {
            let resync_rx = self.resync.as_mut();
            let resync = async move {
                match resync_rx {
                    Some(r) => r.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            let ranges_rx = self.ranges.as_mut();
            let ranges_changed = async move {
                match ranges_rx {
                    Some(r) => r.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            let batch = tokio::select! {
                batch = tokio::time::timeout(idle, lines.next_batch(MAX_BATCH)) => batch,
                probe = self.probes.recv() => {
                    if let Some(probe) = probe
                        && self.answer_probe(probe, last_progress).await
                    {
                        return WatchEnd::relist("watch stalled behind the server");
                    }
                    continue;
                }
                true = resync => return WatchEnd::Relist { why: "a restarted shard needs its slice", backoff: false },
                true = ranges_changed => return WatchEnd::Relist { why: "the ranges held changed", backoff: false },
                _ = shutdown.changed() => return WatchEnd::Shutdown,
            };
            let batch = match batch {
                Err(_) => {
                    tracing::warn!(resource = %self.resource, server = %self.server, idle_ms = idle.as_millis() as u64,
                        "watch sent nothing, not even a bookmark; renewing it");
                    return WatchEnd::Renew;
                }
                Ok(Err(LineError::TooLong { limit })) => {
                    self.state.malformed.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(resource = %self.resource, server = %self.server, limit,
                        "watch line longer than the limit: malformed event, dropping the stream");
                    return WatchEnd::relist("watch line over the limit");
                }
                Ok(Err(LineError::Body(e))) => return WatchEnd::Failed(e.to_string()),
                Ok(Ok(batch)) if batch.is_empty() => {
                    if !lines_seen && opened.elapsed() < VERY_SHORT_WATCH {
                        return WatchEnd::relist(
                            "very short watch: closed within a second with no event",
                        );
                    }
                    return WatchEnd::Renew;
                }
                Ok(Ok(batch)) => batch,
            };
            lines_seen = true;
            // A batch read after the ranges changed must not move the watermark of a cache that
            // still holds the old ranges: the shards would take it for the takeover's.
            if self.ranges_moved() {
                return WatchEnd::Relist {
                    why: "the ranges held changed",
                    backoff: false,
                };
            }
            let mut progress: Option<ResourceVersion> = None;
            let mut end = None;
            let bytes: usize = batch.iter().map(|line| line.len()).sum();
            self.state
                .watch_bytes
                .fetch_add(bytes as u64, Ordering::Relaxed);
            if lines.is_protobuf() {
                self.state
                    .protobuf_reads
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
            }
            let read = match read_lines(self.resource, lines.is_protobuf(), batch).await {
                Ok(read) => read,
                Err(e) => return WatchEnd::Failed(format!("decoding a watch batch failed: {e}")),
            };
            for line in read {
                let (change, version) = match line {
                    Ok(WatchLine::Applied(object, lenient)) => {
                        self.note_lenient(&object, lenient);
                        let v = object.resource_version();
                        (Some(Change::Applied(object)), v)
                    }
                    Ok(WatchLine::Deleted(object, lenient)) => {
                        self.note_lenient(&object, lenient);
                        let v = object.resource_version();
                        (Some(Change::Deleted(object)), v)
                    }
                    Ok(WatchLine::Bookmark(v)) => (None, Some(v)),
                    Ok(WatchLine::Error { code: 410, .. }) => {
                        end = Some(WatchEnd::relist("410 Gone"));
                        break;
                    }
                    Ok(WatchLine::Error { description, .. }) => {
                        end = Some(WatchEnd::Failed(description));
                        break;
                    }
                    Err(fault) => {
                        self.state.malformed.fetch_add(1, Ordering::Relaxed);
                        tracing::error!(resource = %self.resource, error = %fault, "watch event skipped; relisting");
                        end = Some(WatchEnd::relist(match fault {
                            LineFault::Malformed { .. } => "malformed watch event",
                            LineFault::Undecodable { .. } => "undecodable watch event",
                        }));
                        break;
                    }
                };
                if let Some(v) = version {
                    progress = Some(progress.map_or(v, |p| p.max(v)));
                    *from = v.to_string();
                }
                let change = change.filter(|c| self.keeps(c.object()));
                if let Some(change) = change {
                    if self.resource.broadcast() {
                        for slot in per_shard.iter_mut() {
                            slot.push(change.clone());
                        }
                    } else {
                        let placement = self.placements.place(&self.router, &change);
                        if let Change::Applied(object) = &change {
                            for left in &placement.left {
                                per_shard[left.0].push(Change::Departed(object.clone()));
                            }
                        }
                        placement.route.deliver(change, &mut per_shard);
                    }
                    self.state.events.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.deliver(&mut per_shard, progress).await;
            if progress.is_some() {
                last_progress = Instant::now();
            }
            if let Some(end) = end {
                return end;
            }
        }
    }

    /// Counts and logs an object of the watch that was read leniently.
    fn note_lenient(&self, object: &Object, lenient: bool) {
        if lenient {
            self.state.lenient.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(resource = %self.resource, key = %object.key(), "object read leniently: a field has the wrong type");
        }
    }

    /// Holding no range, there is nothing to watch: waits until a range is gained (then
    /// relists) or the manager stops.
    async fn wait_for_ranges(&mut self, shutdown: &mut watch::Receiver<bool>) -> WatchEnd {
        let Some(ranges) = self.ranges.as_mut() else {
            return WatchEnd::Renew;
        };
        tokio::select! {
            changed = ranges.changed() => match changed {
                Ok(()) => WatchEnd::Relist { why: "the ranges held changed", backoff: false },
                Err(_) => WatchEnd::Shutdown,
            },
            _ = shutdown.changed() => WatchEnd::Shutdown,
        }
    }

    /// Sends each shard its events and the batch's progress marker, and waits until every shard
    /// has taken them: at most one batch per shard is in flight (backpressure).
    pub(super) async fn deliver(
        &self,
        per_shard: &mut [Vec<Change>],
        progress: Option<ResourceVersion>,
    ) {
        if progress.is_none() && per_shard.iter().all(Vec::is_empty) {
            return;
        }
        let sends = self
            .shards
            .iter()
            .zip(per_shard.iter_mut())
            .map(|(shard, changes)| {
                shard.send(Batch {
                    resource: self.resource,
                    changes: std::mem::take(changes),
                    progress,
                })
            });
        join_all(sends).await;
        if let Some(v) = progress {
            self.state.watermark.fetch_max(v.get(), Ordering::Relaxed);
        }
    }
}
