//! The manager's protobuf reader against the simulated servers' protobuf writer (each checked
//! against k8s-pb on its own side): every Pod they serve reads the same in both wire formats.

use tidemark_engine::PodView;
use tidemark_loadgen::bench::pods::PodTemplates;
use tidemark_loadgen::protobuf::encode_pod;

#[test]
fn every_bench_pod_reads_the_same_from_protobuf_as_from_json() {
    let templates = PodTemplates::new(7);
    for index in 0..16 {
        let json = templates.render(index, 1_000 + index, index % 3);
        let value: serde_json::Value = serde_json::from_slice(&json).expect("bench JSON");
        let proto = encode_pod(&value).expect("written as protobuf");
        assert_eq!(
            PodView::from_protobuf(&proto).expect("protobuf reads"),
            PodView::decode(&json).expect("JSON reads"),
            "Pod {index}"
        );
    }
}

#[test]
fn a_pod_through_its_life_on_the_simulated_kubelet_reads_the_same_in_both_formats() {
    let mut pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pi-0-x", "namespace": "batch", "uid": "u-7", "resourceVersion": "12",
            "creationTimestamp": "2026-12-02T15:03:38Z",
            "annotations": {"batch.kubernetes.io/job-completion-index": "0"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "j-1",
                "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["batch.kubernetes.io/job-tracking"]},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], "restartPolicy": "Never"}
    });
    let same = |pod: &serde_json::Value| {
        let json = serde_json::to_vec(pod).expect("JSON");
        let proto = encode_pod(pod).expect("written as protobuf");
        assert_eq!(
            PodView::from_protobuf(&proto).expect("protobuf reads"),
            PodView::decode(&json).expect("JSON reads")
        );
    };
    same(&pod);
    assert!(tidemark_loadgen::kubelet::start_pod(
        &mut pod,
        "node-3",
        "10.244.3.4"
    ));
    same(&pod);
    assert!(tidemark_loadgen::kubelet::finish_pod(&mut pod, Some(42)));
    same(&pod);
    let (failed, _) = PodView::from_protobuf(&encode_pod(&pod).expect("protobuf")).expect("reads");
    assert_eq!(
        failed.failure.map(|f| f.exit_codes),
        Some(vec![("main".to_string(), 42)])
    );
}
