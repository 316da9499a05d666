//! An adoption scenario's orphans: Pods seeded before any set exists, each labelled for the set
//! that will adopt it, and the check at the end that no orphan a live set matches is left.

use serde_json::{Value, json};

use crate::admission::validation::selector_matches;
use crate::apiserver::server::ApiServer;
use crate::meta::{controller_uid, meta_str};
use crate::oracle::pod_is_live;
use crate::resource::Resource;
use crate::scenario::Workload;
use crate::scenario::adoption::Adoption;
use crate::stress::StressError;
use crate::stress::report::ReportedViolation;

/// The orphan `k` for the set `set`: its labels are the set's selector, its name is not the
/// set's, so its own key hashes to any shard (a router that routed it by its own key would
/// put most of them away from their owners once there are several shards).
fn orphan(namespace: &str, set: &str, k: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": format!("loose-{k}-{set}"), "namespace": namespace,
                     "labels": {"app": set}},
        "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]},
    })
}

/// Creates `adoption.orphans` orphans for every set of the workload.
pub fn seed_orphans(
    server: &ApiServer,
    namespace: &str,
    w: &Workload,
    adoption: &Adoption,
) -> Result<(), StressError> {
    for i in 0..w.replicasets {
        let set = w.kind.name(i);
        for k in 0..adoption.orphans {
            server.create(Resource::Pods, namespace, orphan(namespace, &set, k))?;
        }
    }
    Ok(())
}

/// How many distinct orphans of `namespace` the managers patched (adopted, mostly): for the
/// log, which shows the scenario did adopt.
pub fn patched_by_managers(server: &ApiServer, namespace: &str) -> usize {
    let names: std::collections::BTreeSet<String> = server
        .writes()
        .into_iter()
        .filter(|w| w.resource == Resource::Pods && w.namespace == namespace)
        .filter(|w| w.verb == crate::oracle::Verb::Update && w.name.starts_with("loose-"))
        .filter(|w| {
            w.user_agent
                .as_deref()
                .is_some_and(|a| a.starts_with("tidemark"))
        })
        .map(|w| w.name)
        .collect();
    names.len()
}

/// Live orphans of `namespace` that a live set of `resource`, not being deleted, matches: each
/// should have been adopted by the end of the run.
pub fn unadopted(
    server: &ApiServer,
    namespace: &str,
    resource: Resource,
) -> Vec<ReportedViolation> {
    let sets: Vec<Value> = server
        .list(resource)
        .into_iter()
        .filter(|s| meta_str(s, "namespace") == namespace)
        .filter(|s| s["metadata"]["deletionTimestamp"].is_null())
        .collect();
    let revision = server.current_revision();
    server
        .list(Resource::Pods)
        .into_iter()
        .filter(|p| meta_str(p, "namespace") == namespace)
        .filter(|p| pod_is_live(p) && controller_uid(p).is_none())
        .filter_map(|p| {
            let labels = p["metadata"]["labels"].as_object()?;
            let set = sets
                .iter()
                .find(|s| selector_matches(&s["spec"]["selector"], labels))?;
            Some(ReportedViolation {
                invariant: "adoption-orphans-adopted".into(),
                object: format!("{namespace}/{}", meta_str(set, "name")),
                revision,
                detail: format!(
                    "pod {} matches the set's selector and is still an orphan at the end",
                    meta_str(&p, "name")
                ),
            })
        })
        .collect()
}
