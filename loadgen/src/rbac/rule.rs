//! One RBAC `PolicyRule` and whether it allows a request, as upstream's `RuleAllows` and the
//! `*Matches` helpers of `pkg/apis/rbac/v1/evaluation_helpers.go`.

use super::attributes::{Attributes, ResourceAttributes};
use serde::{Deserialize, Serialize};

/// Matches every verb, group, resource or non-resource URL.
pub const ALL: &str = "*";

/// A `rules[]` entry of a Role or ClusterRole (rbac.authorization.k8s.io/v1 JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyRule {
    /// Verbs, `*` for all.
    pub verbs: Vec<String>,
    /// API groups (`""` core), `*` for all.
    #[serde(rename = "apiGroups")]
    pub api_groups: Vec<String>,
    /// Resources: `*`, `res`, `res/sub` or `*/sub`. (`res/*` is not a wildcard upstream: it
    /// only matches a subresource literally named `*`.)
    pub resources: Vec<String>,
    /// Object names the rule is restricted to; empty for any.
    pub resource_names: Vec<String>,
    /// Non-resource paths: exact, `*`, or a prefix ending in `*`.
    #[serde(rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// Whether this rule allows the request (upstream's `RuleAllows`).
    pub fn allows(&self, attrs: &Attributes) -> bool {
        match attrs {
            Attributes::Resource(r) => self.allows_resource(r),
            Attributes::NonResource { verb, path } => {
                self.verb_matches(verb) && self.non_resource_url_matches(path)
            }
        }
    }

    /// Whether this rule allows the resource request.
    pub fn allows_resource(&self, r: &ResourceAttributes) -> bool {
        self.verb_matches(&r.verb)
            && self.api_group_matches(&r.api_group)
            && self.resource_matches(&r.resource, &r.subresource)
            && self.resource_name_matches(&r.name)
    }

    /// `*` or the verb itself.
    pub fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    /// `*` or the group itself.
    pub fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// `*`, `resource` (no subresource), `resource/subresource`, or `*/subresource`.
    pub fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|rule| {
            if rule == ALL || combined_equals(rule, resource, subresource) {
                return true;
            }
            !subresource.is_empty()
                && rule.len() == subresource.len() + 2
                && rule.starts_with("*/")
                && rule.ends_with(subresource)
        })
    }

    /// No names listed, or the name among them (so a list without a pinned name only
    /// matches an unrestricted rule).
    pub fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// `*`, the path itself, or a rule ending in `*` that (without its trailing `*`s)
    /// prefixes the path.
    pub fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|rule| {
            rule == ALL
                || rule == path
                || (rule.ends_with('*') && path.starts_with(rule.trim_end_matches('*')))
        })
    }

    /// Whether any field of the rule holds `*` (or a `*/sub` or prefix `*` pattern).
    pub fn has_wildcard(&self) -> bool {
        self.verbs.iter().any(|v| v == ALL)
            || self.api_groups.iter().any(|g| g == ALL)
            || self.resources.iter().any(|r| r.contains('*'))
            || self.non_resource_urls.iter().any(|u| u.ends_with('*'))
    }
}

/// Whether `rule` equals `resource` or `resource/subresource`, without building the latter.
fn combined_equals(rule: &str, resource: &str, subresource: &str) -> bool {
    if subresource.is_empty() {
        return rule == resource;
    }
    rule.len() == resource.len() + 1 + subresource.len()
        && rule.starts_with(resource)
        && rule.as_bytes()[resource.len()] == b'/'
        && rule.ends_with(subresource)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: own(verbs),
            api_groups: own(groups),
            resources: own(resources),
            resource_names: own(names),
            non_resource_urls: Vec::new(),
        }
    }

    fn request(verb: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes::Resource(ResourceAttributes {
            verb: verb.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: "ns".into(),
            name: name.into(),
            ..Default::default()
        })
    }

    #[test]
    fn a_rule_needs_verb_group_resource_and_name_to_match() {
        let r = rule(&["get", "list"], &[""], &["pods"], &[]);
        assert!(r.allows(&request("get", "pods", "", "a")));
        assert!(!r.allows(&request("delete", "pods", "", "a")));
        assert!(!r.allows(&request("get", "nodes", "", "a")));
        let apps = rule(&["get"], &["apps"], &["pods"], &[]);
        assert!(!apps.allows(&request("get", "pods", "", "a")));
    }

    #[test]
    fn stars_match_every_verb_group_and_resource() {
        let r = rule(&["*"], &["*"], &["*"], &[]);
        assert!(r.allows(&request("deletecollection", "pods", "", "")));
        assert!(r.allows(&request("create", "pods", "eviction", "a")));
        assert!(r.has_wildcard());
    }

    #[test]
    fn a_subresource_needs_its_own_grant_or_a_star_slash_sub() {
        let pods = rule(&["update"], &[""], &["pods"], &[]);
        assert!(!pods.allows(&request("update", "pods", "status", "a")));
        let status = rule(&["update"], &[""], &["pods/status"], &[]);
        assert!(status.allows(&request("update", "pods", "status", "a")));
        assert!(!status.allows(&request("update", "pods", "", "a")));
        let any_status = rule(&["update"], &[""], &["*/status"], &[]);
        assert!(any_status.allows(&request("update", "nodes", "status", "a")));
        assert!(!any_status.allows(&request("update", "nodes", "", "a")));
        assert!(!any_status.allows(&request("update", "nodes", "xstatus", "a")));
    }

    #[test]
    fn pods_slash_star_is_not_a_wildcard_upstream() {
        let r = rule(&["get"], &[""], &["pods/*"], &[]);
        assert!(!r.allows(&request("get", "pods", "log", "a")));
        assert!(!r.allows(&request("get", "pods", "", "a")));
        assert!(r.allows(&request("get", "pods", "*", "a")));
    }

    #[test]
    fn resource_names_restrict_to_those_names_and_never_match_an_unnamed_request() {
        let r = rule(&["get", "list"], &[""], &["pods"], &["a"]);
        assert!(r.allows(&request("get", "pods", "", "a")));
        assert!(!r.allows(&request("get", "pods", "", "b")));
        assert!(!r.allows(&request("list", "pods", "", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_a_trailing_star_prefix() {
        let r = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            ..Default::default()
        };
        let get = |path: &str| Attributes::NonResource {
            verb: "get".into(),
            path: path.into(),
        };
        assert!(r.allows(&get("/healthz")));
        assert!(!r.allows(&get("/healthz/etcd")));
        assert!(r.allows(&get("/apis/apps/v1")));
        assert!(r.allows(&get("/apis/")));
        assert!(!r.allows(&get("/apis")));
        assert!(!r.allows(&Attributes::NonResource {
            verb: "post".into(),
            path: "/healthz".into()
        }));
        assert!(!r.allows(&request("get", "pods", "", "")));
    }
}
