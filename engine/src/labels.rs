//! Labels and label selectors (`matchLabels` and `matchExpressions`) as the API defines them.

use crate::intern::Interner;
use crate::views::checked::{Checker, Field};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

/// An object's labels: sorted key/value pairs, compact and cheap to search. Equal label sets
/// share one copy (the Pods of one owner carry the same labels), so a Pod pays one pointer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels(Arc<[(Box<str>, Box<str>)]>);

type LabelPairs = [(Box<str>, Box<str>)];

fn label_sets() -> &'static Interner<LabelPairs> {
    static LABEL_SETS: LazyLock<Interner<LabelPairs>> = LazyLock::new(Interner::new);
    &LABEL_SETS
}

impl Labels {
    /// Builds labels from a map.
    pub fn from_map(map: BTreeMap<String, String>) -> Self {
        let pairs: Box<LabelPairs> = map
            .into_iter()
            .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
            .collect();
        Self(label_sets().intern_boxed(pairs))
    }
    /// The value of label `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }
    /// Every (key, value) pair in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }
    /// True when there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One `matchExpressions` requirement.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values for `In` and `NotIn`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// A `metav1.LabelSelector`. An empty selector matches everything, as in the API.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Equality requirements.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default)]
    pub match_expressions: Vec<Requirement>,
}

/// The operators of `matchExpressions`.
pub const OPERATORS: [&str; 4] = ["In", "NotIn", "Exists", "DoesNotExist"];

impl LabelSelector {
    /// Reads a selector with every field checked as upstream's `ValidateLabelSelector` would:
    /// string maps, known operators, values for `In`/`NotIn` and none for `Exists`.
    pub fn read(f: &Field<'_>, c: &mut Checker) -> Self {
        c.object(f);
        let match_labels = f.get(c, "matchLabels").string_map(c);
        let mut match_expressions = Vec::new();
        for e in f.get(c, "matchExpressions").items(c) {
            c.object(&e);
            let key_field = e.get(c, "key");
            let key = c.string(&key_field);
            let operator = e.get(c, "operator").one_of(c, &OPERATORS);
            let values_field = e.get(c, "values");
            let values = c.strings(&values_field);
            if e.is_present() && key.is_none_or(str::is_empty) && !key_field.is_present() {
                c.record(key_field.path(), "Required value".into());
            }
            match operator {
                Some("In" | "NotIn") if values.is_empty() => c.record(
                    values_field.path(),
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
                ),
                Some("Exists" | "DoesNotExist") if !values.is_empty() => c.record(
                    values_field.path(),
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                        .into(),
                ),
                _ => {}
            }
            if let (Some(key), Some(operator)) = (key, operator) {
                match_expressions.push(Requirement {
                    key: key.to_string(),
                    operator: operator.to_string(),
                    values,
                });
            }
        }
        Self {
            match_labels,
            match_expressions,
        }
    }

    /// Whether `labels` satisfy every requirement. An unknown operator matches nothing, as the
    /// API server would have rejected the selector.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.matches_with(|key| labels.get(key))
    }

    /// [`LabelSelector::matches`] over labels kept some other way: `label` gives a key's value.
    pub fn matches_with<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| label(k) == Some(v.as_str()))
            && self.match_expressions.iter().all(|r| {
                let value = label(&r.key);
                match r.operator.as_str() {
                    "In" => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
                    "NotIn" => value.is_none_or(|v| r.values.iter().all(|x| x != v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

/// Labels from pairs, for tests.
#[cfg(test)]
pub(crate) fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_map(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_matches_labels_and_expressions() {
        let selector: LabelSelector = serde_json::from_str(
            r#"{"matchLabels":{"app":"web"},"matchExpressions":[
                {"key":"tier","operator":"In","values":["front","edge"]},
                {"key":"canary","operator":"DoesNotExist"}]}"#,
        )
        .expect("valid selector");
        assert!(selector.matches(&labels(&[("app", "web"), ("tier", "edge")])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "back")])));
        assert!(!selector.matches(&labels(&[
            ("app", "web"),
            ("tier", "front"),
            ("canary", "1")
        ])));
        assert!(!selector.matches(&labels(&[("tier", "front")])));
    }

    #[test]
    fn a_selector_with_unknown_operators_or_misplaced_values_is_malformed() {
        for bad in [
            serde_json::json!({"matchLabels": {"a": 1}}),
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "Near"}]}),
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            serde_json::json!("app=web"),
        ] {
            let mut c = Checker::default();
            LabelSelector::read(&Field::root(&bad), &mut c);
            assert!(!c.is_clean(), "{bad}");
        }
        let good = serde_json::json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]});
        let mut c = Checker::default();
        let selector = LabelSelector::read(&Field::root(&good), &mut c);
        assert!(c.is_clean());
        assert!(selector.matches(&labels(&[("a", "x")])));
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(LabelSelector::default().matches(&labels(&[("a", "b")])));
    }
}
