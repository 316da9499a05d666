//! One object of a list page or watch event decoded into the engine's view of its resource, and
//! the namespace/name of one that cannot be, for the log line that reports it.

use serde_json::value::RawValue;
use tidemark_engine::{
    CustomObject, DaemonSetView, DecodeError, JobView, LeaseView, NodeView, Object, PodView, ReplicaSetView,
    Resource, StatefulSetView,
};

/// Decodes one object of `resource` from its JSON. The flag is true when it had to be read
/// leniently (a field of the wrong type).
pub fn decode(resource: Resource, raw: &RawValue) -> Result<(Object, bool), DecodeError> {
    let bytes = raw.get().as_bytes();
    match resource {
        Resource::Pods => PodView::decode(bytes).map(|(p, lenient)| (Object::Pod(p), lenient)),
        Resource::ReplicaSets => {
            ReplicaSetView::from_json(bytes).map(|r| (Object::ReplicaSet(r), false))
        }
        Resource::Nodes => NodeView::from_json(bytes).map(|n| (Object::Node(n), false)),
        Resource::Leases => LeaseView::from_json(bytes).map(|l| (Object::Lease(l), false)),
        Resource::StatefulSets => {
            StatefulSetView::from_json(bytes).map(|s| (Object::StatefulSet(s), false))
        }
        Resource::Jobs => JobView::from_json(bytes).map(|j| (Object::Job(j), false)),
        Resource::DaemonSets => {
            DaemonSetView::from_json(bytes).map(|d| (Object::DaemonSet(d), false))
        }
        Resource::PersistentVolumeClaims | Resource::ControllerRevisions => Err(
            DecodeError::Malformed(format!("{resource} are written, never cached")),
        ),
        _ => CustomObject::from_json(resource, bytes).map(|o| (Object::Custom(o), false)),
    }
}

/// The namespace/name of an object that could not be decoded, for the error log: the only
/// part of the object a log line shows.
pub fn describe(raw: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(default)]
        metadata: serde_json::Map<String, serde_json::Value>,
    }
    serde_json::from_str::<Meta>(raw).map_or_else(
        |_| "<unreadable>".to_string(),
        |m| {
            let get = |k: &str| {
                m.metadata
                    .get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or("?")
                    .to_string()
            };
            format!("{}/{}", get("namespace"), get("name"))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undecodable_object_is_named_by_its_key_only() {
        let raw = r#"{"metadata":{"namespace":"demo","name":"web"},"spec":{"x":"hunter2"}}"#;
        assert_eq!(describe(raw), "demo/web");
        assert_eq!(describe("not json"), "<unreadable>");
    }
}
