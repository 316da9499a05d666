//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch
//! for the list fields of the served kinds, and server-side apply (as create-or-merge).

use serde_json::{Map, Value};

use crate::apiserver::status::ApiError;

/// The kind of a PATCH body, from its content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/json-patch+json`.
    Json,
    /// `application/apply-patch+yaml` (server-side apply; the body must be JSON, which is YAML).
    Apply,
}

impl PatchKind {
    /// The kind for a content type, or 415.
    pub fn from_content_type(ct: &str) -> Result<PatchKind, ApiError> {
        match ct {
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Ok(PatchKind::Apply),
            other => Err(ApiError::UnsupportedMediaType {
                message: format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other})"
                ),
            }),
        }
    }
}

/// A parsed PATCH body.
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    /// How to apply it.
    pub kind: PatchKind,
    /// The body.
    pub body: Value,
}

/// Parses a PATCH body of the given content type.
pub fn parse(content_type: &str, raw: &[u8]) -> Result<Patch, ApiError> {
    let kind = PatchKind::from_content_type(content_type)?;
    let body: Value = serde_json::from_slice(raw).map_err(|e| {
        let hint = if kind == PatchKind::Apply {
            " (loadgen accepts apply bodies in JSON only)"
        } else {
            ""
        };
        ApiError::bad_request(format!(
            "the body of the request could not be decoded: {e}{hint}"
        ))
    })?;
    match kind {
        PatchKind::Json if !body.is_array() => Err(ApiError::bad_request(
            "a JSON patch must be an array of operations",
        )),
        PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply if !body.is_object() => {
            Err(ApiError::bad_request("a merge patch must be a JSON object"))
        }
        _ => Ok(Patch { kind, body }),
    }
}

impl Patch {
    /// Whether the patch names a `metadata.resourceVersion` (a precondition, as upstream).
    pub fn pins_resource_version(&self) -> bool {
        match self.kind {
            PatchKind::Json => self.body.as_array().is_some_and(|ops| {
                ops.iter()
                    .any(|op| op["path"].as_str() == Some("/metadata/resourceVersion"))
            }),
            _ => self.body["metadata"]["resourceVersion"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
        }
    }

    /// Applies the patch to `target`.
    pub fn apply_to(&self, target: &mut Value) -> Result<(), ApiError> {
        match self.kind {
            PatchKind::Merge => {
                merge_patch(target, &self.body);
                Ok(())
            }
            PatchKind::Strategic | PatchKind::Apply => {
                strategic_merge(target, &self.body, "");
                Ok(())
            }
            PatchKind::Json => json_patch(target, &self.body),
        }
    }
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// The merge key of a list field (upstream `patchMergeKey`), or None for an atomic list.
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "containerStatuses"
        | "initContainerStatuses"
        | "resourceClaims" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "ports" => Some("containerPort"),
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        "hostAliases" => Some("ip"),
        "podIPs" | "hostIPs" => Some("ip"),
        _ => None,
    }
}

/// Lists of strings merged as sets (upstream `patchStrategy: merge` on a primitive list).
fn is_primitive_set(field: &str) -> bool {
    field == "finalizers"
}

fn merge_list(target: &mut Vec<Value>, patch: &[Value], key: &str, field: &str) {
    for item in patch {
        let id = &item[key];
        let pos = target.iter().position(|t| !id.is_null() && &t[key] == id);
        let directive = item["$patch"].as_str();
        match (pos, directive) {
            (Some(i), Some("delete")) => {
                target.remove(i);
            }
            (None, Some("delete")) => {}
            (Some(i), Some("replace")) => {
                let mut clean = item.clone();
                strip_directives(&mut clean);
                target[i] = clean;
            }
            (Some(i), _) => strategic_merge(&mut target[i], item, field),
            (None, _) => {
                let mut clean = item.clone();
                strip_directives(&mut clean);
                target.push(clean);
            }
        }
    }
}

fn strip_directives(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !k.starts_with('$'));
            m.values_mut().for_each(strip_directives);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_directives),
        _ => {}
    }
}

/// Strategic merge patch: a merge patch in which the list fields with a merge key are merged
/// element by element (`$patch: delete` removes an element, `$patch: replace` replaces a map),
/// `finalizers` merge as a set (`$deleteFromPrimitiveList/finalizers` removes entries), and
/// other directives (`$setElementOrder`, `$retainKeys`) are ignored.
pub fn strategic_merge(target: &mut Value, patch: &Value, field: &str) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut clean = patch.clone();
            strip_directives(&mut clean);
            *target = clean;
            return;
        }
        Some("delete") => {
            *target = Value::Null;
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if let Some(list) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(have)), Some(drop)) = (t.get_mut(list), v.as_array()) {
                have.retain(|x| !drop.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        match (v, merge_key(k)) {
            (Value::Array(items), Some(key)) => {
                let slot = t
                    .entry(k.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                if let Value::Array(have) = slot {
                    merge_list(have, items, key, k);
                }
            }
            (Value::Array(items), None) if is_primitive_set(k) => {
                let slot = t
                    .entry(k.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                if let Value::Array(have) = slot {
                    for i in items {
                        if !have.contains(i) {
                            have.push(i.clone());
                        }
                    }
                }
            }
            (Value::Object(_), _) => {
                let slot = t.entry(k.clone()).or_insert(Value::Null);
                strategic_merge(slot, v, k);
                if slot.is_null() {
                    t.remove(k);
                }
            }
            _ => {
                let mut clean = v.clone();
                strip_directives(&mut clean);
                t.insert(k.clone(), clean);
            }
        }
    }
    let _ = field;
}

fn patch_error(why: String) -> ApiError {
    ApiError::invalid("Patch", "", &why)
}

/// The tokens of a JSON pointer (`/a/b~1c` is `["a", "b/c"]`).
fn pointer_tokens(path: &str) -> Result<Vec<String>, ApiError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| patch_error(format!("invalid JSON pointer {path:?}")))?;
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn resolve<'a>(doc: &'a mut Value, tokens: &[String]) -> Option<&'a mut Value> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get_mut(t)?,
            Value::Array(a) => a.get_mut(t.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), ApiError> {
    let tokens = pointer_tokens(path)?;
    let Some((last, parent)) = tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    let missing = || {
        patch_error(format!(
            "add operation does not apply: doc is missing path: {path:?}"
        ))
    };
    match resolve(doc, parent).ok_or_else(missing)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(a) => {
            let at = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>()
                    .ok()
                    .filter(|i| *i <= a.len())
                    .ok_or_else(missing)?
            };
            a.insert(at, value);
            Ok(())
        }
        _ => Err(missing()),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, ApiError> {
    let tokens = pointer_tokens(path)?;
    let missing = || {
        patch_error(format!(
            "remove operation does not apply: doc is missing path: {path:?}"
        ))
    };
    let (last, parent) = tokens.split_last().ok_or_else(missing)?;
    match resolve(doc, parent).ok_or_else(missing)? {
        Value::Object(m) => m.remove(last).ok_or_else(missing),
        Value::Array(a) => {
            let i = last
                .parse::<usize>()
                .ok()
                .filter(|i| *i < a.len())
                .ok_or_else(missing)?;
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

fn get(doc: &mut Value, path: &str) -> Result<Value, ApiError> {
    let tokens = pointer_tokens(path)?;
    resolve(doc, &tokens)
        .map(|v| v.clone())
        .ok_or_else(|| patch_error(format!("doc is missing path: {path:?}")))
}

/// RFC 6902 JSON patch; any failing operation (a failed `test` included) is a 422.
pub fn json_patch(doc: &mut Value, ops: &Value) -> Result<(), ApiError> {
    let ops = ops
        .as_array()
        .ok_or_else(|| ApiError::bad_request("a JSON patch must be an array of operations"))?;
    let mut work = doc.clone();
    for op in ops {
        let path = op["path"]
            .as_str()
            .ok_or_else(|| patch_error("operation has no path".into()))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| patch_error(format!("operation on {path:?} has no value")))
        };
        let from = || {
            op["from"]
                .as_str()
                .ok_or_else(|| patch_error(format!("operation on {path:?} has no from")))
        };
        match op["op"].as_str() {
            Some("add") => add(&mut work, path, value()?)?,
            Some("remove") => {
                remove(&mut work, path)?;
            }
            Some("replace") => {
                remove(&mut work, path).map_err(|_| {
                    patch_error(format!(
                        "replace operation does not apply: doc is missing key: {path:?}"
                    ))
                })?;
                add(&mut work, path, value()?)?;
            }
            Some("move") => {
                let v = remove(&mut work, from()?)?;
                add(&mut work, path, v)?;
            }
            Some("copy") => {
                let v = get(&mut work, from()?)?;
                add(&mut work, path, v)?;
            }
            Some("test") => {
                if get(&mut work, path)? != value()? {
                    return Err(patch_error(format!(
                        "testing value {path:?} failed: test failed"
                    )));
                }
            }
            other => {
                return Err(patch_error(format!(
                    "unexpected kind of operation: {other:?}"
                )));
            }
        }
    }
    *doc = work;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_merge_patch_replaces_merges_and_removes() {
        let mut t = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]});
        merge_patch(&mut t, &json!({"a": null, "b": {"c": 5}, "e": [2, 3]}));
        assert_eq!(t, json!({"b": {"c": 5, "d": 3}, "e": [2, 3]}));
    }

    #[test]
    fn a_json_patch_runs_every_operation_and_a_failed_test_changes_nothing() {
        let mut d = json!({"a": {"b": 1}, "l": [1, 2]});
        json_patch(
            &mut d,
            &json!([
                {"op": "add", "path": "/l/-", "value": 3},
                {"op": "replace", "path": "/a/b", "value": 2},
                {"op": "copy", "from": "/a/b", "path": "/c"},
                {"op": "move", "from": "/c", "path": "/d"},
                {"op": "remove", "path": "/l/0"},
                {"op": "test", "path": "/d", "value": 2},
            ]),
        )
        .unwrap();
        assert_eq!(d, json!({"a": {"b": 2}, "l": [2, 3], "d": 2}));
        let e = json_patch(
            &mut d,
            &json!([{"op": "remove", "path": "/a"}, {"op": "test", "path": "/d", "value": 9}]),
        )
        .unwrap_err();
        assert_eq!(e.code(), 422);
        assert!(d["a"].is_object(), "a failed patch is not applied");
    }

    #[test]
    fn a_strategic_merge_merges_containers_by_name_and_conditions_by_type() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}, "metadata": {"finalizers": ["x"]}});
        strategic_merge(
            &mut pod,
            &json!({"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "3"}, {"name": "a", "$patch": "delete"}],
                "$setElementOrder/containers": [{"name": "b"}]},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
                "metadata": {"finalizers": ["y"]}}),
            "",
        );
        assert_eq!(
            pod["spec"]["containers"],
            json!([{"name": "b", "image": "2"}, {"name": "c", "image": "3"}])
        );
        assert_eq!(
            pod["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}])
        );
        assert_eq!(pod["metadata"]["finalizers"], json!(["x", "y"]));
        assert!(pod["spec"].get("$setElementOrder/containers").is_none());
    }
}
