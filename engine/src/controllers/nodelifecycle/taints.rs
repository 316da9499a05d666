//! The taints node lifecycle keeps on a Node: `NoSchedule` taints that mirror its conditions
//! and `spec.unschedulable` (upstream's `doNoScheduleTaintingPass`), and at most one of the two
//! `NoExecute` taints, `not-ready` or `unreachable`, that evict its Pods (upstream's
//! `doNoExecuteTaintingPass`). Every other taint is kept as written.

use crate::views::nodes::{ConditionStatus, NodeConditions, NodeView, UNREACHABLE_TAINT};
use serde_json::{Value, json};
use smallvec::SmallVec;

/// The taint of a Node whose kubelet reports it not Ready.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
/// The taint of a cordoned Node.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
/// The taint of a Node under memory pressure.
pub const MEMORY_PRESSURE_TAINT: &str = "node.kubernetes.io/memory-pressure";
/// The taint of a Node under disk pressure.
pub const DISK_PRESSURE_TAINT: &str = "node.kubernetes.io/disk-pressure";
/// The taint of a Node running out of process IDs.
pub const PID_PRESSURE_TAINT: &str = "node.kubernetes.io/pid-pressure";
/// The taint of a Node whose network is not configured.
pub const NETWORK_UNAVAILABLE_TAINT: &str = "node.kubernetes.io/network-unavailable";

/// The `NoSchedule` taint keys node lifecycle owns: one it finds and does not want, it removes.
const OWNED_NO_SCHEDULE: [&str; 7] = [
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    MEMORY_PRESSURE_TAINT,
    DISK_PRESSURE_TAINT,
    PID_PRESSURE_TAINT,
    NETWORK_UNAVAILABLE_TAINT,
    UNSCHEDULABLE_TAINT,
];

/// The `NoExecute` taint keys node lifecycle owns.
const OWNED_NO_EXECUTE: [&str; 2] = [NOT_READY_TAINT, UNREACHABLE_TAINT];

/// The `NoSchedule` taints `conditions` and `unschedulable` call for.
pub fn no_schedule_wanted(
    conditions: &NodeConditions,
    unschedulable: bool,
) -> SmallVec<[&'static str; 4]> {
    use ConditionStatus::{False, True, Unknown};
    let mut wanted = SmallVec::new();
    match conditions.ready {
        Some(False) => wanted.push(NOT_READY_TAINT),
        Some(Unknown) => wanted.push(UNREACHABLE_TAINT),
        Some(True) | None => {}
    }
    for (status, key) in [
        (conditions.memory_pressure, MEMORY_PRESSURE_TAINT),
        (conditions.disk_pressure, DISK_PRESSURE_TAINT),
        (conditions.network_unavailable, NETWORK_UNAVAILABLE_TAINT),
        (conditions.pid_pressure, PID_PRESSURE_TAINT),
    ] {
        if status == Some(True) {
            wanted.push(key);
        }
    }
    if unschedulable {
        wanted.push(UNSCHEDULABLE_TAINT);
    }
    wanted
}

/// Whether `node` carries taint `key` with `effect`.
pub fn has_taint(node: &NodeView, key: &str, effect: &str) -> bool {
    node.taints
        .iter()
        .any(|t| t.key == key && t.effect == effect)
}

/// The Node's taints with the owned `NoSchedule` ones set to `no_schedule` and the owned
/// `NoExecute` one to `no_execute`, new ones stamped `timeAdded`; `None` when nothing changes.
pub fn taints_after(
    node: &NodeView,
    no_schedule: &[&str],
    no_execute: Option<&str>,
    stamp: &str,
) -> Option<Vec<Value>> {
    let written: &[Value] = node
        .raw
        .get("spec")
        .and_then(|s| s.get("taints"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let owned_and_unwanted = |t: &Value| {
        let key = t.get("key").and_then(Value::as_str).unwrap_or("");
        match t.get("effect").and_then(Value::as_str) {
            Some("NoSchedule") => OWNED_NO_SCHEDULE.contains(&key) && !no_schedule.contains(&key),
            Some("NoExecute") => OWNED_NO_EXECUTE.contains(&key) && no_execute != Some(key),
            _ => false,
        }
    };
    let mut taints: Vec<Value> = written
        .iter()
        .filter(|t| !owned_and_unwanted(t))
        .cloned()
        .collect();
    let mut changed = taints.len() != written.len();
    let adds = no_schedule
        .iter()
        .map(|key| (*key, "NoSchedule"))
        .chain(no_execute.map(|key| (key, "NoExecute")));
    for (key, effect) in adds {
        if !has_taint(node, key, effect) {
            taints.push(json!({"key": key, "effect": effect, "timeAdded": stamp}));
            changed = true;
        }
    }
    changed.then_some(taints)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(conditions: Value, taints: Value, unschedulable: bool) -> NodeView {
        NodeView::from_value(json!({
            "metadata": {"name": "n1", "uid": "u", "resourceVersion": "5"},
            "spec": {"taints": taints, "unschedulable": unschedulable},
            "status": {"conditions": conditions},
        }))
        .expect("node")
    }

    #[test]
    fn conditions_map_to_no_schedule_taints_as_upstream_maps_them() {
        let n = node(
            json!([
                {"type": "Ready", "status": "False"},
                {"type": "MemoryPressure", "status": "True"},
                {"type": "DiskPressure", "status": "False"},
                {"type": "NetworkUnavailable", "status": "True"},
                {"type": "PIDPressure", "status": "Unknown"},
            ]),
            json!([]),
            true,
        );
        assert_eq!(
            no_schedule_wanted(&n.conditions, n.unschedulable).as_slice(),
            &[
                NOT_READY_TAINT,
                MEMORY_PRESSURE_TAINT,
                NETWORK_UNAVAILABLE_TAINT,
                UNSCHEDULABLE_TAINT
            ]
        );
    }

    #[test]
    fn owned_taints_no_longer_wanted_go_and_foreign_ones_stay_as_written() {
        let n = node(
            json!([{"type": "Ready", "status": "True"}]),
            json!([
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                {"key": UNREACHABLE_TAINT, "effect": "NoSchedule"},
                {"key": UNREACHABLE_TAINT, "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"},
                {"key": NOT_READY_TAINT, "effect": "PreferNoSchedule"},
            ]),
            false,
        );
        let taints = taints_after(&n, &[], None, "now").expect("a change");
        assert_eq!(
            taints,
            vec![
                json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}),
                json!({"key": NOT_READY_TAINT, "effect": "PreferNoSchedule"}),
            ]
        );
    }

    #[test]
    fn a_not_ready_node_swaps_unreachable_for_not_ready_and_an_unchanged_set_is_no_write() {
        let n = node(
            json!([{"type": "Ready", "status": "False"}]),
            json!([{"key": UNREACHABLE_TAINT, "effect": "NoExecute"}]),
            false,
        );
        let taints =
            taints_after(&n, &[NOT_READY_TAINT], Some(NOT_READY_TAINT), "now").expect("a change");
        assert_eq!(
            taints,
            vec![
                json!({"key": NOT_READY_TAINT, "effect": "NoSchedule", "timeAdded": "now"}),
                json!({"key": NOT_READY_TAINT, "effect": "NoExecute", "timeAdded": "now"}),
            ]
        );
        let kept = node(
            json!([{"type": "Ready", "status": "False"}]),
            Value::Array(taints),
            false,
        );
        assert_eq!(
            taints_after(&kept, &[NOT_READY_TAINT], Some(NOT_READY_TAINT), "later"),
            None
        );
    }
}
