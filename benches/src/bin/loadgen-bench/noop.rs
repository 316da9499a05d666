//! The no-op reconciler of the reconcile-throughput phase: ReplicaSets are its keys, a Pod maps
//! to its controlling owner, and a reconcile only counts itself.

use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tidemark_engine::{
    Context, Object, ObjectKey, Plan, ReconcileError, Reconciler, Resource, ShardCache,
};

/// Counts reconciles and does nothing else.
#[derive(Debug, Clone, Default)]
pub struct Noop {
    /// Reconciles so far.
    pub count: Arc<AtomicU64>,
}

impl Reconciler for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn gate_name(&self) -> &'static str {
        "Noop"
    }
    fn primary(&self) -> Resource {
        Resource::ReplicaSets
    }
    fn reads(&self) -> &[Resource] {
        &[Resource::Pods, Resource::ReplicaSets]
    }
    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::ReplicaSet(_) => keys.push(object.key().clone()),
            Object::Pod(_) => {
                if let Some(owner) = object.controller_ref() {
                    keys.push(ObjectKey::new(
                        object.key().namespace_arc().clone(),
                        owner.name.clone(),
                    ));
                }
            }
            _ => {}
        }
    }
    fn reconcile(
        &self,
        _key: &ObjectKey,
        _cache: &ShardCache,
        _ctx: &Context,
    ) -> Result<Plan, ReconcileError> {
        self.count.fetch_add(1, Ordering::Relaxed);
        Ok(Plan::default())
    }
}
