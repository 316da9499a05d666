//! The protobuf Pod reader against Pods encoded by k8s-pb (kube-rs's types generated from
//! Kubernetes' own `.proto` files): each must read as the same Pod's JSON does.

use super::*;
use crate::views::pod::{PodFailure, PodPhase, PodView};
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message;
use serde_json::json;

fn time(seconds: i64) -> Option<meta::Time> {
    Some(meta::Time {
        seconds: Some(seconds),
        nanos: Some(0),
    })
}

fn s(text: &str) -> Option<String> {
    Some(text.to_string())
}

/// 2026-12-02T15:03:38Z
const CREATED: i64 = 1_796_223_818;

fn container_status(name: &str, restarts: i32, exit_code: Option<i32>) -> core::ContainerStatus {
    core::ContainerStatus {
        name: s(name),
        restart_count: Some(restarts),
        ready: Some(exit_code.is_none()),
        image: s("registry.k8s.io/pause:3.10"),
        state: Some(core::ContainerState {
            terminated: exit_code.map(|code| core::ContainerStateTerminated {
                exit_code: Some(code),
                reason: s("Error"),
                finished_at: time(CREATED + 60),
                ..Default::default()
            }),
            running: exit_code.is_none().then(|| core::ContainerStateRunning {
                started_at: time(CREATED + 5),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A Pod of ReplicaSet `web` as an API server holds it, in protobuf, with `phase` and the
/// container statuses given; Go writes its unset strings as `""` and its unset times as zero.
fn pod_proto(phase: &str, statuses: Vec<core::ContainerStatus>) -> Vec<u8> {
    core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: s("web-7d9f8b6c5d-x2x9q"),
            generate_name: s("web-7d9f8b6c5d-"),
            namespace: s("demo"),
            self_link: s(""),
            uid: s("0b1e6f2a-5d1c-4b7e-9a3f-000000000001"),
            resource_version: s("4711"),
            generation: Some(0),
            creation_timestamp: time(CREATED),
            labels: [("app", "web"), ("pod-template-hash", "7d9f8b6c5d")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: [("kubernetes.io/psp", "restricted")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            owner_references: vec![meta::OwnerReference {
                api_version: s("apps/v1"),
                kind: s("ReplicaSet"),
                name: s("web-7d9f8b6c5d"),
                uid: s("0b1e6f2a-7e2a-4c1d-8b6f-000000000001"),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }],
            finalizers: vec!["example.com/keep".to_string()],
            managed_fields: vec![meta::ManagedFieldsEntry {
                manager: s("kube-controller-manager"),
                operation: s("Update"),
                api_version: s("v1"),
                time: time(CREATED),
                fields_type: s("FieldsV1"),
                fields_v1: Some(meta::FieldsV1 {
                    raw: Some(br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}"#.to_vec()),
                }),
                subresource: s(""),
            }],
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            node_name: s("node-17"),
            restart_policy: s("Always"),
            containers: vec![core::Container {
                name: s("web"),
                image: s("registry.k8s.io/pause:3.10"),
                env: vec![core::EnvVar {
                    name: s("ENV_0"),
                    value: s("value-0"),
                    value_from: None,
                }],
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            phase: s(phase),
            conditions: vec![
                core::PodCondition {
                    r#type: s("PodScheduled"),
                    status: s("True"),
                    last_transition_time: time(CREATED),
                    ..Default::default()
                },
                core::PodCondition {
                    r#type: s("Ready"),
                    status: s("True"),
                    last_transition_time: time(CREATED + 7),
                    ..Default::default()
                },
            ],
            host_ip: s("10.0.0.17"),
            pod_ip: s("10.244.17.5"),
            start_time: time(CREATED + 1),
            container_statuses: statuses,
            ..Default::default()
        }),
    }
    .encode_to_vec()
}

/// The same Pod in JSON.
fn pod_json(phase: &str, statuses: serde_json::Value) -> Vec<u8> {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-7d9f8b6c5d-x2x9q", "generateName": "web-7d9f8b6c5d-", "namespace": "demo",
            "uid": "0b1e6f2a-5d1c-4b7e-9a3f-000000000001", "resourceVersion": "4711",
            "creationTimestamp": "2026-12-02T15:03:38Z",
            "labels": {"app": "web", "pod-template-hash": "7d9f8b6c5d"},
            "annotations": {"kubernetes.io/psp": "restricted"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8b6c5d",
                "uid": "0b1e6f2a-7e2a-4c1d-8b6f-000000000001", "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["example.com/keep"],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                "time": "2026-12-02T15:03:38Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]
        },
        "spec": {"nodeName": "node-17", "restartPolicy": "Always",
            "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10",
                "env": [{"name": "ENV_0", "value": "value-0"}]}]},
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-02T15:03:38Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-02T15:03:45Z"}
            ],
            "hostIP": "10.0.0.17", "podIP": "10.244.17.5", "startTime": "2026-12-02T15:03:39Z",
            "containerStatuses": statuses
        }
    })
    .to_string()
    .into_bytes()
}

fn both(
    phase: &str,
    proto: Vec<core::ContainerStatus>,
    json: serde_json::Value,
) -> [(PodView, bool); 2] {
    [
        PodView::from_protobuf(&pod_proto(phase, proto)).expect("protobuf decodes"),
        PodView::decode(&pod_json(phase, json)).expect("JSON decodes"),
    ]
}

#[test]
fn a_running_pod_reads_the_same_from_protobuf_as_from_json() {
    let [proto, json] = both(
        "Running",
        vec![container_status("web", 3, None)],
        json!([{"name": "web", "restartCount": 3, "ready": true,
            "state": {"running": {"startedAt": "2026-12-02T15:03:43Z"}}}]),
    );
    assert_eq!(proto, json);
    let (pod, flagged) = proto;
    assert!(!flagged);
    assert_eq!(pod.key.to_string(), "demo/web-7d9f8b6c5d-x2x9q");
    assert_eq!(pod.restarts, 3);
    assert_eq!(pod.created, CREATED);
    assert_eq!(pod.ready_since, Some(CREATED + 7));
    assert_eq!(pod.node_name.as_deref(), Some("node-17"));
    assert_eq!(
        pod.controller.map(|c| c.name.to_string()).as_deref(),
        Some("web-7d9f8b6c5d")
    );
    assert!(!pod.terminating);
}

#[test]
fn a_failed_pod_keeps_how_it_failed_in_both_formats() {
    let [proto, json] = both(
        "Failed",
        vec![container_status("web", 0, Some(137))],
        json!([{"name": "web", "restartCount": 0, "ready": false,
            "state": {"terminated": {"exitCode": 137, "reason": "Error",
                "finishedAt": "2026-12-02T15:04:38Z"}}}]),
    );
    assert_eq!(proto, json);
    let (pod, flagged) = proto;
    assert!(!flagged);
    assert_eq!(pod.phase, PodPhase::Failed);
    assert_eq!(
        pod.failure.as_deref(),
        Some(&PodFailure {
            exit_codes: vec![("web".into(), 137)],
            conditions: vec![
                ("PodScheduled".into(), "True".into()),
                ("Ready".into(), "True".into())
            ],
            finished_at: Some(CREATED + 60),
        })
    );
}

#[test]
fn an_unknown_phase_is_flagged_malformed_as_its_json_is() {
    let [proto, json] = both("Exploded", vec![], json!([]));
    assert_eq!(proto, json);
    assert!(proto.1, "flagged");
    assert!(proto.0.malformed.is_some());
}

#[test]
fn bytes_that_are_not_a_pod_message_are_a_decode_error() {
    let mut bytes = pod_proto("Running", vec![]);
    bytes.truncate(bytes.len() / 2);
    assert!(matches!(
        PodView::from_protobuf(&bytes),
        Err(DecodeError::Malformed(_))
    ));
}

#[test]
fn a_pod_without_identity_is_missing_it_in_protobuf_too() {
    let bytes = core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: s("web-0"),
            uid: s(""),
            resource_version: s("1"),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    assert_eq!(
        PodView::from_protobuf(&bytes),
        Err(DecodeError::Missing("metadata.uid"))
    );
}

proptest::proptest! {
    /// Hostile bytes: a real Pod's message with bytes overwritten and cut short at random
    /// places reads as a Pod or a typed error, never a panic.
    #[test]
    fn a_damaged_pod_message_is_a_pod_or_an_error_never_a_panic(
        flips in proptest::collection::vec((proptest::num::usize::ANY, proptest::num::u8::ANY), 0..8),
        cut in proptest::num::usize::ANY,
    ) {
        let mut bytes = pod_proto("Failed", vec![container_status("web", 1, Some(2))]);
        for (at, byte) in flips {
            let at = at % bytes.len();
            bytes[at] = byte;
        }
        bytes.truncate(cut % (bytes.len() + 1));
        let _ = PodView::from_protobuf(&bytes);
    }

    /// Arbitrary bytes through the envelope readers: typed errors only.
    #[test]
    fn arbitrary_bytes_through_the_envelope_never_panic(
        bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512),
    ) {
        use crate::proto::{List, Status, Unknown, WatchEvent};
        let mut prefixed = crate::proto::envelope::MAGIC.to_vec();
        prefixed.extend_from_slice(&bytes);
        let _ = Unknown::read(&prefixed);
        let _ = List::read(&bytes);
        let _ = WatchEvent::read(&bytes);
        let _ = Status::read(&bytes);
        let _ = PodView::from_protobuf(&bytes);
    }
}
