//! The Go types of the served kinds' fields that controllers decide on, for [`crate::admission::typecheck`]:
//! one constant per struct, named and nested as in `k8s.io/api`.

use crate::resource::Resource;

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

/// `string`.
pub(crate) const S: Ty = Ty::Str("string");
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
        ("lastProbeTime", Ty::Time),
        ("lastTransitionTime", Ty::Time),
        ("reason", S),
        ("message", S),
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
                    ("backoffLimitPerIndex", Ty::I32),
                    ("maxFailedIndexes", Ty::I32),
                    ("podReplacementPolicy", Ty::Str("v1.PodReplacementPolicy")),
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
                    ("failedIndexes", S),
                    ("terminating", Ty::I32),
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
