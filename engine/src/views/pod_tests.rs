//! Tests of the Pod projection: both decoders, and what makes a Pod malformed.

use super::*;

#[test]
fn a_pod_decodes_to_its_projection_and_skips_the_rest() {
    let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default",
          "uid":"u1","resourceVersion":"42","creationTimestamp":"2026-12-02T15:03:38Z",
          "labels":{"app":"web"},"managedFields":[{"manager":"kubectl"}],
          "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs1","controller":true}]},
          "spec":{"nodeName":"node-3","containers":[{"name":"c","image":"nginx"}]},
          "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-12-02T15:03:40Z"}],
                    "containerStatuses":[{"restartCount":2}]}}"#;
    let pod = PodView::from_json(json).expect("valid pod");
    assert_eq!(pod.key, ObjectKey::new("default", "web-1"));
    assert_eq!(pod.resource_version, ResourceVersion::new(42));
    assert_eq!(pod.labels.get("app"), Some("web"));
    assert_eq!(
        pod.controller
            .as_ref()
            .map(|o| o.uid.to_string())
            .as_deref(),
        Some("rs1")
    );
    assert!(!pod.job_tracking);
    let job_pod = br#"{"metadata":{"name":"pi-0-x","namespace":"default","uid":"u2","resourceVersion":"43",
          "finalizers":["batch.kubernetes.io/job-tracking"],
          "annotations":{"batch.kubernetes.io/job-completion-index":"3"}},"status":{"phase":"Succeeded"}}"#;
    let job_pod = PodView::from_json(job_pod).expect("valid job pod");
    assert!(job_pod.job_tracking);
    assert_eq!(job_pod.completion_index, Some(3));
    assert_eq!(pod.node_name.as_deref(), Some("node-3"));
    assert!(pod.ready && pod.is_active());
    assert_eq!(pod.restarts, 2);
    assert_eq!(pod.created, 1_796_223_818);
}

#[test]
fn a_pod_without_a_name_is_a_typed_error() {
    let err = PodView::from_json(br#"{"metadata":{"uid":"u","resourceVersion":"1"}}"#);
    assert_eq!(err, Err(DecodeError::Missing("metadata.name")));
    assert!(PodView::from_json(b"not json").is_err());
}

#[test]
fn a_pod_with_an_odd_field_stays_visible_and_is_marked_malformed() {
    let json = br#"{"metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"9",
          "ownerReferences":[{"kind":"ReplicaSet","name":"web","uid":"rs1","controller":true}]},
          "spec":{"nodeName":17},
          "status":{"phase":"Running","containerStatuses":[{"restartCount":"two"}],
                    "conditions":[{"type":"Ready","status":"True"}]}}"#;
    let (pod, malformed) = PodView::decode(json).expect("identity is readable");
    assert!(malformed);
    let m = pod.malformed.clone().expect("malformed");
    let paths: Vec<_> = m.fields().iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        ["spec.nodeName", "status.containerStatuses[0].restartCount"]
    );
    assert!(pod.is_active() && pod.ready);
    assert_eq!(pod.controller.map(|o| o.uid), Some(Uid::new("rs1")));
    assert_eq!(pod.node_name, None);
    assert_eq!(pod.restarts, 0);
}

#[test]
fn a_strict_and_a_lenient_decode_agree_on_a_well_formed_pod() {
    let json = br#"{"metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"9",
          "creationTimestamp":"2026-12-02T15:03:38Z","labels":{"a":"b"},
          "ownerReferences":[{"kind":"ReplicaSet","name":"web","uid":"rs1","controller":true}]},
          "spec":{"nodeName":"n1"},"status":{"phase":"Pending","containerStatuses":[{"restartCount":3}],
          "conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2026-12-02T15:03:39Z"}]}}"#;
    let fast = PodView::from_json(json).expect("fast");
    let value: serde_json::Value = serde_json::from_slice(json).expect("json");
    assert_eq!(PodView::from_value(&value).expect("checked"), fast);
    assert!(fast.malformed.is_none());
}

#[test]
fn a_non_comparable_resource_version_is_kept_as_unknown() {
    let pod = PodView::from_json(br#"{"metadata":{"name":"p","uid":"u","resourceVersion":"abc"}}"#)
        .expect("decodes");
    assert_eq!(pod.resource_version, None);
}

#[test]
fn unknown_phases_bad_times_negative_restarts_and_odd_indexes_are_malformed() {
    let base = |extra: &str| {
        format!(
            r#"{{"metadata":{{"name":"p","namespace":"ns","uid":"u","resourceVersion":"9"{extra}}}}}"#
        )
    };
    let cases = [
        (
            r#","creationTimestamp":"yesterday""#,
            "metadata.creationTimestamp",
        ),
        (
            r#","annotations":{"batch.kubernetes.io/job-completion-index":"+1"}"#,
            "metadata.annotations[batch.kubernetes.io/job-completion-index]",
        ),
        (
            r#","annotations":{"batch.kubernetes.io/job-completion-index":"007"}"#,
            "metadata.annotations[batch.kubernetes.io/job-completion-index]",
        ),
    ];
    for (extra, path) in cases {
        let pod = PodView::from_json(base(extra).as_bytes()).expect("identity");
        let m = pod.malformed.expect(path);
        assert_eq!(m.fields()[0].path, path);
    }
    for (status, path) in [
        (r#"{"phase":"Exploded"}"#, "status.phase"),
        (
            r#"{"containerStatuses":[{"restartCount":-1}]}"#,
            "status.containerStatuses[0].restartCount",
        ),
        (
            r#"{"conditions":[{"type":"Ready","status":"Maybe"}]}"#,
            "status.conditions[0].status",
        ),
        (r#""not-an-object""#, "status"),
    ] {
        let json = format!(
            r#"{{"metadata":{{"name":"p","uid":"u","resourceVersion":"9"}},"status":{status}}}"#
        );
        let pod = PodView::from_json(json.as_bytes()).expect("identity");
        let m = pod.malformed.expect(path);
        assert_eq!(m.fields()[0].path, path);
    }
}

#[test]
fn a_pod_without_a_resource_version_is_a_decode_error() {
    assert_eq!(
        PodView::from_json(br#"{"metadata":{"name":"p","uid":"u"}}"#),
        Err(DecodeError::Missing("metadata.resourceVersion"))
    );
}

#[test]
fn a_struct_sent_as_an_array_is_malformed_not_read_positionally() {
    // Found by fuzzing: serde's derived decoders also take a struct as an array of its fields.
    let json = br#"{"metadata":{"name":"p","uid":"u","resourceVersion":"1"},"spec":[null],"status":["Running"]}"#;
    let (pod, malformed) = PodView::decode(json).expect("identity is readable");
    assert!(malformed);
    let m = pod.malformed.expect("malformed");
    let paths: Vec<_> = m.fields().iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["spec", "status"]);
    assert!(PodView::from_json(br#"{"metadata":["p","ns","u","1"]}"#).is_err());
}

#[test]
fn a_failed_pod_keeps_how_it_failed_and_a_running_one_keeps_nothing_of_it() {
    let failed = serde_json::json!({
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3"},
        "status": {"phase": "Failed",
            "conditions": [{"type": "DisruptionTarget", "status": "True"}],
            "containerStatuses": [
                {"name": "main", "restartCount": 0, "state": {"terminated": {"exitCode": 42}}},
                {"name": "side", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}},
            ],
            "initContainerStatuses": [{"name": "init", "state": {"terminated": {"exitCode": 3}}}]},
    });
    let (pod, malformed) =
        PodView::decode(&serde_json::to_vec(&failed).expect("json")).expect("pod");
    assert!(!malformed);
    let failure = pod.failure.expect("how it failed");
    assert_eq!(
        failure.exit_codes,
        vec![("main".to_string(), 42), ("init".to_string(), 3)]
    );
    assert_eq!(
        failure.conditions,
        vec![("DisruptionTarget".to_string(), "True".to_string())]
    );
    let mut running = failed.clone();
    running["status"]["phase"] = serde_json::json!("Running");
    let (pod, _) = PodView::decode(&serde_json::to_vec(&running).expect("json")).expect("pod");
    assert!(pod.failure.is_none());
}

#[test]
fn a_failed_pod_finished_when_its_last_container_did_if_all_say_when() {
    let mut failed = serde_json::json!({
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3"},
        "status": {"phase": "Failed", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 1, "finishedAt": "1970-01-01T00:01:40Z"}}},
            {"name": "b", "state": {"terminated": {"exitCode": 0, "finishedAt": "1970-01-01T00:00:10Z"}}},
        ]},
    });
    let read = |v: &serde_json::Value| {
        let (pod, _) = PodView::decode(&serde_json::to_vec(v).expect("json")).expect("pod");
        pod.failure.expect("how it failed").finished_at
    };
    assert_eq!(read(&failed), Some(100));
    failed["status"]["containerStatuses"][1]["state"] = serde_json::json!({"running": {}});
    assert_eq!(read(&failed), None, "one container never said");
}

#[test]
fn index_failure_counts_are_read_and_a_bad_one_is_zero_as_upstream() {
    let mut pod = serde_json::json!({
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3",
            "annotations": {"batch.kubernetes.io/job-index-failure-count": "2",
                "batch.kubernetes.io/job-index-ignored-failure-count": "1"}},
        "status": {"phase": "Running"},
    });
    let read = |v: &serde_json::Value| {
        let (pod, malformed) = PodView::decode(&serde_json::to_vec(v).expect("json")).expect("pod");
        assert!(!malformed);
        pod.index_failures
    };
    let f = read(&pod);
    assert_eq!((f.counted, f.ignored, f.total()), (2, 1, 3));
    pod["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"] =
        serde_json::json!("-4");
    assert_eq!(read(&pod).counted, 0);
    pod["status"]["phase"] = serde_json::json!("Failed");
    assert_eq!(read(&pod).ignored, 1, "the checked read agrees");
}
