//! Least privilege, proven from the request log: every permission the manifests bind to a
//! user is either exercised by an allowed request of that user or reported, and so is every
//! request of that user that was denied.

use super::aggregation::aggregate;
use super::attributes::{Attributes, ResourceAttributes};
use super::objects::{BindingObject, RoleObject, decode_bindings, decode_roles, of_kind};
use super::request_log::RequestLogEntry;
use super::rule::{ALL, PolicyRule};
use super::user::UserInfo;
use serde_json::Value;
use std::fmt;

/// One permission: a single verb on a single group/resource[/subresource] and name (or on one
/// non-resource URL), in one namespace or cluster-wide, and the binding that grants it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Grant {
    /// The namespace of the RoleBinding; empty for a ClusterRoleBinding (every namespace).
    pub namespace: String,
    /// The API group (empty for core); empty for a non-resource grant.
    pub api_group: String,
    /// `resource` or `resource/subresource`; empty for a non-resource grant.
    pub resource: String,
    /// The one name the rule allows; empty for any name.
    pub resource_name: String,
    /// The non-resource URL (maybe a `*` prefix); empty for a resource grant.
    pub non_resource_url: String,
    /// The verb.
    pub verb: String,
    /// `ClusterRole/x via ClusterRoleBinding/y` or `Role/x via RoleBinding/ns/y`.
    pub source: String,
}

impl Grant {
    /// Whether any part of the grant is a wildcard.
    pub fn is_wildcard(&self) -> bool {
        self.verb == ALL
            || self.api_group == ALL
            || self.resource.contains('*')
            || self.non_resource_url.ends_with('*')
    }

    /// Whether this grant allows the request (the rule it comes from, narrowed to this one
    /// verb/group/resource/name, and the binding's namespace).
    pub fn allows(&self, request: &Attributes) -> bool {
        let in_scope = self.namespace.is_empty() || self.namespace == request.namespace();
        let rule = PolicyRule {
            verbs: vec![self.verb.clone()],
            api_groups: vec![self.api_group.clone()],
            resources: one(&self.resource),
            resource_names: one(&self.resource_name),
            non_resource_urls: one(&self.non_resource_url),
        };
        in_scope && rule.allows(request)
    }
}

fn one(s: &str) -> Vec<String> {
    if s.is_empty() {
        Vec::new()
    } else {
        vec![s.to_string()]
    }
}

/// A grant and how many logged requests exercised it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantUse {
    /// The grant.
    pub grant: Grant,
    /// Allowed requests it allows.
    pub count: u64,
}

/// The findings of [`audit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditReport {
    /// The audited username.
    pub user: String,
    /// Grants some allowed request exercised, with counts.
    pub used: Vec<GrantUse>,
    /// Grants no allowed request exercised: excess privilege.
    pub unused: Vec<Grant>,
    /// Grants with a `*` anywhere: wildcard grants are not least privilege, used or not.
    pub wildcards: Vec<Grant>,
    /// Requests of the user that were denied: missing privilege.
    pub denied: Vec<RequestLogEntry>,
    /// Allowed requests no grant of the manifests allows (bootstrap bindings such as
    /// `system:discovery` did); informational, not a finding.
    pub allowed_elsewhere: Vec<RequestLogEntry>,
}

impl AuditReport {
    /// No unused grant, no wildcard grant, no denied request.
    pub fn is_clean(&self) -> bool {
        self.unused.is_empty() && self.wildcards.is_empty() && self.denied.is_empty()
    }
}

/// Audits the grants `manifests` (Roles, ClusterRoles and their bindings, other kinds ignored)
/// bind to `subject_user` against the requests of that user in `used` (entries of other users
/// are ignored). Aggregated ClusterRoles count with the rules they aggregate; bindings to roles
/// the manifests do not define grant nothing here.
pub fn audit(
    manifests: &[Value],
    subject_user: &UserInfo,
    used: &[RequestLogEntry],
) -> AuditReport {
    let grants = grants_of(manifests, subject_user);
    let mut counts = vec![0u64; grants.len()];
    let mut denied = Vec::new();
    let mut allowed_elsewhere = Vec::new();
    for entry in used.iter().filter(|e| e.user == subject_user.name) {
        if !entry.allowed {
            denied.push(entry.clone());
            continue;
        }
        let mut matched = false;
        for (grant, count) in grants.iter().zip(counts.iter_mut()) {
            if grant.allows(&entry.request) {
                *count += entry.count;
                matched = true;
            }
        }
        if !matched {
            allowed_elsewhere.push(entry.clone());
        }
    }
    let wildcards = grants.iter().filter(|g| g.is_wildcard()).cloned().collect();
    let (mut used_grants, mut unused) = (Vec::new(), Vec::new());
    for (grant, count) in grants.into_iter().zip(counts) {
        if count > 0 {
            used_grants.push(GrantUse { grant, count });
        } else if !grant.is_wildcard() {
            unused.push(grant);
        }
    }
    AuditReport {
        user: subject_user.name.clone(),
        used: used_grants,
        unused,
        wildcards,
        denied,
        allowed_elsewhere,
    }
}

/// Every grant the manifests bind to `user`, sorted, without duplicates.
fn grants_of(manifests: &[Value], user: &UserInfo) -> Vec<Grant> {
    let mut cluster_roles = decode_roles(&of_kind(manifests, "ClusterRole"));
    aggregate(&mut cluster_roles);
    let roles = decode_roles(&of_kind(manifests, "Role"));
    let find = |kind: &str, namespace: &str, name: &str| -> Option<&RoleObject> {
        match kind {
            "ClusterRole" => cluster_roles.iter().find(|r| r.metadata.name == name),
            "Role" => roles
                .iter()
                .find(|r| r.metadata.name == name && r.metadata.namespace == namespace),
            _ => None,
        }
    };
    let mut grants = Vec::new();
    let bindings = [("ClusterRoleBinding", false), ("RoleBinding", true)];
    for (kind, namespaced) in bindings {
        for binding in decode_bindings(&of_kind(manifests, kind)) {
            let namespace = if namespaced {
                binding.metadata.namespace.as_str()
            } else {
                ""
            };
            if (namespaced && namespace.is_empty())
                || !binding
                    .subjects
                    .iter()
                    .any(|s| s.applies_to(user, namespace))
            {
                continue;
            }
            let Some(role) = find(&binding.role_ref.kind, namespace, &binding.role_ref.name) else {
                continue;
            };
            let source = source(kind, &binding, namespace);
            for rule in &role.rules {
                expand(rule, namespace, &source, &mut grants);
            }
        }
    }
    grants.sort();
    grants.dedup();
    grants
}

fn source(kind: &str, binding: &BindingObject, namespace: &str) -> String {
    let binding_name = if namespace.is_empty() {
        binding.metadata.name.clone()
    } else {
        format!("{namespace}/{}", binding.metadata.name)
    };
    format!(
        "{}/{} via {kind}/{binding_name}",
        binding.role_ref.kind, binding.role_ref.name
    )
}

/// One grant per verb × group × resource × name (or any name), and per verb × URL.
fn expand(rule: &PolicyRule, namespace: &str, source: &str, out: &mut Vec<Grant>) {
    let any_name = [String::new()];
    let names: &[String] = if rule.resource_names.is_empty() {
        &any_name
    } else {
        &rule.resource_names
    };
    for verb in &rule.verbs {
        for group in &rule.api_groups {
            for resource in &rule.resources {
                for name in names {
                    out.push(Grant {
                        namespace: namespace.to_string(),
                        api_group: group.clone(),
                        resource: resource.clone(),
                        resource_name: name.clone(),
                        non_resource_url: String::new(),
                        verb: verb.clone(),
                        source: source.to_string(),
                    });
                }
            }
        }
        for url in &rule.non_resource_urls {
            out.push(Grant {
                namespace: namespace.to_string(),
                api_group: String::new(),
                resource: String::new(),
                resource_name: String::new(),
                non_resource_url: url.clone(),
                verb: verb.clone(),
                source: source.to_string(),
            });
        }
    }
}

/// The columns of a grant row: verb, group, resource or URL, name, namespace, source.
fn grant_row(g: &Grant) -> [String; 6] {
    let (group, what) = if g.non_resource_url.is_empty() {
        (format!("{:?}", g.api_group), g.resource.clone())
    } else {
        ("-".to_string(), g.non_resource_url.clone())
    };
    [
        g.verb.clone(),
        group,
        what,
        or(&g.resource_name, "(any)"),
        or(&g.namespace, "(all)"),
        g.source.clone(),
    ]
}

/// The columns of a request row: verb, group, resource[/sub] or path, name, namespace.
fn request_row(request: &Attributes) -> [String; 6] {
    match request {
        Attributes::Resource(ResourceAttributes {
            verb,
            api_group,
            resource,
            subresource,
            namespace,
            name,
            ..
        }) => {
            let what = if subresource.is_empty() {
                resource.clone()
            } else {
                format!("{resource}/{subresource}")
            };
            [
                verb.clone(),
                format!("{api_group:?}"),
                what,
                or(name, "-"),
                or(namespace, "(cluster)"),
                String::new(),
            ]
        }
        Attributes::NonResource { verb, path } => [
            verb.clone(),
            "-".into(),
            path.clone(),
            "-".into(),
            "-".into(),
            String::new(),
        ],
    }
}

fn or(s: &str, none: &str) -> String {
    if s.is_empty() { none } else { s }.to_string()
}

/// Writes `rows` under `header` as aligned columns, each line indented by two spaces.
fn table(
    f: &mut fmt::Formatter<'_>,
    header: [&str; 7],
    rows: &[(String, [String; 6])],
) -> fmt::Result {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for (count, cells) in rows {
        widths[0] = widths[0].max(count.len());
        for (w, c) in widths[1..].iter_mut().zip(cells) {
            *w = (*w).max(c.len());
        }
    }
    let line = |f: &mut fmt::Formatter<'_>, cells: Vec<&str>| -> fmt::Result {
        let mut text = format!("  {:>w$}", cells[0], w = widths[0]);
        for (c, w) in cells[1..].iter().zip(&widths[1..]) {
            text.push_str(&format!("  {c:<w$}"));
        }
        writeln!(f, "{}", text.trim_end())
    };
    line(f, header.to_vec())?;
    for (count, cells) in rows {
        let mut all = vec![count.as_str()];
        all.extend(cells.iter().map(String::as_str));
        line(f, all)?;
    }
    Ok(())
}

const GRANT_HEADER: [&str; 7] = [
    "COUNT",
    "VERB",
    "GROUP",
    "RESOURCE",
    "NAME",
    "NAMESPACE",
    "GRANTED BY",
];
const REQUEST_HEADER: [&str; 7] = [
    "COUNT",
    "VERB",
    "GROUP",
    "RESOURCE",
    "NAME",
    "NAMESPACE",
    "",
];

impl fmt::Display for AuditReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let findings = self.unused.len() + self.wildcards.len() + self.denied.len();
        if findings == 0 {
            writeln!(
                f,
                "RBAC audit of {}: clean (every grant used, nothing denied)",
                self.user
            )?;
        } else {
            writeln!(f, "RBAC audit of {}: {findings} finding(s)", self.user)?;
        }
        let grants =
            |list: &mut dyn Iterator<Item = (String, &Grant)>| -> Vec<(String, [String; 6])> {
                list.map(|(count, g)| (count, grant_row(g))).collect()
            };
        let requests = |list: &[RequestLogEntry]| -> Vec<(String, [String; 6])> {
            list.iter()
                .map(|e| (e.count.to_string(), request_row(&e.request)))
                .collect()
        };
        writeln!(f, "used grants ({}):", self.used.len())?;
        table(
            f,
            GRANT_HEADER,
            &grants(&mut self.used.iter().map(|u| (u.count.to_string(), &u.grant))),
        )?;
        let sections: [(&str, &[Grant]); 2] = [
            ("unused grants", &self.unused),
            ("wildcard grants (not least privilege)", &self.wildcards),
        ];
        for (title, list) in sections {
            if !list.is_empty() {
                writeln!(f, "{title} ({}):", list.len())?;
                table(
                    f,
                    GRANT_HEADER,
                    &grants(&mut list.iter().map(|g| ("0".to_string(), g))),
                )?;
            }
        }
        let sections: [(&str, &[RequestLogEntry]); 2] = [
            ("denied requests", &self.denied),
            (
                "allowed by bindings outside these manifests",
                &self.allowed_elsewhere,
            ),
        ];
        for (title, list) in sections {
            if !list.is_empty() {
                writeln!(f, "{title} ({}):", list.len())?;
                table(f, REQUEST_HEADER, &requests(list))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::attributes::request_attributes;
    use http::Method;
    use serde_json::json;

    fn manifests(verbs: &[&str]) -> Vec<Value> {
        vec![
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "pod-reader"},
                   "rules": [{"verbs": verbs, "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "pod-reader"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
                   "subjects": [{"kind": "ServiceAccount", "name": "tidemark", "namespace": "kube-system"}]}),
        ]
    }

    fn sa() -> UserInfo {
        UserInfo::service_account("kube-system", "tidemark", "")
    }

    fn entry(method: Method, path: &str, query: Option<&str>, allowed: bool) -> RequestLogEntry {
        RequestLogEntry {
            user: sa().name,
            request: request_attributes(&method, path, query),
            allowed,
            count: 3,
        }
    }

    fn list_and_watch() -> Vec<RequestLogEntry> {
        vec![
            entry(Method::GET, "/api/v1/pods", None, true),
            entry(Method::GET, "/api/v1/pods", Some("watch=1"), true),
        ]
    }

    #[test]
    fn a_rule_set_fully_used_is_clean() {
        let report = audit(&manifests(&["list", "watch"]), &sa(), &list_and_watch());
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.used.len(), 2);
        assert!(report.used.iter().all(|u| u.count == 3));
    }

    #[test]
    fn one_extra_verb_is_reported_unused() {
        let report = audit(
            &manifests(&["list", "watch", "delete"]),
            &sa(),
            &list_and_watch(),
        );
        assert!(!report.is_clean());
        assert_eq!(report.unused.len(), 1);
        assert_eq!(report.unused[0].verb, "delete");
        assert_eq!(
            report.unused[0].source,
            "ClusterRole/pod-reader via ClusterRoleBinding/pod-reader"
        );
        assert!(
            report.to_string().contains("unused grants (1):"),
            "{report}"
        );
    }

    #[test]
    fn a_denied_request_is_reported() {
        let mut used = list_and_watch();
        used.push(entry(
            Method::DELETE,
            "/api/v1/namespaces/a/pods/p",
            None,
            false,
        ));
        let report = audit(&manifests(&["list", "watch"]), &sa(), &used);
        assert!(!report.is_clean());
        assert_eq!(report.denied.len(), 1);
        assert_eq!(report.denied[0].request.verb(), "delete");
        assert!(
            report.to_string().contains("denied requests (1):"),
            "{report}"
        );
    }

    #[test]
    fn a_wildcard_grant_is_a_finding_even_when_used() {
        let report = audit(&manifests(&["*"]), &sa(), &list_and_watch());
        assert!(!report.is_clean());
        assert_eq!(report.wildcards.len(), 1);
        assert!(report.unused.is_empty());
        assert_eq!(report.used[0].count, 6);
    }

    #[test]
    fn other_users_and_requests_allowed_elsewhere_are_not_findings() {
        let mut used = list_and_watch();
        used.push(RequestLogEntry {
            user: "alice".into(),
            ..entry(Method::GET, "/api/v1/nodes", None, false)
        });
        used.push(entry(Method::GET, "/version", None, true));
        let report = audit(&manifests(&["list", "watch"]), &sa(), &used);
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.allowed_elsewhere.len(), 1);
    }
}
