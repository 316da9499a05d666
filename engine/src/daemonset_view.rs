//! The DaemonSet projection: its Pod template and scheduling constraints (node selector, node
//! affinity by name, tolerations), the rolling update's `maxUnavailable`, and its status.

use crate::key::{ObjectKey, Uid};
use crate::object::DecodeError;
use crate::rv::ResourceVersion;
use serde_json::Value;
use std::sync::Arc;

/// A DaemonSet.
#[derive(Clone, Debug, PartialEq)]
pub struct DaemonSetView {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.generation.
    pub generation: i64,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The whole object as last observed.
    pub raw: Arc<Value>,
}

impl DaemonSetView {
    /// Decodes a DaemonSet from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
        Self::from_value(value)
    }

    /// Decodes a DaemonSet from a parsed object.
    pub fn from_value(value: Value) -> Result<Self, DecodeError> {
        let meta = value
            .get("metadata")
            .ok_or(DecodeError::Missing("metadata"))?;
        let text = |field: &'static str| meta.get(field).and_then(Value::as_str);
        let name = text("name").ok_or(DecodeError::Missing("metadata.name"))?;
        let uid = text("uid").ok_or(DecodeError::Missing("metadata.uid"))?;
        if value.pointer("/spec/template").is_none() {
            return Err(DecodeError::Missing("spec.template"));
        }
        Ok(DaemonSetView {
            key: ObjectKey::new(text("namespace").unwrap_or(""), name),
            uid: Uid::new(uid),
            resource_version: text("resourceVersion").and_then(|v| ResourceVersion::parse(v).ok()),
            generation: meta.get("generation").and_then(Value::as_i64).unwrap_or(0),
            terminating: meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()),
            raw: Arc::new(value),
        })
    }

    /// `spec.updateStrategy.rollingUpdate.maxUnavailable` against `nodes` eligible Nodes
    /// (an integer or a percentage rounded up; default 1; at least 1).
    pub fn max_unavailable(&self, nodes: usize) -> usize {
        let v = self
            .raw
            .pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable");
        let n = match v {
            Some(Value::Number(n)) => n.as_u64().map_or(1, |n| n as usize),
            Some(Value::String(s)) => s
                .strip_suffix('%')
                .and_then(|p| p.parse::<usize>().ok())
                .map_or(1, |p| (nodes * p).div_ceil(100)),
            _ => 1,
        };
        n.max(1)
    }

    /// Whether a Node with `labels`, `name` and `taints` runs this DaemonSet's Pod: the node
    /// selector matches, node affinity by `metadata.name` (if any) names it, and every
    /// NoSchedule/NoExecute taint is tolerated.
    pub fn wants(&self, node: &Value) -> bool {
        let spec = self.raw.pointer("/spec/template/spec");
        let labels = &node["metadata"]["labels"];
        let name = node["metadata"]["name"].as_str().unwrap_or("");
        let selector_ok = spec
            .and_then(|s| s.get("nodeSelector"))
            .and_then(Value::as_object)
            .is_none_or(|sel| sel.iter().all(|(k, v)| labels.get(k) == Some(v)));
        let terms = spec.and_then(|s| {
            s.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
                .and_then(Value::as_array)
        });
        let affinity_ok = terms.is_none_or(|terms| {
            terms.iter().any(|t| {
                t["matchFields"].as_array().is_none_or(|fields| {
                    fields.iter().all(|f| {
                        f["key"] != "metadata.name"
                            || (f["operator"] == "In"
                                && f["values"]
                                    .as_array()
                                    .is_some_and(|vs| vs.iter().any(|v| v == name)))
                    })
                })
            })
        });
        let tolerations: Vec<&Value> = spec
            .and_then(|s| s.get("tolerations"))
            .and_then(Value::as_array)
            .map(|t| t.iter().collect())
            .unwrap_or_default();
        let tolerated = |taint: &Value| {
            // DaemonSet Pods tolerate not-ready and unreachable, as upstream adds automatically.
            let key = taint["key"].as_str().unwrap_or("");
            if matches!(
                key,
                "node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable"
            ) {
                return true;
            }
            tolerations.iter().any(|t| {
                let effect_ok = t["effect"]
                    .as_str()
                    .is_none_or(|e| e.is_empty() || *e == taint["effect"]);
                let key_ok = t["key"].as_str().is_none_or(|k| k.is_empty() || k == key);
                let value_ok = t["operator"] == "Exists" || t["value"] == taint["value"];
                effect_ok && key_ok && value_ok
            })
        };
        let taints_ok = node["spec"]["taints"].as_array().is_none_or(|ts| {
            ts.iter()
                .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
                .all(tolerated)
        });
        selector_ok && affinity_ok && taints_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ds(template_spec: Value) -> DaemonSetView {
        DaemonSetView::from_value(json!({
            "metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
            "spec": {"template": {"spec": template_spec},
                     "updateStrategy": {"rollingUpdate": {"maxUnavailable": "25%"}}},
        }))
        .expect("ds")
    }

    fn node(name: &str, labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}})
    }

    #[test]
    fn selectors_affinity_and_taints_decide_which_nodes_run_the_pod() {
        let plain = ds(json!({}));
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
        assert_eq!(plain.max_unavailable(10), 3, "25% of 10 rounded up");
    }
}
