//! Field types of the served kinds, checked as kube-apiserver's decoder does when it reads a
//! request body into its Go structs: a field of the wrong JSON type is a decode error (`400
//! BadRequest`, `<Kind> in version "v1" cannot be handled as a <Kind>: json: cannot unmarshal
//! string into Go struct field ReplicaSetSpec.spec.replicas of type int32`), before any
//! validation runs. The schema covers the fields controllers decide on; the rest passes.

use serde_json::Value;

use crate::resource::Resource;
use crate::status::ApiError;

/// A Go type the decoder fills.
#[derive(Clone, Copy, Debug)]
pub enum Ty {
    /// A string-kinded type, by its Go name (`string`, `v1.PodPhase`, `types.UID`).
    Str(&'static str),
    /// `int32`.
    I32,
    /// `int64`.
    I64,
    /// `bool`.
    Bool,
    /// `v1.Time` / `v1.MicroTime`: an RFC 3339 string.
    Time,
    /// `map[string]string`.
    StrMap,
    /// A slice of the element type.
    List(&'static Ty),
    /// A struct: its Go name and the fields checked.
    Struct(&'static str, &'static [(&'static str, Ty)]),
    /// `intstr.IntOrString`.
    IntOrString,
}

impl Ty {
    fn go_name(&self) -> String {
        match self {
            Ty::Str(n) | Ty::Struct(n, _) => (*n).to_string(),
            Ty::I32 => "int32".into(),
            Ty::I64 => "int64".into(),
            Ty::Bool => "bool".into(),
            Ty::Time => "v1.Time".into(),
            Ty::StrMap => "map[string]string".into(),
            Ty::List(t) => format!("[]{}", t.go_name()),
            Ty::IntOrString => "intstr.IntOrString".into(),
        }
    }
}

const S: Ty = Ty::Str("string");
const STRINGS: Ty = Ty::List(&S);
const OWNER_REFERENCE: Ty = Ty::Struct(
    "v1.OwnerReference",
    &[
        ("apiVersion", S),
        ("kind", S),
        ("name", S),
        ("uid", Ty::Str("types.UID")),
        ("controller", Ty::Bool),
        ("blockOwnerDeletion", Ty::Bool),
    ],
);
const OWNER_REFERENCES: Ty = Ty::List(&OWNER_REFERENCE);
const OBJECT_META: Ty = Ty::Struct(
    "v1.ObjectMeta",
    &[
        ("name", S),
        ("generateName", S),
        ("namespace", S),
        ("uid", Ty::Str("types.UID")),
        ("resourceVersion", S),
        ("generation", Ty::I64),
        ("creationTimestamp", Ty::Time),
        ("deletionTimestamp", Ty::Time),
        ("deletionGracePeriodSeconds", Ty::I64),
        ("labels", Ty::StrMap),
        ("annotations", Ty::StrMap),
        ("ownerReferences", OWNER_REFERENCES),
        ("finalizers", STRINGS),
    ],
);
const REQUIREMENT: Ty = Ty::Struct(
    "v1.LabelSelectorRequirement",
    &[
        ("key", S),
        ("operator", Ty::Str("v1.LabelSelectorOperator")),
        ("values", STRINGS),
    ],
);
const REQUIREMENTS: Ty = Ty::List(&REQUIREMENT);
const LABEL_SELECTOR: Ty = Ty::Struct(
    "v1.LabelSelector",
    &[
        ("matchLabels", Ty::StrMap),
        ("matchExpressions", REQUIREMENTS),
    ],
);
const CONTAINER: Ty = Ty::Struct("v1.Container", &[("name", S), ("image", S)]);
const CONTAINERS: Ty = Ty::List(&CONTAINER);
const TOLERATION: Ty = Ty::Struct(
    "v1.Toleration",
    &[
        ("key", S),
        ("operator", Ty::Str("v1.TolerationOperator")),
        ("value", S),
        ("effect", Ty::Str("v1.TaintEffect")),
        ("tolerationSeconds", Ty::I64),
    ],
);
const TOLERATIONS: Ty = Ty::List(&TOLERATION);
const POD_SPEC: Ty = Ty::Struct(
    "v1.PodSpec",
    &[
        ("nodeName", S),
        ("containers", CONTAINERS),
        ("initContainers", CONTAINERS),
        ("nodeSelector", Ty::StrMap),
        ("tolerations", TOLERATIONS),
        ("activeDeadlineSeconds", Ty::I64),
        ("terminationGracePeriodSeconds", Ty::I64),
        ("restartPolicy", Ty::Str("v1.RestartPolicy")),
        ("hostname", S),
        ("subdomain", S),
    ],
);
const TEMPLATE: Ty = Ty::Struct(
    "v1.PodTemplateSpec",
    &[("metadata", OBJECT_META), ("spec", POD_SPEC)],
);
const POD_CONDITION: Ty = Ty::Struct(
    "v1.PodCondition",
    &[
        ("type", Ty::Str("v1.PodConditionType")),
        ("status", Ty::Str("v1.ConditionStatus")),
        ("lastTransitionTime", Ty::Time),
    ],
);
const POD_CONDITIONS: Ty = Ty::List(&POD_CONDITION);
const CONTAINER_STATUS: Ty = Ty::Struct(
    "v1.ContainerStatus",
    &[("name", S), ("ready", Ty::Bool), ("restartCount", Ty::I32)],
);
const CONTAINER_STATUSES: Ty = Ty::List(&CONTAINER_STATUS);
const POD: Ty = Ty::Struct(
    "v1.Pod",
    &[
        ("metadata", OBJECT_META),
        ("spec", POD_SPEC),
        (
            "status",
            Ty::Struct(
                "v1.PodStatus",
                &[
                    ("phase", Ty::Str("v1.PodPhase")),
                    ("conditions", POD_CONDITIONS),
                    ("containerStatuses", CONTAINER_STATUSES),
                    ("startTime", Ty::Time),
                ],
            ),
        ),
    ],
);
const REPLICA_SET: Ty = Ty::Struct(
    "v1.ReplicaSet",
    &[
        ("metadata", OBJECT_META),
        (
            "spec",
            Ty::Struct(
                "v1.ReplicaSetSpec",
                &[
                    ("replicas", Ty::I32),
                    ("minReadySeconds", Ty::I32),
                    ("selector", LABEL_SELECTOR),
                    ("template", TEMPLATE),
                ],
            ),
        ),
        (
            "status",
            Ty::Struct(
                "v1.ReplicaSetStatus",
                &[
                    ("replicas", Ty::I32),
                    ("fullyLabeledReplicas", Ty::I32),
                    ("readyReplicas", Ty::I32),
                    ("availableReplicas", Ty::I32),
                    ("observedGeneration", Ty::I64),
                ],
            ),
        ),
    ],
);
const CLAIM_TEMPLATE: Ty = Ty::Struct("v1.PersistentVolumeClaim", &[("metadata", OBJECT_META)]);
const CLAIM_TEMPLATES: Ty = Ty::List(&CLAIM_TEMPLATE);
const STATEFUL_SET: Ty = Ty::Struct(
    "v1.StatefulSet",
    &[
        ("metadata", OBJECT_META),
        (
            "spec",
            Ty::Struct(
                "v1.StatefulSetSpec",
                &[
                    ("replicas", Ty::I32),
                    ("selector", LABEL_SELECTOR),
                    ("template", TEMPLATE),
                    ("volumeClaimTemplates", CLAIM_TEMPLATES),
                    ("serviceName", S),
                    ("podManagementPolicy", Ty::Str("v1.PodManagementPolicyType")),
                    (
                        "updateStrategy",
                        Ty::Struct(
                            "v1.StatefulSetUpdateStrategy",
                            &[
                                ("type", Ty::Str("v1.StatefulSetUpdateStrategyType")),
                                (
                                    "rollingUpdate",
                                    Ty::Struct(
                                        "v1.RollingUpdateStatefulSetStrategy",
                                        &[
                                            ("partition", Ty::I32),
                                            ("maxUnavailable", Ty::IntOrString),
                                        ],
                                    ),
                                ),
                            ],
                        ),
                    ),
                    ("minReadySeconds", Ty::I32),
                    (
                        "ordinals",
                        Ty::Struct("v1.StatefulSetOrdinals", &[("start", Ty::I32)]),
                    ),
                ],
            ),
        ),
        (
            "status",
            Ty::Struct(
                "v1.StatefulSetStatus",
                &[
                    ("observedGeneration", Ty::I64),
                    ("replicas", Ty::I32),
                    ("readyReplicas", Ty::I32),
                    ("currentReplicas", Ty::I32),
                    ("updatedReplicas", Ty::I32),
                    ("availableReplicas", Ty::I32),
                    ("currentRevision", S),
                    ("updateRevision", S),
                ],
            ),
        ),
    ],
);
const DAEMON_SET: Ty = Ty::Struct(
    "v1.DaemonSet",
    &[
        ("metadata", OBJECT_META),
        (
            "spec",
            Ty::Struct(
                "v1.DaemonSetSpec",
                &[
                    ("selector", LABEL_SELECTOR),
                    ("template", TEMPLATE),
                    (
                        "updateStrategy",
                        Ty::Struct(
                            "v1.DaemonSetUpdateStrategy",
                            &[
                                ("type", Ty::Str("v1.DaemonSetUpdateStrategyType")),
                                (
                                    "rollingUpdate",
                                    Ty::Struct(
                                        "v1.RollingUpdateDaemonSet",
                                        &[
                                            ("maxUnavailable", Ty::IntOrString),
                                            ("maxSurge", Ty::IntOrString),
                                        ],
                                    ),
                                ),
                            ],
                        ),
                    ),
                    ("minReadySeconds", Ty::I32),
                ],
            ),
        ),
        (
            "status",
            Ty::Struct(
                "v1.DaemonSetStatus",
                &[
                    ("currentNumberScheduled", Ty::I32),
                    ("numberMisscheduled", Ty::I32),
                    ("desiredNumberScheduled", Ty::I32),
                    ("numberReady", Ty::I32),
                    ("observedGeneration", Ty::I64),
                    ("updatedNumberScheduled", Ty::I32),
                    ("numberAvailable", Ty::I32),
                    ("numberUnavailable", Ty::I32),
                ],
            ),
        ),
    ],
);
const JOB_CONDITION: Ty = Ty::Struct(
    "v1.JobCondition",
    &[
        ("type", Ty::Str("v1.JobConditionType")),
        ("status", Ty::Str("v1.ConditionStatus")),
        ("lastTransitionTime", Ty::Time),
    ],
);
const JOB_CONDITIONS: Ty = Ty::List(&JOB_CONDITION);
const UIDS: Ty = Ty::List(&Ty::Str("types.UID"));
const JOB: Ty = Ty::Struct(
    "v1.Job",
    &[
        ("metadata", OBJECT_META),
        (
            "spec",
            Ty::Struct(
                "v1.JobSpec",
                &[
                    ("parallelism", Ty::I32),
                    ("completions", Ty::I32),
                    ("activeDeadlineSeconds", Ty::I64),
                    ("backoffLimit", Ty::I32),
                    ("selector", LABEL_SELECTOR),
                    ("manualSelector", Ty::Bool),
                    ("template", TEMPLATE),
                    ("completionMode", Ty::Str("v1.CompletionMode")),
                    ("suspend", Ty::Bool),
                ],
            ),
        ),
        (
            "status",
            Ty::Struct(
                "v1.JobStatus",
                &[
                    ("conditions", JOB_CONDITIONS),
                    ("startTime", Ty::Time),
                    ("completionTime", Ty::Time),
                    ("active", Ty::I32),
                    ("succeeded", Ty::I32),
                    ("failed", Ty::I32),
                    ("completedIndexes", S),
                    (
                        "uncountedTerminatedPods",
                        Ty::Struct(
                            "v1.UncountedTerminatedPods",
                            &[("succeeded", UIDS), ("failed", UIDS)],
                        ),
                    ),
                ],
            ),
        ),
    ],
);
const TAINT: Ty = Ty::Struct(
    "v1.Taint",
    &[
        ("key", S),
        ("value", S),
        ("effect", Ty::Str("v1.TaintEffect")),
        ("timeAdded", Ty::Time),
    ],
);
const TAINTS: Ty = Ty::List(&TAINT);
const NODE_CONDITION: Ty = Ty::Struct(
    "v1.NodeCondition",
    &[
        ("type", Ty::Str("v1.NodeConditionType")),
        ("status", Ty::Str("v1.ConditionStatus")),
        ("lastHeartbeatTime", Ty::Time),
        ("lastTransitionTime", Ty::Time),
        ("reason", S),
        ("message", S),
    ],
);
const NODE_CONDITIONS: Ty = Ty::List(&NODE_CONDITION);
const NODE: Ty = Ty::Struct(
    "v1.Node",
    &[
        ("metadata", OBJECT_META),
        (
            "spec",
            Ty::Struct(
                "v1.NodeSpec",
                &[
                    ("taints", TAINTS),
                    ("unschedulable", Ty::Bool),
                    ("podCIDR", S),
                ],
            ),
        ),
        (
            "status",
            Ty::Struct("v1.NodeStatus", &[("conditions", NODE_CONDITIONS)]),
        ),
    ],
);
const LEASE: Ty = Ty::Struct(
    "v1.Lease",
    &[
        ("metadata", OBJECT_META),
        (
            "spec",
            Ty::Struct(
                "v1.LeaseSpec",
                &[
                    ("holderIdentity", S),
                    ("leaseDurationSeconds", Ty::I32),
                    ("acquireTime", Ty::Time),
                    ("renewTime", Ty::Time),
                    ("leaseTransitions", Ty::I32),
                ],
            ),
        ),
    ],
);
const ANY_OBJECT: Ty = Ty::Struct("v1.Object", &[("metadata", OBJECT_META)]);

/// The checked shape of `r`'s objects.
pub fn schema(r: Resource) -> &'static Ty {
    match r {
        Resource::Pods => &POD,
        Resource::ReplicaSets => &REPLICA_SET,
        Resource::StatefulSets => &STATEFUL_SET,
        Resource::DaemonSets => &DAEMON_SET,
        Resource::Jobs => &JOB,
        Resource::Nodes => &NODE,
        Resource::Leases => &LEASE,
        _ => &ANY_OBJECT,
    }
}

/// What went wrong where, worded as Go's `encoding/json` (and `metav1.Time`) words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeError(pub String);

fn kind_of(v: &Value, numeric_target: bool) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if numeric_target => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn short(go_name: &str) -> &str {
    go_name.rsplit('.').next().unwrap_or(go_name)
}

fn mismatch(v: &Value, ty: &Ty, owner: &str, path: &str) -> TypeError {
    let numeric = matches!(ty, Ty::I32 | Ty::I64);
    TypeError(format!(
        "json: cannot unmarshal {} into Go struct field {owner}.{path} of type {}",
        kind_of(v, numeric),
        ty.go_name()
    ))
}

fn check(v: &Value, ty: &Ty, owner: &str, path: &str) -> Result<(), TypeError> {
    if v.is_null() {
        return Ok(());
    }
    match ty {
        Ty::Str(_) if v.is_string() => Ok(()),
        Ty::Bool if v.is_boolean() => Ok(()),
        Ty::I64 if v.as_i64().is_some() => Ok(()),
        Ty::I32 if v.as_i64().and_then(|n| i32::try_from(n).ok()).is_some() => Ok(()),
        Ty::Time => match v {
            Value::String(s) if s.parse::<jiff::Timestamp>().is_ok() => Ok(()),
            Value::String(s) => Err(TypeError(format!(
                "parsing time {s:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {s:?} as \"2006\""
            ))),
            other => Err(TypeError(format!(
                "json: cannot unmarshal {} into Go value of type string",
                kind_of(other, false)
            ))),
        },
        Ty::IntOrString => match v {
            Value::String(_) => Ok(()),
            Value::Number(n) if n.as_i64().and_then(|n| i32::try_from(n).ok()).is_some() => Ok(()),
            other => Err(TypeError(format!(
                "json: cannot unmarshal {} into Go value of type int32",
                kind_of(other, true)
            ))),
        },
        Ty::StrMap => match v {
            Value::Object(m) => m
                .values()
                .filter(|x| !x.is_null())
                .find(|x| !x.is_string())
                .map_or(Ok(()), |x| Err(mismatch(x, &S, owner, path))),
            other => Err(mismatch(other, ty, owner, path)),
        },
        Ty::List(elem) => match v {
            Value::Array(items) => items.iter().try_for_each(|x| check(x, elem, owner, path)),
            other => Err(mismatch(other, ty, owner, path)),
        },
        Ty::Struct(name, fields) => match v {
            Value::Object(m) => fields
                .iter()
                .try_for_each(|(field, fty)| match m.get(*field) {
                    Some(x) => {
                        let child = if path.is_empty() {
                            (*field).to_string()
                        } else {
                            format!("{path}.{field}")
                        };
                        check(x, fty, short(name), &child)
                    }
                    None => Ok(()),
                }),
            other => Err(mismatch(other, ty, owner, path)),
        },
        _ => Err(mismatch(v, ty, owner, path)),
    }
}

/// The decode error of `obj` as a `r` object, if a checked field has the wrong type.
pub fn type_error(r: Resource, obj: &Value) -> Option<TypeError> {
    match schema(r) {
        Ty::Struct(_, fields) => match obj {
            Value::Object(m) => fields
                .iter()
                .try_for_each(|(field, fty)| match m.get(*field) {
                    Some(x) => check(x, fty, r.kind(), field),
                    None => Ok(()),
                })
                .err(),
            _ => None,
        },
        _ => None,
    }
}

/// The version part of `r`'s apiVersion (`v1` of `apps/v1`).
fn version(r: Resource) -> &'static str {
    r.api_version().rsplit('/').next().unwrap_or("v1")
}

/// Checks a request body (create, update, status update) as the decoder would: `400
/// BadRequest` naming the field, as upstream's `transformDecodeError`.
pub fn check_body(r: Resource, obj: &Value) -> Result<(), ApiError> {
    match type_error(r, obj) {
        None => Ok(()),
        Some(TypeError(e)) => Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {kind}: {e}",
            version(r),
            kind = r.kind()
        ))),
    }
}

/// Checks the object a JSON or merge patch produced: upstream decodes it and answers a decode
/// error with `422 Invalid`, one cause on the field `patch` whose value is the patched object.
pub fn check_patched(r: Resource, obj: &Value) -> Result<(), ApiError> {
    match type_error(r, obj) {
        None => Ok(()),
        Some(TypeError(e)) => {
            let patched = obj.to_string();
            let cause = crate::status::StatusCause {
                reason: crate::validation::INVALID.into(),
                message: format!("Invalid value: {patched:?}: {e}"),
                field: "patch".into(),
            };
            Err(ApiError::invalid_causes("", "", vec![cause]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(r: Resource, obj: Value) -> Option<String> {
        type_error(r, &obj).map(|e| e.0)
    }

    #[test]
    fn a_string_where_an_int32_goes_is_worded_as_gos_decoder_words_it() {
        assert_eq!(
            error(Resource::ReplicaSets, json!({"spec": {"replicas": "five"}})).as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field ReplicaSetSpec.spec.replicas of type int32"
            )
        );
        assert_eq!(
            error(Resource::ReplicaSets, json!({"spec": {"replicas": 3.0}})).as_deref(),
            Some(
                "json: cannot unmarshal number 3.0 into Go struct field ReplicaSetSpec.spec.replicas of type int32"
            )
        );
        assert_eq!(
            error(Resource::Nodes, json!({"status": "not-an-object"})).as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field Node.status of type v1.NodeStatus"
            )
        );
        assert_eq!(
            error(Resource::ReplicaSets, json!({"spec": {"replicas": -2}})),
            None
        );
    }

    #[test]
    fn nested_lists_maps_and_times_are_checked() {
        let e = error(
            Resource::Nodes,
            json!({"status": {"conditions": [{"type": "Ready", "status": true}]}}),
        );
        assert_eq!(
            e.as_deref(),
            Some(
                "json: cannot unmarshal bool into Go struct field NodeCondition.status.conditions.status of type v1.ConditionStatus"
            )
        );
        let e = error(Resource::Pods, json!({"metadata": {"labels": {"a": 1}}}));
        assert_eq!(
            e.as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
            )
        );
        let e = error(
            Resource::Leases,
            json!({"spec": {"renewTime": "yesterday"}}),
        );
        assert!(e.is_some_and(|e| e.starts_with("parsing time \"yesterday\"")));
        assert_eq!(
            error(
                Resource::Leases,
                json!({"spec": {"renewTime": "2026-01-01T00:00:00.123456Z"}})
            ),
            None
        );
    }
}
