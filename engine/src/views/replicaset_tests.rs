//! Unit tests of the ReplicaSet projection.

use super::*;
use crate::object::test_support;
use serde_json::json;

fn with_replicas(replicas: serde_json::Value) -> ReplicaSetView {
    ReplicaSetView::from_value(json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "3"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}},
    }))
    .expect("identity is readable")
}

#[test]
fn a_replicaset_decodes_spec_and_status() {
    let rs = test_support::replicaset_json("ns", "web", 3, 7);
    assert_eq!(rs.replicas, 3);
    assert_eq!(rs.resource_version, ResourceVersion::new(7));
    assert_eq!(
        rs.selector.match_labels.get("app").map(String::as_str),
        Some("web")
    );
    assert!(rs.malformed.is_none());
}

#[test]
fn replicas_that_are_not_a_non_negative_int32_make_the_replicaset_malformed() {
    for bad in [json!("five"), json!(3.0), json!("3"), json!(-2)] {
        let rs = with_replicas(bad.clone());
        let m = rs.malformed.expect("malformed");
        assert_eq!(m.fields()[0].path, "spec.replicas", "{bad}");
    }
}

#[test]
fn absent_replicas_default_to_one_as_upstream() {
    let rs = ReplicaSetView::from_value(json!({
        "metadata": {"name": "web", "uid": "u", "resourceVersion": "3"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {}}},
    }))
    .expect("decodes");
    assert_eq!(rs.replicas, 1);
    assert!(rs.malformed.is_none());
    assert_eq!(with_replicas(serde_json::Value::Null).replicas, 1);
}

#[test]
fn a_status_or_selector_of_the_wrong_shape_is_malformed_too() {
    let rs = ReplicaSetView::from_value(json!({
        "metadata": {"name": "web", "uid": "u", "resourceVersion": "3"},
        "spec": {"replicas": 1, "template": {"spec": {}}},
        "status": "lots",
    }))
    .expect("decodes");
    let m = rs.malformed.expect("malformed");
    let paths: Vec<_> = m.fields().iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["spec.selector", "status"]);
}
