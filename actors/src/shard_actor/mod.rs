//! One actix actor per shard: owns a [`Shard`], moves its messages, sends its writes to the
//! writer and arms a timer for its next deadline. All decisions are the shard's. A panic in the
//! shard is caught here and, when the actor is supervised, the shard is replaced by a fresh one
//! ([`crate::supervision`]).

use crate::barrier::{BarrierDone, BarrierRequest, LiveReadDone, LiveReadRequest, ReadRequest};
use crate::events::{EventRecorder, Warning};
use crate::supervision::Supervision;
use actix::{Actor, AsyncContext, Context, Handler, MessageResult, SpawnHandle};
use std::panic::AssertUnwindSafe;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tidemark_engine::{
    BarrierId, LiveReadId, Output, Resource, ResourceVersion, Shard, WriteId, WriteResult,
};
use tokio::sync::{mpsc, watch};

mod messages;
pub use messages::*;

/// Mailbox capacity; the supervisor awaits `send`, so this bounds what is queued per shard.
pub const MAILBOX_CAPACITY: usize = 64;

/// Builds a fresh shard for a restart.
pub type ShardFactory = Box<dyn Fn() -> Shard + Send>;

/// Whether the shard reconciles, as the leader election last said.
#[derive(Clone, Copy, Debug)]
enum Leadership {
    Leading(Option<ResourceVersion>),
    Following,
}

/// How a supervised actor restarts its shard.
struct Supervisor {
    factory: ShardFactory,
    state: Supervision,
    /// Bumped to ask the informers for a relist.
    resync: std::sync::Arc<watch::Sender<u64>>,
}

/// The actor.
pub struct ShardActor {
    shard: Shard,
    writes: Option<mpsc::UnboundedSender<ToWriter>>,
    barriers: Option<mpsc::UnboundedSender<ReadRequest>>,
    events: Option<std::sync::Arc<EventRecorder>>,
    probes: ProbeRoutes,
    timer: Option<(Instant, SpawnHandle)>,
    outputs: Vec<Output>,
    leadership: Leadership,
    /// Under scale-out, whether this process is the manager-wide leader (see
    /// [`Shard::lead_cluster`]); kept so a restarted shard knows it.
    cluster_leading: Option<bool>,
    supervisor: Option<Supervisor>,
    /// Ids are tagged with the shard's generation even unsupervised (generation 0).
    ids: Supervision,
    /// No destructive decision before then (the previous leader's write deadline after the
    /// takeover); kept so a restarted shard holds as long.
    destructive_from: Option<Instant>,
    /// The revisions other shards' writes and barriers were answered with.
    server_revision: Option<std::sync::Arc<crate::server_revision::ServerRevision>>,
    /// The highest of them this shard has been told.
    observed_revision: Option<ResourceVersion>,
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

impl ShardActor {
    /// An actor around `shard`; `probes` receives the probes its parked keys ask for.
    pub fn new(shard: Shard, probes: ProbeRoutes) -> Self {
        let leadership = if shard.is_leading() {
            Leadership::Leading(None)
        } else {
            Leadership::Following
        };
        Self {
            shard,
            writes: None,
            barriers: None,
            events: None,
            probes,
            timer: None,
            outputs: Vec::new(),
            leadership,
            cluster_leading: None,
            supervisor: None,
            ids: Supervision::new(Vec::new()),
            server_revision: None,
            observed_revision: None,
            destructive_from: None,
        }
    }

    /// Restarts the shard with `factory` when it panics; its controllers read `reads`, and
    /// bumping `resync` asks every informer for a relist.
    pub fn supervised(
        mut self,
        factory: ShardFactory,
        reads: Vec<Resource>,
        resync: std::sync::Arc<watch::Sender<u64>>,
        backoff: crate::informer::backoff::ReflectorBackoff,
    ) -> Self {
        self.supervisor = Some(Supervisor {
            factory,
            state: Supervision::new(reads).with_backoff(backoff),
            resync,
        });
        self
    }

    fn ids(&mut self) -> &mut Supervision {
        match &mut self.supervisor {
            Some(s) => &mut s.state,
            None => &mut self.ids,
        }
    }

    /// Runs `f` on the shard; a panic replaces the shard (supervised) or goes on unwinding.
    fn guard<R>(
        &mut self,
        ctx: &mut Context<Self>,
        f: impl FnOnce(&mut Shard, &mut Vec<Output>) -> R,
    ) -> Option<R> {
        let (shard, outputs) = (&mut self.shard, &mut self.outputs);
        match std::panic::catch_unwind(AssertUnwindSafe(|| f(shard, outputs))) {
            Ok(r) => Some(r),
            Err(payload) => {
                if self.supervisor.is_none() {
                    std::panic::resume_unwind(payload);
                }
                self.restart(ctx, panic_message(payload.as_ref()));
                None
            }
        }
    }

    fn restart(&mut self, ctx: &mut Context<Self>, reason: String) {
        let Some(supervisor) = &mut self.supervisor else {
            return;
        };
        let now = Instant::now();
        let delay = supervisor.state.panicked(reason.clone(), now);
        let mut fresh = (supervisor.factory)();
        if let Some(at) = self.destructive_from {
            fresh.hold_destructive_until(at);
        }
        match self.leadership {
            Leadership::Leading(revision) => fresh.lead(revision, now),
            Leadership::Following => fresh.follow(),
        }
        if let Some(leading) = self.cluster_leading {
            fresh.lead_cluster(leading, now);
        }
        tracing::error!(shard = self.shard.id().0, restarts = supervisor.state.restarts(), %reason,
            relist_in_ms = delay.as_millis() as u64,
            "shard panicked: replaced by a fresh one with an empty cache and no proofs; its keys wait for a relist");
        self.shard = fresh;
        self.observed_revision = None;
        self.outputs.clear();
        if let Some((_, handle)) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        ctx.run_later(delay, |actor, ctx| actor.ask_relist(ctx));
    }

    /// Asks the informers for a relist into the restarted shard once it may.
    fn ask_relist(&mut self, ctx: &mut Context<Self>) {
        let Some(supervisor) = &mut self.supervisor else {
            return;
        };
        let now = Instant::now();
        if supervisor.state.may_ask_relist(now) {
            supervisor.resync.send_modify(|epoch| *epoch += 1);
            let epoch = *supervisor.resync.borrow();
            supervisor.state.relist_asked(epoch);
            tracing::info!(
                shard = self.shard.id().0,
                epoch,
                "asking the informers to relist into the restarted shard"
            );
        } else if let Some(at) = supervisor.state.next_check(now) {
            ctx.run_later(at.saturating_duration_since(now), |actor, ctx| {
                actor.ask_relist(ctx);
            });
        }
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        if let Some(highest) = self.server_revision.as_ref().and_then(|r| r.highest())
            && self.observed_revision < Some(highest)
        {
            self.observed_revision = Some(highest);
            self.shard.observe_revision(highest, now);
        }
        let unix_secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let polled = self.guard(ctx, |shard, outputs| {
            shard.poll(&tidemark_engine::Context { now, unix_secs }, outputs);
        });
        if polled.is_none() {
            return;
        }
        let mut outputs = std::mem::take(&mut self.outputs);
        for output in outputs.drain(..) {
            match output {
                Output::Write(mut request) => {
                    request.id = WriteId(self.ids().write_sent(request.id.0));
                    let owner_uid = crate::events::kcm::source(request.controller).and_then(|s| {
                        self.shard
                            .cache()
                            .uid_of(s.primary, &request.owner)
                            .cloned()
                    });
                    let outgoing = ToWriter::Write(Outgoing { request, owner_uid });
                    if let Some(writes) = &self.writes
                        && let Err(mpsc::error::SendError(ToWriter::Write(Outgoing {
                            request,
                            ..
                        }))) = writes.send(outgoing)
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
                Output::Withdraw(ids) => {
                    // A writer that is gone answers nothing more: those writes were failed
                    // when they were handed over.
                    let ids = ids
                        .into_iter()
                        .map(|id| WriteId(self.ids().write_tagged(id.0)))
                        .collect();
                    if let Some(writes) = &self.writes {
                        let _ = writes.send(ToWriter::Withdraw(ids));
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
                    let id = BarrierId(self.ids().barrier_sent(id.0));
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
                    let id = LiveReadId(self.ids().barrier_sent(id.0));
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
        self.outputs = outputs;
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
    pub fn set_writer(&mut self, writes: mpsc::UnboundedSender<ToWriter>) {
        self.writes = Some(writes);
    }
}

impl Actor for ShardActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
    }
}

impl Handler<ConnectWriter> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: ConnectWriter, ctx: &mut Self::Context) {
        self.set_writer(msg.writes);
        self.barriers = Some(msg.barriers);
        self.events = Some(msg.events);
        self.server_revision = Some(msg.server_revision);
        self.pump(ctx);
    }
}

impl Handler<BarrierDone> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: BarrierDone, ctx: &mut Self::Context) {
        let Some(id) = self.ids().barrier_answered(msg.id.0) else {
            return;
        };
        let now = Instant::now();
        self.guard(ctx, |shard, _| {
            shard.barrier_done(BarrierId(id), msg.result, now);
        });
        self.pump(ctx);
    }
}

impl Handler<LiveReadDone> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: LiveReadDone, ctx: &mut Self::Context) {
        let Some(id) = self.ids().barrier_answered(msg.id.0) else {
            return;
        };
        let now = Instant::now();
        self.guard(ctx, |shard, _| {
            shard.live_read_done(LiveReadId(id), msg.result, now);
        });
        self.pump(ctx);
    }
}

impl Handler<Lead> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: Lead, ctx: &mut Self::Context) {
        tracing::info!(shard = self.shard.id().0, revision = ?msg.revision.map(|v| v.get()), "leading: reconciles resume once the cache reaches the takeover revision");
        self.leadership = Leadership::Leading(msg.revision);
        if msg.destructive_from.is_some() {
            self.destructive_from = msg.destructive_from;
        }
        let now = Instant::now();
        let hold = self.destructive_from;
        self.guard(ctx, |shard, _| {
            if let Some(at) = hold {
                shard.hold_destructive_until(at);
            }
            shard.lead(msg.revision, now)
        });
        self.pump(ctx);
    }
}

impl Handler<LeadCluster> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: LeadCluster, ctx: &mut Self::Context) {
        tracing::info!(
            shard = self.shard.id().0,
            leading = msg.leading,
            "cluster-scoped keys: {}",
            if msg.leading {
                "reconciled here, the manager-wide leader"
            } else {
                "left to the manager-wide leader"
            }
        );
        self.cluster_leading = Some(msg.leading);
        let now = Instant::now();
        self.guard(ctx, |shard, _| shard.lead_cluster(msg.leading, now));
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
        self.leadership = Leadership::Following;
        self.guard(ctx, |shard, _| shard.follow());
        self.pump(ctx);
    }
}

impl Handler<Batch> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: Batch, ctx: &mut Self::Context) {
        if !self.ids().accept_events(msg.resource) {
            return;
        }
        let now = Instant::now();
        self.guard(ctx, |shard, _| {
            for change in msg.changes {
                shard.apply(change, now);
            }
            if let Some(progress) = msg.progress {
                shard.advance(msg.resource, progress, now);
            }
        });
        self.pump(ctx);
    }
}

impl Handler<Replace> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: Replace, ctx: &mut Self::Context) {
        tracing::debug!(shard = self.shard.id().0, resource = %msg.resource, objects = msg.objects.len(),
            version = ?msg.version.map(|v| v.get()), "replace");
        let was_down = self
            .supervisor
            .as_ref()
            .is_some_and(|s| s.state.down().is_some());
        if !self.ids().accept_list(msg.resource, msg.epoch) {
            tracing::debug!(shard = self.shard.id().0, resource = %msg.resource, "list from before the restart's relist: not taken");
            return;
        }
        let now = Instant::now();
        self.guard(ctx, |shard, _| {
            shard.replace(msg.resource, msg.objects, msg.version, now);
        });
        if was_down
            && self
                .supervisor
                .as_ref()
                .is_some_and(|s| s.state.down().is_none())
        {
            tracing::info!(
                shard = self.shard.id().0,
                "restarted shard is up again: every cache it reads is listed"
            );
        }
        self.pump(ctx);
    }
}

impl Handler<Relisting> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: Relisting, ctx: &mut Self::Context) {
        self.guard(ctx, |shard, _| {
            shard.relisting(msg.resource, Instant::now())
        });
        self.pump(ctx);
    }
}

impl Handler<WriteDone> for ShardActor {
    type Result = ();
    fn handle(&mut self, msg: WriteDone, ctx: &mut Self::Context) {
        let Some(id) = self.ids().write_answered(msg.id.0) else {
            // A write of a replaced shard: its answer may let the relist go ahead.
            self.ask_relist_if_waiting(ctx);
            return;
        };
        let now = Instant::now();
        self.guard(ctx, |shard, _| {
            shard.write_done(WriteId(id), msg.result, now);
        });
        self.pump(ctx);
    }
}

impl ShardActor {
    fn ask_relist_if_waiting(&mut self, ctx: &mut Context<Self>) {
        if self
            .supervisor
            .as_ref()
            .is_some_and(|s| s.state.may_ask_relist(Instant::now()))
        {
            self.ask_relist(ctx);
        }
    }
}

impl Handler<Snapshot> for ShardActor {
    type Result = MessageResult<Snapshot>;
    fn handle(&mut self, _: Snapshot, _: &mut Self::Context) -> Self::Result {
        let resources = Resource::all()
            .map(|r| {
                (
                    r,
                    self.shard.is_synced(r),
                    self.shard.watermark(r),
                    self.shard.cache().len(r),
                )
            })
            .collect();
        let (restarts, down) = self
            .supervisor
            .as_ref()
            .map_or((0, None), |s| (s.state.restarts(), s.state.down()));
        MessageResult(ShardSnapshot {
            controllers: self.shard.stats(Instant::now()),
            resources,
            shard: self.shard.id().0,
            restarts,
            down,
        })
    }
}
