//! The revisioned object store: one global revision counter, pre-encoded objects, an
//! append-only event log (with each event's previous object) for watches and snapshots.

mod body;
pub mod commit;
pub mod customs;
pub mod defaults;
pub mod deletion;
pub mod gc;
pub mod list;
pub mod patch;
mod read;
mod requests;
pub mod selector;
pub mod shard_selector;
mod stored;
pub mod watch_stream;
pub mod watch_traffic;
mod write;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

use crate::resource::Resource;

pub use commit::{Commit, CommitObserver, RequestId, Verb};
pub use requests::{PodStarted, PodTerminating, Preconditions, Subresource, WriteOptions};
pub use stored::{Event, EventType, LogRead, Stored};

/// An object's key: `(namespace, name)`. Ordered as the real server orders lists.
pub type Key = (String, String);

/// User agent of in-process writes.
pub const LOADGEN_USER_AGENT: &str = "loadgen";
pub use crate::store::gc::GC_USER_AGENT;

pub(crate) struct Inner {
    pub(crate) revision: u64,
    pub(crate) objects: [BTreeMap<Key, Arc<Stored>>; Resource::SLOTS],
    /// Contiguous: `log[i].rev == compacted + 1 + i`.
    log: VecDeque<Arc<Event>>,
    /// The oldest revision whose state can be reconstructed; the log holds every later event.
    compacted: u64,
    window: u64,
    /// Told of every commit under the lock (the invariant oracle is one).
    observers: Vec<Box<dyn CommitObserver>>,
    /// Dependents of every controlling owner, by the owner's uid.
    pub(crate) dependents: crate::store::gc::Dependents,
    /// Owners in Foreground deletion, by uid, waiting for their dependents to go.
    pub(crate) foreground: std::collections::HashMap<String, (Resource, Key)>,
}

/// The objects as they stand under the store's lock (see [`Store::read_locked`]).
#[derive(Clone, Copy)]
pub struct LockedView<'a> {
    objects: &'a [BTreeMap<Key, Arc<Stored>>; Resource::SLOTS],
}

impl<'a> LockedView<'a> {
    /// The object of `resource` at `key`, if stored.
    pub fn get(&self, resource: Resource, key: &Key) -> Option<&'a serde_json::Value> {
        self.objects[resource.index()].get(key).map(|s| &s.value)
    }

    /// Every stored object of `resource`, in key order.
    pub fn values(&self, resource: Resource) -> impl Iterator<Item = &'a serde_json::Value> {
        self.objects[resource.index()].values().map(|s| &s.value)
    }
}

/// The store. All writes serialise on one short lock; commit order is revision order.
pub struct Store {
    pub(crate) inner: Mutex<Inner>,
    /// The revision of the last write to each resource, readable without the lock (the
    /// authorizer rebuilds its RBAC index when an RBAC kind's moves).
    resource_revisions: [std::sync::atomic::AtomicU64; Resource::SLOTS],
    /// The custom resources served: one per valid CustomResourceDefinition stored.
    customs: parking_lot::RwLock<Vec<Resource>>,
    revision_tx: watch::Sender<u64>,
    kubelet: Option<mpsc::UnboundedSender<PodStarted>>,
    pub(crate) terminations: std::sync::OnceLock<mpsc::UnboundedSender<PodTerminating>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("revision", &self.current_revision())
            .finish()
    }
}

impl Store {
    /// A store keeping `window` revisions of history, optionally telling a kubelet of new Pods.
    pub fn new(window: u64, kubelet: Option<mpsc::UnboundedSender<PodStarted>>) -> Store {
        // Revision 1 is the bootstrap revision: resourceVersions start at 2, never "0".
        Store {
            inner: Mutex::new(Inner {
                revision: 1,
                objects: std::array::from_fn(|_| BTreeMap::new()),
                log: VecDeque::new(),
                compacted: 1,
                window: window.max(1),
                observers: Vec::new(),
                dependents: Default::default(),
                foreground: Default::default(),
            }),
            resource_revisions: std::array::from_fn(|_| Default::default()),
            customs: parking_lot::RwLock::new(Vec::new()),
            revision_tx: watch::Sender::new(1),
            kubelet,
            terminations: std::sync::OnceLock::new(),
        }
    }

    /// Tells `observer` of every commit from now on, in revision order, under the write lock.
    pub fn observe_commits(&self, observer: impl CommitObserver + 'static) {
        self.inner.lock().observers.push(Box::new(observer));
    }

    /// Calls `f` with a view of the objects while no commit can happen: what `f` decides is
    /// ordered exactly against the commits observers see.
    pub fn read_locked<R>(&self, f: impl FnOnce(LockedView<'_>) -> R) -> R {
        let inner = self.inner.lock();
        f(LockedView {
            objects: &inner.objects,
        })
    }

    /// The revision of the last committed write.
    pub fn current_revision(&self) -> u64 {
        self.inner.lock().revision
    }

    /// The oldest revision that can still be listed or watched from.
    pub fn compacted_revision(&self) -> u64 {
        self.inner.lock().compacted
    }

    /// A receiver of the latest revision, notified on every commit.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision_tx.subscribe()
    }

    /// Waits until the revision reaches `rev`; false after `timeout`.
    pub async fn wait_for_revision(&self, rev: u64, timeout: Duration) -> bool {
        let mut rx = self.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|v| *v >= rev))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}
