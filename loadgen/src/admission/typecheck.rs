//! Field types of the served kinds, checked as kube-apiserver's decoder does when it reads a
//! request body into its Go structs: a field of the wrong JSON type is a decode error (`400
//! BadRequest`, `<Kind> in version "v1" cannot be handled as a <Kind>: json: cannot unmarshal
//! string into Go struct field ReplicaSetSpec.spec.replicas of type int32`), before any
//! validation runs. The schema covers the fields controllers decide on; the rest passes.

use serde_json::Value;

use crate::admission::typecheck_schema::S;
pub use crate::admission::typecheck_schema::Ty;
pub use crate::admission::typecheck_schema::schema;
use crate::apiserver::status::ApiError;
use crate::resource::Resource;

impl Ty {
    fn go_name(&self) -> String {
        match self {
            Ty::Str(n) | Ty::Struct(n, _) => (*n).to_string(),
            Ty::I32 => "int32".into(),
            Ty::I64 => "int64".into(),
            Ty::Bool => "bool".into(),
            Ty::Time => "v1.Time".into(),
            Ty::StrMap => "map[string]string".into(),
            Ty::List(t) => format!("[]{}", t.go_name()),
            Ty::IntOrString => "intstr.IntOrString".into(),
        }
    }
}

/// What went wrong where, worded as Go's `encoding/json` (and `metav1.Time`) words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeError(pub String);

fn kind_of(v: &Value, numeric_target: bool) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if numeric_target => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn short(go_name: &str) -> &str {
    go_name.rsplit('.').next().unwrap_or(go_name)
}

fn mismatch(v: &Value, ty: &Ty, owner: &str, path: &str) -> TypeError {
    let numeric = matches!(ty, Ty::I32 | Ty::I64);
    TypeError(format!(
        "json: cannot unmarshal {} into Go struct field {owner}.{path} of type {}",
        kind_of(v, numeric),
        ty.go_name()
    ))
}

fn check(v: &Value, ty: &Ty, owner: &str, path: &str) -> Result<(), TypeError> {
    if v.is_null() {
        return Ok(());
    }
    match ty {
        Ty::Str(_) if v.is_string() => Ok(()),
        Ty::Bool if v.is_boolean() => Ok(()),
        Ty::I64 if v.as_i64().is_some() => Ok(()),
        Ty::I32 if v.as_i64().and_then(|n| i32::try_from(n).ok()).is_some() => Ok(()),
        Ty::Time => match v {
            Value::String(s) if s.parse::<jiff::Timestamp>().is_ok() => Ok(()),
            Value::String(s) => Err(TypeError(format!(
                "parsing time {s:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {s:?} as \"2006\""
            ))),
            other => Err(TypeError(format!(
                "json: cannot unmarshal {} into Go value of type string",
                kind_of(other, false)
            ))),
        },
        Ty::IntOrString => match v {
            Value::String(_) => Ok(()),
            Value::Number(n) if n.as_i64().and_then(|n| i32::try_from(n).ok()).is_some() => Ok(()),
            other => Err(TypeError(format!(
                "json: cannot unmarshal {} into Go value of type int32",
                kind_of(other, true)
            ))),
        },
        Ty::StrMap => match v {
            Value::Object(m) => m
                .values()
                .filter(|x| !x.is_null())
                .find(|x| !x.is_string())
                .map_or(Ok(()), |x| Err(mismatch(x, &S, owner, path))),
            other => Err(mismatch(other, ty, owner, path)),
        },
        Ty::List(elem) => match v {
            Value::Array(items) => items.iter().try_for_each(|x| check(x, elem, owner, path)),
            other => Err(mismatch(other, ty, owner, path)),
        },
        Ty::Struct(name, fields) => match v {
            Value::Object(m) => fields
                .iter()
                .try_for_each(|(field, fty)| match m.get(*field) {
                    Some(x) => {
                        let child = if path.is_empty() {
                            (*field).to_string()
                        } else {
                            format!("{path}.{field}")
                        };
                        check(x, fty, short(name), &child)
                    }
                    None => Ok(()),
                }),
            other => Err(mismatch(other, ty, owner, path)),
        },
        _ => Err(mismatch(v, ty, owner, path)),
    }
}

/// The decode error of `obj` as a `r` object, if a checked field has the wrong type.
pub fn type_error(r: Resource, obj: &Value) -> Option<TypeError> {
    match schema(r) {
        Ty::Struct(_, fields) => match obj {
            Value::Object(m) => fields
                .iter()
                .try_for_each(|(field, fty)| match m.get(*field) {
                    Some(x) => check(x, fty, r.kind(), field),
                    None => Ok(()),
                })
                .err(),
            _ => None,
        },
        _ => None,
    }
}

/// The version part of `r`'s apiVersion (`v1` of `apps/v1`).
fn version(r: Resource) -> &'static str {
    r.api_version().rsplit('/').next().unwrap_or("v1")
}

/// Checks a request body (create, update, status update) as the decoder would: `400
/// BadRequest` naming the field, as upstream's `transformDecodeError`.
pub fn check_body(r: Resource, obj: &Value) -> Result<(), ApiError> {
    match type_error(r, obj) {
        None => Ok(()),
        Some(TypeError(e)) => Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {kind}: {e}",
            version(r),
            kind = r.kind()
        ))),
    }
}

/// Checks the object a JSON or merge patch produced: upstream decodes it and answers a decode
/// error with `422 Invalid`, one cause on the field `patch` whose value is the patched object.
pub fn check_patched(r: Resource, obj: &Value) -> Result<(), ApiError> {
    match type_error(r, obj) {
        None => Ok(()),
        Some(TypeError(e)) => {
            let patched = obj.to_string();
            let cause = crate::apiserver::status::StatusCause {
                reason: crate::apiserver::status::INVALID.into(),
                message: format!("Invalid value: {patched:?}: {e}"),
                field: "patch".into(),
            };
            Err(ApiError::invalid_causes("", "", vec![cause]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(r: Resource, obj: Value) -> Option<String> {
        type_error(r, &obj).map(|e| e.0)
    }

    #[test]
    fn a_string_where_an_int32_goes_is_worded_as_gos_decoder_words_it() {
        assert_eq!(
            error(Resource::ReplicaSets, json!({"spec": {"replicas": "five"}})).as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field ReplicaSetSpec.spec.replicas of type int32"
            )
        );
        assert_eq!(
            error(Resource::ReplicaSets, json!({"spec": {"replicas": 3.0}})).as_deref(),
            Some(
                "json: cannot unmarshal number 3.0 into Go struct field ReplicaSetSpec.spec.replicas of type int32"
            )
        );
        assert_eq!(
            error(Resource::Nodes, json!({"status": "not-an-object"})).as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field Node.status of type v1.NodeStatus"
            )
        );
        assert_eq!(
            error(Resource::ReplicaSets, json!({"spec": {"replicas": -2}})),
            None
        );
    }

    #[test]
    fn nested_lists_maps_and_times_are_checked() {
        let e = error(
            Resource::Nodes,
            json!({"status": {"conditions": [{"type": "Ready", "status": true}]}}),
        );
        assert_eq!(
            e.as_deref(),
            Some(
                "json: cannot unmarshal bool into Go struct field NodeCondition.status.conditions.status of type v1.ConditionStatus"
            )
        );
        let e = error(Resource::Pods, json!({"metadata": {"labels": {"a": 1}}}));
        assert_eq!(
            e.as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
            )
        );
        let e = error(
            Resource::Leases,
            json!({"spec": {"renewTime": "yesterday"}}),
        );
        assert!(e.is_some_and(|e| e.starts_with("parsing time \"yesterday\"")));
        assert_eq!(
            error(
                Resource::Leases,
                json!({"spec": {"renewTime": "2026-01-01T00:00:00.123456Z"}})
            ),
            None
        );
    }
}
