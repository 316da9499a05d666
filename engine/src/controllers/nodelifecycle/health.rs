//! The status node lifecycle writes for a Node whose kubelet went silent: `Ready`,
//! `MemoryPressure`, `DiskPressure` and `PIDPressure` become `Unknown`, as upstream's
//! `tryUpdateNodeHealth` sets them; `NetworkUnavailable` belongs to the network provider and is
//! left as it is.

use super::unbuildable;
use crate::reconciler::ReconcileError;
use crate::views::nodes::NodeView;
use serde_json::{Map, Value, json};

/// The conditions a silent kubelet leaves `Unknown`.
pub const SILENT_CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// The Node with [`SILENT_CONDITIONS`] `Unknown`, for the status subresource (its
/// resourceVersion kept, so a Node changed meanwhile answers `409`). A condition that is there
/// keeps its heartbeat and gets a new transition time; one never posted is added with the
/// Node's creation time as its heartbeat. The decoded Node's shape was checked, but every step
/// is matched again, so no shape panics.
pub fn conditions_unknown(node: &NodeView, stamp: &str) -> Result<Value, ReconcileError> {
    let mut body = (*node.raw).clone();
    let Value::Object(object) = &mut body else {
        return Err(unbuildable(
            &node.key,
            "the cached Node is not a JSON object",
        ));
    };
    let created = object
        .get("metadata")
        .and_then(|m| m.get("creationTimestamp"))
        .and_then(Value::as_str)
        .unwrap_or(stamp)
        .to_string();
    let status = object
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if status.is_null() {
        *status = Value::Object(Map::new());
    }
    let Value::Object(status) = status else {
        return Err(unbuildable(&node.key, "status is not an object"));
    };
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if conditions.is_null() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(conditions) = conditions else {
        return Err(unbuildable(&node.key, "status.conditions is not an array"));
    };
    for kind in SILENT_CONDITIONS {
        let existing = conditions
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(kind));
        match existing {
            Some(Value::Object(condition)) => {
                if condition.get("status").and_then(Value::as_str) != Some("Unknown") {
                    condition.insert("status".into(), json!("Unknown"));
                    condition.insert("reason".into(), json!("NodeStatusUnknown"));
                    condition.insert(
                        "message".into(),
                        json!("Kubelet stopped posting node status."),
                    );
                    condition.insert("lastTransitionTime".into(), json!(stamp));
                }
            }
            Some(_) => {
                return Err(unbuildable(&node.key, "a condition is not an object"));
            }
            None => conditions.push(json!({
                "type": kind,
                "status": "Unknown",
                "reason": "NodeStatusNeverUpdated",
                "message": "Kubelet never posted node status.",
                "lastHeartbeatTime": created,
                "lastTransitionTime": stamp,
            })),
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(value: Value) -> NodeView {
        NodeView::from_value(value).expect("node")
    }

    #[test]
    fn a_silent_node_keeps_its_heartbeats_and_leaves_network_unavailable_alone() {
        let n = node(json!({
            "metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "NetworkUnavailable", "status": "False"},
                {"type": "MemoryPressure", "status": "Unknown", "reason": "Before"},
            ]},
        }));
        let body = conditions_unknown(&n, "2026-02-02T00:00:00Z").expect("body");
        let conditions = body["status"]["conditions"].as_array().expect("conditions");
        let find = |kind: &str| {
            conditions
                .iter()
                .find(|c| c["type"] == kind)
                .unwrap_or_else(|| panic!("{kind}"))
        };
        assert_eq!(find("Ready")["status"], "Unknown");
        assert_eq!(find("Ready")["reason"], "NodeStatusUnknown");
        assert_eq!(find("Ready")["lastHeartbeatTime"], "2026-01-01T00:00:00Z");
        assert_eq!(find("Ready")["lastTransitionTime"], "2026-02-02T00:00:00Z");
        assert_eq!(find("NetworkUnavailable")["status"], "False");
        assert_eq!(
            find("MemoryPressure")["reason"],
            "Before",
            "already Unknown: untouched"
        );
        assert_eq!(find("DiskPressure")["reason"], "NodeStatusNeverUpdated");
        assert_eq!(find("PIDPressure")["status"], "Unknown");
        assert_eq!(
            body["metadata"]["resourceVersion"], "5",
            "optimistic concurrency"
        );
    }

    #[test]
    fn a_node_without_status_or_conditions_gets_the_four_conditions_unknown() {
        for value in [
            json!({"metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"}}),
            json!({"metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"}, "status": {}}),
            json!({"metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"}, "status": null}),
            json!({"metadata": {"name": "n1", "uid": "u", "resourceVersion": "5",
                   "creationTimestamp": "2025-05-05T00:00:00Z"},
                   "status": {"conditions": null}}),
        ] {
            let body = conditions_unknown(&node(value), "2026-01-01T00:00:00Z").expect("body");
            let conditions = body["status"]["conditions"].as_array().expect("conditions");
            assert_eq!(conditions.len(), 4);
            assert!(conditions.iter().all(|c| c["status"] == "Unknown"));
        }
    }
}
