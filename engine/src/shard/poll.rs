//! One poll of a shard: timers that ran out, then every ready key through the gate, the
//! reconciler and the gate again, and the plans that come out started.

use super::Shard;
use super::controller::Controller;
use super::gate::{self, DECISION_PROOF_HOLDS, Decision, Facts, PlanFacts, QUIET_WATERMARK};
use super::messages::{Output, STARVING_AFTER_SKIPS};
use super::settle::settle;
use crate::action::Plan;
use crate::hot_keys::HotChange;
use crate::key::ObjectKey;
use crate::live_read::Expected;
use crate::queue::{Fired, Outcome, ParkTarget, Popped};
use crate::reconcile_error::ReconcileError;
use crate::reconciler::Context;
use crate::resource::Resource;
use crate::version_map::Freshness;
use smallvec::SmallVec;
use std::time::Instant;

impl Shard {
    /// Runs due timers and every ready key, and moves what the shard wants done into `out`.
    pub fn poll(&mut self, ctx: &Context, out: &mut Vec<Output>) {
        self.forget_finished_holds(ctx.now);
        for index in 0..self.controllers.len() {
            self.poll_controller(index, ctx);
        }
        if let Some((id, controller)) = self.barriers.start(ctx.now) {
            let resource = self.controllers[controller].reconciler.primary();
            self.outbox.push(Output::Barrier { id, resource });
        }
        out.append(&mut self.outbox);
    }

    fn poll_controller(&mut self, index: usize, ctx: &Context) {
        let now = ctx.now;
        self.fire_timers(index, now);
        let base = self.controller_facts(&self.controllers[index]);
        if gate::decide(&base) == Decision::Wait {
            return;
        }
        let c = &mut self.controllers[index];
        let held: SmallVec<[ObjectKey; 4]> = c
            .plans
            .iter()
            .filter(|(_, p)| p.held && p.outstanding == 0)
            .map(|(k, _)| k.clone())
            .collect();
        for key in held {
            // A plan is never resumed after a hold: its next steps were decided on the cache
            // before the relist, and the writes it already made may not be in the cache yet.
            // The key decides again, through the gate, on the cache as it is now.
            if let Some(plan) = c.plans.get_mut(&key) {
                plan.superseded = true;
                plan.requeue_after = Some(std::time::Duration::ZERO);
            }
            c.advance_plan(&key, false, now, &mut self.writes, &mut self.outbox);
        }
        while let Some(popped) = self.controllers[index].queue.pop() {
            self.run_key(index, popped, &base, ctx);
        }
    }

    /// Parked keys whose safety timer ran out: probe the watermark they wait for, and report
    /// the ones skipped too often.
    fn fire_timers(&mut self, index: usize, now: Instant) {
        let c = &mut self.controllers[index];
        self.fired.clear();
        c.queue.fire(now, &mut self.fired);
        for fired in self.fired.drain(..) {
            let Fired::ParkExpired { key, target, skips } = fired else {
                continue;
            };
            if let ParkTarget::Watermark { resource, version } = target {
                c.stats.probes += 1;
                self.outbox.push(Output::Probe {
                    controller: c.reconciler.name(),
                    key: key.clone(),
                    resource,
                    target: version,
                    watermark: *self.watermarks.get(resource),
                });
            }
            if skips >= STARVING_AFTER_SKIPS {
                c.stats.starving += 1;
                self.outbox.push(Output::Starving {
                    controller: c.reconciler.name(),
                    key,
                    skips,
                });
            }
        }
    }

    /// What the gate knows of `c` before any of its keys: leadership, sync, takeover, relist.
    fn controller_facts(&self, c: &Controller) -> Facts {
        let reads = c.reconciler.reads();
        Facts {
            leading: self.leads(c),
            synced: reads.iter().all(|r| *self.synced.get(*r)),
            takeover_pending: self.hold.is_some_and(|hold| {
                !reads
                    .iter()
                    .all(|r| self.watermarks.get(*r).is_some_and(|w| w >= hold))
            }),
            relisting: self.relisting_for(c),
            ..Facts::ready(c.mode)
        }
    }

    /// One ready key: the gate, the reconciler, the gate on its plan, and the plan started.
    fn run_key(&mut self, index: usize, popped: Popped, base: &Facts, ctx: &Context) {
        let now = ctx.now;
        let c = &mut self.controllers[index];
        let key = popped.key;
        let mut facts = base.clone();
        facts.expectations_unmet =
            c.mode.expectations() && c.expectations.unmet(&key, now).is_some();
        if !facts.expectations_unmet {
            facts.freshness = c.versions.check(&key, &self.watermarks);
            if matches!(facts.freshness, Freshness::Unknown(_)) {
                c.stats.unknown_freshness += 1;
            }
            facts.unknown_outcome = c.unknown_outcome.contains(&key);
        }
        match gate::decide(&facts) {
            Decision::Reconcile { stale } => {
                if stale {
                    c.stats.stale_reconciles += 1;
                }
            }
            Decision::ParkExpectations => {
                // Upstream syncs such a key without managing its Pods; the observation that
                // meets the expectations wakes it.
                c.stats.expectation_skips += 1;
                c.queue.park(&key, ParkTarget::Expectations, now);
                return;
            }
            Decision::Park(target) => {
                count_stale_skip(c, &key, &target, now);
                tracing::debug!(controller = c.reconciler.name(), %key, target = ?target, watermarks = ?self.watermarks, "stale sync skip: parked until the cache has the key's own writes");
                c.queue.park(&key, target, now);
                return;
            }
            Decision::RequeueStale(target) => {
                // KEP-5647 as kube-controller-manager implements it: EnsureReady fails, the
                // sync returns the error, and the key is requeued rate-limited.
                count_stale_skip(c, &key, &target, now);
                c.queue.start(&key);
                c.queue.finish(&key, Outcome::Failed, now);
                return;
            }
            Decision::Barrier => {
                c.stats.unknown_outcome_barriers += 1;
                tracing::debug!(controller = c.reconciler.name(), %key, "a write's outcome is unknown or it conflicted: barrier before deciding again");
                c.queue.park(&key, ParkTarget::Barrier, now);
                self.barriers.request(index, &key);
                return;
            }
            other => unreachable!("the gate before a reconcile decided {other:?}"),
        }
        if popped.woken {
            c.stats
                .record_wake(now.saturating_duration_since(popped.ready_since));
        }
        if let Some(parked) = popped.parked_for {
            tracing::debug!(controller = c.reconciler.name(), %key, parked_ms = parked.as_millis() as u64, "woken: the cache caught up");
            c.stats.record_parked(parked);
        }
        c.stats
            .record_queue_latency(now.saturating_duration_since(popped.ready_since));
        c.queue.start(&key);
        c.stats.reconciles += 1;
        // A decision that needs a proof of its own is about time ("not renewed for the grace
        // period"): it is judged as of the moment its proof's barrier was sent, the last moment
        // the cache is known to be current, not as of now.
        let as_of_proof = c
            .reconciler
            .proof_per_decision()
            .then(|| c.proofs.proven_as_of(&key))
            .flatten()
            .map(|proven| Context {
                now: proven.min(ctx.now),
                unix_secs: ctx.unix_secs,
            });
        let judged = as_of_proof.as_ref().unwrap_or(ctx);
        // A reconcile that panics fails its key only; the shard and its other keys go on.
        let reconciled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            c.reconciler.reconcile(&key, &self.cache, judged)
        }))
        .unwrap_or_else(|payload| {
            c.stats.reconcile_panics += 1;
            Err(ReconcileError::panicked(
                c.reconciler.name(),
                &key,
                payload.as_ref(),
            ))
        });
        let plan = match reconciled {
            Err(error) => {
                c.stats.reconcile_errors += 1;
                let outcome = settle(&error, &mut c.stats, &mut self.outbox);
                c.queue.finish(&key, outcome, now);
                return;
            }
            Ok(plan) => plan,
        };
        let (plan_facts, expected) = self.plan_facts(index, &key, &plan, now);
        let (destructive, creates) = (plan_facts.destructive, plan_facts.creates);
        let adopts = plan_facts.adopts;
        facts.plan = Some(plan_facts);
        let decision = gate::decide(&facts);
        let c = &mut self.controllers[index];
        if c.mode.is_tidemark()
            && (destructive || creates || adopts)
            && matches!(decision, Decision::LiveRead | Decision::Proceed)
        {
            // A live read vouches for one decision only.
            c.verified.remove(&key);
        }
        match decision {
            Decision::Hold(wait) => {
                c.stats.destructive_held += 1;
                tracing::debug!(controller = c.reconciler.name(), %key, "destructive plan held: the previous leader's writes may still commit");
                c.queue.finish(&key, Outcome::RequeueAfter(wait), now);
            }
            Decision::Barrier => {
                c.stats.destructive_held += 1;
                tracing::debug!(controller = c.reconciler.name(), %key, "destructive plan held: key unproven since start or leadership, barrier requested");
                c.queue.park(&key, ParkTarget::Barrier, now);
                self.barriers.request(index, &key);
            }
            Decision::LiveRead => {
                if destructive {
                    c.stats.destructive_held += 1;
                }
                c.stats.lag_live_reads += 1;
                let objects = expected
                    .iter()
                    .map(|e| (e.resource, e.key.clone()))
                    .collect();
                tracing::debug!(controller = c.reconciler.name(), %key, "plan held: a cache it reads is known to lag, live read requested");
                c.queue.park(&key, ParkTarget::LiveRead, now);
                let id = self.live_reads.start(index, key.clone(), expected, now);
                self.outbox.push(Output::LiveRead {
                    id,
                    controller: c.reconciler.name(),
                    key,
                    objects,
                });
            }
            Decision::Proceed => {
                c.start_plan(
                    &key,
                    plan,
                    &self.cache,
                    now,
                    &mut self.writes,
                    &mut self.outbox,
                );
            }
            other => unreachable!("the gate on a plan decided {other:?}"),
        }
    }

    /// What the gate knows of `plan`, decided for `key`, and (when a cache it reads lags) the
    /// versions the decision rests on, which a live read must find.
    fn plan_facts(
        &self,
        index: usize,
        key: &ObjectKey,
        plan: &Plan,
        now: Instant,
    ) -> (PlanFacts, Vec<Expected>) {
        let c = &self.controllers[index];
        let destructive = plan.is_destructive();
        let creates = plan.creates();
        let mut facts = PlanFacts {
            destructive,
            creates,
            adopts: plan.adopts,
            takeover_wait: self
                .destructive_from
                .filter(|from| now < *from)
                .map(|from| from - now),
            ..PlanFacts::default()
        };
        let mut expected = Vec::new();
        if !((destructive || creates || plan.adopts) && c.mode.is_tidemark()) {
            return (facts, expected);
        }
        let reads = c.reconciler.reads();
        let proof = c.proofs.proven_as_of(key);
        facts.proven = proof.is_some();
        facts.proof_aged = c.reconciler.proof_per_decision()
            && proof.is_some_and(|at| now.saturating_duration_since(at) > DECISION_PROOF_HOLDS);
        facts.quiet = reads.iter().any(|r| {
            self.moved_at
                .get(*r)
                .is_none_or(|at| now.saturating_duration_since(at) >= QUIET_WATERMARK)
        });
        facts.lagging = reads.iter().any(|r| self.is_lagging(*r, now));
        if facts.lagging || facts.proof_aged || plan.adopts {
            let primary = c.reconciler.primary();
            expected = std::iter::once((primary, key.clone()))
                .chain(plan.rests_on.iter().cloned())
                .map(|(resource, object)| Expected {
                    cached: self.cache.resource_version_of(resource, &object),
                    resource,
                    key: object,
                })
                .collect();
            facts.verified = c.verified.get(key) == Some(&expected);
        }
        (facts, expected)
    }
}

/// A stale sync skip of `key`, counted per resource (a key awaiting deletions counts against
/// Pods) and against the key, whose name is logged when it is skipped far more than the rest.
fn count_stale_skip(c: &mut Controller, key: &ObjectKey, target: &ParkTarget, now: Instant) {
    let resource = match target {
        ParkTarget::Watermark { resource, .. } => *resource,
        _ => Resource::Pods,
    };
    c.stats.stale_sync_skips += 1;
    *c.stats.stale_sync_skips_by_resource.get_mut(resource) += 1;
    match c.hot_keys.record(key, now) {
        Some(HotChange::Became(hot)) => tracing::warn!(
            controller = c.reconciler.name(),
            key = %hot.key,
            skips_per_second = hot.skips_per_second,
            "hot key: skipped far more than the rest (its own writes keep outrunning the cache)"
        ),
        Some(HotChange::Cooled(key)) => {
            tracing::info!(controller = c.reconciler.name(), %key, "hot key cooled down")
        }
        None => {}
    }
}
