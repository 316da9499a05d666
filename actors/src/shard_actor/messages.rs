//! The messages a shard actor takes: watch batches and relists from the informers, write and
//! read answers, leadership changes, the connection of its writer, and the snapshot it gives.

use crate::barrier::ReadRequest;
use crate::events::EventRecorder;
use crate::supervision::Down;
use actix::Message;
use std::time::Instant;
use tidemark_engine::{
    Change, ControllerStats, Object, Resource, ResourceVersion, Uid, WriteId, WriteRequest,
    WriteResult,
};
use tokio::sync::mpsc;

/// Watch events for this shard, then the progress marker of the batch they came in.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Batch {
    /// The resource.
    pub resource: Resource,
    /// Events that belong to this shard, in revision order.
    pub changes: Vec<Change>,
    /// Every event of `resource` up to this version has now been delivered.
    pub progress: Option<ResourceVersion>,
}

/// A list (initial or relist): replace the shard's slice atomically.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Replace {
    /// The resource.
    pub resource: Resource,
    /// This shard's objects of the list.
    pub objects: Vec<Object>,
    /// The list's resourceVersion.
    pub version: Option<ResourceVersion>,
    /// The resync request (of a restarted shard) that was current when the list began.
    pub epoch: u64,
}

/// The watch of `resource` ended for a relist: until the list replaces it, the shard's slice
/// misses events for certain.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Relisting {
    /// The resource.
    pub resource: Resource,
}

/// The answer to a write.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WriteDone {
    /// Which write.
    pub id: WriteId,
    /// The answer.
    pub result: WriteResult,
}

/// This process became leader at `revision` (its takeover write): reconcile again once the
/// cache has reached it, and carry out no destructive decision before `destructive_from`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Lead {
    /// The takeover's resourceVersion.
    pub revision: Option<ResourceVersion>,
    /// When the previous leader's writes can no longer commit (its write deadline after the
    /// takeover); `None` when unknown to matter (no fencing).
    pub destructive_from: Option<Instant>,
}

/// Under scale-out: whether this process is the manager-wide leader, which alone reconciles
/// cluster-scoped keys (Nodes) while the ranges held decide the rest.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LeadCluster {
    /// This process holds the manager's Lease.
    pub leading: bool,
}

/// This process is no longer leader: keep the cache warm, reconcile nothing.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Follow;

/// Asks for the shard's figures.
#[derive(Message)]
#[rtype(result = "ShardSnapshot")]
pub struct Snapshot;

/// A shard's figures at one moment.
#[derive(Clone, Debug)]
pub struct ShardSnapshot {
    /// Per controller.
    pub controllers: Vec<ControllerStats>,
    /// Per resource: synced, watermark, cached objects.
    pub resources: Vec<(Resource, bool, Option<ResourceVersion>, usize)>,
    /// Which shard.
    pub shard: usize,
    /// Times the shard panicked and was replaced.
    pub restarts: u64,
    /// Why the shard is down, while it recovers from a panic.
    pub down: Option<Down>,
}

/// A probe a parked key asked for, forwarded to the informer of its resource.
#[derive(Clone, Debug)]
pub struct ProbeRequest {
    /// The resource whose watermark looks stuck.
    pub resource: Resource,
    /// The version a key waits for.
    pub target: ResourceVersion,
    /// The shard's watermark.
    pub watermark: Option<ResourceVersion>,
}

/// Where probes go: one channel per resource, indexed by [`Resource::index`].
pub type ProbeRoutes = std::sync::Arc<Vec<mpsc::UnboundedSender<ProbeRequest>>>;

/// Connects a writer and a barrier reader to a running actor.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ConnectWriter {
    /// Where writes (and withdrawals of writes) go.
    pub writes: mpsc::UnboundedSender<ToWriter>,
    /// Where barrier and live reads go.
    pub barriers: mpsc::UnboundedSender<ReadRequest>,
    /// Where Warning Events go.
    pub events: std::sync::Arc<EventRecorder>,
    /// The highest server revision any shard's write or barrier was answered with.
    pub server_revision: std::sync::Arc<crate::server_revision::ServerRevision>,
}

/// What a shard tells its writer.
#[derive(Debug)]
pub enum ToWriter {
    /// Send a write.
    Write(Outgoing),
    /// Do not send these writes if they still wait for the rate limit
    /// ([`Output::Withdraw`](tidemark_engine::Output::Withdraw)).
    Withdraw(Vec<WriteId>),
}

/// A write with what its Event needs to know about the object whose reconcile asked for it.
#[derive(Debug)]
pub struct Outgoing {
    /// The write.
    pub request: WriteRequest,
    /// The owner's UID, from the shard's cache (`kubectl describe` selects Events on it).
    pub owner_uid: Option<Uid>,
}
