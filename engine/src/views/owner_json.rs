//! An owner's object (ReplicaSet, StatefulSet, DaemonSet, Job) kept compactly for the writes
//! built from it: its JSON text without `metadata.managedFields`, parsed into a `Value` only when
//! a write is built. A `Value` tree of a cluster's 5 KB ReplicaSet takes about 50 KB; its text
//! without managedFields, about 3 KB.
//!
//! A status write need not carry managedFields: kube-apiserver's field manager takes the live
//! object's managedFields for every subresource update, and for an update of the main resource
//! whose object has none (absent; an empty list would reset them), so leaving them out keeps
//! the stored ones.

use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// The object as last observed, without `metadata.managedFields`, as compact JSON text.
#[derive(Clone, PartialEq, Eq)]
pub struct OwnerJson(Arc<str>);

impl OwnerJson {
    /// Keeps `value` as JSON text, its `metadata.managedFields` left out.
    pub fn keep(mut value: Value) -> Self {
        if let Some(Value::Object(meta)) = value.get_mut("metadata") {
            meta.remove("managedFields");
        }
        Self(Arc::from(value.to_string()))
    }

    /// The object as a `Value` (what [`Self::keep`] was given, managedFields left out).
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for OwnerJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnerJson({} bytes)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_object_comes_back_whole_but_for_its_managed_fields() {
        let object = json!({
            "metadata": {"name": "web", "resourceVersion": "7",
                         "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"replicas": 3, "ratio": 0.1, "big": u64::MAX, "template": {"spec": {"containers": []}}},
            "status": {"replicas": 2}
        });
        let kept = OwnerJson::keep(object.clone());
        let mut wanted = object;
        if let Some(meta) = wanted["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
        assert_eq!(kept.to_value().expect("parses"), wanted);
        assert!(!kept.text().contains("managedFields"));
    }

    #[test]
    fn an_object_of_an_odd_shape_is_kept_as_it_came() {
        for odd in [
            json!({"metadata": "not an object"}),
            json!([1, 2]),
            json!("x"),
        ] {
            assert_eq!(
                OwnerJson::keep(odd.clone()).to_value().expect("parses"),
                odd
            );
        }
    }

    #[test]
    fn its_debug_form_names_its_size_not_its_content() {
        let kept = OwnerJson::keep(json!({"spec": {"secret": "hunter2"}}));
        assert_eq!(
            format!("{kept:?}"),
            format!("OwnerJson({} bytes)", kept.text().len())
        );
    }
}
