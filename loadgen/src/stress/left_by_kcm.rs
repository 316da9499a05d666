//! A workload seeded as kube-controller-manager leaves it settled, for takeover scenarios:
//! StatefulSets and DaemonSets with the ControllerRevisions KCM writes (named by a hash that is
//! KCM's, not Tidemark's, recording the template with `$patch: replace` in Go's key order), Pods
//! labelled with them, ReplicaSets with `pod-template-hash` Pods, Jobs whose Pods carry the
//! labels the API server defaults and the tracking finalizer, and each one's status as KCM
//! reports it once settled. A controller manager that takes over must find all of it current.

use serde_json::{Value, json};

use crate::apiserver::server::ApiServer;
use crate::apiserver::status::ApiError;
use crate::oracle::WriteRecord;
use crate::resource::Resource;
use crate::scenario::WorkloadKind;
use crate::scenario::takeover::Takeover;
use crate::store::Verb;
use crate::stress::report::ReportedViolation;
use crate::workload::{
    daemonset_manifest, job_manifest, replicaset_manifest, statefulset_manifest,
};

/// The finalizer KCM's Job controller puts on every Pod it creates.
const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// The sets seeded: the workload's and the bystanders', by kind and name.
#[derive(Debug, Clone, Default)]
pub struct Seeded {
    /// The workload's sets (changed by the scenario's events after the quiet window).
    pub workload: Vec<String>,
    /// Sets nothing changes.
    pub bystanders: Vec<String>,
}

/// Five characters of KCM's safe alphabet drawn from `name`: stable, and never a Tidemark hash
/// (those are ten hex digits).
fn kcm_hash(name: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (0..9)
        .map(|i| char::from(ALPHABET[((h >> (i * 7)) % ALPHABET.len() as u64) as usize]))
        .collect()
}

/// The template as KCM's `getPatch` records it: `$patch: replace` first, then the template's
/// fields as Go orders them (`metadata` with a null `creationTimestamp`, then `spec`).
fn recorded(template: &Value) -> Value {
    let mut metadata = serde_json::Map::new();
    metadata.insert("creationTimestamp".into(), Value::Null);
    if let Some(m) = template["metadata"].as_object() {
        metadata.extend(m.clone());
    }
    let mut out = serde_json::Map::new();
    out.insert("$patch".into(), json!("replace"));
    out.insert("metadata".into(), Value::Object(metadata));
    out.insert("spec".into(), template["spec"].clone());
    Value::Object(out)
}

fn controller_ref(owner: &Value) -> Value {
    json!([{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true,
    }])
}

fn revision(owner: &Value, name: &str, hash: &str) -> Value {
    let mut labels = owner["spec"]["template"]["metadata"]["labels"].clone();
    labels["controller-revision-hash"] = json!(hash);
    json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": name, "labels": labels, "ownerReferences": controller_ref(owner)},
        "data": {"spec": {"template": recorded(&owner["spec"]["template"])}},
        "revision": 1,
    })
}

fn pod(owner: &Value, name: &str, extra_labels: Value) -> Value {
    let template = &owner["spec"]["template"];
    let mut labels = template["metadata"]["labels"].clone();
    if let (Some(labels), Some(extra)) = (labels.as_object_mut(), extra_labels.as_object()) {
        labels.extend(extra.clone());
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "ownerReferences": controller_ref(owner)},
        "spec": template["spec"],
    })
}

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// Waits until the Pods `names` are Ready (the kubelet runs them), up to 20 s.
async fn ready(server: &ApiServer, namespace: &str, names: &[String]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if names.iter().all(|n| {
            server
                .get(Resource::Pods, namespace, n)
                .is_some_and(|p| is_ready(&p))
        }) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Seeds StatefulSets `names` of `replicas` (OrderedReady) as KCM leaves them: their revision,
/// then ordinal by ordinal, each once its predecessor is Ready, then the settled status.
async fn statefulsets(
    server: &ApiServer,
    namespace: &str,
    names: &[String],
    replicas: i32,
) -> Result<(), ApiError> {
    let mut sets = Vec::new();
    for name in names {
        let set = server.create(
            Resource::StatefulSets,
            namespace,
            statefulset_manifest(namespace, name, replicas, false),
        )?;
        let revision_name = format!("{name}-{}", kcm_hash(name));
        server.create(
            Resource::ControllerRevisions,
            namespace,
            revision(&set, &revision_name, &kcm_hash(name)),
        )?;
        sets.push((set, revision_name));
    }
    for ordinal in 0..replicas.max(0) {
        let mut created = Vec::new();
        for (set, revision_name) in &sets {
            let pod_name = format!(
                "{}-{ordinal}",
                set["metadata"]["name"].as_str().unwrap_or("")
            );
            let mut p = pod(
                set,
                &pod_name,
                json!({
                    "controller-revision-hash": revision_name,
                    "statefulset.kubernetes.io/pod-name": pod_name,
                    "apps.kubernetes.io/pod-index": ordinal.to_string(),
                }),
            );
            p["spec"]["hostname"] = json!(pod_name);
            p["spec"]["subdomain"] = set["spec"]["serviceName"].clone();
            server.create(Resource::Pods, namespace, p)?;
            created.push(pod_name);
        }
        ready(server, namespace, &created).await;
    }
    for (set, revision_name) in &sets {
        let name = set["metadata"]["name"].as_str().unwrap_or("");
        server.update_with(Resource::StatefulSets, namespace, name, |s| {
            s["status"] = json!({
                "replicas": replicas, "readyReplicas": replicas, "currentReplicas": replicas,
                "updatedReplicas": replicas, "availableReplicas": replicas,
                "observedGeneration": s["metadata"]["generation"], "collisionCount": 0,
                "currentRevision": revision_name, "updateRevision": revision_name,
            });
        })?;
    }
    Ok(())
}

/// Seeds DaemonSets `names` as KCM leaves them: their revision, a Pod on every Node labelled
/// with its hash and template generation, the settled status.
async fn daemonsets(server: &ApiServer, namespace: &str, names: &[String]) -> Result<(), ApiError> {
    let nodes: Vec<String> = server
        .list(Resource::Nodes)
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let mut created = Vec::new();
    for name in names {
        let set = server.create(
            Resource::DaemonSets,
            namespace,
            daemonset_manifest(namespace, name),
        )?;
        let hash = kcm_hash(name);
        server.create(
            Resource::ControllerRevisions,
            namespace,
            revision(&set, &format!("{name}-{hash}"), &hash),
        )?;
        for node in &nodes {
            let pod_name = format!("{name}-{}", kcm_hash(&format!("{name}/{node}")));
            let mut p = pod(
                &set,
                &pod_name,
                json!({"controller-revision-hash": hash, "pod-template-generation": "1"}),
            );
            p["spec"]["nodeName"] = json!(node);
            server.create(Resource::Pods, namespace, p)?;
            created.push(pod_name);
        }
    }
    ready(server, namespace, &created).await;
    let n = nodes.len();
    for name in names {
        server.update_with(Resource::DaemonSets, namespace, name, |d| {
            d["status"] = json!({
                "desiredNumberScheduled": n, "currentNumberScheduled": n, "numberReady": n,
                "numberAvailable": n, "numberUnavailable": 0, "updatedNumberScheduled": n,
                "numberMisscheduled": 0, "observedGeneration": d["metadata"]["generation"],
            });
        })?;
    }
    Ok(())
}

/// Seeds ReplicaSets `names` of `replicas` as a Deployment's, under KCM: Pods labelled with the
/// template's `pod-template-hash`, the settled status.
async fn replicasets(
    server: &ApiServer,
    namespace: &str,
    names: &[String],
    replicas: i32,
) -> Result<(), ApiError> {
    let mut created = Vec::new();
    for name in names {
        let set = server.create(
            Resource::ReplicaSets,
            namespace,
            replicaset_manifest(namespace, name, replicas),
        )?;
        let hash = kcm_hash(name);
        for i in 0..replicas.max(0) {
            let pod_name = format!("{name}-{}", kcm_hash(&format!("{name}/{i}")));
            server.create(
                Resource::Pods,
                namespace,
                pod(&set, &pod_name, json!({"pod-template-hash": hash})),
            )?;
            created.push(pod_name);
        }
    }
    ready(server, namespace, &created).await;
    for name in names {
        server.update_with(Resource::ReplicaSets, namespace, name, |r| {
            r["status"] = json!({
                "replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": replicas,
                "availableReplicas": replicas, "observedGeneration": r["metadata"]["generation"],
            });
        })?;
    }
    Ok(())
}

/// Jobs as KCM leaves them running: the selector and template labels the API server defaulted
/// (`batch.kubernetes.io/controller-uid`, `job-name`), `parallelism` Pods at once each with the
/// tracking finalizer and a controller reference, and the status KCM writes once they run.
async fn jobs(server: &ApiServer, namespace: &str, names: &[String]) -> Result<(), ApiError> {
    const PODS: i32 = 2;
    let mut created = Vec::new();
    for name in names {
        let job = server.create(
            Resource::Jobs,
            namespace,
            job_manifest(namespace, name, PODS, PODS, false),
        )?;
        for i in 0..PODS {
            let pod_name = format!("{name}-{}", kcm_hash(&format!("{name}/{i}")));
            let mut p = pod(&job, &pod_name, json!({}));
            p["metadata"]["finalizers"] = json!([JOB_TRACKING_FINALIZER]);
            server.create(Resource::Pods, namespace, p)?;
            created.push(pod_name);
        }
    }
    ready(server, namespace, &created).await;
    for name in names {
        server.update_with(Resource::Jobs, namespace, name, |j| {
            j["status"] = json!({
                "active": PODS, "ready": PODS, "terminating": 0, "succeeded": 0, "failed": 0,
                "startTime": j["metadata"]["creationTimestamp"],
                "uncountedTerminatedPods": {},
            });
        })?;
    }
    Ok(())
}

/// Seeds the workload's sets (`kind`, `count` of `replicas`) and the bystanders of `takeover`,
/// all as KCM leaves them.
pub async fn seed(
    server: &ApiServer,
    namespace: &str,
    takeover: &Takeover,
    kind: WorkloadKind,
    count: usize,
    replicas: i32,
) -> Result<Seeded, ApiError> {
    let names = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("{prefix}-{i}")).collect()
    };
    let workload: Vec<String> = (0..count).map(|i| kind.name(i)).collect();
    let (sts, ds, rs, jb) = (
        names("kcm-sts", takeover.statefulsets),
        names("kcm-ds", takeover.daemonsets),
        names("kcm-rs", takeover.replicasets),
        names("kcm-job", takeover.jobs),
    );
    match kind {
        WorkloadKind::Statefulset => statefulsets(server, namespace, &workload, replicas).await?,
        WorkloadKind::Daemonset => daemonsets(server, namespace, &workload).await?,
        WorkloadKind::Replicaset => replicasets(server, namespace, &workload, replicas).await?,
        WorkloadKind::Job => {
            return Err(ApiError::bad_request(
                "a takeover workload is StatefulSets, DaemonSets or ReplicaSets",
            ));
        }
    }
    statefulsets(server, namespace, &sts, 3).await?;
    daemonsets(server, namespace, &ds).await?;
    replicasets(server, namespace, &rs, 3).await?;
    jobs(server, namespace, &jb).await?;
    Ok(Seeded {
        workload,
        bystanders: [sts, ds, rs, jb].concat(),
    })
}

/// What a takeover disrupted: a Pod created or deleted, or a ControllerRevision written, by a
/// manager, for a bystander at any time or for a workload set before `quiet_until` (server
/// clock, microseconds).
pub fn disruptions(
    writes: &[WriteRecord],
    seeded: &Seeded,
    quiet_until: u64,
) -> Vec<ReportedViolation> {
    let owner_of = |name: &str| -> Option<(bool, String)> {
        let of = |set: &String| {
            name == set.as_str()
                || name
                    .strip_prefix(set.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
        };
        if let Some(set) = seeded
            .bystanders
            .iter()
            .filter(|s| of(s))
            .max_by_key(|s| s.len())
        {
            return Some((true, set.clone()));
        }
        seeded
            .workload
            .iter()
            .filter(|s| of(s))
            .max_by_key(|s| s.len())
            .map(|s| (false, s.clone()))
    };
    writes
        .iter()
        .filter(|w| {
            w.user_agent
                .as_deref()
                .is_some_and(|ua| ua.starts_with("tidemark"))
        })
        .filter(|w| match w.resource {
            Resource::Pods => matches!(w.verb, Verb::Create | Verb::Delete),
            Resource::ControllerRevisions => true,
            _ => false,
        })
        .filter_map(|w| {
            let (bystander, set) = owner_of(&w.name)?;
            (bystander || w.at_micros < quiet_until).then(|| ReportedViolation {
                invariant: "takeover-no-disruption".into(),
                object: format!("{}/{}", w.namespace, w.name),
                revision: w.revision,
                detail: format!(
                    "{:?} of a {} {} by {} {}",
                    w.verb,
                    w.resource,
                    if bystander {
                        "of the untouched set"
                    } else {
                        "during the quiet window, of"
                    },
                    w.user_agent.as_deref().unwrap_or(""),
                    set,
                ),
            })
        })
        .collect()
}

/// The seeded Jobs that did not end as upstream ends them once their Pods completed: `Complete`,
/// every Pod counted as succeeded, and no Pod left with the tracking finalizer.
pub fn unfinished_jobs(
    server: &ApiServer,
    namespace: &str,
    seeded: &Seeded,
) -> Vec<ReportedViolation> {
    let jobs = seeded
        .bystanders
        .iter()
        .filter(|n| n.starts_with("kcm-job-"));
    let mut found = Vec::new();
    for name in jobs {
        let Some(job) = server.get(Resource::Jobs, namespace, name) else {
            continue;
        };
        let complete = job["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Complete" && c["status"] == "True")
        });
        let succeeded = job["status"]["succeeded"].as_i64().unwrap_or(0);
        let tracked = server
            .list(Resource::Pods)
            .iter()
            .filter(|p| p["metadata"]["namespace"] == namespace)
            .filter(|p| {
                p["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(&format!("{name}-")))
            })
            .filter(|p| {
                p["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|fs| fs.iter().any(|f| f == JOB_TRACKING_FINALIZER))
            })
            .count();
        if !complete || succeeded != 2 || tracked > 0 {
            found.push(ReportedViolation {
                invariant: "takeover-job-finished".into(),
                object: format!("{namespace}/{name}"),
                revision: 0,
                detail: format!(
                    "Complete={complete}, succeeded={succeeded} of 2, {tracked} Pod(s) still with the tracking finalizer"
                ),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kcm_hashes_are_stable_and_in_kcm_s_alphabet_never_tidemark_s_hex() {
        assert_eq!(kcm_hash("db"), kcm_hash("db"));
        assert_ne!(kcm_hash("db"), kcm_hash("web"));
        for name in ["db", "web", "agent", "kcm-sts-0"] {
            let hash = kcm_hash(name);
            assert!(
                hash.chars()
                    .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
                "{hash}"
            );
            assert!(
                hash.chars().any(|c| !c.is_ascii_hexdigit()),
                "{hash} could be Tidemark's"
            );
        }
    }

    #[test]
    fn the_recorded_template_carries_the_replace_directive_and_a_null_creation_timestamp() {
        let t = json!({"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}});
        let r = recorded(&t);
        assert_eq!(r["$patch"], "replace");
        assert!(r["metadata"]["creationTimestamp"].is_null());
        assert_eq!(r["metadata"]["labels"]["app"], "db");
        assert_eq!(r["spec"], t["spec"]);
    }
}
