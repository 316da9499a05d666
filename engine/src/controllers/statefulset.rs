//! StatefulSet: ordinal Pods `<set>-0..n-1` with their claims from `volumeClaimTemplates`,
//! created in order (OrderedReady: the next only once its predecessor is Running and Ready) or
//! all at once (Parallel); scale-down from the highest ordinal (one at a time under OrderedReady);
//! a ControllerRevision named after the template's hash for the update revision.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::object::{Object, PodPhase, PodView};
use crate::reconciler::{Context, ReconcileError, Reconciler};
use crate::resource::Resource;
use crate::statefulset_view::{StatefulSetStatus, StatefulSetView};
use crate::template_hash::template_hash;
use serde_json::{Value, json};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// The label carrying a Pod's revision.
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// The label naming a StatefulSet Pod.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label carrying a StatefulSet Pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// The controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct StatefulSetController;

fn running_and_ready(pod: &PodView) -> bool {
    pod.phase == PodPhase::Running && pod.ready && !pod.terminating
}

/// The update revision's name.
pub fn revision_name(set: &StatefulSetView) -> String {
    format!(
        "{}-{}",
        set.key.name(),
        template_hash(set.raw.pointer("/spec/template"))
    )
}

fn owner_reference(set: &StatefulSetView) -> Value {
    json!([{
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": set.key.name(),
        "uid": set.uid.as_str(),
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

fn claim_templates(set: &StatefulSetView) -> Vec<&Value> {
    set.raw
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .map(|ts| ts.iter().collect())
        .unwrap_or_default()
}

fn claim_name(template: &Value, set: &StatefulSetView, ordinal: usize) -> String {
    let t = template["metadata"]["name"].as_str().unwrap_or("data");
    format!("{t}-{}-{ordinal}", set.key.name())
}

/// The claims of `ordinal`, from the claim templates (created by name; one that exists is kept).
fn claims(set: &StatefulSetView, ordinal: usize) -> Vec<Action> {
    claim_templates(set)
        .into_iter()
        .map(|template| {
            let mut labels = set
                .raw
                .pointer("/spec/selector/matchLabels")
                .cloned()
                .unwrap_or(json!({}));
            if let Some(own) = template
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                && let Some(map) = labels.as_object_mut()
            {
                map.extend(own.clone());
            }
            Action::Create {
                resource: Resource::PersistentVolumeClaims,
                namespace: set.key.namespace_arc().clone(),
                body: json!({
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim_name(template, set, ordinal),
                        "namespace": set.key.namespace(),
                        "labels": labels,
                    },
                    "spec": template.get("spec").cloned().unwrap_or(json!({})),
                }),
            }
        })
        .collect()
}

fn pod_for(
    set: &StatefulSetView,
    ordinal: usize,
    revision: &str,
) -> Result<Action, ReconcileError> {
    let template = set
        .raw
        .pointer("/spec/template")
        .ok_or_else(|| ReconcileError {
            controller: "statefulset",
            message: format!("{} has no spec.template", set.key),
        })?;
    let name = format!("{}-{ordinal}", set.key.name());
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    if let Some(map) = labels.as_object_mut() {
        map.insert(POD_NAME_LABEL.into(), json!(name));
        map.insert(POD_INDEX_LABEL.into(), json!(ordinal.to_string()));
        map.insert(REVISION_LABEL.into(), json!(revision));
    }
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    spec["hostname"] = json!(name);
    if let Some(service) = set.raw.pointer("/spec/serviceName").and_then(Value::as_str) {
        spec["subdomain"] = json!(service);
    }
    let volumes: Vec<Value> = claim_templates(set)
        .into_iter()
        .map(|t| {
            json!({
                "name": t["metadata"]["name"].as_str().unwrap_or("data"),
                "persistentVolumeClaim": {"claimName": claim_name(t, set, ordinal)},
            })
        })
        .collect();
    if !volumes.is_empty() {
        let mut all = spec["volumes"].as_array().cloned().unwrap_or_default();
        all.extend(volumes);
        spec["volumes"] = json!(all);
    }
    Ok(Action::Create {
        resource: Resource::Pods,
        namespace: set.key.namespace_arc().clone(),
        body: json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": set.key.namespace(),
                "labels": labels,
                "annotations": template.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
                "ownerReferences": owner_reference(set),
            },
            "spec": spec,
        }),
    })
}

fn revision_object(set: &StatefulSetView, name: &str) -> Action {
    Action::Create {
        resource: Resource::ControllerRevisions,
        namespace: set.key.namespace_arc().clone(),
        body: json!({
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": set.key.namespace(),
                "labels": set.raw.pointer("/spec/selector/matchLabels").cloned().unwrap_or(json!({})),
                "ownerReferences": owner_reference(set),
            },
            "data": {"spec": {"template": set.raw.pointer("/spec/template").cloned().unwrap_or(json!({}))}},
            "revision": set.generation.max(1),
        }),
    }
}

fn delete(pod: &PodView) -> Action {
    Action::Delete {
        resource: Resource::Pods,
        key: pod.key.clone(),
        uid: pod.uid.clone(),
    }
}

impl Reconciler for StatefulSetController {
    fn name(&self) -> &'static str {
        "statefulset"
    }
    fn gate_name(&self) -> &'static str {
        "StatefulSet"
    }
    fn primary(&self) -> Resource {
        Resource::StatefulSets
    }
    fn reads(&self) -> &'static [Resource] {
        &[Resource::StatefulSets, Resource::Pods]
    }

    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        match object {
            Object::StatefulSet(set) => keys.push(set.key.clone()),
            Object::Pod(pod) => keys.extend(pod.owner_key("StatefulSet")),
            Object::ReplicaSet(_)
            | Object::Node(_)
            | Object::Lease(_)
            | Object::Job(_)
            | Object::DaemonSet(_) => {}
        }
    }

    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &ShardCache,
        _ctx: &Context,
    ) -> Result<Plan, ReconcileError> {
        let Some(set) = cache.statefulsets.get(key) else {
            return Ok(Plan::default());
        };
        let revision = revision_name(set);
        let mut pods: BTreeMap<usize, &PodView> = BTreeMap::new();
        for pod in cache.pods.owned_by(&set.uid) {
            if let Some(ordinal) = set.ordinal_of(pod.key.name()) {
                pods.insert(ordinal, pod);
            }
        }
        let desired = usize::try_from(set.replicas).unwrap_or(0);
        let mut plan = Plan::default();
        if set.status.update_revision.as_deref() != Some(revision.as_str()) {
            plan.steps.push(vec![revision_object(set, &revision)]);
        }
        if !set.terminating {
            if set.parallel {
                let missing: Vec<usize> = (0..desired).filter(|i| !pods.contains_key(i)).collect();
                plan.steps
                    .push(missing.iter().flat_map(|&i| claims(set, i)).collect());
                let creates: Result<Vec<Action>, _> = missing
                    .iter()
                    .map(|&i| pod_for(set, i, &revision))
                    .collect();
                plan.steps.push(creates?);
                plan.steps.push(
                    pods.range(desired..)
                        .rev()
                        .filter(|(_, p)| !p.terminating)
                        .map(|(_, p)| delete(p))
                        .collect(),
                );
            } else {
                let mut blocked = false;
                for ordinal in 0..desired {
                    match pods.get(&ordinal) {
                        None => {
                            plan.steps.push(claims(set, ordinal));
                            plan.steps.push(vec![pod_for(set, ordinal, &revision)?]);
                            blocked = true;
                            break;
                        }
                        Some(pod) if !running_and_ready(pod) => {
                            blocked = true;
                            break;
                        }
                        Some(_) => {}
                    }
                }
                let condemned_terminating = pods.range(desired..).any(|(_, p)| p.terminating);
                if !blocked
                    && !condemned_terminating
                    && let Some((_, highest)) = pods.range(desired..).next_back()
                {
                    plan.steps.push(vec![delete(highest)]);
                }
            }
        }
        let live: Vec<&PodView> = pods.values().copied().filter(|p| !p.terminating).collect();
        let updated = live
            .iter()
            .filter(|p| p.labels.get(REVISION_LABEL) == Some(revision.as_str()))
            .count();
        let status = StatefulSetStatus {
            replicas: i32::try_from(live.len()).unwrap_or(i32::MAX),
            ready_replicas: i32::try_from(live.iter().filter(|p| running_and_ready(p)).count())
                .unwrap_or(i32::MAX),
            current_replicas: i32::try_from(updated).unwrap_or(i32::MAX),
            updated_replicas: i32::try_from(updated).unwrap_or(i32::MAX),
            observed_generation: set.generation,
            current_revision: Some(revision.clone()),
            update_revision: Some(revision),
        };
        if status != set.status {
            let mut body = (*set.raw).clone();
            body["status"] = json!({
                "replicas": status.replicas,
                "readyReplicas": status.ready_replicas,
                "currentReplicas": status.current_replicas,
                "updatedReplicas": status.updated_replicas,
                "availableReplicas": status.ready_replicas,
                "observedGeneration": status.observed_generation,
                "currentRevision": status.current_revision,
                "updateRevision": status.update_revision,
            });
            plan.steps.push(vec![Action::UpdateStatus {
                resource: Resource::StatefulSets,
                key: set.key.clone(),
                body,
            }]);
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Uid;
    use crate::labels::Labels;
    use crate::object::OwnerRef;
    use std::time::Instant;

    fn set(replicas: i32, parallel: bool) -> StatefulSetView {
        StatefulSetView::from_value(json!({
            "metadata": {"name": "db", "namespace": "ns", "uid": "uid-db", "resourceVersion": "4", "generation": 1},
            "spec": {
                "replicas": replicas,
                "serviceName": "db",
                "podManagementPolicy": if parallel { "Parallel" } else { "OrderedReady" },
                "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "db"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
            },
        }))
        .expect("set")
    }

    fn pod(set: &StatefulSetView, ordinal: usize, ready: bool, terminating: bool) -> PodView {
        PodView {
            key: ObjectKey::new("ns", format!("db-{ordinal}")),
            uid: Uid::new(format!("uid-db-{ordinal}")),
            resource_version: None,
            labels: Labels::default(),
            controller: Some(OwnerRef {
                kind: "StatefulSet".into(),
                name: "db".into(),
                uid: set.uid.clone(),
            }),
            node_name: None,
            phase: if ready {
                PodPhase::Running
            } else {
                PodPhase::Pending
            },
            ready,
            ready_since: None,
            restarts: 0,
            created: 0,
            terminating,
            job_tracking: false,
            completion_index: None,
        }
    }

    fn plan(set: &StatefulSetView, pods: Vec<PodView>) -> Plan {
        let mut cache = ShardCache::default();
        cache.apply(Object::StatefulSet(set.clone()));
        for p in pods {
            cache.apply(Object::Pod(p));
        }
        let ctx = Context {
            now: Instant::now(),
            unix_secs: 0,
        };
        StatefulSetController
            .reconcile(&set.key, &cache, &ctx)
            .expect("plan")
    }

    fn created_pods(plan: &Plan) -> Vec<String> {
        plan.steps
            .iter()
            .flatten()
            .filter_map(|a| match a {
                Action::Create {
                    resource: Resource::Pods,
                    body,
                    ..
                } => body["metadata"]["name"].as_str().map(str::to_string),
                _ => None,
            })
            .collect()
    }

    fn deleted(plan: &Plan) -> Vec<String> {
        plan.steps
            .iter()
            .flatten()
            .filter_map(|a| match a {
                Action::Delete { key, .. } => Some(key.name().to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn ordered_ready_creates_the_first_missing_ordinal_with_its_claim_and_waits() {
        let s = set(3, false);
        let p = plan(&s, vec![pod(&s, 0, true, false)]);
        assert_eq!(created_pods(&p), vec!["db-1"]);
        let claim = p.steps.iter().flatten().find_map(|a| match a {
            Action::Create {
                resource: Resource::PersistentVolumeClaims,
                body,
                ..
            } => Some(body["metadata"]["name"].clone()),
            _ => None,
        });
        assert_eq!(claim, Some(json!("data-db-1")));
        let body = p.steps.iter().flatten().find_map(|a| match a {
            Action::Create {
                resource: Resource::Pods,
                body,
                ..
            } => Some(body.clone()),
            _ => None,
        });
        let body = body.expect("pod");
        assert_eq!(
            body["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "data-db-1"
        );
        assert_eq!(body["metadata"]["ownerReferences"][0]["controller"], true);
    }

    #[test]
    fn ordered_ready_creates_nothing_while_a_predecessor_is_not_ready() {
        let s = set(3, false);
        let p = plan(&s, vec![pod(&s, 0, true, false), pod(&s, 1, false, false)]);
        assert!(created_pods(&p).is_empty(), "{p:?}");
    }

    #[test]
    fn parallel_creates_every_missing_ordinal_at_once() {
        let s = set(4, true);
        let p = plan(&s, vec![pod(&s, 1, false, false)]);
        assert_eq!(created_pods(&p), vec!["db-0", "db-2", "db-3"]);
    }

    #[test]
    fn scale_down_removes_the_highest_ordinal_first_one_at_a_time() {
        let s = set(2, false);
        let pods = (0..5).map(|i| pod(&s, i, true, false)).collect();
        let p = plan(&s, pods);
        assert_eq!(deleted(&p), vec!["db-4"]);
        assert!(p.is_destructive());
        let waiting = plan(
            &s,
            vec![
                pod(&s, 0, true, false),
                pod(&s, 1, true, false),
                pod(&s, 2, true, false),
                pod(&s, 3, true, true),
            ],
        );
        assert!(deleted(&waiting).is_empty(), "one termination at a time");
    }

    #[test]
    fn the_update_revision_is_a_controller_revision_named_after_the_template() {
        let s = set(1, false);
        let p = plan(&s, vec![pod(&s, 0, true, false)]);
        let revision = p.steps.iter().flatten().find_map(|a| match a {
            Action::Create {
                resource: Resource::ControllerRevisions,
                body,
                ..
            } => body["metadata"]["name"].as_str().map(str::to_string),
            _ => None,
        });
        assert_eq!(revision, Some(revision_name(&s)));
        assert_eq!(revision_name(&s), revision_name(&set(1, false)), "stable");
        assert!(revision_name(&s).starts_with("db-"));
    }
}
