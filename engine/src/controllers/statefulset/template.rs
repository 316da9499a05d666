//! The Pod template a StatefulSet Pod is made from: the set's own, or the one a revision
//! recorded (an ordinal below the partition comes back at the current revision).

use crate::pod_template::spec_of_template;
use crate::views::statefulset::StatefulSetView;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The Pod template a Pod is made from: the set's own, or one an older revision records.
pub(super) struct Template<'a> {
    pub(super) labels: BTreeMap<String, String>,
    pub(super) annotations: BTreeMap<String, String>,
    pub(super) spec: &'a Map<String, Value>,
}

impl<'a> Template<'a> {
    pub(super) fn of_set(set: &'a StatefulSetView) -> Self {
        Template {
            labels: set.template.labels.clone(),
            annotations: set.template.annotations.clone(),
            spec: spec_of_template(&set.pod_template),
        }
    }

    pub(super) fn recorded(template: &'a Value) -> Self {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        let strings = |field: &str| -> BTreeMap<String, String> {
            template
                .pointer(field)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        };
        Template {
            labels: strings("/metadata/labels"),
            annotations: strings("/metadata/annotations"),
            spec: template
                .pointer("/spec")
                .and_then(Value::as_object)
                .unwrap_or(&EMPTY),
        }
    }
}
