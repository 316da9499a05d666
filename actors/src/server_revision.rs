//! The highest revision of the API server this process has been answered with, shared by the
//! writers, barrier readers and probes that learn it and the shards that judge their caches'
//! lag by it.
//!
//! Each shard learns from its own writes; without this a shard whose cache trailed a revision
//! only another shard's write had shown would not know it lagged, and would carry out a create
//! or delete on a spec the user had since changed.

use std::sync::atomic::{AtomicU64, Ordering};
use tidemark_engine::ResourceVersion;

/// A revision that only grows.
///
/// ```
/// use tidemark_actors::server_revision::ServerRevision;
/// use tidemark_engine::ResourceVersion;
///
/// let known = ServerRevision::default();
/// assert_eq!(known.highest(), None);
/// for answered in ["42", "17"] {
///     known.learn(ResourceVersion::parse(answered)?);
/// }
/// assert_eq!(known.highest().map(|r| r.get()), Some(42));
/// # Ok::<(), tidemark_engine::NotComparable>(())
/// ```
#[derive(Debug, Default)]
pub struct ServerRevision(AtomicU64);

impl ServerRevision {
    /// The server has reached at least `revision`.
    pub fn learn(&self, revision: ResourceVersion) {
        self.0.fetch_max(revision.get(), Ordering::Relaxed);
    }

    /// The highest revision learned, if any.
    pub fn highest(&self) -> Option<ResourceVersion> {
        ResourceVersion::new(self.0.load(Ordering::Relaxed))
    }
}
