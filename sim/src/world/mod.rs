//! The simulated world: the engine's real shards, loadgen's real store, and the runtime between
//! them modelled as scheduler events. Each handler does what the matching actor message does
//! (actors/src/shard_actor.rs): feed the shard, then pump it (poll, carry out its outputs, arm
//! its timer for `next_deadline`).

mod election;
mod event;
mod informing;
mod kubelet;
mod user;
mod verdict;

pub use event::{Answer, End, Event, Read};

use crate::clock::VirtualClock;
use crate::faults::FaultPlan;
use crate::informer::Informer;
use crate::kubelet::Kubelet;
use crate::scheduler::Scheduler;
use crate::trace::Trace;
use crate::user::User;
use crate::workload::Workload;
use loadgen::oracle::SharedOracle;
use loadgen::store::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tidemark_engine::controllers::nodelifecycle::Evictions;
use tidemark_engine::{
    Action, ConsistencyMode, ControllerSpec, Elector, Output, Resource, ResourceVersion, SeededBug,
    Shard, ShardId, ShardRouter, WriteError, WriteErrorKind, WriteResult,
};

/// Everything in a run.
pub struct World {
    pub(crate) rng: fastrand::Rng,
    pub(crate) clock: VirtualClock,
    pub(crate) queue: Scheduler<Event>,
    pub(crate) store: Store,
    /// The invariant oracle observing the store's commits.
    pub(crate) oracle: SharedOracle,
    pub(crate) router: ShardRouter,
    pub(crate) workload: Workload,
    pub(crate) mode: ConsistencyMode,
    pub(crate) bug: Option<SeededBug>,
    pub(crate) shards: Vec<Shard>,
    armed: Vec<Option<Instant>>,
    /// The process generation: bumped by a crash, so answers to a dead process are dropped.
    pub(crate) epoch: u64,
    pub(crate) up: bool,
    /// The running process's side of leader election.
    pub(crate) elector: Elector,
    /// The revision of its last Lease write: its shards lead once their caches reach it.
    pub(crate) lease_written: Option<ResourceVersion>,
    /// A crashed process cut off from the server until then: its writes on their way wait.
    pub(crate) partitioned: Option<(u64, Duration)>,
    /// Relist races the aimed schedule may still set up.
    pub(crate) races_left: u32,
    /// When the running process started, and the rate its monotonic clock runs at.
    pub(crate) process: (Duration, f64),
    pub(crate) informers: Vec<Informer>,
    pub(crate) faults: FaultPlan,
    pub(crate) kubelet: Kubelet,
    pub(crate) user: User,
    pub(crate) trace: Trace,
    outputs: Vec<Output>,
    /// Faults have stopped; the sets must converge before this.
    pub(crate) converge_by: Option<Duration>,
    pub(crate) converge_within: Duration,
    pub(crate) end: Option<End>,
}

/// What the world is built from.
pub struct Setup {
    /// The run's generator.
    pub rng: fastrand::Rng,
    /// The controller run and what its user makes.
    pub workload: Workload,
    /// Protection mode of the controllers.
    pub mode: ConsistencyMode,
    /// An old bug the shards are given back.
    pub bug: Option<SeededBug>,
    /// Number of shards.
    pub shards: usize,
    /// Faults.
    pub faults: FaultPlan,
    /// Liveness bound after faults stop.
    pub converge_within: Duration,
    /// The trace to record into.
    pub trace: Trace,
}

impl World {
    /// A world with no process running yet.
    pub fn new(setup: Setup) -> Self {
        let router = ShardRouter::new(setup.shards);
        let store = Store::new(setup.faults.history, None);
        let oracle = SharedOracle::observing(&store);
        let evictions = Arc::default();
        let shards = (0..setup.shards)
            .map(|i| {
                Self::build_shard(
                    i,
                    setup.workload,
                    setup.mode,
                    setup.bug,
                    &router,
                    &evictions,
                )
            })
            .collect();
        Self {
            rng: setup.rng,
            clock: VirtualClock::new(),
            queue: Scheduler::new(),
            store,
            oracle,
            informers: (setup.workload.watched().iter())
                .map(|&r| Informer::new(r, &router))
                .collect(),
            router,
            workload: setup.workload,
            mode: setup.mode,
            bug: setup.bug,
            shards,
            armed: vec![None; setup.shards],
            epoch: 0,
            up: false,
            elector: Elector::new(crate::election::elector_config(0)),
            lease_written: None,
            partitioned: None,
            races_left: 0,
            process: (Duration::ZERO, 1.0),
            faults: setup.faults,
            kubelet: Kubelet::default(),
            user: User::default(),
            trace: setup.trace,
            outputs: Vec::new(),
            converge_by: None,
            converge_within: setup.converge_within,
            end: None,
        }
    }

    /// A fresh shard as the manager builds it (actors/src/manager.rs `build_shard`), its
    /// process's node lifecycle zones shared with the process's other shards.
    fn build_shard(
        index: usize,
        workload: Workload,
        mode: ConsistencyMode,
        bug: Option<SeededBug>,
        router: &ShardRouter,
        evictions: &Arc<Evictions>,
    ) -> Shard {
        let specs = vec![ControllerSpec::new(workload.controller(evictions), mode)];
        let shard = Shard::new(ShardId(index), specs).with_router(router.clone());
        match bug {
            Some(bug) => shard.with_seeded_bug(bug),
            None => shard,
        }
    }

    /// Now on the running process's monotonic clock: what the engine and the elector are
    /// given.
    pub(crate) fn process_now(&self) -> Instant {
        self.clock.process_now(self.process.0, self.process.1)
    }

    /// A span of the process's clock, in the server's (virtual) time.
    pub(crate) fn process_span(&self, span: Duration) -> Duration {
        span.div_f64(self.process.1)
    }

    /// Now, as virtual time since the start.
    pub(crate) fn now(&self) -> Duration {
        self.clock.elapsed()
    }

    /// One leg of a request's trip, as the faults make it now.
    pub(crate) fn network(&mut self) -> Duration {
        let now = self.now();
        self.faults.network(&mut self.rng, now)
    }

    /// Records a line of the trace at the current time.
    /// A revision the server answered a write, a barrier or a probe with: every shard learns it,
    /// as the actors share it through `ServerRevision`, so a cache trailing it for long is known
    /// to lag whichever shard asked.
    pub(crate) fn tell_every_shard(&mut self, revision: ResourceVersion) {
        let now = self.process_now();
        for shard in &mut self.shards {
            shard.observe_revision(revision, now);
        }
    }

    pub(crate) fn note(&mut self, what: std::fmt::Arguments<'_>) {
        let at = self.clock.elapsed();
        self.trace.record(at, what);
    }

    /// Schedules `event` `after` from now.
    pub(crate) fn after(&mut self, after: Duration, event: Event) {
        let at = self.clock.elapsed() + after;
        self.queue.at(at, event);
    }

    /// Runs one event.
    pub fn handle(&mut self, event: Event) {
        match event {
            Event::Timer { shard, epoch, at } => {
                if epoch == self.epoch && self.up && self.armed[shard] == Some(at) {
                    self.armed[shard] = None;
                    self.pump(shard);
                }
            }
            Event::Pull { informer, watch } => self.pull(informer, watch),
            Event::Deliver {
                informer,
                watch,
                events,
                progress,
            } => self.deliver(informer, watch, events, progress),
            Event::List { informer, list } => self.list(informer, list),
            Event::Listed {
                informer,
                list,
                objects,
                version,
            } => self.listed(informer, list, objects, version),
            Event::WriteArrives {
                sent,
                epoch,
                shard,
                id,
                action,
            } => self.write_arrives(sent, epoch, shard, id, action),
            Event::WriteCommits {
                sent,
                epoch,
                shard,
                id,
                action,
                arrival,
            } => self.write_commits(sent, epoch, shard, id, action, arrival),
            Event::WriteAnswered {
                epoch,
                shard,
                id,
                result,
            } => self.write_answered(epoch, shard, id, result),
            Event::ReadArrives { epoch, shard, read } => self.read_arrives(epoch, shard, read),
            Event::ReadAnswered {
                epoch,
                shard,
                answer,
            } => self.read_answered(epoch, shard, answer),
            Event::KubeletTick => self.kubelet_tick(),
            Event::PodStarts { key, uid } => self.pod_starts(key, uid),
            Event::PodRemoved { key, uid } => self.pod_removed(key, uid),
            Event::Scale { set, replicas } => self.scale(set, replicas),
            Event::Roll { set } => self.roll(set),
            Event::NodeJoins => self.node_joins(),
            Event::NodeSilent { node, until } => self.node_silent(node, until),
            Event::NodeBack { node } => self.node_back(node),
            Event::Heartbeat => self.heartbeat(),
            Event::PodFinishes { key, uid } => self.pod_finishes(key, uid),
            Event::ElectionRound { epoch } => self.election_round(epoch),
            Event::LeaseWriteArrives {
                epoch,
                record,
                create,
                sent_at,
                sent,
            } => self.lease_write_arrives(epoch, record, create, sent_at, sent),
            Event::LeaseWriteAnswered {
                epoch,
                record,
                outcome,
                sent_at,
            } => self.lease_write_answered(epoch, record, outcome, sent_at),
            Event::FenceCloses { epoch } => {
                if epoch == self.epoch && self.up {
                    self.align();
                }
            }
            Event::RelistRace { set } => self.relist_race(&set),
            Event::Crash => self.crash(),
            Event::Start => self.start(),
            Event::FaultsEnd => {
                self.note(format_args!("faults stop"));
                self.converge_by = Some(self.now() + self.converge_within);
                self.after(Duration::from_secs(1), Event::Check);
            }
            Event::Check => self.check(),
        }
    }

    /// The process crashes: shards, caches, version maps, proofs and timers are gone; writes
    /// already sent still reach the server, their answers reach no one.
    fn crash(&mut self) {
        self.note(format_args!("process crashes"));
        if let Some(length) = self.faults.partition {
            self.partitioned = Some((self.epoch, self.now() + length));
            self.note(format_args!("its network is cut for {length:?}"));
        }
        self.epoch += 1;
        self.up = false;
        let n = self.shards.len();
        let evictions = Arc::default();
        self.shards = (0..n)
            .map(|i| {
                Self::build_shard(
                    i,
                    self.workload,
                    self.mode,
                    self.bug,
                    &self.router,
                    &evictions,
                )
            })
            .collect();
        self.armed = vec![None; n];
        for informer in &mut self.informers {
            informer.stop();
        }
    }

    /// The process starts: every informer lists.
    fn start(&mut self) {
        let epoch = self.epoch;
        let drift = self.faults.clock_drift;
        let rate = if drift > 0.0 {
            1.0 + (self.rng.f64() * 2.0 - 1.0) * drift
        } else {
            1.0
        };
        self.process = (self.now(), rate);
        self.note(format_args!(
            "process starts (epoch {epoch}), its clock at {rate:.3}x"
        ));
        self.up = true;
        self.start_election();
        for i in 0..self.informers.len() {
            let latency = self.network();
            self.relist(i, latency);
        }
    }

    /// Every set converged, or the bound passed.
    fn check(&mut self) {
        // Both after-the-fact checks read the same record of writes, copied once.
        let writes = self.oracle.writes();
        let split = Self::split_leadership(&writes);
        if !split.is_empty() {
            self.note(format_args!("oracle: {}", split.join("; ")));
            self.end = Some(End::SplitLeadership(split));
            return;
        }
        let marked = self.live_nodes_marked(&writes);
        if !marked.is_empty() {
            self.note(format_args!("oracle: {}", marked.join("; ")));
            self.end = Some(End::LiveNodeMarked(marked));
            return;
        }
        let behind = self.not_converged();
        if behind.is_empty() {
            self.note(format_args!("every set converged"));
            self.end = Some(End::Converged);
        } else if self.converge_by.is_some_and(|by| self.now() >= by) {
            self.note(format_args!("not converged: {}", behind.join("; ")));
            self.end = Some(End::NotConverged(behind));
        } else {
            self.after(Duration::from_secs(1), Event::Check);
        }
    }

    /// Polls shard `s` and carries out what it asks, as the actor's `pump` does; then arms its
    /// timer.
    pub(crate) fn pump(&mut self, s: usize) {
        if !self.up {
            return;
        }
        let ctx = tidemark_engine::Context {
            now: self.process_now(),
            unix_secs: self.clock.unix_secs(),
        };
        let mut outputs = std::mem::take(&mut self.outputs);
        self.shards[s].poll(&ctx, &mut outputs);
        // The shard's internal maps iterate in a per-process hash order; outputs of one poll
        // are independent of each other, so a canonical order keeps the schedule a function of
        // the seed alone.
        outputs.sort_by_cached_key(canonical);
        for output in outputs.drain(..) {
            self.dispatch(s, output);
        }
        self.outputs = outputs;
        let next = self.shards[s].next_deadline();
        if next != self.armed[s] {
            self.armed[s] = next;
            if let Some(at) = next {
                // A deadline already due runs at the next moment, not this one: the actor's
                // `run_later(0)` also lets other messages in first.
                let due = self
                    .process_span(at.saturating_duration_since(self.process_now()))
                    .max(Duration::from_micros(100));
                let epoch = self.epoch;
                self.after(
                    due,
                    Event::Timer {
                        shard: s,
                        epoch,
                        at,
                    },
                );
            }
        }
    }

    fn dispatch(&mut self, s: usize, output: Output) {
        let epoch = self.epoch;
        let now = self.now();
        match output {
            Output::Write(request) if !self.fence_open() => {
                // The writer checks the fence right before sending (actors/src/writer.rs).
                self.note(format_args!(
                    "shard {s}: fence closed, {} {} not sent",
                    request.action.verb(),
                    request.action.resource()
                ));
                let result = WriteResult::Failed(WriteError {
                    kind: WriteErrorKind::Fenced,
                    message: "not leader: the write fence is closed".into(),
                });
                self.after(
                    Duration::from_micros(100),
                    Event::WriteAnswered {
                        epoch,
                        shard: s,
                        id: request.id,
                        result,
                    },
                );
            }
            Output::Write(request) => {
                self.note(format_args!(
                    "shard {s} sends {} {} {} for {}",
                    request.action.verb(),
                    request.action.resource(),
                    describe(&request.action),
                    request.owner
                ));
                if self.races_left > 0
                    && matches!(
                        &request.action,
                        Action::Create {
                            resource: Resource::Pods,
                            ..
                        }
                    )
                    && self.rng.f64() < 0.25
                {
                    self.races_left -= 1;
                    let set = request.owner.name().to_string();
                    let at = Duration::from_micros(self.rng.u64(100..=5_000));
                    self.after(at, Event::RelistRace { set });
                }
                let latency = self.faults.write_leg(&mut self.rng, now);
                self.after(
                    latency,
                    Event::WriteArrives {
                        sent: now,
                        epoch,
                        shard: s,
                        id: request.id,
                        action: request.action,
                    },
                );
            }
            Output::Barrier { id, resource } => {
                self.note(format_args!("shard {s} reads the revision ({resource})"));
                let latency = self.faults.network(&mut self.rng, now);
                self.after(
                    latency,
                    Event::ReadArrives {
                        epoch,
                        shard: s,
                        read: Read::Barrier(id),
                    },
                );
            }
            Output::LiveRead {
                id, key, objects, ..
            } => {
                self.note(format_args!(
                    "shard {s} reads {} objects live for {key}",
                    objects.len()
                ));
                let latency = self.faults.network(&mut self.rng, now);
                self.after(
                    latency,
                    Event::ReadArrives {
                        epoch,
                        shard: s,
                        read: Read::Objects(id, objects),
                    },
                );
            }
            Output::Probe {
                key,
                resource,
                target,
                ..
            } => {
                self.note(format_args!(
                    "shard {s} probes {resource} for {key} (waits for {target})"
                ));
                self.probe(resource, target);
            }
            Output::Degraded { key, reason, .. } => {
                self.note(format_args!("shard {s} degraded {key}: {reason}"));
            }
            Output::Withdraw(ids) => {
                // The simulated writer has no client-side rate limit: every write left when it
                // was handed over, and is answered as usual.
                self.note(format_args!(
                    "shard {s} withdraws {} writes, all already sent",
                    ids.len()
                ));
            }
            Output::Starving { key, skips, .. } => {
                self.note(format_args!("shard {s} starving {key} ({skips} skips)"));
            }
        }
    }
}

/// The order outputs of one poll are carried out in: by kind, then controller and key.
fn canonical(output: &Output) -> (u8, &'static str, String, String) {
    match output {
        Output::Write(r) => (0, r.controller, r.owner.to_string(), describe(&r.action)),
        Output::Barrier { resource, .. } => (1, "", resource.to_string(), String::new()),
        Output::LiveRead {
            controller, key, ..
        } => (2, controller, key.to_string(), String::new()),
        Output::Probe {
            controller, key, ..
        } => (3, controller, key.to_string(), String::new()),
        Output::Degraded {
            controller, key, ..
        } => (4, controller, key.to_string(), String::new()),
        Output::Starving {
            controller, key, ..
        } => (5, controller, key.to_string(), String::new()),
        Output::Withdraw(ids) => (6, "", format!("{ids:?}"), String::new()),
    }
}

/// A Pod as the trace names it: by its generated prefix, without the random suffix. Which of
/// several Pods tied in the ReplicaSet controller's deletion ranking is deleted depends on the
/// engine's hash order (per process): the trace records that one of them was, so the same seed
/// gives the same trace in every process.
pub(crate) fn pod_label(namespace: &str, name: &str) -> String {
    match name.rsplit_once('-') {
        Some((prefix, suffix)) if suffix.len() == 5 => format!("{namespace}/{prefix}-*"),
        _ => format!("{namespace}/{name}"),
    }
}

/// The object a write is about, for the trace.
pub(crate) fn describe(action: &Action) -> String {
    match action {
        Action::Create {
            namespace, body, ..
        } => format!(
            "{namespace}/{}*",
            body["metadata"]["generateName"]
                .as_str()
                .or(body["metadata"]["name"].as_str())
                .unwrap_or("?")
        ),
        Action::Delete {
            resource: Resource::Pods,
            key,
            ..
        } => pod_label(key.namespace(), key.name()),
        Action::Delete { key, .. }
        | Action::Patch { key, .. }
        | Action::StrategicPatch { key, .. }
        | Action::UpdateStatus { key, .. } => key.to_string(),
    }
}
