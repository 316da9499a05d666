//! Request options from query strings and bodies: the query itself, `dryRun`,
//! `fieldValidation` (with the `Warning` header it produces), and `DeleteOptions`.

use axum::response::Response;
use http::header;
use serde_json::Value;

use crate::apiserver::status::ApiError;
use crate::resource::Resource;
use crate::store::Preconditions;
use crate::store::deletion::{DeleteOptions, Propagation};

/// The query string of a request, in order.
pub(crate) struct Query(pub(crate) Vec<(String, String)>);

impl Query {
    pub(crate) fn parse(uri: &http::Uri) -> Result<Query, ApiError> {
        let q = uri.query().unwrap_or("");
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
            &format!("/?{q}")
                .parse::<http::Uri>()
                .map_err(|_| ApiError::bad_request("invalid query"))?,
        )
        .map(|axum::extract::Query(v)| Query(v))
        .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1"))
    }
}

pub(crate) fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
    })
}

/// `dryRun`: `All` or absent.
pub(crate) fn dry_run(q: &Query) -> Result<bool, ApiError> {
    match q.get("dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
        ))),
    }
}

/// Applies `fieldValidation` to the top-level fields of `body`: `Strict` refuses unknown
/// fields (400), `Warn` (the default) drops them with a warning, `Ignore` drops them.
pub(crate) fn field_validation(
    r: Resource,
    mut body: Value,
    q: &Query,
) -> Result<(Value, Option<String>), ApiError> {
    let mode = q.get("fieldValidation").unwrap_or("Warn");
    if !matches!(mode, "Strict" | "Warn" | "Ignore" | "") {
        return Err(ApiError::bad_request(format!(
            "fieldValidation: Unsupported value: \"{mode}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
        )));
    }
    if r.preserves_unknown_fields() {
        return Ok((body, None));
    }
    let known = r.top_level_fields();
    let unknown: Vec<String> = body
        .as_object()
        .map(|m| {
            m.keys()
                .filter(|k| !known.contains(&k.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if unknown.is_empty() {
        return Ok((body, None));
    }
    let described = unknown
        .iter()
        .map(|k| format!("unknown field \"{k}\""))
        .collect::<Vec<_>>();
    if mode == "Strict" {
        return Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            described.join(", ")
        )));
    }
    if let Some(m) = body.as_object_mut() {
        for k in &unknown {
            m.remove(k);
        }
    }
    let warning = (mode != "Ignore").then(|| described.join(", "));
    Ok((body, warning))
}

/// Adds a `Warning: 299 - "..."` header, as upstream does for dropped fields.
pub(crate) fn warn(mut resp: Response, warning: Option<String>) -> Response {
    if let Some(w) = warning {
        let text = format!("299 - \"{}\"", w.replace('"', "'"));
        if let Ok(v) = http::HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

pub(crate) fn parse_delete_options(raw: &[u8], q: &Query) -> Result<DeleteOptions, ApiError> {
    let v = if raw.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        parse_json(raw)?
    };
    if !v.is_object() {
        return Err(ApiError::bad_request("DeleteOptions must be a JSON object"));
    }
    let field = |f: &str| v["preconditions"][f].as_str().map(str::to_string);
    let grace = match (
        v["gracePeriodSeconds"].as_i64(),
        q.get("gracePeriodSeconds"),
    ) {
        (Some(g), _) => Some(g),
        (None, Some(s)) if !s.is_empty() => Some(
            s.parse::<i64>()
                .map_err(|_| ApiError::bad_request("gracePeriodSeconds must be an integer"))?,
        ),
        _ => None,
    };
    let policy = v["propagationPolicy"]
        .as_str()
        .or_else(|| q.get("propagationPolicy"))
        .filter(|s| !s.is_empty());
    let propagation = match policy {
        Some(p) => Some(Propagation::parse(p)?),
        // The deprecated `orphanDependents: true` is Orphan.
        None => (v["orphanDependents"].as_bool() == Some(true)).then_some(Propagation::Orphan),
    };
    let body_dry = v["dryRun"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == "All"));
    Ok(DeleteOptions {
        preconditions: Preconditions {
            uid: field("uid"),
            resource_version: field("resourceVersion"),
        },
        grace_period_seconds: grace,
        propagation,
        dry_run: body_dry || dry_run(q)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_options_preconditions_parse_and_garbage_is_rejected() {
        let q = Query(Vec::new());
        let p = parse_delete_options(br#"{"preconditions":{"uid":"u"},"gracePeriodSeconds":0,"propagationPolicy":"Foreground"}"#, &q).unwrap();
        assert_eq!(p.preconditions.uid.as_deref(), Some("u"));
        assert_eq!(p.grace_period_seconds, Some(0));
        assert_eq!(p.propagation, Some(Propagation::Foreground));
        assert_eq!(
            parse_delete_options(b"", &q).unwrap(),
            DeleteOptions::default()
        );
        assert_eq!(parse_delete_options(b"{nope", &q).unwrap_err().code(), 400);
    }
}
