//! The protobuf field numbers of a Pod and what it embeds, from `k8s.io/api/core/v1` and
//! `k8s.io/apimachinery`'s `generated.proto` (checked in the tests by decoding with k8s-pb).
//! Only the fields the simulated cluster's Pods carry are listed; [`super::encode_pod`] says
//! which fields of an object it had no number for.

/// How a JSON field is written.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A string.
    Str,
    /// An integer (int32 or int64: the same varint).
    Int,
    /// A bool.
    Bool,
    /// RFC 3339 text written as `metav1.Time` (seconds, nanos).
    Time,
    /// A repeated string.
    Strings,
    /// A `map<string, string>`.
    StrMap,
    /// A `map<string, Quantity>`: `resources.requests`, `resources.limits`.
    QuantityMap,
    /// A JSON object written as bytes (`FieldsV1.Raw`).
    RawJson,
    /// An embedded message.
    Msg(&'static [Field]),
    /// A repeated embedded message.
    Msgs(&'static [Field]),
    /// Go's inlined struct: its fields sit in the same JSON object, its message is embedded
    /// (`Volume.volumeSource`, `ConfigMapProjection.localObjectReference`).
    Inline(&'static [Field]),
}

/// One field: its JSON name (unused for [`Kind::Inline`]), number and kind.
pub type Field = (&'static str, u32, Kind);

use Kind::*;

/// `k8s.io.api.core.v1.Pod`.
pub const POD: &[Field] = &[
    ("metadata", 1, Msg(OBJECT_META)),
    ("spec", 2, Msg(POD_SPEC)),
    ("status", 3, Msg(POD_STATUS)),
];

/// `metav1.ObjectMeta`.
pub const OBJECT_META: &[Field] = &[
    ("name", 1, Str),
    ("generateName", 2, Str),
    ("namespace", 3, Str),
    ("selfLink", 4, Str),
    ("uid", 5, Str),
    ("resourceVersion", 6, Str),
    ("generation", 7, Int),
    ("creationTimestamp", 8, Time),
    ("deletionTimestamp", 9, Time),
    ("deletionGracePeriodSeconds", 10, Int),
    ("labels", 11, StrMap),
    ("annotations", 12, StrMap),
    ("ownerReferences", 13, Msgs(OWNER_REFERENCE)),
    ("finalizers", 14, Strings),
    ("managedFields", 17, Msgs(MANAGED_FIELDS_ENTRY)),
];

const OWNER_REFERENCE: &[Field] = &[
    ("kind", 1, Str),
    ("name", 3, Str),
    ("uid", 4, Str),
    ("apiVersion", 5, Str),
    ("controller", 6, Bool),
    ("blockOwnerDeletion", 7, Bool),
];

const MANAGED_FIELDS_ENTRY: &[Field] = &[
    ("manager", 1, Str),
    ("operation", 2, Str),
    ("apiVersion", 3, Str),
    ("time", 4, Time),
    ("fieldsType", 6, Str),
    ("fieldsV1", 7, RawJson),
    ("subresource", 8, Str),
];

const POD_SPEC: &[Field] = &[
    ("volumes", 1, Msgs(VOLUME)),
    ("containers", 2, Msgs(CONTAINER)),
    ("restartPolicy", 3, Str),
    ("terminationGracePeriodSeconds", 4, Int),
    ("activeDeadlineSeconds", 5, Int),
    ("dnsPolicy", 6, Str),
    ("nodeSelector", 7, StrMap),
    ("serviceAccountName", 8, Str),
    ("serviceAccount", 9, Str),
    ("nodeName", 10, Str),
    ("hostNetwork", 11, Bool),
    ("hostname", 16, Str),
    ("subdomain", 17, Str),
    ("schedulerName", 19, Str),
    ("initContainers", 20, Msgs(CONTAINER)),
    ("automountServiceAccountToken", 21, Bool),
    ("tolerations", 22, Msgs(TOLERATION)),
    ("priorityClassName", 24, Str),
    ("priority", 25, Int),
    ("enableServiceLinks", 30, Bool),
    ("preemptionPolicy", 31, Str),
];

const CONTAINER: &[Field] = &[
    ("name", 1, Str),
    ("image", 2, Str),
    ("command", 3, Strings),
    ("args", 4, Strings),
    ("workingDir", 5, Str),
    ("ports", 6, Msgs(CONTAINER_PORT)),
    ("env", 7, Msgs(ENV_VAR)),
    ("resources", 8, Msg(RESOURCE_REQUIREMENTS)),
    ("volumeMounts", 9, Msgs(VOLUME_MOUNT)),
    ("terminationMessagePath", 13, Str),
    ("imagePullPolicy", 14, Str),
    ("terminationMessagePolicy", 20, Str),
];

const CONTAINER_PORT: &[Field] = &[
    ("name", 1, Str),
    ("hostPort", 2, Int),
    ("containerPort", 3, Int),
    ("protocol", 4, Str),
    ("hostIP", 5, Str),
];

const ENV_VAR: &[Field] = &[("name", 1, Str), ("value", 2, Str)];

const RESOURCE_REQUIREMENTS: &[Field] = &[("limits", 1, QuantityMap), ("requests", 2, QuantityMap)];

const VOLUME_MOUNT: &[Field] = &[
    ("name", 1, Str),
    ("readOnly", 2, Bool),
    ("mountPath", 3, Str),
    ("subPath", 4, Str),
];

const TOLERATION: &[Field] = &[
    ("key", 1, Str),
    ("operator", 2, Str),
    ("value", 3, Str),
    ("effect", 4, Str),
    ("tolerationSeconds", 5, Int),
];

const VOLUME: &[Field] = &[("name", 1, Str), ("", 2, Inline(VOLUME_SOURCE))];

const VOLUME_SOURCE: &[Field] = &[
    ("emptyDir", 2, Msg(&[("medium", 1, Str)])),
    ("secret", 6, Msg(SECRET_VOLUME_SOURCE)),
    (
        "persistentVolumeClaim",
        10,
        Msg(&[("claimName", 1, Str), ("readOnly", 2, Bool)]),
    ),
    ("configMap", 19, Msg(CONFIG_MAP_VOLUME_SOURCE)),
    ("projected", 26, Msg(PROJECTED_VOLUME_SOURCE)),
];

const KEY_TO_PATH: &[Field] = &[("key", 1, Str), ("path", 2, Str), ("mode", 3, Int)];

const LOCAL_OBJECT_REFERENCE: &[Field] = &[("name", 1, Str)];

const SECRET_VOLUME_SOURCE: &[Field] = &[
    ("secretName", 1, Str),
    ("items", 2, Msgs(KEY_TO_PATH)),
    ("defaultMode", 3, Int),
    ("optional", 4, Bool),
];

const CONFIG_MAP_VOLUME_SOURCE: &[Field] = &[
    ("", 1, Inline(LOCAL_OBJECT_REFERENCE)),
    ("items", 2, Msgs(KEY_TO_PATH)),
    ("defaultMode", 3, Int),
    ("optional", 4, Bool),
];

const PROJECTED_VOLUME_SOURCE: &[Field] = &[
    ("sources", 1, Msgs(VOLUME_PROJECTION)),
    ("defaultMode", 2, Int),
];

const VOLUME_PROJECTION: &[Field] = &[
    ("configMap", 3, Msg(CONFIG_MAP_PROJECTION)),
    (
        "serviceAccountToken",
        4,
        Msg(&[
            ("audience", 1, Str),
            ("expirationSeconds", 2, Int),
            ("path", 3, Str),
        ]),
    ),
];

const CONFIG_MAP_PROJECTION: &[Field] = &[
    ("", 1, Inline(LOCAL_OBJECT_REFERENCE)),
    ("items", 2, Msgs(KEY_TO_PATH)),
    ("optional", 4, Bool),
];

const POD_STATUS: &[Field] = &[
    ("phase", 1, Str),
    ("conditions", 2, Msgs(POD_CONDITION)),
    ("message", 3, Str),
    ("reason", 4, Str),
    ("hostIP", 5, Str),
    ("podIP", 6, Str),
    ("startTime", 7, Time),
    ("containerStatuses", 8, Msgs(CONTAINER_STATUS)),
    ("qosClass", 9, Str),
    ("initContainerStatuses", 10, Msgs(CONTAINER_STATUS)),
    ("nominatedNodeName", 11, Str),
    ("podIPs", 12, Msgs(&[("ip", 1, Str)])),
    ("hostIPs", 16, Msgs(&[("ip", 1, Str)])),
    ("observedGeneration", 17, Int),
];

const POD_CONDITION: &[Field] = &[
    ("type", 1, Str),
    ("status", 2, Str),
    ("lastProbeTime", 3, Time),
    ("lastTransitionTime", 4, Time),
    ("reason", 5, Str),
    ("message", 6, Str),
    ("observedGeneration", 7, Int),
];

const CONTAINER_STATUS: &[Field] = &[
    ("name", 1, Str),
    ("state", 2, Msg(CONTAINER_STATE)),
    ("lastState", 3, Msg(CONTAINER_STATE)),
    ("ready", 4, Bool),
    ("restartCount", 5, Int),
    ("image", 6, Str),
    ("imageID", 7, Str),
    ("containerID", 8, Str),
    ("started", 9, Bool),
];

const CONTAINER_STATE: &[Field] = &[
    (
        "waiting",
        1,
        Msg(&[("reason", 1, Str), ("message", 2, Str)]),
    ),
    ("running", 2, Msg(&[("startedAt", 1, Time)])),
    (
        "terminated",
        3,
        Msg(&[
            ("exitCode", 1, Int),
            ("signal", 2, Int),
            ("reason", 3, Str),
            ("message", 4, Str),
            ("startedAt", 5, Time),
            ("finishedAt", 6, Time),
            ("containerID", 7, Str),
        ]),
    ),
];
