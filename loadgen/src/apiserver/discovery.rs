//! Discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}/{version}`), custom resources included.

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

/// Every served resource: the built-ins, then `customs`.
fn served(customs: &[Resource]) -> impl Iterator<Item = Resource> + '_ {
    Resource::ALL.into_iter().chain(customs.iter().copied())
}

/// Every served API group but the core group, each once with its versions, in a fixed order.
fn group_versions(customs: &[Resource]) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    let all = served(customs)
        .map(|r| (r.group(), r.version()))
        .chain(REVIEWS.iter().map(|(g, _, _)| (*g, "v1")));
    for (g, v) in all.filter(|(g, _)| !g.is_empty()) {
        match out.iter_mut().find(|(name, _)| *name == g) {
            Some((_, versions)) if !versions.contains(&v) => versions.push(v),
            Some(_) => {}
            None => out.push((g, vec![v])),
        }
    }
    out
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
pub fn root_paths(customs: &[Resource]) -> Value {
    let mut paths = vec![
        "/api".to_string(),
        "/api/v1".to_string(),
        "/apis".to_string(),
    ];
    for (group, versions) in group_versions(customs) {
        let g = format!("/apis/{group}");
        for v in versions {
            paths.push(format!("{g}/{v}"));
        }
        paths.push(g);
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

fn group_version(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

/// `/apis/{group}` for a served group, or None.
pub fn group(name: &str, customs: &[Resource]) -> Option<Value> {
    let (_, versions) = group_versions(customs)
        .into_iter()
        .find(|(g, _)| *g == name)?;
    let listed: Vec<Value> = versions.iter().map(|v| group_version(name, v)).collect();
    Some(json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": listed,
        "preferredVersion": group_version(name, versions.first().copied().unwrap_or("v1")),
    }))
}

/// `/apis`.
pub fn groups(customs: &[Resource]) -> Value {
    let groups: Vec<Value> = group_versions(customs)
        .iter()
        .filter_map(|(g, _)| group(g, customs))
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
pub fn resources(group: &str, version: &str, customs: &[Resource]) -> Option<Value> {
    let served: Vec<Resource> = served(customs)
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
        let core = resources("", "v1", &[]).unwrap();
        assert_eq!(core["resources"][0]["name"], "pods");
        assert_eq!(core["resources"][1]["name"], "pods/status");
        let apps = resources("apps", "v1", &[]).unwrap();
        assert_eq!(apps["groupVersion"], "apps/v1");
        assert_eq!(apps["resources"][0]["kind"], "ReplicaSet");
        assert!(resources("batch", "v1", &[]).is_some());
        assert!(resources("policy", "v1", &[]).is_none());
        let names: Vec<_> = groups(&[])["groups"]
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
                "apiextensions.k8s.io",
                "authentication.k8s.io",
                "authorization.k8s.io"
            ]
        );
    }
}
