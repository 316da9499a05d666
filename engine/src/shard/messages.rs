//! The messages in and out of a shard, as raft-rs' `Ready`: a [`Change`] from a watch goes in;
//! an [`Output`] (a write, a barrier or live read, a probe, a report) comes out, and the runtime
//! answers the ones that ask with `Shard::write_done`, `barrier_done` or `live_read_done`.

use crate::key::{ObjectKey, Uid};
use crate::live_read::LiveReadId;
use crate::object::Object;
use crate::proof::BarrierId;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::write::{WriteId, WriteRequest};

/// Consecutive skips after which a parked key is reported as starving.
pub const STARVING_AFTER_SKIPS: u32 = 5;

/// A change to one object, from a watch.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// ADDED or MODIFIED.
    Applied(Object),
    /// DELETED, with the object's last state.
    Deleted(Object),
    /// The object now belongs to another shard (its controlling owner changed): this shard
    /// drops its copy, and its old owner no longer counts it. Not a deletion.
    Departed(Object),
}

impl Change {
    /// The object the change carries.
    pub fn object(&self) -> &Object {
        match self {
            Change::Applied(o) | Change::Deleted(o) | Change::Departed(o) => o,
        }
    }
}

/// Something the shard asks its runtime to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Perform a write and answer with [`Shard::write_done`](super::Shard::write_done).
    Write(WriteRequest),
    /// The plan these writes belong to was superseded (its primary changed spec or went away)
    /// while they were out: the writer should not send those it still holds back (waiting for
    /// the client-side rate limit) and answer each of them with
    /// [`WriteResult::Withdrawn`](crate::WriteResult::Withdrawn). A request, not a promise:
    /// writes already sent, or a writer that ignores this, are answered as usual. Latest first,
    /// so that a rate limiter can hand back the tokens they reserved.
    Withdraw(Vec<WriteId>),
    /// A parked key's safety timer ran out: the watermark of `resource` has not reached `target`.
    /// The runtime should check the watch (a cheap consistent read of the current revision).
    Probe {
        /// The controller.
        controller: &'static str,
        /// The key.
        key: ObjectKey,
        /// The resource whose watermark is stuck.
        resource: Resource,
        /// What it waits for.
        target: ResourceVersion,
        /// Current watermark.
        watermark: Option<ResourceVersion>,
    },
    /// Read the current revision with one cheap consistent read (a list of `resource` with
    /// `limit=1`) and answer with [`Shard::barrier_done`](super::Shard::barrier_done). Keys whose destructive decisions need
    /// proof wait for it.
    Barrier {
        /// Names the read.
        id: BarrierId,
        /// A resource to list (any works: the revision is global).
        resource: Resource,
    },
    /// A key's destructive work cannot be proven fresh (its barrier read failed): tell the
    /// owner of the object (upstream does it with a Warning Event on it).
    Degraded {
        /// The controller.
        controller: &'static str,
        /// The key.
        key: ObjectKey,
        /// Its resource.
        resource: Resource,
        /// Its UID, if cached.
        uid: Option<Uid>,
        /// A CamelCase reason.
        reason: &'static str,
        /// What happened.
        message: String,
    },
    /// A destructive decision read a cache known to lag: read these objects live (one
    /// consistent read each) and answer with [`Shard::live_read_done`](super::Shard::live_read_done); the decision is carried out only if
    /// the cache holds their current versions.
    LiveRead {
        /// Names the read.
        id: LiveReadId,
        /// The controller.
        controller: &'static str,
        /// The key whose decision waits.
        key: ObjectKey,
        /// What to read: the key's primary object first, then what the decision rests on.
        objects: Vec<(Resource, ObjectKey)>,
    },
    /// A key has been skipped [`STARVING_AFTER_SKIPS`] times or more in a row.
    Starving {
        /// The controller.
        controller: &'static str,
        /// The key.
        key: ObjectKey,
        /// Consecutive skips.
        skips: u32,
    },
}
