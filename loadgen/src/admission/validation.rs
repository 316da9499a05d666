//! Object validation as upstream's `ValidateXxx` functions do it, for the fields loadgen checks:
//! names, labels, required fields, selectors matching templates, non-negative counts.

use serde_json::{Map, Value};

use crate::apiserver::status::{INVALID, REQUIRED, StatusCause};
use crate::resource::Resource;

fn required(field: &str) -> StatusCause {
    StatusCause {
        reason: REQUIRED.into(),
        message: "Required value".into(),
        field: field.into(),
    }
}

/// The `FieldValueInvalid` cause upstream's `field.Invalid` makes.
pub(crate) fn invalid(field: &str, value: &Value, why: &str) -> StatusCause {
    StatusCause {
        reason: INVALID.into(),
        message: format!("Invalid value: {value}: {why}"),
        field: field.into(),
    }
}

/// Whether `s` is a DNS-1123 label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && s.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
}

/// Whether `s` is a DNS-1123 subdomain: at most 253, dot-separated DNS-1123 labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && part
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphanumeric())
                && part
                    .bytes()
                    .last()
                    .is_some_and(|b| b.is_ascii_alphanumeric())
        })
}

fn is_label_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && s.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
}

/// Whether `k` is a qualified name (`[prefix/]name`), as label and annotation keys must be.
pub fn is_qualified_name(k: &str) -> bool {
    match k.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
        None => is_label_name(k),
    }
}

/// Whether `v` is a valid label value: empty, or a label name.
pub fn is_label_value(v: &str) -> bool {
    v.is_empty() || is_label_name(v)
}

/// Whether the kind's names are DNS-1123 labels (Namespaces) rather than subdomains.
fn name_is_label(r: Resource) -> bool {
    r == Resource::Namespaces
}

/// RBAC objects are named by path segments (`system:discovery` is valid), as upstream's
/// `ValidateRBACName`.
fn name_is_path_segment(r: Resource) -> bool {
    Resource::RBAC.contains(&r)
}

fn name_ok(r: Resource, name: &str) -> bool {
    if name_is_path_segment(r) {
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%'])
    } else if name_is_label(r) {
        is_dns1123_label(name)
    } else {
        is_dns1123_subdomain(name)
    }
}

fn name_rule(r: Resource) -> &'static str {
    if name_is_path_segment(r) {
        "may not be '.' or '..' and may not contain '/' or '%'"
    } else if name_is_label(r) {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
    } else {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
    }
}

/// Checks `metadata.name` / `metadata.generateName` (before a name is generated).
pub fn validate_name(r: Resource, obj: &Value) -> Vec<StatusCause> {
    let meta = &obj["metadata"];
    let name = meta["name"].as_str().unwrap_or("");
    let generate = meta["generateName"].as_str().unwrap_or("");
    if name.is_empty() && generate.is_empty() {
        return vec![StatusCause {
            reason: REQUIRED.into(),
            message: "Required value: name or generateName is required".into(),
            field: "metadata.name".into(),
        }];
    }
    if !name.is_empty() && !name_ok(r, name) {
        return vec![invalid("metadata.name", &meta["name"], name_rule(r))];
    }
    if name.is_empty() && !name_ok(r, &format!("{}a", generate.trim_end_matches('-'))) {
        return vec![invalid(
            "metadata.generateName",
            &meta["generateName"],
            name_rule(r),
        )];
    }
    Vec::new()
}

fn validate_labels(field: &str, labels: &Value, out: &mut Vec<StatusCause>) {
    let Some(map) = labels.as_object() else {
        return;
    };
    for (k, v) in map {
        if !is_qualified_name(k) {
            out.push(invalid(
                field,
                &Value::from(k.as_str()),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            ));
        }
        match v.as_str() {
            Some(s) if is_label_value(s) => {}
            _ => out.push(invalid(
                &format!("{field}[{k}]"),
                v,
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            )),
        }
    }
}

fn validate_pod_spec(field: &str, spec: &Value, out: &mut Vec<StatusCause>) {
    let containers = spec["containers"].as_array().map(Vec::as_slice);
    match containers {
        None | Some([]) => out.push(required(&format!("{field}.containers"))),
        Some(cs) => {
            for (i, c) in cs.iter().enumerate() {
                let at = format!("{field}.containers[{i}]");
                match c["name"].as_str() {
                    None | Some("") => out.push(required(&format!("{at}.name"))),
                    Some(n) if !is_dns1123_label(n) => out.push(invalid(
                        &format!("{at}.name"),
                        &c["name"],
                        name_rule(Resource::Namespaces),
                    )),
                    Some(_) => {}
                }
                if c["image"].as_str().unwrap_or("").trim().is_empty() {
                    out.push(required(&format!("{at}.image")));
                }
            }
        }
    }
}

pub(crate) fn selector_matches(selector: &Value, labels: &Map<String, Value>) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let by_labels = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let by_exprs = selector["matchExpressions"].as_array().is_none_or(|es| {
        es.iter().all(|e| {
            let key = e["key"].as_str().unwrap_or("");
            let values: Vec<&str> = e["values"]
                .as_array()
                .map(|vs| vs.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e["operator"].as_str() {
                Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        })
    });
    by_labels && by_exprs
}

fn selector_is_empty(selector: &Value) -> bool {
    selector["matchLabels"]
        .as_object()
        .is_none_or(Map::is_empty)
        && selector["matchExpressions"]
            .as_array()
            .is_none_or(Vec::is_empty)
}

fn validate_workload(r: Resource, obj: &Value, out: &mut Vec<StatusCause>) {
    crate::admission::field_rules::spec_rules(r, obj, out);
    let spec = &obj["spec"];
    let needs_selector = r != Resource::Jobs || spec["manualSelector"].as_bool() == Some(true);
    if needs_selector && (!spec["selector"].is_object() || selector_is_empty(&spec["selector"])) {
        out.push(required("spec.selector"));
    }
    let template = &spec["template"];
    if !template.is_object() {
        out.push(required("spec.template"));
        return;
    }
    let empty = Map::new();
    let labels = template["metadata"]["labels"].as_object().unwrap_or(&empty);
    validate_labels(
        "spec.template.metadata.labels",
        &template["metadata"]["labels"],
        out,
    );
    if spec["selector"].is_object()
        && !selector_is_empty(&spec["selector"])
        && !selector_matches(&spec["selector"], labels)
    {
        out.push(invalid(
            "spec.template.metadata.labels",
            &template["metadata"]["labels"],
            "`selector` does not match template `labels`",
        ));
    }
    validate_pod_spec("spec.template.spec", &template["spec"], out);
    for field in ["replicas", "parallelism", "completions"] {
        if spec[field].as_i64().is_some_and(|n| n < 0) {
            out.push(invalid(
                &format!("spec.{field}"),
                &spec[field],
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// Checks an object about to be stored (its name already chosen); empty means valid.
pub fn validate(r: Resource, obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    if !name.is_empty() && !name_ok(r, name) {
        out.push(invalid(
            "metadata.name",
            &obj["metadata"]["name"],
            name_rule(r),
        ));
    }
    validate_labels("metadata.labels", &obj["metadata"]["labels"], &mut out);
    if let Some(a) = obj["metadata"]["annotations"].as_object() {
        for k in a.keys().filter(|k| !is_qualified_name(k)) {
            out.push(invalid(
                "metadata.annotations",
                &Value::from(k.as_str()),
                "name part must consist of alphanumeric characters, '-', '_' or '.'",
            ));
        }
    }
    if let Some(finalizers) = obj["metadata"]["finalizers"].as_array() {
        for (i, f) in finalizers.iter().enumerate() {
            if !f.as_str().is_some_and(is_qualified_name) {
                out.push(invalid(
                    &format!("metadata.finalizers[{i}]"),
                    f,
                    "a finalizer must be a qualified name",
                ));
            }
        }
    }
    validate_owner_references(&obj["metadata"]["ownerReferences"], &mut out);
    match r {
        Resource::Pods => validate_pod_spec("spec", &obj["spec"], &mut out),
        Resource::ReplicaSets | Resource::DaemonSets | Resource::StatefulSets | Resource::Jobs => {
            validate_workload(r, obj, &mut out)
        }
        Resource::PersistentVolumeClaims => {
            if obj["spec"]["accessModes"]
                .as_array()
                .is_none_or(Vec::is_empty)
            {
                out.push(required("spec.accessModes"));
            }
            if obj["spec"]["resources"]["requests"]["storage"].is_null() {
                out.push(required("spec.resources[storage]"));
            }
        }
        Resource::Leases => {
            crate::admission::field_rules::spec_rules(r, obj, &mut out);
            if obj["spec"]["leaseDurationSeconds"]
                .as_i64()
                .is_some_and(|n| n <= 0)
            {
                out.push(invalid(
                    "spec.leaseDurationSeconds",
                    &obj["spec"]["leaseDurationSeconds"],
                    "must be greater than 0",
                ));
            }
        }
        Resource::Nodes => crate::admission::field_rules::spec_rules(r, obj, &mut out),
        Resource::Namespaces
        | Resource::Events
        | Resource::ControllerRevisions
        | Resource::ServiceAccounts
        | Resource::ClusterRoles
        | Resource::ClusterRoleBindings
        | Resource::Roles
        | Resource::RoleBindings
        // A CRD is checked whenever it is written (`crate::crd`); custom objects only by
        // their top-level fields.
        | Resource::CustomResourceDefinitions
        | Resource::Custom(_) => {}
    }
    out
}

/// At most one ownerReference may have `controller: true`, as apimachinery's
/// `ValidateOwnerReferences`: this refusal is what ends a race of two owners adopting one orphan
/// with one owner (each adopting patch adds its own reference, merged by UID).
fn validate_owner_references(references: &Value, out: &mut Vec<StatusCause>) {
    let Some(references) = references.as_array() else {
        return;
    };
    let controllers: Vec<String> = references
        .iter()
        .filter(|r| r["controller"].as_bool() == Some(true))
        .map(|r| {
            format!(
                "{}/{}",
                r["kind"].as_str().unwrap_or(""),
                r["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    if controllers.len() > 1 {
        out.push(invalid(
            "metadata.ownerReferences",
            &Value::Array(references.clone()),
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {} and {}",
                controllers[0], controllers[1]
            ),
        ));
    }
}

/// A patch may not change `metadata.uid`: upstream's `ValidateObjectMetaUpdate` refuses it
/// (422). Controllers put the UID they decided about in their patches, so this is their
/// precondition: a patch that reaches a newer object of the same name changes nothing.
pub fn validate_patched_uid(stored: &Value, patched: &Value) -> Vec<StatusCause> {
    let (old, new) = (&stored["metadata"]["uid"], &patched["metadata"]["uid"]);
    if old == new {
        return Vec::new();
    }
    vec![invalid("metadata.uid", new, "field is immutable")]
}

fn forbidden(field: &str, why: &str) -> StatusCause {
    StatusCause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {why}"),
        field: field.into(),
    }
}

/// A Pod spec with the fields an update may change blanked out.
fn pod_spec_fixed_part(spec: &Value) -> Value {
    let mut fixed = spec.clone();
    if let Some(m) = fixed.as_object_mut() {
        for f in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
        ] {
            m.remove(f);
        }
        for list in ["containers", "initContainers"] {
            if let Some(Value::Array(cs)) = m.get_mut(list) {
                for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                    c.remove("image");
                }
            }
        }
    }
    fixed
}

/// Checks an update of the main resource from `old` to `new`: immutable fields stay.
pub fn validate_update(r: Resource, old: &Value, new: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    if !old["metadata"]["deletionTimestamp"].is_null() {
        let had = old["metadata"]["finalizers"].as_array();
        let added = new["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|now| now.iter().any(|f| !had.is_some_and(|h| h.contains(f))));
        if added {
            out.push(forbidden(
                "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted",
            ));
        }
    }
    let (o, n) = (&old["spec"], &new["spec"]);
    match r {
        Resource::ReplicaSets | Resource::DaemonSets | Resource::StatefulSets | Resource::Jobs => {
            if o["selector"] != n["selector"] {
                out.push(invalid(
                    "spec.selector",
                    &n["selector"],
                    "field is immutable",
                ));
            }
            if r == Resource::Jobs && o["template"] != n["template"] {
                out.push(invalid("spec.template", &Value::Null, "field is immutable"));
            }
        }
        Resource::Pods if pod_spec_fixed_part(o) != pod_spec_fixed_part(n) => {
            out.push(forbidden(
                    "spec",
                    "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
                ));
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_update_may_change_images_but_not_the_rest_of_the_spec() {
        let old = json!({"spec": {"nodeName": "n", "containers": [{"name": "c", "image": "1"}]}});
        let image = json!({"spec": {"nodeName": "n", "containers": [{"name": "c", "image": "2"}]}});
        assert!(validate_update(Resource::Pods, &old, &image).is_empty());
        let moved = json!({"spec": {"nodeName": "m", "containers": [{"name": "c", "image": "1"}]}});
        assert_eq!(
            validate_update(Resource::Pods, &old, &moved)[0].field,
            "spec"
        );
    }

    #[test]
    fn names_and_label_keys_follow_the_upstream_rules() {
        assert!(is_dns1123_subdomain("web-1.x"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(!is_dns1123_subdomain("Web"));
        assert!(is_dns1123_label("kube-system"));
        assert!(!is_dns1123_label("a.b"));
        assert!(is_qualified_name("app.kubernetes.io/name"));
        assert!(!is_qualified_name("-bad"));
        assert!(is_label_value(""));
        assert!(!is_label_value("a b"));
    }

    #[test]
    fn a_replicaset_whose_selector_misses_its_template_is_invalid() {
        let rs = json!({"metadata": {"name": "r"}, "spec": {
            "replicas": -1,
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        }});
        let causes = validate(Resource::ReplicaSets, &rs);
        let fields: Vec<_> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["spec.template.metadata.labels", "spec.replicas"]);
    }

    #[test]
    fn only_one_owner_reference_may_be_the_controller() {
        let owner = |name: &str, controller: bool| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": name, "controller": controller});
        let pod = |refs: Value| {
            json!({"metadata": {"name": "p", "ownerReferences": refs},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
        };
        let one = pod(json!([owner("a", true), owner("b", false)]));
        assert!(validate(Resource::Pods, &one).is_empty());
        let two = pod(json!([owner("a", true), owner("b", true)]));
        let causes = validate(Resource::Pods, &two);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "metadata.ownerReferences");
        assert!(causes[0].message.contains("ReplicaSet/a and ReplicaSet/b"));
    }

    #[test]
    fn a_patch_may_not_change_the_uid() {
        let stored = json!({"metadata": {"uid": "u1"}});
        assert!(validate_patched_uid(&stored, &json!({"metadata": {"uid": "u1"}})).is_empty());
        let causes = validate_patched_uid(&stored, &json!({"metadata": {"uid": "u2"}}));
        assert_eq!(causes[0].field, "metadata.uid");
    }

    #[test]
    fn a_pod_needs_named_containers_with_images() {
        let causes = validate(
            Resource::Pods,
            &json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}),
        );
        assert_eq!(causes[0].field, "spec.containers[0].image");
        assert_eq!(causes[0].reason, REQUIRED);
        let causes = validate(Resource::Pods, &json!({"metadata": {"name": "p"}}));
        assert_eq!(causes[0].field, "spec.containers");
    }
}
