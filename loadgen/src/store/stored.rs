//! What the store keeps: an object with its encoding, and the log of committed events.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;

use crate::resource::Resource;
use crate::store::Key;

/// An object as stored: its JSON value and the same value pre-encoded.
#[derive(Debug)]
pub struct Stored {
    /// The object.
    pub value: Value,
    /// `value` encoded as JSON, with `kind` and `apiVersion`.
    pub bytes: Bytes,
    /// The object's resourceVersion (the revision of its last write).
    pub rv: u64,
}

impl Stored {
    pub(crate) fn encode(value: Value, rv: u64) -> Arc<Stored> {
        let bytes = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Arc::new(Stored { value, bytes, rv })
    }
}

/// The type of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The watch event `type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed write, as kept in the event log.
#[derive(Debug)]
pub struct Event {
    /// The revision of the write.
    pub rev: u64,
    /// The resource written.
    pub resource: Resource,
    /// What happened.
    pub kind: EventType,
    /// The key of the object.
    pub key: Key,
    /// The new state; for a deletion the last state with the deletion's revision.
    pub object: Arc<Stored>,
    /// The state before the write (none for a creation).
    pub prev: Option<Arc<Stored>>,
    /// When the write committed.
    pub at: Instant,
}

/// The result of reading events from the log.
#[derive(Debug)]
pub enum LogRead {
    /// Events (of the requested resource) after the position, and the revision read up to.
    Events(Vec<Arc<Event>>, u64),
    /// The position is older than the compaction point (given).
    Compacted(u64),
}
