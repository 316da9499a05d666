//! CustomResourceDefinitions: validating one as apiextensions-apiserver does the essentials,
//! the custom resource it declares, and the status the server gives an established one.
//!
//! Checked, with upstream's field paths and wording: `metadata.name` is `<plural>.<group>`,
//! `spec.group` is a DNS subdomain with a dot, `spec.names.plural`/`singular` are DNS labels,
//! `kind` is present, `spec.scope` is `Namespaced` or `Cluster`, versions have DNS-label names,
//! exactly one is the storage version and each has `schema.openAPIV3Schema`. Not simulated:
//! conversion (only the storage version is served), schema validation of custom objects
//! beyond their top-level fields, name conflicts between CRDs (`NamesAccepted` is always True).

use serde_json::{Value, json};

use crate::admission::validation::{invalid, is_dns1123_label, is_dns1123_subdomain};
use crate::apiserver::status::{REQUIRED, StatusCause};
use crate::clock::now_rfc3339;
use crate::resource::Definition;

const NOT_SUPPORTED: &str = "FieldValueNotSupported";

fn required(field: &str, why: &str) -> StatusCause {
    StatusCause {
        reason: REQUIRED.into(),
        message: if why.is_empty() {
            "Required value".into()
        } else {
            format!("Required value: {why}")
        },
        field: field.into(),
    }
}

fn str_at<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field].as_str().unwrap_or("")
}

/// Checks a DNS-label name at `field`, required unless `optional`.
fn check_label(names: &Value, field: &str, optional: bool, out: &mut Vec<StatusCause>) {
    let value = str_at(names, field);
    let path = format!("spec.names.{field}");
    if value.is_empty() {
        if !optional {
            out.push(required(&path, ""));
        }
    } else if !is_dns1123_label(value) {
        out.push(invalid(
            &path,
            &names[field],
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ));
    }
}

fn check_versions(spec: &Value, out: &mut Vec<StatusCause>) -> Option<usize> {
    let Some(versions) = spec["versions"].as_array().filter(|v| !v.is_empty()) else {
        out.push(required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
        return None;
    };
    let mut storage = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = str_at(v, "name");
        if name.is_empty() {
            out.push(required(&format!("{path}.name"), ""));
        } else if !is_dns1123_label(name) {
            out.push(invalid(
                &format!("{path}.name"),
                &v["name"],
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-'",
            ));
        }
        if versions[..i].iter().any(|o| str_at(o, "name") == name) && !name.is_empty() {
            out.push(StatusCause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: \"{name}\""),
                field: format!("{path}.name"),
            });
        }
        if v["storage"].as_bool() == Some(true) {
            storage.push(i);
        }
        if !v["schema"]["openAPIV3Schema"].is_object() {
            out.push(required(
                &format!("{path}.schema.openAPIV3Schema"),
                "schemas are required",
            ));
        }
    }
    if storage.len() != 1 {
        out.push(invalid(
            "spec.versions",
            &spec["versions"],
            "must have exactly one version marked as storage version",
        ));
        return None;
    }
    storage.first().copied()
}

/// The top-level fields a version's schema declares, empty when it keeps unknown fields.
fn top_level_fields(schema: &Value) -> Vec<String> {
    if schema["x-kubernetes-preserve-unknown-fields"].as_bool() == Some(true) {
        return Vec::new();
    }
    let mut fields: Vec<String> = ["apiVersion", "kind", "metadata"]
        .map(str::to_string)
        .to_vec();
    if let Some(props) = schema["properties"].as_object() {
        for k in props.keys() {
            if !fields.contains(k) {
                fields.push(k.clone());
            }
        }
    }
    fields
}

/// Validates a CustomResourceDefinition and returns the resource it declares, or the causes
/// a `422 Invalid` names.
pub fn definition(crd: &Value) -> Result<Definition, Vec<StatusCause>> {
    let mut out = Vec::new();
    let spec = &crd["spec"];
    let names = &spec["names"];
    let group = str_at(spec, "group");
    if group.is_empty() {
        out.push(required("spec.group", ""));
    } else if !is_dns1123_subdomain(group) || !group.contains('.') {
        out.push(invalid(
            "spec.group",
            &spec["group"],
            "should be a domain with at least one dot",
        ));
    }
    check_label(names, "plural", false, &mut out);
    check_label(names, "singular", true, &mut out);
    let kind = str_at(names, "kind");
    if kind.is_empty() {
        out.push(required("spec.names.kind", ""));
    }
    let plural = str_at(names, "plural");
    let name = crd["metadata"]["name"].as_str().unwrap_or("");
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        out.push(invalid(
            "metadata.name",
            &crd["metadata"]["name"],
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let namespaced = match str_at(spec, "scope") {
        "Namespaced" => true,
        "Cluster" => false,
        "" => {
            out.push(required("spec.scope", ""));
            false
        }
        _ => {
            out.push(StatusCause {
                reason: NOT_SUPPORTED.into(),
                message: format!(
                    "Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"",
                    spec["scope"]
                ),
                field: "spec.scope".into(),
            });
            false
        }
    };
    let short_names: Vec<String> = names["shortNames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for (i, s) in short_names.iter().enumerate() {
        if !is_dns1123_label(s) {
            out.push(invalid(
                &format!("spec.names.shortNames[{i}]"),
                &Value::from(s.as_str()),
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
            ));
        }
    }
    let storage = check_versions(spec, &mut out);
    let (Some(storage), true) = (storage, out.is_empty()) else {
        return Err(out);
    };
    let version = &spec["versions"][storage];
    let singular = match str_at(names, "singular") {
        "" => kind.to_ascii_lowercase(),
        s => s.to_string(),
    };
    let list_kind = match str_at(names, "listKind") {
        "" => format!("{kind}List"),
        s => s.to_string(),
    };
    Ok(Definition {
        group: group.to_string(),
        version: str_at(version, "name").to_string(),
        plural: plural.to_string(),
        singular,
        kind: kind.to_string(),
        list_kind,
        short_names,
        in_category_all: names["categories"]
            .as_array()
            .is_some_and(|c| c.iter().any(|x| x == "all")),
        namespaced,
        status: version["subresources"]["status"].is_object(),
        fields: top_level_fields(&version["schema"]["openAPIV3Schema"]),
    })
}

/// A CustomResourceDefinition manifest for tests and scenarios: `<plural>.<group>` serving
/// `version` (stored) with the status subresource, scope `Namespaced` or `Cluster`, and a
/// schema of an open `spec` and `status`.
pub fn manifest(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Value {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"plural": plural, "singular": kind.to_ascii_lowercase(), "kind": kind},
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": version, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": open, "status": open}}},
            }],
        },
    })
}

/// The status of an established CustomResourceDefinition declaring `d`.
pub fn established_status(d: &Definition) -> Value {
    let now = now_rfc3339();
    let condition = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message});
    json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": {
            "plural": d.plural,
            "singular": d.singular,
            "kind": d.kind,
            "listKind": d.list_kind,
            "shortNames": d.short_names,
        },
        "storedVersions": [d.version],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, storage: &[bool]) -> Value {
        let versions: Vec<Value> = storage
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"name": format!("v{}", i + 1), "served": true, "storage": s,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}))
            .collect();
        json!({"metadata": {"name": name}, "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"}, "versions": versions}})
    }

    #[test]
    fn a_valid_definition_defaults_its_singular_and_list_kind() {
        let d = definition(&crd("widgets.example.com", &[false, true])).unwrap();
        assert_eq!(
            (d.singular.as_str(), d.list_kind.as_str()),
            ("widget", "WidgetList")
        );
        assert_eq!(d.version, "v2");
        assert_eq!(d.fields, ["apiVersion", "kind", "metadata", "spec"]);
    }

    #[test]
    fn the_name_must_be_plural_dot_group_and_one_version_must_be_stored() {
        let causes = definition(&crd("widgets", &[true, true])).unwrap_err();
        let fields: Vec<_> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["metadata.name", "spec.versions"]);
    }
}
