//! A workload's Pod template, checked when its owner is decoded, and the Pods built from it:
//! write bodies are typed structs serialised by serde, so building one never indexes into JSON
//! of unknown shape.

use crate::key::{ObjectKey, Uid, UidText};
use crate::reconcile_error::ReconcileError;
use crate::resource::Resource;
use crate::views::checked::{Checker, Field};
use crate::views::owner_json::OwnerJson;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `spec.template` of a ReplicaSet, StatefulSet, DaemonSet or Job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodTemplate {
    /// template.metadata.labels.
    pub labels: BTreeMap<String, String>,
    /// template.metadata.annotations.
    pub annotations: BTreeMap<String, String>,
}

/// `spec.template.spec` of the owner `raw`, passed through to the Pods it creates. Read from the
/// owner's object rather than kept beside it: a copy per owner cost the bench 420 bytes per Pod
/// (a 4 KB template for every ten Pods). [`PodTemplate::read`] has checked that it is an object;
/// a malformed owner takes no action, so the empty map is never sent.
pub fn template_spec(raw: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    raw.pointer("/spec/template/spec")
        .and_then(Value::as_object)
        .unwrap_or(&EMPTY)
}

/// `spec` of a Pod template kept by [`template_object`], as [`template_spec`] reads it from the
/// whole owner.
pub fn spec_of_template(template: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    template
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(&EMPTY)
}

/// `spec.template` of the owner `raw` as a shared subtree (an empty object when absent), for
/// owners whose controllers hash it on every sync (StatefulSets and DaemonSets name their
/// revisions by it) or build Pods from it one at a time (Jobs).
pub fn template_object(raw: &Value) -> Arc<Value> {
    Arc::new(
        raw.pointer("/spec/template")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    )
}

/// The owner's object kept in `raw`, parsed to build a write from; the error names the key.
pub fn owner_object(
    controller: &'static str,
    key: &ObjectKey,
    raw: &OwnerJson,
) -> Result<Value, ReconcileError> {
    raw.to_value().map_err(|e| ReconcileError::Unbuildable {
        controller,
        key: key.clone(),
        message: format!("the cached object does not parse: {e}"),
    })
}

impl PodTemplate {
    /// Reads `spec.template` of `root`; an absent template is recorded (every workload has one).
    pub fn read(root: &Field<'_>, c: &mut Checker) -> Self {
        let template = root.get(c, "spec.template");
        if !template.is_present() {
            c.record("spec.template", "Required value".into());
            return Self::default();
        }
        c.object(&template);
        template.get(c, "metadata").object(c);
        let labels = template.get(c, "metadata.labels").string_map(c);
        let annotations = template.get(c, "metadata.annotations").string_map(c);
        let spec_field = template.get(c, "spec");
        c.object(&spec_field);
        spec_field.get(c, "volumes").array(c);
        Self {
            labels,
            annotations,
        }
    }
}

/// The ownerReference a controller puts on what it creates.
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ControllerRef<'a> {
    /// The owner's apiVersion.
    pub api_version: &'static str,
    /// The owner's kind.
    pub kind: &'static str,
    /// The owner's name.
    pub name: &'a str,
    /// The owner's UID.
    pub uid: UidText<'a>,
    /// Always true: the owner controls it.
    pub controller: bool,
    /// Always true, as upstream's controllers set it.
    pub block_owner_deletion: bool,
}

impl<'a> ControllerRef<'a> {
    /// A controller reference to the `resource` object `name` with `uid`.
    pub fn to(resource: Resource, name: &'a str, uid: &'a Uid) -> Self {
        Self {
            api_version: resource.api_version(),
            kind: resource.kind(),
            name,
            uid: uid.text(),
            controller: true,
            block_owner_deletion: true,
        }
    }
}

/// Metadata of an object a controller creates.
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NewMeta<'a> {
    /// A fixed name (StatefulSet Pods, claims, revisions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A name prefix the server completes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    /// The namespace.
    pub namespace: &'a str,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Finalizers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<&'static str>,
    /// The ownerReferences: the controller's, or none (a StatefulSet's claim under a `Retain`
    /// policy belongs to nobody).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<ControllerRef<'a>>,
}

/// A new object: apiVersion, kind, metadata and the rest of its body.
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NewObject<'a, B: Serialize> {
    /// The apiVersion.
    pub api_version: &'static str,
    /// The kind.
    pub kind: &'static str,
    /// The metadata.
    pub metadata: NewMeta<'a>,
    /// The rest (`spec`, or a revision's `data` and `revision`).
    #[serde(flatten)]
    pub body: B,
}

/// A body that is only a `spec`.
#[derive(Serialize, Clone, Debug)]
pub struct SpecOnly<'a> {
    /// The spec.
    pub spec: &'a Map<String, Value>,
}

/// Serialises a write body; the error names the key whose write it is.
pub fn to_body<T: Serialize>(
    controller: &'static str,
    key: &ObjectKey,
    body: &T,
) -> Result<Value, ReconcileError> {
    serde_json::to_value(body).map_err(|e| ReconcileError::Unbuildable {
        controller,
        key: key.clone(),
        message: format!("the write body cannot be serialised: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_template_of_the_wrong_shape_is_recorded_and_a_good_one_is_kept() {
        for bad in [
            json!({"spec": {"template": "x"}}),
            json!({"spec": {"template": {"metadata": {"labels": {"a": 1}}}}}),
            json!({"spec": {"template": {"spec": []}}}),
            json!({"spec": {"template": {"spec": {"volumes": {}}}}}),
            json!({"spec": {}}),
        ] {
            let mut c = Checker::default();
            PodTemplate::read(&Field::root(&bad), &mut c);
            assert!(!c.is_clean(), "{bad}");
        }
        let good = json!({"spec": {"template": {"metadata": {"labels": {"a": "b"}},
                                                "spec": {"containers": []}}}});
        let mut c = Checker::default();
        let t = PodTemplate::read(&Field::root(&good), &mut c);
        assert!(c.is_clean());
        assert_eq!(t.labels.get("a").map(String::as_str), Some("b"));
        assert!(template_spec(&good).contains_key("containers"));
    }

    #[test]
    fn a_new_pod_serialises_with_its_controller_reference() {
        let spec = Map::new();
        let owner_uid = Uid::new("u1");
        let body = NewObject {
            api_version: "v1",
            kind: "Pod",
            metadata: NewMeta {
                name: None,
                generate_name: Some("web-".into()),
                namespace: "ns",
                labels: BTreeMap::new(),
                annotations: None,
                finalizers: Vec::new(),
                owner_references: vec![ControllerRef::to(Resource::ReplicaSets, "web", &owner_uid)],
            },
            body: SpecOnly { spec: &spec },
        };
        let v = to_body("replicaset", &ObjectKey::new("ns", "web"), &body).expect("serialises");
        assert_eq!(v["metadata"]["generateName"], "web-");
        assert_eq!(v["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
        assert_eq!(
            v["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        assert_eq!(v["spec"], json!({}));
        assert!(v["metadata"].get("finalizers").is_none());
    }
}
