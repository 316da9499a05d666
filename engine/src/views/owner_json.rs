//! An owner's object (ReplicaSet, StatefulSet, DaemonSet, Job) kept compactly for the writes
//! built from it: its JSON text without `metadata.managedFields`, LZ4-compressed, decompressed
//! and parsed into a `Value` only when a write is built. A `Value` tree of a cluster's 6 KB
//! ReplicaSet takes about 50 KB; its text without managedFields about 3 KB, compressed about
//! 1.3 KB. LZ4 (`lz4_flex`, pure Rust) because it decompresses at gigabytes a second: a few
//! microseconds beside the tens a parse of the text costs on the (cold) write path.
//!
//! A status write need not carry managedFields: kube-apiserver's field manager takes the live
//! object's managedFields for every subresource update, and for an update of the main resource
//! whose object has none (absent; an empty list would reset them), so leaving them out keeps
//! the stored ones.

use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// Why a kept object could not be given back.
#[derive(Debug, thiserror::Error)]
pub enum OwnerJsonError {
    /// The compressed text does not decompress (never, unless memory was corrupted).
    #[error("the kept object does not decompress: {0}")]
    Decompress(#[from] lz4_flex::block::DecompressError),
    /// The text does not parse as JSON.
    #[error("the kept object does not parse: {0}")]
    Parse(#[from] serde_json::Error),
}

/// The object as last observed, without `metadata.managedFields`, as compressed JSON text.
#[derive(Clone, PartialEq, Eq)]
pub struct OwnerJson(Arc<[u8]>);

impl OwnerJson {
    /// Keeps `value` as JSON text, its `metadata.managedFields` left out.
    pub fn keep(mut value: Value) -> Self {
        if let Some(Value::Object(meta)) = value.get_mut("metadata") {
            meta.remove("managedFields");
        }
        Self(Arc::from(lz4_flex::compress_prepend_size(
            value.to_string().as_bytes(),
        )))
    }

    /// The object as a `Value` (what [`Self::keep`] was given, managedFields left out).
    pub fn to_value(&self) -> Result<Value, OwnerJsonError> {
        Ok(serde_json::from_slice(&self.json()?)?)
    }

    /// The JSON text.
    pub fn json(&self) -> Result<Vec<u8>, OwnerJsonError> {
        Ok(lz4_flex::decompress_size_prepended(&self.0)?)
    }

    /// How many bytes it keeps.
    pub fn kept_bytes(&self) -> usize {
        self.0.len()
    }
}

impl fmt::Debug for OwnerJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnerJson({} bytes compressed)", self.0.len())
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
        let text = String::from_utf8(kept.json().expect("decompresses")).expect("UTF-8");
        assert!(!text.contains("managedFields"));
        assert!(kept.kept_bytes() < text.len() + 8);
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
            format!("OwnerJson({} bytes compressed)", kept.kept_bytes())
        );
    }
}
