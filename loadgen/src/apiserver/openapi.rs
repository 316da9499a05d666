//! OpenAPI documents: `/openapi/v2` (swagger 2.0) and `/openapi/v3` with one document per
//! group version, small but valid: every served path and operation with
//! `x-kubernetes-group-version-kind` and the `fieldValidation` parameter (which tells kubectl
//! that the server validates fields itself), and a loose schema per kind.

use serde_json::{Map, Value, json};

use crate::resource::Resource;

/// The schema name of a kind, e.g. `io.k8s.api.core.v1.Pod`.
pub fn definition_name(r: Resource) -> String {
    if r.is_custom() {
        let reversed: Vec<&str> = r.group().rsplit('.').collect();
        return format!("{}.{}.{}", reversed.join("."), r.version(), r.kind());
    }
    let group = match r.group() {
        "" => "core",
        "coordination.k8s.io" => "coordination",
        "rbac.authorization.k8s.io" => "rbac",
        g => g,
    };
    format!("io.k8s.api.{group}.{}.{}", r.version(), r.kind())
}

fn gvk(r: Resource) -> Value {
    json!({"group": r.group(), "version": r.version(), "kind": r.kind()})
}

fn schema(r: Resource) -> Value {
    let mut props = Map::new();
    for f in r.top_level_fields() {
        let p = match *f {
            "apiVersion" | "kind" => json!({"type": "string"}),
            "metadata" => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            _ => json!({"x-kubernetes-preserve-unknown-fields": true}),
        };
        props.insert((*f).to_string(), p);
    }
    let mut s = json!({
        "description": format!("{} (loadgen: a loose schema; the server validates)", r.kind()),
        "type": "object",
        "properties": props,
        "x-kubernetes-group-version-kind": [gvk(r)],
    });
    if r.preserves_unknown_fields() {
        s["x-kubernetes-preserve-unknown-fields"] = json!(true);
    }
    s
}

fn list_schema(r: Resource, reference: &str) -> Value {
    json!({
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "items": {"type": "array", "items": {"$ref": format!("{reference}{}", definition_name(r))}},
        },
        "x-kubernetes-group-version-kind": [{"group": r.group(), "version": r.version(), "kind": r.list_kind()}],
    })
}

/// The paths of `r`: (path, is a single object, is namespaced path).
fn paths_of(r: Resource) -> Vec<(String, bool)> {
    let prefix = match r.group() {
        "" => format!("/api/{}", r.version()),
        g => format!("/apis/{g}/{}", r.version()),
    };
    let mut out = vec![(format!("{prefix}/{}", r.plural()), false)];
    let base = if r.namespaced() {
        format!("{prefix}/namespaces/{{namespace}}/{}", r.plural())
    } else {
        format!("{prefix}/{}", r.plural())
    };
    if r.namespaced() {
        out.push((base.clone(), false));
    }
    out.push((format!("{base}/{{name}}"), true));
    if r.has_status() {
        out.push((format!("{base}/{{name}}/status"), true));
    }
    out
}

/// Which OpenAPI version a document is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    V2,
    V3,
}

fn param(flavor: Flavor, name: &str, location: &str) -> Value {
    match flavor {
        Flavor::V2 => json!({"name": name, "in": location, "type": "string", "uniqueItems": true,
            "required": location == "path"}),
        Flavor::V3 => {
            json!({"name": name, "in": location, "schema": {"type": "string", "uniqueItems": true},
            "required": location == "path"})
        }
    }
}

fn operation(flavor: Flavor, r: Resource, action: &str, id: &str, reference: &str) -> Value {
    let mut params = Vec::new();
    if matches!(action, "post" | "put" | "patch") {
        for p in ["dryRun", "fieldManager", "fieldValidation"] {
            params.push(param(flavor, p, "query"));
        }
    }
    if action == "list" {
        for p in [
            "labelSelector",
            "fieldSelector",
            "resourceVersion",
            "continue",
            "limit",
            "watch",
        ] {
            params.push(param(flavor, p, "query"));
        }
    }
    let target = format!("{reference}{}", definition_name(r));
    let ok = match flavor {
        Flavor::V2 => json!({"description": "OK", "schema": {"$ref": target}}),
        Flavor::V3 => {
            json!({"description": "OK", "content": {"application/json": {"schema": {"$ref": target}}}})
        }
    };
    let mut op = json!({
        "operationId": id,
        "tags": [if r.group().is_empty() { "core_v1".to_string() } else { format!("{}_{}", r.group().replace('.', "_"), r.version()) }],
        "parameters": params,
        "responses": {"200": ok, "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(r),
    });
    if flavor == Flavor::V2 {
        op["consumes"] = json!(["*/*"]);
        op["produces"] = json!(["application/json"]);
        op["schemes"] = json!(["https"]);
    }
    op
}

fn path_item(flavor: Flavor, r: Resource, path: &str, single: bool, reference: &str) -> Value {
    let id = |verb: &str| format!("{verb}{}{}", r.kind(), path.len());
    let mut item = Map::new();
    if single {
        item.insert(
            "get".into(),
            operation(flavor, r, "get", &id("read"), reference),
        );
        item.insert(
            "put".into(),
            operation(flavor, r, "put", &id("replace"), reference),
        );
        item.insert(
            "patch".into(),
            operation(flavor, r, "patch", &id("patch"), reference),
        );
        if !path.ends_with("/status") {
            item.insert(
                "delete".into(),
                operation(flavor, r, "delete", &id("delete"), reference),
            );
        }
    } else {
        item.insert(
            "get".into(),
            operation(flavor, r, "list", &id("list"), reference),
        );
        if path.contains("{namespace}") || !r.namespaced() {
            item.insert(
                "post".into(),
                operation(flavor, r, "post", &id("create"), reference),
            );
        }
    }
    let mut params = vec![];
    if path.contains("{name}") {
        params.push(param(flavor, "name", "path"));
    }
    if path.contains("{namespace}") {
        params.push(param(flavor, "namespace", "path"));
    }
    item.insert("parameters".into(), Value::Array(params));
    Value::Object(item)
}

fn document(flavor: Flavor, served: impl Iterator<Item = Resource>) -> Value {
    let reference = match flavor {
        Flavor::V2 => "#/definitions/",
        Flavor::V3 => "#/components/schemas/",
    };
    let mut paths = Map::new();
    let mut defs = Map::new();
    for r in served {
        for (p, single) in paths_of(r) {
            paths.insert(p.clone(), path_item(flavor, r, &p, single, reference));
        }
        defs.insert(definition_name(r), schema(r));
        defs.insert(
            format!("{}List", definition_name(r)),
            list_schema(r, reference),
        );
    }
    let info = json!({"title": "Kubernetes", "version": "v1.36.0"});
    match flavor {
        Flavor::V2 => json!({"swagger": "2.0", "info": info, "paths": paths, "definitions": defs}),
        Flavor::V3 => {
            json!({"openapi": "3.0.0", "info": info, "paths": paths, "components": {"schemas": defs}})
        }
    }
}

/// `/openapi/v2`: every served path and kind.
pub fn v2(customs: &[Resource]) -> Value {
    document(
        Flavor::V2,
        Resource::ALL.into_iter().chain(customs.iter().copied()),
    )
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the index of group version documents.
pub fn v3_index(customs: &[Resource]) -> Value {
    let mut paths = Map::new();
    for r in Resource::ALL.into_iter().chain(customs.iter().copied()) {
        let key = gv_path(r.group(), r.version());
        let url = format!("/openapi/v3/{key}?hash=loadgen");
        paths.insert(key, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`, or None if not served.
pub fn v3_group_version(path: &str, customs: &[Resource]) -> Option<Value> {
    let served: Vec<Resource> = Resource::ALL
        .into_iter()
        .chain(customs.iter().copied())
        .filter(|r| gv_path(r.group(), r.version()) == path)
        .collect();
    (!served.is_empty()).then(|| document(Flavor::V3, served.into_iter()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v3_index_points_at_a_document_per_group_version() {
        let index = v3_index(&[]);
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/apis/apps/v1"));
        let apps = v3_group_version("apis/apps/v1", &[]).unwrap();
        let patch =
            &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/replicasets/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "ReplicaSet"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(apps["components"]["schemas"]["io.k8s.api.apps.v1.ReplicaSet"].is_object());
        assert!(v3_group_version("apis/policy/v1", &[]).is_none());
    }

    #[test]
    fn swagger_lists_cluster_scoped_paths_without_a_namespace() {
        let doc = v2(&[]);
        assert_eq!(doc["swagger"], "2.0");
        assert!(doc["paths"]["/api/v1/nodes/{name}/status"].is_object());
        assert!(doc["paths"]["/api/v1/namespaces/{namespace}/nodes"].is_null());
        assert!(doc["definitions"]["io.k8s.api.coordination.v1.Lease"].is_object());
    }
}
