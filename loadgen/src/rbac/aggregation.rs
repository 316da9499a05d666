//! Aggregated ClusterRoles: the rules the clusterrole-aggregation controller writes into a
//! ClusterRole with an `aggregationRule`, computed here instead of waiting for a controller.

use super::objects::RoleObject;
use super::rule::PolicyRule;

/// Replaces the rules of every aggregated ClusterRole with the union, without duplicates, of
/// the rules of the other ClusterRoles its selectors match (selectors in order, matched roles
/// by name), as upstream's controller does. Aggregated roles feeding aggregated roles are
/// repeated until nothing changes (upstream converges there over several syncs); a cycle
/// stops after as many rounds as there are roles.
pub(crate) fn aggregate(roles: &mut [RoleObject]) {
    roles.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for _ in 0..roles.len() {
        let mut changed = false;
        for i in 0..roles.len() {
            let Some(rule) = &roles[i].aggregation_rule else {
                continue;
            };
            let mut rules: Vec<PolicyRule> = Vec::new();
            for selector in &rule.cluster_role_selectors {
                for (j, other) in roles.iter().enumerate() {
                    if j == i || !selector.matches(&other.metadata.labels) {
                        continue;
                    }
                    for r in &other.rules {
                        if !rules.contains(r) {
                            rules.push(r.clone());
                        }
                    }
                }
            }
            if rules != roles[i].rules {
                roles[i].rules = rules;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::objects::decode_roles;
    use serde_json::json;

    #[test]
    fn an_aggregated_role_has_the_rules_of_the_roles_it_selects() {
        let mut roles = decode_roles(&[
            json!({"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"rbac.example/aggregate-to-view": "true"}}]},
                "rules": [{"verbs": ["delete"], "apiGroups": ["*"], "resources": ["*"]}]}),
            json!({"metadata": {"name": "pods-view", "labels": {"rbac.example/aggregate-to-view": "true"}},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"metadata": {"name": "nodes-view", "labels": {"rbac.example/aggregate-to-view": "true"}},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                          {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}]}),
            json!({"metadata": {"name": "other"}, "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
        ]);
        aggregate(&mut roles);
        let view = roles
            .iter()
            .find(|r| r.metadata.name == "view")
            .expect("view");
        let resources: Vec<&str> = view.rules.iter().map(|r| r.resources[0].as_str()).collect();
        assert_eq!(resources, ["pods", "nodes"]);
    }
}
