//! One actix actor per shard: owns a [`Shard`], moves its messages, sends its writes to the
//! writer and arms a timer for its next deadline. All decisions are the shard's.

use crate::barrier::{BarrierRequest, LiveReadRequest, ReadRequest};
use crate::events::{EventRecorder, Warning};
use actix::{Actor, AsyncContext, Context, Handler, Message, MessageResult, SpawnHandle};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tidemark_engine::{
    BarrierId, Change, ControllerStats, LiveReadId, Object, Output, Resource, ResourceVersion,
    Shard, WriteId, WriteRequest, WriteResult,
};
use tokio::sync::mpsc;

/// Mailbox capacity; the supervisor awaits `send`, so this bounds what is queued per shard.
pub const MAILBOX_CAPACITY: usize = 64;

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

/// The answer to a barrier read.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BarrierDone {
    /// Which read.
    pub id: BarrierId,
    /// The current revision, or why it could not be read.
    pub result: Result<ResourceVersion, String>,
}

/// The answer to a live read.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LiveReadDone {
    /// Which read.
    pub id: LiveReadId,
    /// Each object's current version (`None`: not found), or why the read failed.
    pub result: Result<Vec<Option<ResourceVersion>>, String>,
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

/// The actor.
pub struct ShardActor {
    shard: Shard,
    writes: Option<mpsc::UnboundedSender<WriteRequest>>,
    barriers: Option<mpsc::UnboundedSender<ReadRequest>>,
    events: Option<std::sync::Arc<EventRecorder>>,
    probes: ProbeRoutes,
    timer: Option<(Instant, SpawnHandle)>,
    outputs: Vec<Output>,
}

impl ShardActor {
    /// An actor around `shard`; `probes` receives the probes its parked keys ask for.
    pub fn new(shard: Shard, probes: ProbeRoutes) -> Self {
        Self {
            shard,
            writes: None,
            barriers: None,
            events: None,
            probes,
            timer: None,
            outputs: Vec::new(),
        }
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let unix_secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.shard.poll(
            &tidemark_engine::Context { now, unix_secs },
            &mut self.outputs,
        );
        for output in self.outputs.drain(..) {
            match output {
                Output::Write(request) => {
                    if let Some(writes) = &self.writes
                        && let Err(mpsc::error::SendError(request)) = writes.send(request)
                    {
                        tracing::error!(key = %request.owner, "writer is gone; failing the write");
                        ctx.notify(WriteDone {
                            id: request.id,
                            result: WriteResult::Failed(tidemark_engine::WriteError {
                                kind: tidemark_engine::WriteErrorKind::Transport,
                                message: "writer stopped".into(),
                            }),
                        });
                    }
                }
                Output::Probe {
                    controller,
                    key,
                    resource,
                    target,
                    watermark,
                } => {
                    tracing::warn!(controller, %key, %resource, %target, watermark = ?watermark.map(|w| w.get()),
                        "parked key's safety timer ran out: watermark has not reached its write");
                    if let Some(route) = self.probes.get(resource.index()) {
                        let _ = route.send(ProbeRequest {
                            resource,
                            target,
                            watermark,
                        });
                    }
                }
                Output::Barrier { id, resource } => {
                    let sent = self.barriers.as_ref().is_some_and(|b| {
                        b.send(ReadRequest::Barrier(BarrierRequest { id, resource }))
                            .is_ok()
                    });
                    if !sent {
                        ctx.notify(BarrierDone {
                            id,
                            result: Err("no barrier reader".into()),
                        });
                    }
                }
                Output::LiveRead {
                    id,
                    controller,
                    key,
                    objects,
                } => {
                    tracing::debug!(controller, %key, objects = objects.len(), "live read: the cache is known to lag");
                    let sent = self.barriers.as_ref().is_some_and(|b| {
                        b.send(ReadRequest::Objects(LiveReadRequest { id, objects }))
                            .is_ok()
                    });
                    if !sent {
                        ctx.notify(LiveReadDone {
                            id,
                            result: Err("no live reader".into()),
                        });
                    }
                }
                Output::Degraded {
                    controller,
                    key,
                    resource,
                    uid,
                    reason,
                    message,
                } => {
                    if let Some(events) = &self.events {
                        events.warn(Warning {
                            controller,
                            key,
                            resource,
                            uid,
                            reason,
                            message,
                        });
                    }
                }
                Output::Starving {
                    controller,
                    key,
                    skips,
                } => {
                    tracing::error!(controller, %key, skips, "key starving: skipped on a stale cache repeatedly");
                }
            }
        }
        self.arm_timer(ctx, now);
    }

    fn arm_timer(&mut self, ctx: &mut Context<Self>, now: Instant) {
        let next = self.shard.next_deadline();
        if next == self.timer.as_ref().map(|(at, _)| *at) {
            return;
        }
        if let Some((_, handle)) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        if let Some(at) = next {
            let handle = ctx.run_later(at.saturating_duration_since(now), |actor, ctx| {
                actor.timer = None;
                actor.pump(ctx);
            });
            self.timer = Some((at, handle));
        }
    }

    /// Connects the writer (done once, after the actor's address exists).
    pub fn set_writer(&mut self, writes: mpsc::UnboundedSender<WriteRequest>) {
        self.writes = Some(writes);
    }
}

impl Actor for ShardActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
    }
}

/// Connects a writer and a barrier reader to a running actor.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ConnectWriter {
    /// Where writes go.
    pub writes: mpsc::UnboundedSender<WriteRequest>,
    /// Where barrier and live reads go.
    pub barriers: mpsc::UnboundedSender<ReadRequest>,
    /// Where Warning Events go.
    pub events: std::sync::Arc<EventRecorder>,
}

impl Handler<ConnectWriter> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: ConnectWriter, ctx: &mut Self::Context) {
        self.set_writer(msg.writes);
        self.barriers = Some(msg.barriers);
        self.events = Some(msg.events);
        self.pump(ctx);
    }
}

impl Handler<BarrierDone> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: BarrierDone, ctx: &mut Self::Context) {
        self.shard.barrier_done(msg.id, msg.result, Instant::now());
        self.pump(ctx);
    }
}

impl Handler<LiveReadDone> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: LiveReadDone, ctx: &mut Self::Context) {
        self.shard
            .live_read_done(msg.id, msg.result, Instant::now());
        self.pump(ctx);
    }
}

impl Handler<Lead> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: Lead, ctx: &mut Self::Context) {
        tracing::info!(shard = self.shard.id().0, revision = ?msg.revision.map(|v| v.get()), "leading: reconciles resume once the cache reaches the takeover revision");
        if let Some(at) = msg.destructive_from {
            self.shard.hold_destructive_until(at);
        }
        self.shard.lead(msg.revision, Instant::now());
        self.pump(ctx);
    }
}

impl Handler<Follow> for ShardActor {
    type Result = ();
    fn handle(&mut self, _: Follow, ctx: &mut Self::Context) {
        tracing::info!(
            shard = self.shard.id().0,
            "following: cache kept warm, no reconcile, proofs revoked"
        );
        self.shard.follow();
        self.pump(ctx);
    }
}

impl Handler<Batch> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: Batch, ctx: &mut Self::Context) {
        let now = Instant::now();
        for change in msg.changes {
            self.shard.apply(change, now);
        }
        if let Some(progress) = msg.progress {
            self.shard.advance(msg.resource, progress, now);
        }
        self.pump(ctx);
    }
}

impl Handler<Replace> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: Replace, ctx: &mut Self::Context) {
        tracing::debug!(shard = self.shard.id().0, resource = %msg.resource, objects = msg.objects.len(),
            version = ?msg.version.map(|v| v.get()), "replace");
        self.shard
            .replace(msg.resource, msg.objects, msg.version, Instant::now());
        self.pump(ctx);
    }
}

impl Handler<WriteDone> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: WriteDone, ctx: &mut Self::Context) {
        self.shard.write_done(msg.id, msg.result, Instant::now());
        self.pump(ctx);
    }
}

impl Handler<Snapshot> for ShardActor {
    type Result = MessageResult<Snapshot>;
    fn handle(&mut self, _: Snapshot, _: &mut Self::Context) -> Self::Result {
        let resources = Resource::ALL
            .iter()
            .map(|&r| {
                (
                    r,
                    self.shard.is_synced(r),
                    self.shard.watermark(r),
                    self.shard.cache().len(r),
                )
            })
            .collect();
        MessageResult(ShardSnapshot {
            controllers: self.shard.stats(Instant::now()),
            resources,
        })
    }
}
