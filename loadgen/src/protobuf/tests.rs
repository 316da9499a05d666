//! The protobuf writer checked by k8s-pb: every Pod the simulated cluster makes decodes as a
//! `k8s.io.api.core.v1.Pod` with its fields in place, and re-encoding it gives the same bytes
//! (field for field what a generated encoder writes).

use super::*;
use crate::bench::pods::PodTemplates;
use k8s_pb::api::core::v1 as core;
use prost::Message;
use serde_json::json;

fn decoded(json: &Value) -> (core::Pod, Vec<u8>) {
    let bytes = encode_pod(json).expect("every field has a number");
    let pod = core::Pod::decode(bytes.as_slice()).expect("k8s-pb decodes it");
    (pod, bytes)
}

#[test]
fn a_bench_pod_is_written_as_k8s_pb_reads_and_writes_it() {
    let templates = PodTemplates::new(10);
    for index in 0..4 {
        let json: Value =
            serde_json::from_slice(&templates.render(index, 4711, 2)).expect("bench Pod JSON");
        let (pod, bytes) = decoded(&json);
        assert_eq!(
            pod.encode_to_vec(),
            bytes,
            "byte for byte what prost writes"
        );
        let meta = pod.metadata.as_ref().expect("metadata");
        assert_eq!(meta.resource_version.as_deref(), Some("4711"));
        assert_eq!(meta.labels.get("tier").map(String::as_str), Some("web"));
        assert_eq!(meta.owner_references[0].controller, Some(true));
        assert_eq!(
            meta.managed_fields.len(),
            json["metadata"]["managedFields"]
                .as_array()
                .map_or(0, Vec::len)
        );
        let raw = meta.managed_fields[0]
            .fields_v1
            .as_ref()
            .and_then(|f| f.raw.as_deref())
            .expect("FieldsV1 raw");
        let fields: Value = serde_json::from_slice(raw).expect("FieldsV1 is JSON");
        assert_eq!(fields, json["metadata"]["managedFields"][0]["fieldsV1"]);
        let created = meta.creation_timestamp.as_ref().and_then(|t| t.seconds);
        assert_eq!(created, Some(1_796_223_818), "2026-12-02T15:03:38Z");
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.node_name.as_deref(), Some("node-17"));
        let volume = spec.volumes[0]
            .volume_source
            .as_ref()
            .expect("inlined volume source");
        let projected = volume.projected.as_ref().expect("projected");
        let config_map = projected.sources[1].config_map.as_ref().expect("configMap");
        assert_eq!(
            config_map
                .local_object_reference
                .as_ref()
                .and_then(|r| r.name.as_deref()),
            Some("kube-root-ca.crt")
        );
        let requests = &spec.containers[0]
            .resources
            .as_ref()
            .expect("resources")
            .requests;
        assert_eq!(requests["cpu"].string.as_deref(), Some("10m"));
        let status = pod.status.as_ref().expect("status");
        assert_eq!(status.container_statuses[0].restart_count, Some(2));
        assert!(
            bytes.len() < serde_json::to_vec(&json).expect("JSON").len(),
            "protobuf is smaller than JSON"
        );
    }
}

#[test]
fn a_pod_the_simulated_kubelet_ran_and_failed_is_written_whole() {
    let mut json = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-1-x", "namespace": "demo", "uid": "u-1", "resourceVersion": "9",
            "creationTimestamp": "2026-12-02T15:03:38Z", "labels": {"job-name": "job-1"},
            "finalizers": ["batch.kubernetes.io/job-tracking"]},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "exit 1"]}],
            "restartPolicy": "Never"}
    });
    assert!(crate::kubelet::start_pod(&mut json, "node-1", "10.244.1.9"));
    let (running, _) = decoded(&json);
    let status = running.status.expect("status");
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(status.pod_ips[0].ip.as_deref(), Some("10.244.1.9"));
    assert!(crate::kubelet::finish_pod(&mut json, Some(1)));
    let (failed, bytes) = decoded(&json);
    assert_eq!(failed.encode_to_vec(), bytes);
    let status = failed.status.expect("status");
    assert_eq!(status.phase.as_deref(), Some("Failed"));
    let terminated = status.container_statuses[0]
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .expect("terminated");
    assert_eq!(terminated.exit_code, Some(1));
}

#[test]
fn a_field_without_a_number_or_of_the_wrong_type_is_named_not_dropped() {
    let unknown = json!({"metadata": {"name": "p"}, "spec": {"affinityX": {}}});
    assert_eq!(
        encode_pod(&unknown),
        Err(EncodeError::UnknownField(".spec.affinityX".into()))
    );
    let wrong = json!({"metadata": {"name": "p"}, "status": {"containerStatuses": [{"restartCount": "3"}]}});
    assert_eq!(
        encode_pod(&wrong),
        Err(EncodeError::WrongType {
            path: ".status.containerStatuses[0].restartCount".into(),
            expected: "an integer"
        })
    );
}

#[test]
fn lists_envelopes_and_watch_frames_decode_with_k8s_pb() {
    let pod = encode_pod(&json!({"metadata": {"name": "a", "resourceVersion": "5"}})).expect("pod");
    let list = list("7", Some("7:1"), &[&pod, &pod]);
    let decoded = core::PodList::decode(list.as_slice()).expect("PodList");
    assert_eq!(decoded.items.len(), 2);
    let meta = decoded.metadata.expect("ListMeta");
    assert_eq!(
        (meta.resource_version.as_deref(), meta.r#continue.as_deref()),
        (Some("7"), Some("7:1"))
    );
    let wrapped = wrap("v1", "PodList", &list);
    assert_eq!(&wrapped[..4], b"k8s\0");
    let unknown =
        k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&wrapped[4..]).expect("Unknown");
    let type_meta = unknown.type_meta.expect("TypeMeta");
    assert_eq!(type_meta.kind.as_deref(), Some("PodList"));
    assert_eq!(unknown.raw.as_deref(), Some(list.as_slice()));
    let frame = watch_frame("ADDED", &wrap("v1", "Pod", &pod));
    let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
    assert_eq!(len, frame.len() - 4);
    let event = k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(&frame[4..])
        .expect("WatchEvent");
    assert_eq!(event.r#type.as_deref(), Some("ADDED"));
    let status = status(410, "Expired", "too old resource version: 3");
    let unknown =
        k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&status[4..]).expect("Unknown");
    let status = k8s_pb::apimachinery::pkg::apis::meta::v1::Status::decode(
        unknown.raw.as_deref().unwrap_or_default(),
    )
    .expect("Status");
    assert_eq!(
        (status.code, status.reason.as_deref()),
        (Some(410), Some("Expired"))
    );
}

#[test]
fn protobuf_is_chosen_when_it_is_asked_for_first() {
    let kcm = "application/vnd.kubernetes.protobuf, application/json";
    assert!(prefers_protobuf(Some(kcm)));
    assert!(accepts_json(Some(kcm)));
    assert!(!prefers_protobuf(Some("application/json")));
    assert!(!prefers_protobuf(None));
    assert!(!accepts_json(Some("application/vnd.kubernetes.protobuf")));
    assert!(accepts_json(None));
}

#[test]
fn a_pod_watch_frame_is_the_frame_around_the_wrapped_pod() {
    let templates = PodTemplates::new(10);
    for index in 0..4 {
        let json: Value = serde_json::from_slice(&templates.render(index, 4711, 2)).expect("JSON");
        let pod = encode_pod(&json).expect("encode");
        for kind in ["MODIFIED", "ADDED"] {
            assert_eq!(
                pod_watch_frame(kind, &pod),
                watch_frame(kind, &wrap("v1", "Pod", &pod))
            );
        }
    }
    assert_eq!(
        pod_watch_frame("DELETED", &[]),
        watch_frame("DELETED", &wrap("v1", "Pod", &[]))
    );
}
