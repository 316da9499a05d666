//! The runtime's answers: a write's result, a barrier's revision, a live read's versions. Each
//! is recorded against the key that asked, which then wakes, parks again or retries.

use super::Shard;
use super::gate::DECISION_PROOF_HOLDS;
use crate::live_read::{LiveReadId, Verdict, judge};
use crate::mode::ConsistencyMode;
use crate::proof::BarrierId;
use crate::rv::ResourceVersion;
use crate::write::{WriteErrorKind, WriteId, WriteResult};
use smallvec::SmallVec;
use std::time::Instant;

impl Shard {
    /// The answer to [`Output::Barrier`]: the current revision, or why it could not be read.
    /// Each key it covers is proven and waits (as for its own write) until the watermarks of
    /// everything its controller reads have reached that revision; on failure the keys retry
    /// after their error backoff, still unproven.
    pub fn barrier_done(
        &mut self,
        id: BarrierId,
        result: Result<ResourceVersion, String>,
        now: Instant,
    ) {
        let result = match result {
            Ok(revision) => match self.known.highest() {
                Some(highest) if revision < highest => Err(format!(
                    "the read answered revision {revision}, older than the {highest} this process has already seen (a lagging replica?)"
                )),
                _ => {
                    self.known.learn(revision, now);
                    Ok(revision)
                }
            },
            Err(why) => Err(why),
        };
        let Some((keys, sent)) = self.barriers.finish(id) else {
            return;
        };
        let mut counted: SmallVec<[usize; 4]> = SmallVec::new();
        for (index, key) in keys {
            let Some(c) = self.controllers.get_mut(index) else {
                continue;
            };
            if !counted.contains(&index) {
                counted.push(index);
                match result {
                    Ok(_) => c.stats.live_reads_ok += 1,
                    Err(_) => c.stats.live_reads_failed += 1,
                }
            }
            match &result {
                Ok(revision) => {
                    tracing::debug!(controller = c.reconciler.name(), %key, %revision, "barrier read: key proven once the cache reaches it");
                    let owner_uid = self.cache.uid_of(c.reconciler.primary(), &key);
                    for resource in c.reconciler.reads() {
                        c.versions
                            .record_write(&key, owner_uid, *resource, Ok(*revision));
                    }
                    c.proofs.prove(&key, sent);
                    c.unknown_outcome.remove(&key);
                    c.queue.wake(&key, now);
                }
                Err(why) => {
                    tracing::warn!(controller = c.reconciler.name(), %key, error = %why, "barrier read failed: destructive work stays parked");
                    let message = format!(
                        "destructive changes paused: the live read that proves the cache fresh failed: {why}"
                    );
                    c.freshness_unproven(&self.cache, &mut self.outbox, key, message, now);
                }
            }
        }
    }

    /// The writer's answer to a write.
    pub fn write_done(&mut self, id: WriteId, result: WriteResult, now: Instant) {
        let Some(pending) = self.writes.take(id) else {
            return;
        };
        if let WriteResult::Written { resource_version } = &result
            && let Ok(v) = ResourceVersion::parse(resource_version)
        {
            // Any write's version is a revision the server has reached, whatever its resource.
            self.known.learn(v, now);
        }
        let Some(c) = self.controllers.get_mut(pending.controller) else {
            return;
        };
        let Some(plan) = c.plans.get_mut(&pending.owner) else {
            return;
        };
        match result {
            WriteResult::Written { .. } if !c.reconciler.reads().contains(&pending.resource) => {
                // A resource the controller never reads (a claim, a revision) has no watermark
                // to wait for: nothing to record.
                c.stats.writes += 1;
            }
            WriteResult::Written { resource_version } => {
                c.stats.writes += 1;
                let version = ResourceVersion::parse(&resource_version);
                if let Ok(v) = version {
                    let seq = self.writes.next_seq();
                    self.acked
                        .get_mut(pending.resource)
                        .insert((v, seq), (pending.controller, now));
                }
                c.versions.record_write(
                    &pending.owner,
                    plan.owner_uid.as_ref(),
                    pending.resource,
                    version,
                );
            }
            WriteResult::Deleted => {
                c.stats.writes += 1;
                // KEP-5647 as upstream implements it has no version for a delete: it tracks
                // none (expectations cover deletes there).
                if let Some((key, uid)) = pending.deleted
                    && c.mode != ConsistencyMode::Upstream136
                    && self.cache.is_live(pending.resource, &key, &uid)
                {
                    c.versions.record_delete(
                        &pending.owner,
                        plan.owner_uid.as_ref(),
                        pending.resource,
                        uid,
                    );
                }
            }
            WriteResult::Withdrawn => {
                // Never sent: nothing to record (only Tidemark's mode withdraws, and it counts
                // no expectations). Not a failure either: the key decides again at once, on
                // the spec that superseded the plan, without backoff.
                c.stats.writes_withdrawn += 1;
            }
            WriteResult::Failed(error) => {
                c.stats.write_failures += 1;
                if (error.kind.outcome_unknown() || error.kind == WriteErrorKind::Conflict)
                    && c.mode.is_tidemark()
                {
                    // The write may have landed where the cache cannot see it yet, or (409) the
                    // server holds a newer version than the one the decision read: either way
                    // the next decision of this key waits for a barrier, whatever it wants to do.
                    c.unknown_outcome.insert(pending.owner.clone());
                }
                let already_gone =
                    error.kind == WriteErrorKind::NotFound && pending.deleted.is_some();
                // A create by deterministic name that finds the object there already is done.
                let already_there = error.kind == WriteErrorKind::AlreadyExists
                    && pending.deleted.is_none()
                    && pending.creates;
                if !already_gone && !already_there {
                    plan.failed = true;
                    // Upstream lowers the expectation of a write that failed: it will never
                    // be observed.
                    if pending.counted_create {
                        c.expectations.creation_observed(&pending.owner);
                    } else if let Some((_, uid)) = &pending.deleted {
                        c.expectations.deletion_observed(&pending.owner, uid);
                    }
                }
            }
        }
        plan.outstanding -= 1;
        if plan.outstanding == 0 {
            let hold = Self::waits_for_relist(&self.relisting, self.lag_threshold, c, now);
            c.advance_plan(
                &pending.owner,
                hold,
                now,
                &mut self.writes,
                &mut self.outbox,
            );
        }
    }
    /// The answer to [`Output::LiveRead`]: each object's current version (`None`: not found),
    /// in the order asked, or why the read failed.
    pub fn live_read_done(
        &mut self,
        id: LiveReadId,
        result: Result<Vec<Option<ResourceVersion>>, String>,
        now: Instant,
    ) {
        let Some(pending) = self.live_reads.finish(id) else {
            return;
        };
        let Some(c) = self.controllers.get_mut(pending.controller) else {
            return;
        };
        let key = pending.key;
        let live = match result {
            Ok(live) => live,
            Err(why) => {
                c.stats.live_reads_failed += 1;
                tracing::warn!(controller = c.reconciler.name(), %key, error = %why, "live read failed: destructive work stays parked");
                let message = format!(
                    "destructive changes paused: the cache lags and the live read that would prove this decision current failed: {why}"
                );
                c.freshness_unproven(&self.cache, &mut self.outbox, key, message, now);
                return;
            }
        };
        c.stats.live_reads_ok += 1;
        if let Some(highest) = live.iter().flatten().max() {
            self.known.learn(*highest, now);
        }
        match judge(&pending.expected, &live) {
            Verdict::Current
                if c.reconciler.proof_per_decision()
                    && now.saturating_duration_since(pending.sent) > DECISION_PROOF_HOLDS =>
            {
                // A fact about time ("not renewed") read this long ago may have stopped being
                // true while the answer travelled: read again rather than act on it.
                tracing::debug!(controller = c.reconciler.name(), %key, "live read matched but answered too late to vouch for a time-based decision: deciding again");
                c.queue.wake(&key, now);
            }
            Verdict::Current => {
                tracing::debug!(controller = c.reconciler.name(), %key, "live read matches the cache: the decision goes ahead");
                c.verified.insert(key.clone(), pending.expected);
                c.queue.wake(&key, now);
            }
            Verdict::Behind(targets) => {
                tracing::debug!(controller = c.reconciler.name(), %key, ?targets, "live read found newer versions: decide again once the cache has them");
                let owner_uid = self.cache.uid_of(c.reconciler.primary(), &key);
                for (resource, version) in targets {
                    c.versions
                        .record_write(&key, owner_uid, resource, Ok(version));
                }
                c.queue.wake(&key, now);
            }
            Verdict::Differs => {
                tracing::debug!(controller = c.reconciler.name(), %key, "live read found an object on one side only: barrier before deciding again");
                self.barriers.request(pending.controller, &key);
            }
        }
    }
}
