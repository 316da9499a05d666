//! Roles and bindings read from their stored rbac.authorization.k8s.io/v1 JSON, leniently:
//! an object that does not decode, or has no name, is skipped.

use super::rule::PolicyRule;
use super::user::{UserInfo, service_account_username};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The bits of `metadata` RBAC reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Meta {
    pub name: String,
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
}

/// A label selector (`matchLabels` and `matchExpressions`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<SelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SelectorRequirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Whether `labels` satisfy every requirement; an unknown operator matches nothing (upstream
    /// rejects the selector).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|e| {
                let value = labels.get(&e.key);
                match e.operator.as_str() {
                    "In" => value.is_some_and(|v| e.values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

/// `aggregationRule` of a ClusterRole.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct AggregationRule {
    pub cluster_role_selectors: Vec<LabelSelector>,
}

/// A Role or ClusterRole.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct RoleObject {
    pub metadata: Meta,
    pub rules: Vec<PolicyRule>,
    pub aggregation_rule: Option<AggregationRule>,
}

/// `roleRef` of a binding.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RoleRef {
    pub kind: String,
    pub name: String,
}

/// One `subjects[]` entry.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Subject {
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

/// Who a subject is, as the index keys it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SubjectKey {
    /// A username (ServiceAccounts become theirs).
    User(String),
    /// A group name.
    Group(String),
}

impl Subject {
    /// The key of this subject in a binding of `binding_namespace` ("" for a
    /// ClusterRoleBinding): a ServiceAccount without a namespace takes the binding's, and none
    /// when that is empty (it then applies to nobody, as upstream's `appliesToUser`).
    pub fn key(&self, binding_namespace: &str) -> Option<SubjectKey> {
        match self.kind.as_str() {
            "User" => Some(SubjectKey::User(self.name.clone())),
            "Group" => Some(SubjectKey::Group(self.name.clone())),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                (!ns.is_empty()).then(|| SubjectKey::User(service_account_username(ns, &self.name)))
            }
            _ => None,
        }
    }

    /// Whether this subject is `user` in a binding of `binding_namespace`.
    pub fn applies_to(&self, user: &UserInfo, binding_namespace: &str) -> bool {
        match self.key(binding_namespace) {
            Some(SubjectKey::User(name)) => name == user.name,
            Some(SubjectKey::Group(group)) => user.in_group(&group),
            None => false,
        }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct BindingObject {
    pub metadata: Meta,
    pub role_ref: RoleRef,
    pub subjects: Vec<Subject>,
}

/// Decodes the objects that decode and have a name.
pub(crate) fn decode_all<T: for<'de> Deserialize<'de>>(
    objects: &[Value],
    name: impl Fn(&T) -> &str,
) -> Vec<T> {
    objects
        .iter()
        .filter_map(|v| T::deserialize(v).ok())
        .filter(|o| !name(o).is_empty())
        .collect()
}

/// Decodes the roles that decode and have a name.
pub(crate) fn decode_roles(objects: &[Value]) -> Vec<RoleObject> {
    decode_all(objects, |r: &RoleObject| &r.metadata.name)
}

/// Decodes the bindings that decode and have a name.
pub(crate) fn decode_bindings(objects: &[Value]) -> Vec<BindingObject> {
    decode_all(objects, |b: &BindingObject| &b.metadata.name)
}

/// The objects of `kind` among `objects`.
pub(crate) fn of_kind(objects: &[Value], kind: &str) -> Vec<Value> {
    objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_service_account_subject_defaults_to_the_binding_namespace() {
        let sa = Subject {
            kind: "ServiceAccount".into(),
            name: "tidemark".into(),
            namespace: String::new(),
        };
        let user = UserInfo::service_account("kube-system", "tidemark", "");
        assert!(sa.applies_to(&user, "kube-system"));
        assert!(!sa.applies_to(&user, "default"));
        assert!(!sa.applies_to(&user, ""));
    }

    #[test]
    fn malformed_objects_are_skipped() {
        let roles = decode_roles(&[
            json!({"metadata": {"name": "ok"}, "rules": []}),
            json!({"metadata": {"name": "bad"}, "rules": "nope"}),
            json!({"rules": []}),
            json!(7),
        ]);
        assert_eq!(roles.len(), 1);
        assert_eq!(roles[0].metadata.name, "ok");
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels = BTreeMap::from([("a".to_string(), "1".to_string())]);
        let sel: LabelSelector = serde_json::from_value(json!({
            "matchLabels": {"a": "1"},
            "matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]
        }))
        .expect("a selector");
        assert!(sel.matches(&labels));
        let other: LabelSelector =
            serde_json::from_value(json!({"matchLabels": {"a": "2"}})).expect("a selector");
        assert!(!other.matches(&labels));
    }
}
