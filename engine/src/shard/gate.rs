//! The freshness gate as one pure decision: given what is known of a controller, a key and
//! (once the reconciler has decided) its plan, whether the key reconciles, waits and for what,
//! or goes ahead. The shard gathers the facts and carries out the decision; the table of cases
//! is in `engine/testdata/gate/`.

use crate::mode::ConsistencyMode;
use crate::queue::ParkTarget;
use crate::version_map::Freshness;
use std::time::Duration;

/// A watermark that has not moved for this long proves nothing about now: a destructive decision
/// that reads it needs a fresh barrier even for a proven key.
pub const QUIET_WATERMARK: Duration = Duration::from_secs(90);

/// How long the proof of a decision that needs one of its own (node lifecycle's "not renewed
/// for the grace period") holds: such a decision is judged as of its barrier, so one carried
/// out long after it (its key parked behind a slow watch) would act on a fact that may have
/// stopped being true. Past this the objects it rests on are read live first: unchanged, the
/// fact still holds (a new barrier would wait behind the same slow watch).
pub const DECISION_PROOF_HOLDS: Duration = Duration::from_secs(1);

/// What the gate decides on.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The controller's protection.
    pub mode: ConsistencyMode,
    /// This shard acts for the leader (or leader election is off).
    pub leading: bool,
    /// Every cache the controller reads has had its first list.
    pub synced: bool,
    /// A cache the controller reads has not reached this shard's takeover write yet.
    pub takeover_pending: bool,
    /// A cache the controller reads waits for its relist.
    pub relisting: bool,
    /// The key's creates and deletes of its last sync have not all shown up in the cache
    /// (asked only of the modes that keep expectations).
    pub expectations_unmet: bool,
    /// The key's own writes against the watermarks.
    pub freshness: Freshness,
    /// A write of the key's has an unknown outcome (5xx, a broken connection) or was refused
    /// with a conflict (the server holds a newer version than the decision read).
    pub unknown_outcome: bool,
    /// The reconciler's plan, once it has decided; `None` before it runs.
    pub plan: Option<PlanFacts>,
}

/// What the gate knows of a plan the reconciler returned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanFacts {
    /// It deletes, scales down, expires or marks: it needs proof.
    pub destructive: bool,
    /// It creates: on a cache known to lag it is read live first (a create decided on a spec
    /// the user has since lowered is a Pod too many).
    pub creates: bool,
    /// How long destructive work still waits after a takeover (the previous leader's writes may
    /// still commit); `None` when it need not.
    pub takeover_wait: Option<Duration>,
    /// The key has been proven by a barrier since start or leadership.
    pub proven: bool,
    /// A watermark the controller reads has not moved for [`QUIET_WATERMARK`].
    pub quiet: bool,
    /// A cache the controller reads is known to lag (asked of destructive and creating plans).
    pub lagging: bool,
    /// The decision needs a proof of its own and its proof is older than
    /// [`DECISION_PROOF_HOLDS`].
    pub proof_aged: bool,
    /// It adopts orphans: the owner is read live first whatever the caches' lag.
    pub adopts: bool,
    /// A live read matched exactly the versions this decision rests on.
    pub verified: bool,
}

impl Facts {
    /// A fresh key of a ready controller under `mode`, before its reconcile.
    pub fn ready(mode: ConsistencyMode) -> Self {
        Self {
            mode,
            leading: true,
            synced: true,
            takeover_pending: false,
            relisting: false,
            expectations_unmet: false,
            freshness: Freshness::Fresh,
            unknown_outcome: false,
            plan: None,
        }
    }
}

/// What the gate decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The controller runs nothing now (not leading, not synced, a takeover or a relist pending):
    /// its keys stay queued.
    Wait,
    /// The key's expectations are unmet: it parks until they are (upstream syncs it without
    /// managing its Pods).
    ParkExpectations,
    /// The cache lacks the key's own writes: it parks until it has them.
    Park(ParkTarget),
    /// The cache lacks the key's own writes and the mode requeues with the rate limiter
    /// (KEP-5647 as kube-controller-manager implements it); the target is what it lacked.
    RequeueStale(ParkTarget),
    /// Run the reconciler; `stale` when the cache lacks the key's writes and the mode does not
    /// act on it (counted, not stopped).
    Reconcile {
        /// The reconcile reads a cache older than the key's own writes.
        stale: bool,
    },
    /// One consistent read of the current revision first (unproven key, quiet watermark, or a
    /// write whose outcome is unknown).
    Barrier,
    /// Destructive work waits this long after a takeover, then the key decides again.
    Hold(Duration),
    /// A cache a destructive or creating decision reads lags, or the decision adopts orphans:
    /// read its objects live before carrying it out.
    LiveRead,
    /// Carry out the plan.
    Proceed,
}

/// The gate.
pub fn decide(facts: &Facts) -> Decision {
    let mode = facts.mode;
    if !facts.leading
        || !facts.synced
        || facts.takeover_pending
        || (mode.is_tidemark() && facts.relisting)
    {
        return Decision::Wait;
    }
    let Some(plan) = &facts.plan else {
        return before_reconcile(facts);
    };
    if plan.destructive
        && let Some(wait) = plan.takeover_wait
    {
        return Decision::Hold(wait);
    }
    if mode.is_tidemark() && plan.destructive && (!plan.proven || plan.quiet) {
        return Decision::Barrier;
    }
    if mode.is_tidemark()
        && (plan.destructive || plan.creates)
        && (plan.lagging || plan.destructive && plan.proof_aged)
        && !plan.verified
    {
        return Decision::LiveRead;
    }
    if mode.is_tidemark() && plan.adopts && !plan.verified {
        return Decision::LiveRead;
    }
    Decision::Proceed
}

fn before_reconcile(facts: &Facts) -> Decision {
    let mode = facts.mode;
    if mode.expectations() && facts.expectations_unmet {
        return Decision::ParkExpectations;
    }
    // Every mode records its writes; only the gated modes act on what the check says, the
    // others count the reconciles that ran on a stale cache.
    let stale = match facts.freshness {
        Freshness::Fresh | Freshness::Unknown(_) => None,
        Freshness::Stale { resource, target } => Some(ParkTarget::Watermark {
            resource,
            version: target,
        }),
        Freshness::AwaitingDeletes { .. } => Some(ParkTarget::Deletions),
    };
    let stale = match stale {
        Some(_) if !mode.tracks_writes() => true,
        Some(target) if mode.is_tidemark() => return Decision::Park(target),
        Some(target) => return Decision::RequeueStale(target),
        None => false,
    };
    if facts.unknown_outcome {
        return Decision::Barrier;
    }
    Decision::Reconcile { stale }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
