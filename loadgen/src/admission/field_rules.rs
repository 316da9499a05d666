//! Ranges and enumerations of the fields controllers decide on, spec and status, as upstream's
//! `ValidateReplicaSetSpec`, `ValidateStatefulSetStatus`, `ValidateTaint`... check them: each
//! broken rule is one `details.causes` entry (`spec.replicas: Invalid value: -2: must be greater
//! than or equal to 0`). Field types are checked before, by [`crate::admission::typecheck`].

use serde_json::Value;

use crate::apiserver::status::{INVALID, REQUIRED, StatusCause};
use crate::resource::Resource;

/// `Unsupported value` (upstream `FieldValueNotSupported`).
pub const NOT_SUPPORTED: &str = "FieldValueNotSupported";

fn at<'a>(obj: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(obj, |v, part| &v[part])
}

fn min(obj: &Value, path: &str, floor: i64, out: &mut Vec<StatusCause>) {
    let v = at(obj, path);
    if let Some(n) = v.as_i64()
        && n < floor
    {
        let why = if floor == 0 {
            "must be greater than or equal to 0".to_string()
        } else {
            format!("must be greater than {}", floor - 1)
        };
        out.push(StatusCause {
            reason: INVALID.into(),
            message: format!("Invalid value: {v}: {why}"),
            field: path.into(),
        });
    }
}

fn one_of(obj: &Value, path: &str, allowed: &[&str], out: &mut Vec<StatusCause>) {
    if let Some(s) = at(obj, path).as_str()
        && !allowed.contains(&s)
    {
        let supported: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
        out.push(StatusCause {
            reason: NOT_SUPPORTED.into(),
            message: format!(
                "Unsupported value: {s:?}: supported values: {}",
                supported.join(", ")
            ),
            field: path.into(),
        });
    }
}

fn not_above(obj: &Value, path: &str, bound: &str, out: &mut Vec<StatusCause>) {
    let (v, b) = (at(obj, path), at(obj, bound));
    if let (Some(n), Some(m)) = (v.as_i64(), b.as_i64())
        && n > m
    {
        let bound_name = bound.rsplit('.').next().unwrap_or(bound);
        out.push(StatusCause {
            reason: INVALID.into(),
            message: format!("Invalid value: {v}: cannot be greater than {bound_name}"),
            field: path.into(),
        });
    }
}

fn int_or_percent(obj: &Value, path: &str, out: &mut Vec<StatusCause>) {
    let v = at(obj, path);
    let ok = match v {
        Value::Null => true,
        Value::Number(n) => n.as_i64().is_some_and(|n| n >= 0),
        Value::String(s) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|p| p <= 100),
        _ => false,
    };
    if !ok {
        out.push(StatusCause {
            reason: INVALID.into(),
            message: format!(
                "Invalid value: {v}: must be a non-negative integer or a percentage between 0% and 100%"
            ),
            field: path.into(),
        });
    }
}

fn selector(obj: &Value, path: &str, out: &mut Vec<StatusCause>) {
    let Some(exprs) = at(obj, &format!("{path}.matchExpressions")).as_array() else {
        return;
    };
    for (i, e) in exprs.iter().enumerate() {
        let here = format!("{path}.matchExpressions[{i}]");
        let operator = e["operator"].as_str().unwrap_or("");
        let values = e["values"].as_array().map_or(0, Vec::len);
        match operator {
            "In" | "NotIn" if values == 0 => out.push(StatusCause {
                reason: REQUIRED.into(),
                message: "Required value: must be specified when `operator` is 'In' or 'NotIn'"
                    .into(),
                field: format!("{here}.values"),
            }),
            "Exists" | "DoesNotExist" if values > 0 => out.push(StatusCause {
                reason: "FieldValueForbidden".into(),
                message:
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                        .into(),
                field: format!("{here}.values"),
            }),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => out.push(StatusCause {
                reason: INVALID.into(),
                message: format!("Invalid value: {other:?}: not a valid selector operator"),
                field: format!("{here}.operator"),
            }),
        }
    }
}

/// The spec rules of `r` (the object's spec as it would be stored).
pub fn spec_rules(r: Resource, obj: &Value, out: &mut Vec<StatusCause>) {
    match r {
        Resource::ReplicaSets => {
            min(obj, "spec.minReadySeconds", 0, out);
            selector(obj, "spec.selector", out);
        }
        Resource::StatefulSets => {
            min(obj, "spec.minReadySeconds", 0, out);
            min(obj, "spec.ordinals.start", 0, out);
            one_of(
                obj,
                "spec.podManagementPolicy",
                &["OrderedReady", "Parallel"],
                out,
            );
            one_of(
                obj,
                "spec.updateStrategy.type",
                &["OnDelete", "RollingUpdate"],
                out,
            );
            min(obj, "spec.updateStrategy.rollingUpdate.partition", 0, out);
            selector(obj, "spec.selector", out);
        }
        Resource::DaemonSets => {
            min(obj, "spec.minReadySeconds", 0, out);
            one_of(
                obj,
                "spec.updateStrategy.type",
                &["OnDelete", "RollingUpdate"],
                out,
            );
            int_or_percent(obj, "spec.updateStrategy.rollingUpdate.maxUnavailable", out);
            int_or_percent(obj, "spec.updateStrategy.rollingUpdate.maxSurge", out);
            selector(obj, "spec.selector", out);
        }
        Resource::Jobs => {
            min(obj, "spec.backoffLimit", 0, out);
            min(obj, "spec.backoffLimitPerIndex", 0, out);
            min(obj, "spec.maxFailedIndexes", 0, out);
            min(obj, "spec.activeDeadlineSeconds", 0, out);
            one_of(
                obj,
                "spec.podReplacementPolicy",
                &["Failed", "TerminatingOrFailed"],
                out,
            );
            one_of(obj, "spec.completionMode", &["Indexed", "NonIndexed"], out);
            if at(obj, "spec.completionMode") == "Indexed" && at(obj, "spec.completions").is_null()
            {
                out.push(StatusCause {
                    reason: REQUIRED.into(),
                    message: "Required value: when completion mode is Indexed".into(),
                    field: "spec.completions".into(),
                });
            }
        }
        Resource::Nodes => {
            for (i, t) in at(obj, "spec.taints")
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let here = format!("spec.taints[{i}]");
                if t["key"].as_str().unwrap_or("").is_empty() {
                    out.push(StatusCause {
                        reason: REQUIRED.into(),
                        message: "Required value".into(),
                        field: format!("{here}.key"),
                    });
                }
                let mut causes = Vec::new();
                one_of(
                    t,
                    "effect",
                    &["NoSchedule", "PreferNoSchedule", "NoExecute"],
                    &mut causes,
                );
                for mut c in causes {
                    c.field = format!("{here}.effect");
                    out.push(c);
                }
            }
        }
        Resource::Leases => min(obj, "spec.leaseTransitions", 0, out),
        _ => {}
    }
}

/// The status rules of `r` (`ValidateXxxStatus`), for status writes.
pub fn status_rules(r: Resource, obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let counts: &[&str] = match r {
        Resource::ReplicaSets => &[
            "replicas",
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
        ],
        Resource::StatefulSets => &[
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
        ],
        Resource::DaemonSets => &[
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
            "updatedNumberScheduled",
            "numberAvailable",
            "numberUnavailable",
        ],
        Resource::Jobs => &["active", "succeeded", "failed", "terminating"],
        _ => &[],
    };
    for c in counts {
        min(obj, &format!("status.{c}"), 0, &mut out);
    }
    if counts.is_empty() && r != Resource::Pods {
        return out;
    }
    min(obj, "status.observedGeneration", 0, &mut out);
    match r {
        Resource::ReplicaSets => {
            for f in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
                not_above(obj, &format!("status.{f}"), "status.replicas", &mut out);
            }
            not_above(
                obj,
                "status.availableReplicas",
                "status.readyReplicas",
                &mut out,
            );
        }
        Resource::StatefulSets => {
            for f in [
                "readyReplicas",
                "currentReplicas",
                "updatedReplicas",
                "availableReplicas",
            ] {
                not_above(obj, &format!("status.{f}"), "status.replicas", &mut out);
            }
            not_above(
                obj,
                "status.availableReplicas",
                "status.readyReplicas",
                &mut out,
            );
        }
        Resource::Pods => {
            if let Some(statuses) = at(obj, "status.containerStatuses").as_array() {
                for (i, s) in statuses.iter().enumerate() {
                    let mut causes = Vec::new();
                    min(s, "restartCount", 0, &mut causes);
                    for mut c in causes {
                        c.field = format!("status.containerStatuses[{i}].restartCount");
                        out.push(c);
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// A status write must carry a status an upstream status strategy would accept: `422` with
/// one cause per broken rule.
pub fn check_status(
    r: Resource,
    name: &str,
    obj: &Value,
) -> Result<(), crate::apiserver::status::ApiError> {
    let causes = status_rules(r, obj);
    if causes.is_empty() {
        Ok(())
    } else {
        Err(crate::apiserver::status::ApiError::invalid_causes(
            r.kind(),
            name,
            causes,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(causes: &[StatusCause]) -> Vec<&str> {
        causes.iter().map(|c| c.field.as_str()).collect()
    }

    #[test]
    fn statefulset_enums_and_ranges_are_checked() {
        let mut out = Vec::new();
        spec_rules(
            Resource::StatefulSets,
            &json!({"spec": {"podManagementPolicy": "Whenever", "ordinals": {"start": -1},
                             "updateStrategy": {"type": "Sometimes", "rollingUpdate": {"partition": -3}}}}),
            &mut out,
        );
        assert_eq!(
            fields(&out),
            [
                "spec.ordinals.start",
                "spec.podManagementPolicy",
                "spec.updateStrategy.type",
                "spec.updateStrategy.rollingUpdate.partition"
            ]
        );
        assert_eq!(
            out[1].message,
            "Unsupported value: \"Whenever\": supported values: \"OrderedReady\", \"Parallel\""
        );
    }

    #[test]
    fn job_per_index_limits_and_replacement_policy_are_checked() {
        let mut out = Vec::new();
        spec_rules(
            Resource::Jobs,
            &json!({"spec": {"backoffLimitPerIndex": -1, "maxFailedIndexes": -2,
                             "podReplacementPolicy": "Never"}}),
            &mut out,
        );
        assert_eq!(
            fields(&out),
            [
                "spec.backoffLimitPerIndex",
                "spec.maxFailedIndexes",
                "spec.podReplacementPolicy"
            ]
        );
    }

    #[test]
    fn a_status_with_negative_or_inconsistent_counts_is_invalid() {
        let out = status_rules(
            Resource::ReplicaSets,
            &json!({"status": {"replicas": 2, "readyReplicas": 3, "availableReplicas": -1}}),
        );
        assert_eq!(
            fields(&out),
            ["status.availableReplicas", "status.readyReplicas"]
        );
        assert_eq!(
            out[0].message,
            "Invalid value: -1: must be greater than or equal to 0"
        );
        assert!(
            status_rules(Resource::ReplicaSets, &json!({"status": {"replicas": 2}})).is_empty()
        );
    }

    #[test]
    fn a_taint_needs_a_key_and_a_known_effect() {
        let mut out = Vec::new();
        spec_rules(
            Resource::Nodes,
            &json!({"spec": {"taints": [{"key": "", "effect": "Sometimes"}]}}),
            &mut out,
        );
        assert_eq!(
            fields(&out),
            ["spec.taints[0].key", "spec.taints[0].effect"]
        );
    }
}
