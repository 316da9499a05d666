//! Server-side defaults applied on create, as kube-apiserver's defaulting functions
//! (`pkg/apis/*/v1/defaults.go`) fill them in: what clients such as `kubectl rollout status`
//! read back.

use serde_json::{Map, Value, json};

use crate::meta::meta_mut;
use crate::resource::Resource;

/// `entry` of `map` as an object, made one when absent or null.
fn object_entry<'a>(
    map: &'a mut Map<String, Value>,
    entry: &str,
) -> Option<&'a mut Map<String, Value>> {
    let slot = map
        .entry(entry)
        .or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
}

/// `spec.updateStrategy` of an apps/v1 workload: `RollingUpdate` unless given, and then the
/// `rollingUpdate` fields in `rolling` where absent; ten revisions of history.
fn update_strategy(spec: &mut Map<String, Value>, rolling: &[(&str, i64)]) {
    spec.entry("revisionHistoryLimit")
        .or_insert(Value::from(10));
    let Some(strategy) = object_entry(spec, "updateStrategy") else {
        return;
    };
    strategy
        .entry("type")
        .or_insert(Value::from("RollingUpdate"));
    if strategy.get("type").and_then(Value::as_str) != Some("RollingUpdate") {
        return;
    }
    if let Some(fields) = object_entry(strategy, "rollingUpdate") {
        for (field, value) in rolling {
            fields.entry(*field).or_insert(Value::from(*value));
        }
    }
}

/// apps/v1 `SetDefaults_StatefulSet`: one replica, OrderedReady, RollingUpdate with partition 0
/// and maxUnavailable 1 (MaxUnavailableStatefulSet is on by default since v1.35), ten revisions
/// of history, claims retained.
fn statefulset(spec: &mut Map<String, Value>) {
    if spec.get("replicas").is_none_or(Value::is_null) {
        spec.insert("replicas".into(), Value::from(1));
    }
    spec.entry("podManagementPolicy")
        .or_insert(Value::from("OrderedReady"));
    spec.entry("persistentVolumeClaimRetentionPolicy")
        .or_insert(json!({"whenDeleted": "Retain", "whenScaled": "Retain"}));
    update_strategy(spec, &[("partition", 0), ("maxUnavailable", 1)]);
}

/// apps/v1 `SetDefaults_DaemonSet`: RollingUpdate with maxUnavailable 1 and maxSurge 0, ten
/// revisions of history.
fn daemonset(spec: &mut Map<String, Value>) {
    update_strategy(spec, &[("maxUnavailable", 1), ("maxSurge", 0)]);
}

fn spec_mut(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj["spec"].is_object() {
        obj["spec"] = Value::Object(Default::default());
    }
    match &mut obj["spec"] {
        Value::Object(m) => m,
        _ => unreachable!("replaced above"),
    }
}

/// Server-side defaults applied on create, as upstream's defaulting functions do.
pub fn apply_defaults(r: Resource, obj: &mut Value, uid: &str, name: &str) {
    match r {
        Resource::ReplicaSets => {
            let spec = spec_mut(obj);
            if spec.get("replicas").is_none_or(Value::is_null) {
                spec.insert("replicas".into(), Value::from(1));
            }
        }
        Resource::StatefulSets => statefulset(spec_mut(obj)),
        Resource::DaemonSets => daemonset(spec_mut(obj)),
        Resource::Jobs => {
            let spec = spec_mut(obj);
            if spec.get("parallelism").is_none_or(Value::is_null) {
                spec.insert("parallelism".into(), Value::from(1));
                if spec.get("completions").is_none_or(Value::is_null) {
                    spec.insert("completions".into(), Value::from(1));
                }
            }
            let given = |spec: &Map<String, Value>, field: &str| {
                spec.get(field).is_some_and(|v| !v.is_null())
            };
            // Per-index limits replace the Job-wide one unless it is given.
            let backoff_limit = if given(spec, "backoffLimitPerIndex") {
                i64::from(i32::MAX)
            } else {
                6
            };
            spec.entry("backoffLimit")
                .or_insert(Value::from(backoff_limit));
            let replacement = if given(spec, "podFailurePolicy") {
                "Failed"
            } else {
                "TerminatingOrFailed"
            };
            spec.entry("podReplacementPolicy")
                .or_insert(Value::from(replacement));
            spec.entry("completionMode")
                .or_insert(Value::from("NonIndexed"));
            spec.entry("suspend").or_insert(Value::from(false));
            let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
            if !manual {
                // Upstream generates the selector from the Job's uid and labels the template.
                spec.insert(
                    "selector".into(),
                    serde_json::json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
                );
                let template = spec
                    .entry("template")
                    .or_insert_with(|| Value::Object(Default::default()));
                let tmeta = meta_mut(template);
                let tl = tmeta
                    .entry("labels")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(tl) = tl {
                    for (k, v) in [
                        ("batch.kubernetes.io/controller-uid", uid),
                        ("batch.kubernetes.io/job-name", name),
                        ("controller-uid", uid),
                        ("job-name", name),
                    ] {
                        tl.insert(k.into(), Value::from(v));
                    }
                }
            }
        }
        Resource::Namespaces => {
            spec_mut(obj)
                .entry("finalizers")
                .or_insert(serde_json::json!(["kubernetes"]));
            let labels = meta_mut(obj)
                .entry("labels")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(l) = labels {
                l.insert("kubernetes.io/metadata.name".into(), Value::from(name));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_statefulset_gets_upstreams_rolling_update_defaults() {
        let mut set = json!({"metadata": {"name": "db"}, "spec": {"serviceName": "db"}});
        apply_defaults(Resource::StatefulSets, &mut set, "u", "db");
        let spec = &set["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            spec["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
    }

    #[test]
    fn on_delete_gets_no_rolling_update_block_and_given_values_stay() {
        let mut set = json!({"spec": {"updateStrategy": {"type": "OnDelete"}, "podManagementPolicy": "Parallel"}});
        apply_defaults(Resource::StatefulSets, &mut set, "u", "db");
        assert_eq!(set["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        assert_eq!(set["spec"]["podManagementPolicy"], "Parallel");
    }

    #[test]
    fn a_job_with_per_index_limits_or_a_failure_policy_gets_their_defaults() {
        let mut job = json!({"spec": {"completionMode": "Indexed", "completions": 2,
            "backoffLimitPerIndex": 1}});
        apply_defaults(Resource::Jobs, &mut job, "u", "pi");
        assert_eq!(job["spec"]["backoffLimit"], i64::from(i32::MAX));
        assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
        let mut job = json!({"spec": {"podFailurePolicy": {"rules": []}}});
        apply_defaults(Resource::Jobs, &mut job, "u", "pi");
        assert_eq!(job["spec"]["backoffLimit"], 6);
        assert_eq!(job["spec"]["podReplacementPolicy"], "Failed");
    }

    #[test]
    fn a_daemonset_gets_max_unavailable_one_and_no_surge() {
        let mut ds = json!({"spec": {}});
        apply_defaults(Resource::DaemonSets, &mut ds, "u", "agent");
        assert_eq!(
            ds["spec"]["updateStrategy"]["rollingUpdate"],
            json!({"maxUnavailable": 1, "maxSurge": 0})
        );
    }
}
