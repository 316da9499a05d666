//! Labels and label selectors (`matchLabels` and `matchExpressions`) as the API defines them.

use serde::Deserialize;
use std::collections::BTreeMap;

/// An object's labels: sorted key/value pairs, compact and cheap to search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels(Box<[(Box<str>, Box<str>)]>);

impl Labels {
    /// Builds labels from a map.
    pub fn from_map(map: BTreeMap<String, String>) -> Self {
        Self(
            map.into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
                .collect(),
        )
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

impl LabelSelector {
    /// Whether `labels` satisfy every requirement. An unknown operator matches nothing, as the
    /// API server would have rejected the selector.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v.as_str()))
            && self.match_expressions.iter().all(|r| {
                let value = labels.get(&r.key);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

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
    fn empty_selector_matches_everything() {
        assert!(LabelSelector::default().matches(&labels(&[("a", "b")])));
    }
}
