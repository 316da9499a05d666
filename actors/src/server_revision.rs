//! The highest revision of the API server this process has been answered with, shared by the
//! writers and barrier readers that learn it and the shards that judge their caches' lag by it.
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
///
/// let known = ServerRevision::default();
/// assert_eq!(known.highest(), None);
/// known.learn("42");
/// known.learn("17");
/// known.learn("not a number");
/// assert_eq!(known.highest().map(|r| r.get()), Some(42));
/// ```
#[derive(Debug, Default)]
pub struct ServerRevision(AtomicU64);

impl ServerRevision {
    /// The server answered with `resource_version`; one that is not a revision (not an integer)
    /// teaches nothing.
    pub fn learn(&self, resource_version: &str) {
        if let Ok(revision) = resource_version.parse::<u64>() {
            self.learn_revision(revision);
        }
    }

    /// The server has reached at least `revision`.
    pub fn learn_revision(&self, revision: u64) {
        self.0.fetch_max(revision, Ordering::Relaxed);
    }

    /// The highest revision learned, if any.
    pub fn highest(&self) -> Option<ResourceVersion> {
        ResourceVersion::new(self.0.load(Ordering::Relaxed))
    }
}
