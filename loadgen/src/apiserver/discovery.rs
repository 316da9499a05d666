//! Discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}/v1`) for standard clients.

use serde_json::{Value, json};

use crate::resource::Resource;

/// Create-only review kinds the server answers without storing them:
/// (group, plural, kind).
pub const REVIEWS: [(&str, &str, &str); 3] = [
    ("authentication.k8s.io", "tokenreviews", "TokenReview"),
    (
        "authorization.k8s.io",
        "subjectaccessreviews",
        "SubjectAccessReview",
    ),
    (
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
    ),
];

/// Every served API group but the core group, each once, in a fixed order.
fn group_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = Vec::new();
    let all = Resource::ALL
        .iter()
        .map(|r| r.group())
        .chain(REVIEWS.iter().map(|(g, _, _)| *g));
    for g in all {
        if !g.is_empty() && !names.contains(&g) {
            names.push(g);
        }
    }
    names
}

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "36",
        "gitVersion": "v1.36.0",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
        "emulationMajor": "1",
        "emulationMinor": "36",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "35",
    })
}

/// `/`: every path the server serves at the top.
pub fn root_paths() -> Value {
    let mut paths = vec![
        "/api".to_string(),
        "/api/v1".to_string(),
        "/apis".to_string(),
    ];
    for group in group_names() {
        let g = format!("/apis/{group}");
        let gv = format!("{g}/v1");
        paths.push(g);
        paths.push(gv);
    }
    for p in [
        "/healthz",
        "/livez",
        "/openapi/v2",
        "/openapi/v3",
        "/readyz",
        "/version",
    ] {
        paths.push(p.to_string());
    }
    json!({"paths": paths})
}

/// `/api`.
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    })
}

fn group_version(group: &str) -> Value {
    json!({"groupVersion": format!("{group}/v1"), "version": "v1"})
}

/// `/apis/{group}` for a served group, or None.
pub fn group(name: &str) -> Option<Value> {
    group_names().contains(&name).then(|| {
        json!({
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": name,
            "versions": [group_version(name)],
            "preferredVersion": group_version(name),
        })
    })
}

/// `/apis`.
pub fn groups() -> Value {
    let groups: Vec<Value> = group_names()
        .iter()
        .filter_map(|g| group(g))
        .map(|mut g| {
            if let Value::Object(m) = &mut g {
                m.remove("kind");
                m.remove("apiVersion");
            }
            g
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/api/v1` (group `""`) or `/apis/{group}/v1`, or None for an unknown group version.
pub fn resources(group: &str, version: &str) -> Option<Value> {
    let served: Vec<Resource> = Resource::ALL
        .into_iter()
        .filter(|r| r.group() == group && r.version() == version)
        .collect();
    let reviews: Vec<_> = REVIEWS
        .iter()
        .filter(|(g, _, _)| *g == group && version == "v1")
        .collect();
    if served.is_empty() && reviews.is_empty() {
        return None;
    }
    let mut list = Vec::new();
    for (_, plural, kind) in reviews {
        list.push(json!({
            "name": plural,
            "singularName": kind.to_ascii_lowercase(),
            "namespaced": false,
            "kind": kind,
            "verbs": ["create"],
        }));
    }
    for r in served {
        let mut main = json!({
            "name": r.plural(),
            "singularName": r.singular(),
            "namespaced": r.namespaced(),
            "kind": r.kind(),
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": r.short_names(),
        });
        if r.in_category_all() {
            main["categories"] = json!(["all"]);
        }
        list.push(main);
        if r.has_status() {
            list.push(json!({
                "name": format!("{}/status", r.plural()),
                "singularName": "",
                "namespaced": r.namespaced(),
                "kind": r.kind(),
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r == Resource::ServiceAccounts {
            list.push(json!({
                "name": "serviceaccounts/token",
                "singularName": "",
                "namespaced": true,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            }));
        }
        if r == Resource::Pods {
            list.push(json!({
                "name": "pods/eviction",
                "singularName": "",
                "namespaced": true,
                "group": "policy",
                "version": "v1",
                "kind": "Eviction",
                "verbs": ["create"],
            }));
        }
        if r.has_scale() {
            list.push(json!({
                "name": format!("{}/scale", r.plural()),
                "singularName": "",
                "namespaced": true,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_group_lists_pods_and_apis_lists_every_group_once() {
        let core = resources("", "v1").unwrap();
        assert_eq!(core["resources"][0]["name"], "pods");
        assert_eq!(core["resources"][1]["name"], "pods/status");
        let apps = resources("apps", "v1").unwrap();
        assert_eq!(apps["groupVersion"], "apps/v1");
        assert_eq!(apps["resources"][0]["kind"], "ReplicaSet");
        assert!(resources("batch", "v1").is_some());
        assert!(resources("policy", "v1").is_none());
        let names: Vec<_> = groups()["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].clone())
            .collect();
        assert_eq!(
            names,
            [
                "apps",
                "batch",
                "coordination.k8s.io",
                "rbac.authorization.k8s.io",
                "authentication.k8s.io",
                "authorization.k8s.io"
            ]
        );
    }
}
