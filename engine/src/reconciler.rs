//! The `Reconciler` contract: read the shard's cache, return a plan of actions. No I/O.

use crate::action::Plan;
use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::object::{Object, PodView};
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

/// A controller's logic. It reads only the shard's cache and returns what to do; the engine
/// decides when a key may run (its writes seen, its proof given) and carries the plan out.
///
/// A controller of a user's resource: each `Greeting` wants a Pod that says its text.
///
/// ```
/// use serde::Deserialize;
/// use smallvec::SmallVec;
/// use tidemark_engine::{
///     Action, Context, Object, ObjectKey, Plan, ReconcileError, Reconciler, Resource,
///     ResourceType, ShardCache,
/// };
///
/// #[derive(Deserialize)]
/// struct Greeting {
///     spec: GreetingSpec,
/// }
/// #[derive(Deserialize)]
/// struct GreetingSpec {
///     text: String,
/// }
///
/// struct Greeter {
///     reads: [Resource; 1],
/// }
///
/// impl Reconciler for Greeter {
///     fn name(&self) -> &'static str {
///         "greeter"
///     }
///     fn gate_name(&self) -> &'static str {
///         "Greeter"
///     }
///     fn primary(&self) -> Resource {
///         self.reads[0]
///     }
///     fn reads(&self) -> &[Resource] {
///         &self.reads
///     }
///     fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
///         if let Object::Custom(greeting) = object {
///             keys.push(greeting.key.clone());
///         }
///     }
///     fn reconcile(
///         &self,
///         key: &ObjectKey,
///         cache: &ShardCache,
///         _ctx: &Context,
///     ) -> Result<Plan, ReconcileError> {
///         let Some(object) = cache.custom(self.primary(), key) else {
///             return Ok(Plan::default());
///         };
///         let greeting: &Greeting = object.read(self.name())?;
///         let mut plan = Plan::default();
///         plan.steps.push(vec![Action::Create {
///             resource: Resource::Pods,
///             namespace: key.namespace_arc().clone(),
///             body: serde_json::json!({
///                 "metadata": {"name": key.name()},
///                 "spec": {"containers": [{
///                     "name": "say", "image": "busybox", "args": ["echo", greeting.spec.text],
///                 }]},
///             }),
///         }]);
///         Ok(plan)
///     }
/// }
///
/// const GREETINGS: ResourceType =
///     ResourceType::namespaced("example.com", "v1", "Greeting", "greetings");
/// let greetings = Resource::register::<Greeting>(GREETINGS)?;
/// let greeter = Greeter { reads: [greetings] };
///
/// let mut cache = ShardCache::default();
/// let body = br#"{"apiVersion": "example.com/v1", "kind": "Greeting",
///   "metadata": {"namespace": "ns", "name": "hello", "uid": "u1", "resourceVersion": "7"},
///   "spec": {"text": "hi"}}"#;
/// let (object, _) = Object::decode(greetings, body)?;
/// cache.apply(object);
///
/// let ctx = Context { now: std::time::Instant::now(), unix_secs: 0 };
/// let plan = greeter.reconcile(&ObjectKey::new("ns", "hello"), &cache, &ctx)?;
/// assert_eq!(plan.steps.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// Whether a Pod that changed from `previous` to `pod` (same UID, still cached) can change
    /// this controller's decision or the status it writes: only then are its keys queued. By
    /// default, any change but the resourceVersion (a Pod's projection holds only what some
    /// controller reads).
    fn pod_change_matters(&self, previous: &PodView, pod: &PodView) -> bool {
        !previous.same_except_version(pod)
    }
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
