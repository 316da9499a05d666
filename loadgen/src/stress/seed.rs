//! The workload's sets as a scenario describes them, each in its namespace (see
//! [`crate::scenario::SetNamespaces`]), created before the managers start.

use crate::apiserver::server::ApiServer;
use crate::scenario::timeline::Plan;
use crate::scenario::{Workload, WorkloadKind};
use crate::stress::StressError;
use crate::workload::{
    daemonset_manifest_on, job_manifest, replicaset_manifest, statefulset_manifest,
};

/// Creates the workload's sets as the scenario describes them.
pub fn seed_workload(server: &ApiServer, w: &Workload, plan: &Plan) -> Result<(), StressError> {
    let spread = w.set_namespaces();
    for i in 0..w.replicasets {
        let namespace = spread.of_index(i);
        let namespace = namespace.as_str();
        let name = w.kind.name(i);
        let initial = plan.initial[i];
        let manifest = match w.kind {
            WorkloadKind::Replicaset => replicaset_manifest(namespace, &name, initial),
            WorkloadKind::Statefulset => {
                let mut set = statefulset_manifest(namespace, &name, initial, w.parallel);
                if let Some(policy) = w.claim_retention.get(i % w.claim_retention.len().max(1)) {
                    set["spec"]["persistentVolumeClaimRetentionPolicy"] = serde_json::json!({
                        "whenScaled": policy.when_scaled, "whenDeleted": policy.when_deleted});
                }
                set
            }
            WorkloadKind::Daemonset => {
                let mut ds = daemonset_manifest_on(namespace, &name, w.node_label.as_deref());
                if let Some(surge) = w.max_surge {
                    ds["spec"]["updateStrategy"] = serde_json::json!({"type": "RollingUpdate",
                        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": 0}});
                }
                ds
            }
            WorkloadKind::Job => {
                let mut job = job_manifest(
                    namespace,
                    &name,
                    initial,
                    plan.completions[i],
                    w.indexed && i % 2 == 1,
                );
                with_failures(&mut job, w);
                job
            }
        };
        let mut manifest = manifest;
        if let Some(limit) = w.revision_history_limit {
            manifest["spec"]["revisionHistoryLimit"] = serde_json::json!(limit);
        }
        server.create(w.kind.resource(), namespace, manifest)?;
    }
    Ok(())
}

/// A Job's failures as the workload asks: its Pods fail one in N with an exit code (the
/// simulated kubelet reads the annotations), a `podFailurePolicy` ignores some codes, and its
/// backoff limit.
fn with_failures(job: &mut serde_json::Value, w: &Workload) {
    use crate::kubelet::{EXIT_CODE_ANNOTATION, FAIL_ONE_IN_ANNOTATION};
    let annotations = &mut job["spec"]["template"]["metadata"]["annotations"];
    if let Some(n) = w.fail_one_in {
        annotations[FAIL_ONE_IN_ANNOTATION] = serde_json::json!(n.to_string());
    }
    if let Some(code) = w.exit_code {
        annotations[EXIT_CODE_ANNOTATION] = serde_json::json!(code.to_string());
    }
    if !w.ignore_exit_codes.is_empty() {
        job["spec"]["podFailurePolicy"] = serde_json::json!({"rules": [
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": w.ignore_exit_codes}},
        ]});
    }
    if let Some(limit) = w.backoff_limit {
        job["spec"]["backoffLimit"] = serde_json::json!(limit);
    }
}
