//! The informer's consistent paged list, replaced into every shard at once. Pages are fetched
//! one after another (each needs the previous one's continue token, read from the page's
//! [`head`](super::head) as soon as it arrives) while the pages before them are split and
//! decoded on other threads ([`offload`](super::offload)); objects are routed in page order.

use super::head::{PageHead, read_head};
use super::offload::{PageDecode, PageFrame, decode_page, decode_protobuf_page, decoders};
use super::{Informer, ListError, PAGE_SIZE, version_of};
use crate::client::response::fetch;
use crate::paths::{collection, with_shard_selector};
use crate::shard_actor::Replace;
use futures::future::join_all;
use kube::api::{ListParams, VersionMatch};
use kube::core::Request;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use tidemark_engine::{Object, Placements, ResourceVersion};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The objects of one list, per shard, as they are routed.
struct Routed {
    per_shard: Vec<Vec<Object>>,
    placements: Placements,
}

/// A page fetched and being decoded.
struct Pending {
    /// What its head said, when the list went on from it; its frame must agree.
    head: Option<PageHead>,
    /// Its frame, unless it was awaited already.
    frame: Option<oneshot::Receiver<Result<PageFrame, super::page::PageError>>>,
    objects: JoinHandle<Vec<Object>>,
}

/// Whether a page's frame says what its head said: a list whose metadata differs before and
/// after its items is not one JSON object a server could have meant.
fn agrees(head: &PageHead, frame: &PageFrame) -> bool {
    head.continue_token == frame.continue_token
        && head.resource_version == frame.resource_version
        && head.shard_info == frame.shard_info
}

impl Informer {
    /// One page of the list, rate limited, its body read in full within the client's deadline.
    async fn page(&self, params: &ListParams) -> Result<bytes::Bytes, ListError> {
        let request = Request::new(collection(self.resource, None)).list(params)?;
        let request = self.accepting(with_shard_selector(request, self.selector()));
        self.limiter.acquire().await;
        Ok(fetch(&self.client, request, self.limits.list_page).await?)
    }

    /// A consistent paged list (`resourceVersion` unset), replaced into every shard at once.
    ///
    /// A relist asks for `resourceVersionMatch=NotOlderThan` the highest version this informer
    /// has seen, and a list older than that is refused: replacing the cache with it would move
    /// the cache back in time (the "time travel" of a lagging API server replica), and keys whose
    /// records were cleared as caught up would then act on a past state.
    pub(super) async fn list(&mut self) -> Result<String, ListError> {
        if let Some(resync) = &mut self.resync {
            self.epoch = *resync.borrow_and_update();
        }
        if let Some(ranges) = &mut self.ranges {
            self.held = Some(ranges.borrow_and_update().clone());
        }
        if self.holds_nothing() {
            return Ok(self.replace_with_nothing().await);
        }
        let mut routed = Routed {
            per_shard: vec![Vec::new(); self.shards.len()],
            placements: Placements::new(&self.router),
        };
        let seen = ResourceVersion::new(self.state.watermark.load(Ordering::Relaxed))
            .filter(|_| self.consistent_relists);
        let mut decoding: VecDeque<Pending> = VecDeque::new();
        let mut token: Option<String> = None;
        let version = loop {
            let (resource_version, version_match) = match (&token, seen) {
                (None, Some(seen)) => (Some(seen.to_string()), Some(VersionMatch::NotOlderThan)),
                _ => (None, None),
            };
            let params = ListParams {
                limit: Some(PAGE_SIZE),
                continue_token: token.clone(),
                resource_version,
                version_match,
                ..ListParams::default()
            };
            let body = self.page(&params).await?;
            // The server answers in protobuf when asked and able, in JSON otherwise: the body
            // says which (every protobuf object starts with `k8s\0`).
            let (head, PageDecode { frame, objects }) =
                if body.starts_with(tidemark_engine::proto::envelope::MAGIC) {
                    (
                        None,
                        decode_protobuf_page(self.resource, self.state.clone(), body),
                    )
                } else {
                    (
                        read_head(&body),
                        decode_page(self.resource, self.state.clone(), body),
                    )
                };
            let (next, list_version, shard_info, frame) = match head {
                Some(ref head) => (
                    head.continue_token.clone(),
                    head.resource_version.clone(),
                    head.shard_info,
                    Some(frame),
                ),
                None => {
                    let frame = match frame.await {
                        Ok(frame) => frame?,
                        // The decode ended without a frame: its join error says why.
                        Err(_) => return Err(join_error(objects).await),
                    };
                    (
                        frame.continue_token,
                        frame.resource_version,
                        frame.shard_info,
                        None,
                    )
                }
            };
            decoding.push_back(Pending {
                head,
                frame,
                objects,
            });
            if token.is_none() && self.selector().is_some() {
                self.note_sharding(shard_info);
            }
            while decoding.len() > decoders() {
                self.route_next(&mut decoding, &mut routed).await?;
            }
            match next {
                Some(next) => token = Some(next),
                None => break list_version.unwrap_or_default(),
            }
        };
        while !decoding.is_empty() {
            self.route_next(&mut decoding, &mut routed).await?;
        }
        let parsed = version_of(Some(&version));
        if let (Some(seen), Some(listed)) = (seen, parsed)
            && listed < seen
        {
            self.state.stale_lists.fetch_add(1, Ordering::Relaxed);
            return Err(ListError::OlderThanSeen { listed, seen });
        }
        let sends = self
            .shards
            .iter()
            .zip(routed.per_shard)
            .map(|(shard, objects)| {
                shard.send(Replace {
                    resource: self.resource,
                    objects,
                    version: parsed,
                    epoch: self.epoch,
                })
            });
        join_all(sends).await;
        self.placements = routed.placements;
        self.state.lists.fetch_add(1, Ordering::Relaxed);
        if let Some(v) = parsed {
            self.state.watermark.store(v.get(), Ordering::Relaxed);
        }
        self.state.synced.store(true, Ordering::Relaxed);
        tracing::info!(resource = %self.resource, %version, "list replaced in every shard");
        Ok(version)
    }

    /// Waits for the oldest page still decoding and routes its objects to their shards.
    async fn route_next(
        &self,
        decoding: &mut VecDeque<Pending>,
        routed: &mut Routed,
    ) -> Result<(), ListError> {
        let Some(pending) = decoding.pop_front() else {
            return Ok(());
        };
        if let (Some(head), Some(frame)) = (&pending.head, pending.frame) {
            let frame = match frame.await {
                Ok(frame) => frame?,
                Err(_) => return Err(join_error(pending.objects).await),
            };
            if !agrees(head, &frame) {
                return Err(ListError::HeadDisagrees);
            }
        }
        for object in pending.objects.await? {
            if !self.keeps(&object) {
                continue;
            }
            if self.resource.broadcast() {
                for slot in routed.per_shard.iter_mut() {
                    slot.push(object.clone());
                }
            } else {
                let route = self.router.route(&object);
                routed.placements.listed(&object, route);
                route.deliver(object, &mut routed.per_shard);
            }
        }
        Ok(())
    }

    /// Empties every shard's slice of this resource (a replica holding no range), with no
    /// version: the next list, when a range is gained, brings one.
    async fn replace_with_nothing(&mut self) -> String {
        let sends = self.shards.iter().map(|shard| {
            shard.send(Replace {
                resource: self.resource,
                objects: Vec::new(),
                version: None,
                epoch: self.epoch,
            })
        });
        join_all(sends).await;
        self.placements = Placements::new(&self.router);
        self.state.lists.fetch_add(1, Ordering::Relaxed);
        self.state.synced.store(true, Ordering::Relaxed);
        tracing::info!(resource = %self.resource, "no range held: nothing listed");
        String::new()
    }
}

/// The error of a page's decode that ended without sending its frame.
async fn join_error(objects: JoinHandle<Vec<Object>>) -> ListError {
    match objects.await {
        Err(e) => ListError::Decode(e),
        Ok(_) => ListError::DecodeVanished,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(token: Option<&str>) -> PageHead {
        PageHead {
            resource_version: Some("9".into()),
            continue_token: token.map(str::to_string),
            shard_info: false,
        }
    }

    fn frame(token: Option<&str>) -> PageFrame {
        PageFrame {
            resource_version: Some("9".into()),
            continue_token: token.map(str::to_string),
            shard_info: false,
        }
    }

    #[test]
    fn a_frame_agrees_with_the_head_that_said_the_same() {
        assert!(agrees(&head(Some("c")), &frame(Some("c"))));
        assert!(agrees(&head(None), &frame(None)));
    }

    #[test]
    fn a_frame_with_another_token_version_or_shard_info_contradicts_its_head() {
        assert!(!agrees(&head(Some("c")), &frame(Some("d"))));
        assert!(!agrees(&head(None), &frame(Some("c"))));
        let mut later = frame(None);
        later.resource_version = Some("10".into());
        assert!(!agrees(&head(None), &later));
        let mut sharded = frame(None);
        sharded.shard_info = true;
        assert!(!agrees(&head(None), &sharded));
    }
}
