//! The state a shard keeps per controller: its queue, version map, proofs and expectations, the
//! plans in flight (which step is out, what is left), and the writes sent and not yet answered.

use super::gate::DECISION_PROOF_HOLDS;
use super::messages::Output;
use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::expectations::Expectations;
use crate::hot_keys::HotKeys;
use crate::key::{ObjectKey, Uid};
use crate::live_read::Expected;
use crate::mode::ConsistencyMode;
use crate::proof::Proofs;
use crate::queue::{Outcome, WorkQueue};
use crate::reconciler::Reconciler;
use crate::resource::Resource;
use crate::stats::ControllerStats;
use crate::version_map::VersionMap;
use crate::write::{WriteId, WriteRequest};
use ahash::{AHashMap, AHashSet};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A controller registered with a shard.
pub struct ControllerSpec {
    /// The logic.
    pub reconciler: Box<dyn Reconciler>,
    /// The protection it runs with (`StaleControllerConsistency<Name>=false` is naive).
    pub mode: ConsistencyMode,
}

impl ControllerSpec {
    /// `reconciler` under `mode`.
    pub fn new(reconciler: Box<dyn Reconciler>, mode: ConsistencyMode) -> Self {
        Self { reconciler, mode }
    }
}

/// How far one key's plan has come.
pub(super) struct PlanProgress {
    pub(super) owner_uid: Option<Uid>,
    /// The primary object's generation the plan was made for.
    pub(super) generation: Option<i64>,
    /// Creates of the plan not yet sent (expectations are lowered by them if it stops early).
    pub(super) unsent_creates: i64,
    pub(super) steps: VecDeque<Vec<Action>>,
    pub(super) outstanding: usize,
    pub(super) failed: bool,
    pub(super) superseded: bool,
    /// The next step waited for a relist: the plan ends there and the key decides again.
    pub(super) held: bool,
    pub(super) requeue_after: Option<Duration>,
    pub(super) started: Instant,
}

/// One controller as a shard runs it.
pub(super) struct Controller {
    /// Its place in the shard's list (pending writes and barriers name it so).
    pub(super) index: usize,
    pub(super) reconciler: Box<dyn Reconciler>,
    pub(super) mode: ConsistencyMode,
    pub(super) expectations: Expectations,
    /// Keys whose last live read matched the cache, with the versions it matched: their next
    /// destructive decision may go ahead once, lag or not, if it rests on exactly those
    /// versions (an event that arrived since makes it another decision, which needs its own).
    pub(super) verified: AHashMap<ObjectKey, Vec<Expected>>,
    pub(super) queue: WorkQueue,
    pub(super) versions: VersionMap,
    pub(super) plans: AHashMap<ObjectKey, PlanProgress>,
    pub(super) proofs: Proofs,
    pub(super) unknown_outcome: AHashSet<ObjectKey>,
    /// Which keys its stale sync skips fall on lately.
    pub(super) hot_keys: HotKeys,
    pub(super) stats: ControllerStats,
}

/// A write sent and not yet answered.
pub(super) struct PendingWrite {
    pub(super) controller: usize,
    pub(super) owner: ObjectKey,
    pub(super) resource: Resource,
    pub(super) deleted: Option<(ObjectKey, Uid)>,
    pub(super) creates: bool,
    /// It is a create the key's expectations count (see `Controller::counted_by`).
    pub(super) counted_create: bool,
}

/// The writes a shard has sent and not had answered, and the sequence that numbers them.
#[derive(Default)]
pub(super) struct PendingWrites {
    map: AHashMap<WriteId, PendingWrite>,
    next: u64,
}

impl PendingWrites {
    /// The next number of the shard's sequence (write ids and acknowledgement order share it).
    pub(super) fn next_seq(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// The answer to `id` came: what it was for.
    pub(super) fn take(&mut self, id: WriteId) -> Option<PendingWrite> {
        self.map.remove(&id)
    }

    /// How many are unanswered.
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    /// The unanswered writes of `controller`'s plan for `owner`, latest first.
    pub(super) fn of(&self, controller: usize, owner: &ObjectKey) -> Vec<WriteId> {
        let mut ids: Vec<WriteId> = self
            .map
            .iter()
            .filter(|(_, w)| w.controller == controller && &w.owner == owner)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable_by_key(|id| std::cmp::Reverse(id.0));
        ids
    }
}

impl Controller {
    pub(super) fn new(index: usize, spec: ControllerSpec) -> Self {
        Self {
            index,
            stats: ControllerStats::new(spec.reconciler.name()),
            reconciler: spec.reconciler,
            mode: spec.mode,
            expectations: Expectations::default(),
            verified: AHashMap::new(),
            queue: WorkQueue::default().with_events_cut_backoff(!spec.mode.is_tidemark()),
            versions: VersionMap::default(),
            plans: AHashMap::new(),
            proofs: Proofs::default(),
            unknown_outcome: AHashSet::new(),
            hot_keys: HotKeys::default(),
        }
    }

    /// The primary object at `key` now has `uid` and `generation` (`uid` `None`: gone). A plan
    /// made for another spec or another object starts no further step, and the writes of the
    /// step in flight that have not left yet are withdrawn ([`Output::Withdraw`]): the key
    /// decides again on what is there now. A create decided for eight replicas that waits
    /// seconds for the client-side rate limit would otherwise land after the user scaled to one.
    pub(super) fn supersede_if_respecced(
        &mut self,
        key: &ObjectKey,
        uid: Option<&Uid>,
        generation: Option<i64>,
        writes: &PendingWrites,
        outbox: &mut Vec<Output>,
    ) {
        if !self.mode.is_tidemark() {
            return;
        }
        let Some(plan) = self.plans.get(key) else {
            return;
        };
        let same = uid.is_some_and(|uid| {
            plan.owner_uid
                .as_ref()
                .is_none_or(|made_for| made_for == uid)
                && (generation.is_none() || generation == plan.generation)
        });
        if !same {
            self.supersede(key, writes, outbox);
        }
    }

    /// `key`'s plan was made for a state that is gone: it starts no further step, and the
    /// writes of the step in flight that have not left yet are withdrawn.
    pub(super) fn supersede(
        &mut self,
        key: &ObjectKey,
        writes: &PendingWrites,
        outbox: &mut Vec<Output>,
    ) {
        let Some(plan) = self.plans.get_mut(key) else {
            return;
        };
        if plan.superseded {
            return;
        }
        plan.superseded = true;
        if plan.outstanding > 0 {
            let ids = writes.of(self.index, key);
            if !ids.is_empty() {
                outbox.push(Output::Withdraw(ids));
            }
        }
    }

    /// Whether the key's expectations count `action`: a create or delete of a dependent the
    /// controller reads, and for a create, one that names a controller, since only an owner
    /// reference credits its appearance to the key.
    fn counted_by(reconciler: &dyn Reconciler, action: &Action) -> bool {
        let resource = action.resource();
        resource != reconciler.primary()
            && reconciler.reads().contains(&resource)
            && (!matches!(action, Action::Create { .. }) || action.creates_controlled())
    }

    /// Records `plan`, decided for `key` on `cache`, and sends its first step.
    pub(super) fn start_plan(
        &mut self,
        key: &ObjectKey,
        plan: Plan,
        cache: &ShardCache,
        now: Instant,
        writes: &mut PendingWrites,
        outbox: &mut Vec<Output>,
    ) {
        let Plan {
            steps,
            requeue_after,
            ..
        } = plan;
        if self.reconciler.proof_per_decision() {
            // A proof vouches for the decision it was asked for, destructive or not: one left
            // unused because the key turned out fine would otherwise vouch, much later, for a
            // time-based decision ("not renewed for the grace period") on a cache that has
            // lagged since.
            self.proofs.forget(key);
        }
        let steps: VecDeque<Vec<Action>> = steps.into_iter().filter(|s| !s.is_empty()).collect();
        let primary = self.reconciler.primary();
        let reconciler = &*self.reconciler;
        let counted = |a: &Action| Self::counted_by(reconciler, a);
        let creates = steps
            .iter()
            .flatten()
            .filter(|a| matches!(a, Action::Create { .. }) && counted(a))
            .count() as i64;
        if self.mode.expectations() {
            let deletes = steps
                .iter()
                .flatten()
                .filter_map(|a| match a {
                    Action::Delete { uid, .. } if counted(a) => Some(uid.clone()),
                    _ => None,
                })
                .collect();
            self.expectations.expect(key, creates, deletes, now);
        }
        let owner_uid = cache.uid_of(primary, key).cloned();
        let generation = cache.generation_of(primary, key);
        self.plans.insert(
            key.clone(),
            PlanProgress {
                owner_uid,
                generation,
                unsent_creates: creates,
                steps,
                outstanding: 0,
                failed: false,
                superseded: false,
                held: false,
                requeue_after,
                started: now,
            },
        );
        self.advance_plan(key, false, now, writes, outbox);
    }

    /// Starts the next step of `owner`'s plan, or finishes the reconcile when there is none;
    /// with `hold`, a next step waits (the plan is marked held) instead of going out.
    pub(super) fn advance_plan(
        &mut self,
        owner: &ObjectKey,
        hold: bool,
        now: Instant,
        writes: &mut PendingWrites,
        outbox: &mut Vec<Output>,
    ) {
        let Some(plan) = self.plans.get_mut(owner) else {
            return;
        };
        if hold && !plan.failed && !plan.superseded && !plan.steps.is_empty() {
            plan.held = true;
            return;
        }
        plan.held = false;
        if self.mode.is_tidemark()
            && self.reconciler.proof_per_decision()
            && now.saturating_duration_since(plan.started) > DECISION_PROOF_HOLDS
            && !plan.steps.is_empty()
        {
            // A decision about time holds as long as its proof: a later step would act on a
            // fact (a Node silent) that may have stopped being true while the first travelled.
            plan.superseded = true;
            plan.requeue_after = Some(Duration::ZERO);
        }
        let step = if plan.failed || plan.superseded {
            None
        } else {
            plan.steps.pop_front()
        };
        let Some(step) = step else {
            for _ in 0..plan.unsent_creates {
                self.expectations.creation_observed(owner);
            }
            let outcome = match (plan.failed, plan.requeue_after) {
                (true, _) => Outcome::Failed,
                (false, Some(after)) => Outcome::RequeueAfter(after),
                (false, None) => Outcome::Done,
            };
            if plan.failed {
                self.stats.plans_failed += 1;
            }
            self.stats
                .record_work(now.saturating_duration_since(plan.started));
            self.plans.remove(owner);
            self.queue.finish(owner, outcome, now);
            return;
        };
        plan.outstanding = step.len();
        plan.unsent_creates -= step
            .iter()
            .filter(|a| {
                matches!(a, Action::Create { .. }) && Self::counted_by(&*self.reconciler, a)
            })
            .count() as i64;
        for action in step {
            let id = WriteId(writes.next_seq());
            let deleted = match &action {
                Action::Delete { key, uid, .. } => Some((key.clone(), uid.clone())),
                _ => None,
            };
            writes.map.insert(
                id,
                PendingWrite {
                    controller: self.index,
                    owner: owner.clone(),
                    resource: action.resource(),
                    deleted,
                    creates: matches!(action, Action::Create { .. }),
                    counted_create: matches!(action, Action::Create { .. })
                        && Self::counted_by(&*self.reconciler, &action),
                },
            );
            outbox.push(Output::Write(WriteRequest {
                id,
                controller: self.reconciler.name(),
                owner: owner.clone(),
                action,
            }));
        }
    }

    /// A read meant to prove `key`'s destructive decision current failed: the key stays parked
    /// (its retry backs off) and the operator is told on the primary object.
    pub(super) fn freshness_unproven(
        &mut self,
        cache: &ShardCache,
        outbox: &mut Vec<Output>,
        key: ObjectKey,
        message: String,
        now: Instant,
    ) {
        self.queue.fail_parked(&key, now);
        let resource = self.reconciler.primary();
        outbox.push(Output::Degraded {
            controller: self.reconciler.name(),
            uid: cache.uid_of(resource, &key).cloned(),
            key,
            resource,
            reason: "FreshnessUnproven",
            message,
        });
    }
}
