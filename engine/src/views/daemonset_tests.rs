//! Tests of the DaemonSet projection: scheduling constraints and malformed specs.

use super::*;
use serde_json::json;

fn ds(template_spec: Value) -> DaemonSetView {
    DaemonSetView::from_value(json!({
        "metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}}, "spec": template_spec},
                 "updateStrategy": {"rollingUpdate": {"maxUnavailable": "25%"}}},
    }))
    .expect("ds")
}

fn node(name: &str, labels: Value, taints: Value) -> NodeView {
    NodeView::from_value(
        json!({"metadata": {"name": name, "uid": format!("u-{name}"), "labels": labels},
                                "spec": {"taints": taints}}),
    )
    .expect("node")
}

#[test]
fn selectors_affinity_and_taints_decide_which_nodes_run_the_pod() {
    let plain = ds(json!({}));
    assert!(plain.malformed.is_none());
    assert!(plain.wants(&node("n1", json!({}), json!([]))));
    assert!(!plain.wants(&node(
        "n1",
        json!({}),
        json!([{"key": "gpu", "effect": "NoSchedule"}])
    )));
    assert!(plain.wants(&node(
        "n1",
        json!({}),
        json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}])
    )));
    let tolerant = ds(json!({"tolerations": [{"key": "gpu", "operator": "Exists"}]}));
    assert!(tolerant.wants(&node(
        "n1",
        json!({}),
        json!([{"key": "gpu", "effect": "NoSchedule"}])
    )));
    let selective = ds(json!({"nodeSelector": {"disk": "ssd"}}));
    assert!(!selective.wants(&node("n1", json!({"disk": "hdd"}), json!([]))));
    assert!(selective.wants(&node("n1", json!({"disk": "ssd"}), json!([]))));
    let pinned = ds(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}}),
    );
    assert!(!pinned.wants(&node("n1", json!({}), json!([]))));
    assert!(pinned.wants(&node("n2", json!({}), json!([]))));
    assert_eq!(
        plain.rollout_budgets(10),
        RolloutBudgets {
            max_unavailable: 3,
            max_surge: 0
        },
        "25% of 10 rounded up"
    );
}

#[test]
fn required_affinity_by_label_is_honoured_and_an_empty_term_matches_nothing() {
    let by_label = ds(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}),
    );
    assert!(by_label.wants(&node("n1", json!({"zone": "a"}), json!([]))));
    assert!(!by_label.wants(&node("n1", json!({"zone": "b"}), json!([]))));
    let empty = ds(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{}]}}}}),
    );
    assert!(!empty.wants(&node("n1", json!({}), json!([]))));
}

#[test]
fn a_template_or_strategy_of_the_wrong_shape_is_malformed() {
    for (spec, path) in [
        (
            json!({"nodeSelector": "disk=ssd"}),
            "spec.template.spec.nodeSelector",
        ),
        (
            json!({"tolerations": [{"operator": "Maybe"}]}),
            "spec.template.spec.tolerations[0].operator",
        ),
        (
            json!({"tolerations": {"key": "gpu"}}),
            "spec.template.spec.tolerations",
        ),
        (json!("not-an-object"), "spec.template.spec"),
    ] {
        let d = ds(spec);
        let m = d.malformed.expect(path);
        assert_eq!(m.fields()[0].path, path);
    }
    for (strategy, path) in [
        (json!({"type": "Sometimes"}), "spec.updateStrategy.type"),
        (
            json!({"rollingUpdate": {"maxUnavailable": "50"}}),
            "spec.updateStrategy.rollingUpdate.maxUnavailable",
        ),
        (
            json!({"rollingUpdate": {"maxUnavailable": -1}}),
            "spec.updateStrategy.rollingUpdate.maxUnavailable",
        ),
    ] {
        let d = DaemonSetView::from_value(json!({
            "metadata": {"name": "agent", "uid": "d1"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {}},
                     "updateStrategy": strategy}}))
        .expect("identity");
        let m = d.malformed.expect(path);
        assert_eq!(m.fields()[0].path, path);
    }
}
