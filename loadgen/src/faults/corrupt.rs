//! The `corrupt-objects` fault: owners (and Nodes) whose decisive field has the wrong type, as a
//! broken client, a webhook or a storage bug can leave them, written past validation; repaired
//! from what the fault kept in an annotation when the window ends.

use serde_json::{Value, json};

use crate::apiserver::server::ApiServer;
use crate::resource::Resource;

/// Where the fault keeps the field it broke, to repair it.
pub const ORIGINAL: &str = "loadgen.tidemark.dev/corrupted";

/// The field the fault breaks in an object of `resource`, as (parent pointer, key).
fn decisive(resource: Resource) -> Option<(&'static str, &'static str)> {
    match resource {
        Resource::ReplicaSets | Resource::StatefulSets => Some(("/spec", "replicas")),
        Resource::Jobs => Some(("/spec", "parallelism")),
        Resource::DaemonSets => Some(("/spec", "minReadySeconds")),
        Resource::Nodes => Some(("", "status")),
        _ => None,
    }
}

/// The hostile stand-in for `original`: a count becomes its decimal string (`"3"`, which a
/// lenient decoder would read as a default), anything else a string where an object belongs.
fn broken(original: &Value) -> Value {
    match original {
        Value::Number(n) => json!(n.to_string()),
        Value::Null => json!("zero"),
        _ => json!("not-an-object"),
    }
}

/// Breaks (`on`) the first `count` objects of `resource` in name order, or repairs every one it
/// broke; returns the line the fault timeline logs.
pub fn apply(server: &ApiServer, resource: Resource, count: usize, on: bool) -> String {
    let Some((parent, key)) = decisive(resource) else {
        return format!("corrupt-objects: {resource} has no decisive field; nothing done");
    };
    let mut touched = Vec::new();
    for object in server.list(resource) {
        let kept = object["metadata"]["annotations"][ORIGINAL]
            .as_str()
            .map(str::to_string);
        if on == kept.is_some() || (on && touched.len() >= count) {
            continue;
        }
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let written = server.update_with(resource, &namespace, &name, |o| {
            let Some(fields) = o.pointer_mut(parent).and_then(Value::as_object_mut) else {
                return;
            };
            if on {
                let original = fields.get(key).cloned().unwrap_or(Value::Null);
                fields.insert(key.to_string(), broken(&original));
                let annotations = &mut o["metadata"]["annotations"];
                if !annotations.is_object() {
                    *annotations = json!({});
                }
                annotations[ORIGINAL] = json!(original.to_string());
            } else {
                let original = kept
                    .as_deref()
                    .and_then(|text| serde_json::from_str::<Value>(text).ok())
                    .unwrap_or(Value::Null);
                match original {
                    Value::Null => fields.remove(key),
                    value => fields.insert(key.to_string(), value),
                };
                if let Some(annotations) = o["metadata"]["annotations"].as_object_mut() {
                    annotations.remove(ORIGINAL);
                }
            }
        });
        if written.is_ok() {
            touched.push(format!("{namespace}/{name}"));
        }
    }
    format!(
        "{} {resource} {}: {}",
        if on { "corrupted" } else { "repaired" },
        key,
        touched.join(", ")
    )
}
