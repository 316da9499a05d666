//! The `Reconciler` contract: read the shard's cache, return a plan of actions. No I/O.

use crate::action::Plan;
use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::object::Object;
use crate::resource::Resource;

pub use crate::reconcile_error::ReconcileError;
use smallvec::SmallVec;
use std::time::Instant;

/// The clock readings a reconcile may use, passed in so tests control time.
#[derive(Copy, Clone, Debug)]
pub struct Context {
    /// Monotonic now.
    pub now: Instant,
    /// Wall-clock now in Unix seconds (only for comparing with timestamps objects carry).
    pub unix_secs: i64,
}

/// A controller's logic. It reads only the shard's cache and returns what to do.
pub trait Reconciler: Send + 'static {
    /// A short lower-case name for logs and metrics labels (`replicaset`).
    fn name(&self) -> &'static str;
    /// The feature gate suffix (`ReplicaSet` for `StaleControllerConsistencyReplicaSet`).
    fn gate_name(&self) -> &'static str;
    /// The resource whose objects are this controller's keys.
    fn primary(&self) -> Resource;
    /// Every resource it reads; it runs only once all of them are synced.
    fn reads(&self) -> &[Resource];
    /// The keys whose reconcile depends on `object`.
    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>);
    /// Keys found in the cache that depend on a cluster-wide `object` (a Node concerns every
    /// DaemonSet); none by default.
    fn keys_for_cache(&self, _object: &Object, _cache: &ShardCache, _keys: &mut Vec<ObjectKey>) {}
    /// Whether every destructive decision needs its own barrier, not only the first one of a key
    /// (time-based decisions: "not renewed for 40 s" is only true if the cache is current now).
    fn proof_per_decision(&self) -> bool {
        false
    }
    /// Decides what to do for `key`.
    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &ShardCache,
        ctx: &Context,
    ) -> Result<Plan, ReconcileError>;
}
