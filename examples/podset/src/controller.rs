//! The PodSet controller: count the live Pods a PodSet controls, create the missing ones in
//! slow-start batches, delete the surplus (not-ready and newest first), and write the status.

use crate::{KIND, PodSet};
use serde_json::{Value, json};
use smallvec::SmallVec;
use std::cmp::Reverse;
use tidemark_engine::reconcile_error::ensure_well_formed;
use tidemark_engine::{
    Action, Context, CustomObject, Object, ObjectKey, Plan, PodView, ReconcileError, Reconciler,
    Resource, ShardCache,
};

/// Keeps each PodSet's Pods at `spec.replicas`.
#[derive(Debug, Clone)]
pub struct PodSetController {
    reads: [Resource; 2],
}

impl PodSetController {
    /// The controller of `podsets` (the handle [`crate::registration`] registered).
    pub fn new(podsets: Resource) -> Self {
        Self {
            reads: [podsets, Resource::Pods],
        }
    }

    fn podsets(&self) -> Resource {
        self.reads[0]
    }
}

impl Reconciler for PodSetController {
    fn name(&self) -> &'static str {
        "podset"
    }

    fn gate_name(&self) -> &'static str {
        KIND
    }

    fn primary(&self) -> Resource {
        self.podsets()
    }

    fn reads(&self) -> &[Resource] {
        &self.reads
    }

    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::Custom(o) if o.resource == self.podsets() => keys.push(o.key.clone()),
            Object::Pod(pod) => keys.extend(pod.owner_key(KIND)),
            _ => {}
        }
    }

    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &ShardCache,
        _ctx: &Context,
    ) -> Result<Plan, ReconcileError> {
        let Some(object) = cache.custom(self.podsets(), key) else {
            return Ok(Plan::default());
        };
        let podset: &PodSet = object.read(self.name())?;
        if object.terminating {
            return Ok(Plan::default());
        }
        let mut live: Vec<&PodView> = Vec::new();
        for pod in cache.pods.owned_by(&object.uid) {
            ensure_well_formed(self.name(), pod)?;
            if pod.is_active() {
                live.push(pod);
            }
        }
        let wanted = podset.spec.replicas as usize;
        let mut plan = Plan::default();
        let status = status_body(object, podset, &live);
        if let Some(status) = status {
            plan.steps.push(vec![Action::UpdateStatus {
                resource: self.podsets(),
                key: key.clone(),
                body: status,
            }]);
        }
        if live.len() < wanted {
            let pod = pod_body(object, podset).ok_or_else(|| ReconcileError::Unbuildable {
                controller: self.name(),
                key: key.clone(),
                message: "spec.template has no spec".into(),
            })?;
            let creates = (live.len()..wanted)
                .map(|_| Action::Create {
                    resource: Resource::Pods,
                    namespace: key.namespace_arc().clone(),
                    body: pod.clone(),
                })
                .collect();
            plan.push_slow_start(creates);
        } else if live.len() > wanted {
            live.sort_by_key(|p| (p.ready, Reverse(p.created), p.key.name().to_string()));
            let deletes = live[..live.len() - wanted]
                .iter()
                .map(|p| Action::Delete {
                    resource: Resource::Pods,
                    key: p.key.clone(),
                    uid: p.uid.clone(),
                })
                .collect();
            plan.steps.push(deletes);
        }
        Ok(plan)
    }
}

/// The status to write, when the counts differ from the last one written.
fn status_body(object: &CustomObject, podset: &PodSet, live: &[&PodView]) -> Option<Value> {
    let replicas = live.len() as u32;
    let ready = live.iter().filter(|p| p.ready).count() as u32;
    let status = &podset.status;
    if status.replicas == replicas
        && status.ready_replicas == ready
        && status.observed_generation == object.generation
    {
        return None;
    }
    Some(json!({
        "apiVersion": object.resource.api_version(),
        "kind": KIND,
        "metadata": {
            "name": object.key.name(),
            "namespace": object.key.namespace(),
            "resourceVersion": object.resource_version.map(|v| v.to_string()),
        },
        "status": {
            "replicas": replicas,
            "readyReplicas": ready,
            "observedGeneration": object.generation,
        }
    }))
}

/// A Pod from the template, controlled by the PodSet; `None` if the template has no spec.
fn pod_body(object: &CustomObject, podset: &PodSet) -> Option<Value> {
    let template = &podset.spec.template;
    let spec = template.get("spec").filter(|s| s.is_object())?;
    let labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    Some(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": format!("{}-", object.key.name()),
            "namespace": object.key.namespace(),
            "labels": labels,
            "ownerReferences": [{
                "apiVersion": object.resource.api_version(),
                "kind": KIND,
                "name": object.key.name(),
                "uid": object.uid.text(),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": spec,
    }))
}
