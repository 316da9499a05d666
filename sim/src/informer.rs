//! The informer of one resource, modelled on actors/src/informer/: a consistent list replaced
//! into every shard at once, then a watch read from the store's history (`events_after`), each
//! batch routed to the shards with its progress marker; on `410`, a dropped watch told to
//! relist, or a probe that finds the watch stalled, every shard hears `relisting` and the list
//! comes after the reflector's backoff.

use std::time::Duration;
use tidemark_engine::{Placements, Resource, ShardRouter};

/// A watch silent this long while the server is past a parked key's target is stalled
/// (actors/src/informer/mod.rs `STALLED_AFTER`).
pub const STALLED_AFTER: Duration = Duration::from_secs(30);

/// One resource's list/watch state.
#[derive(Debug)]
pub struct Informer {
    /// The resource.
    pub resource: Resource,
    /// The current watch connection; batches of an older one are lost with it.
    pub(crate) watch: u64,
    /// The current list attempt.
    pub(crate) list: u64,
    pub(crate) watching: bool,
    /// The store revision the watch has read up to.
    pub(crate) pos: u64,
    /// The version the shards have been given up to: where a dropped watch resumes.
    pub(crate) delivered: u64,
    pub(crate) placements: Placements,
    /// When the last batch was (or will be) handed over: batches of one resource stay in order.
    pub(crate) last_delivery: Duration,
    /// When progress last reached the shards.
    pub(crate) last_progress: Duration,
    /// The highest progress marker sent so far (delivered or in flight).
    pub(crate) progress_sent: u64,
}

impl Informer {
    /// An informer that has not listed yet.
    pub fn new(resource: Resource, router: &ShardRouter) -> Self {
        Self {
            resource,
            watch: 0,
            list: 0,
            watching: false,
            pos: 0,
            delivered: 0,
            placements: Placements::new(router),
            last_delivery: Duration::ZERO,
            last_progress: Duration::ZERO,
            progress_sent: 0,
        }
    }

    /// The process died: nothing in flight for this informer counts any more.
    pub fn stop(&mut self) {
        self.watch += 1;
        self.list += 1;
        self.watching = false;
    }
}
