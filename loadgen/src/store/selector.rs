//! Label and field selectors, parsed from query strings and matched against objects.

use serde_json::Value;

use crate::apiserver::status::ApiError;
use crate::resource::Resource;
use crate::store::shard_selector::ShardSelector;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`.
    Equals(String, String),
    /// `key!=value` (also true when the label is absent).
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)` (also true when the label is absent).
    NotIn(String, Vec<String>),
    /// `key`: the label exists.
    Exists(String),
    /// `!key`: the label does not exist.
    DoesNotExist(String),
}

/// A parsed label selector: all requirements must hold. Empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// The requirements, ANDed.
    pub requirements: Vec<Requirement>,
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 316
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_set(rest: &str, whole: &str) -> Result<Vec<String>, ApiError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad(whole, "expected a parenthesised set of values"))?;
    let mut values = Vec::new();
    for v in inner.split(',') {
        let v = v.trim();
        if !valid_value(v) {
            return Err(bad(whole, "invalid label value"));
        }
        values.push(v.to_string());
    }
    Ok(values)
}

fn bad(selector: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "unable to parse requirement: {why} in selector \"{selector}\""
    ))
}

impl LabelSelector {
    /// Parses the `labelSelector` query parameter syntax.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector { requirements });
        }
        for part in split_top_level(s) {
            let p = part.trim();
            if p.is_empty() {
                return Err(bad(s, "empty requirement"));
            }
            let req = if let Some(key) = p.strip_prefix('!') {
                let key = key.trim();
                if !valid_key(key) {
                    return Err(bad(s, "invalid label key"));
                }
                Requirement::DoesNotExist(key.to_string())
            } else if let Some((k, v)) = p.split_once("!=") {
                Requirement::NotEquals(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = p.split_once("==") {
                Requirement::Equals(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = p.split_once('=') {
                Requirement::Equals(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, rest)) = split_word(p, "notin") {
                Requirement::NotIn(k.to_string(), parse_set(rest, s)?)
            } else if let Some((k, rest)) = split_word(p, "in") {
                Requirement::In(k.to_string(), parse_set(rest, s)?)
            } else {
                Requirement::Exists(p.to_string())
            };
            let ok = match &req {
                Requirement::Equals(k, v) | Requirement::NotEquals(k, v) => {
                    valid_key(k) && valid_value(v)
                }
                Requirement::In(k, _) | Requirement::NotIn(k, _) | Requirement::Exists(k) => {
                    valid_key(k)
                }
                Requirement::DoesNotExist(_) => true,
            };
            if !ok {
                return Err(bad(s, "invalid label key or value"));
            }
            requirements.push(req);
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        })
    }

    /// Whether an object's labels satisfy the selector.
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.is_empty() || self.matches(obj["metadata"]["labels"].as_object())
    }
}

/// Splits `key <word> rest` where `<word>` is surrounded by whitespace (or `(` follows).
fn split_word<'a>(p: &'a str, word: &str) -> Option<(&'a str, &'a str)> {
    let mut search = 0;
    while let Some(i) = p[search..].find(word) {
        let at = search + i;
        let before = p[..at].chars().last();
        let after = p[at + word.len()..].chars().next();
        if before.is_some_and(char::is_whitespace)
            && after.is_some_and(|c| c.is_whitespace() || c == '(')
        {
            return Some((p[..at].trim(), &p[at + word.len()..]));
        }
        search = at + word.len();
    }
    None
}

/// The fields a field selector may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `metadata.name`.
    Name,
    /// `metadata.namespace`.
    Namespace,
    /// `spec.nodeName` (Pods only).
    NodeName,
    /// `status.phase` (Pods only).
    Phase,
    /// Another field the kind supports as a field label (see [`field_labels`]), by path.
    Path(&'static str),
}

/// The extra field labels upstream supports for `resource` (beyond `metadata.name`,
/// `metadata.namespace`, and the Pods' `spec.nodeName` / `status.phase`).
pub fn field_labels(resource: Resource) -> &'static [&'static str] {
    match resource {
        Resource::Pods => &[
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        Resource::Events => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        Resource::Nodes => &["spec.unschedulable"],
        Resource::Namespaces => &["status.phase"],
        Resource::Jobs => &["status.successful"],
        _ => &[],
    }
}

/// The value of a dotted field path as a field selector compares it (`""` when absent;
/// booleans and numbers as text). `source` of an Event is `source.component`.
fn field_text(obj: &Value, path: &str) -> String {
    let path = if path == "source" {
        "source.component"
    } else {
        path
    };
    let mut cur = obj;
    for part in path.split('.') {
        cur = &cur[part];
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A parsed field selector: equality and inequality on supported fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// `(field, value, equal)` terms, ANDed; `equal == false` means `!=`.
    pub terms: Vec<(Field, String, bool)>,
}

impl FieldSelector {
    /// Parses the `fieldSelector` query parameter; unsupported fields are a 400.
    /// Only `metadata.name` and `metadata.namespace` are known without a resource.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        Self::parse_for(None, s)
    }

    /// Parses a field selector for `resource`: Pods also support `spec.nodeName` and
    /// `status.phase`, as upstream's field label conversion does.
    pub fn parse_for(resource: Option<Resource>, s: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for part in s.split(',') {
            let p = part.trim();
            let (k, v, eq) = if let Some((k, v)) = p.split_once("!=") {
                (k, v, false)
            } else if let Some((k, v)) = p.split_once("==") {
                (k, v, true)
            } else if let Some((k, v)) = p.split_once('=') {
                (k, v, true)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{p}'"
                )));
            };
            let field = match k.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                "spec.nodeName" if resource == Some(Resource::Pods) => Field::NodeName,
                "status.phase" if resource == Some(Resource::Pods) => Field::Phase,
                other => match resource.and_then(|r| field_labels(r).iter().find(|f| **f == other))
                {
                    Some(f) => Field::Path(f),
                    None => {
                        return Err(ApiError::bad_request(format!(
                            "field label not supported: {other}"
                        )));
                    }
                },
            };
            terms.push((field, v.trim().to_string(), eq));
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the object satisfies every term.
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(f, v, eq)| {
            let (actual, boolish) = match f {
                Field::Name => (field_text(obj, "metadata.name"), false),
                Field::Namespace => (field_text(obj, "metadata.namespace"), false),
                Field::NodeName => (field_text(obj, "spec.nodeName"), false),
                Field::Phase => (field_text(obj, "status.phase"), false),
                Field::Path(p) => (field_text(obj, p), true),
            };
            // An absent boolean field label (spec.hostNetwork, spec.unschedulable) is "false".
            let equal = actual == *v || (boolish && actual.is_empty() && v == "false");
            equal == *eq
        })
    }
}

/// A label, a field and a shard selector together.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    /// The label selector.
    pub labels: LabelSelector,
    /// The field selector.
    pub fields: FieldSelector,
    /// KEP-5866's `shardSelector`, when the request has one and the server honours it.
    pub shard: Option<ShardSelector>,
}

impl Selectors {
    /// Parses both selectors from their optional query parameters.
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Self, ApiError> {
        Ok(Selectors {
            labels: LabelSelector::parse(labels.unwrap_or(""))?,
            fields: FieldSelector::parse(fields.unwrap_or(""))?,
            shard: None,
        })
    }

    /// Parses both selectors for `resource` (which decides the supported field labels).
    pub fn parse_for(
        resource: Resource,
        labels: Option<&str>,
        fields: Option<&str>,
    ) -> Result<Self, ApiError> {
        Ok(Selectors {
            labels: LabelSelector::parse(labels.unwrap_or(""))?,
            fields: FieldSelector::parse_for(Some(resource), fields.unwrap_or(""))?,
            shard: None,
        })
    }

    /// Also `shardSelector` (KEP-5866), when given.
    pub fn with_shard(mut self, shard: Option<&str>) -> Result<Self, ApiError> {
        self.shard = shard.map(ShardSelector::parse).transpose()?;
        Ok(self)
    }

    /// Whether the object satisfies all of them.
    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches_object(obj)
            && self.fields.matches_object(obj)
            && self.shard.as_ref().is_none_or(|s| s.matches(obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn equality_selectors_parse_and_match() {
        let s = LabelSelector::parse("app=web, tier==front,env!=prod").unwrap();
        assert_eq!(s.requirements.len(), 3);
        assert!(s.matches_object(&obj(json!({"app": "web", "tier": "front"}))));
        assert!(!s.matches_object(&obj(json!({"app": "web", "tier": "front", "env": "prod"}))));
        assert!(!s.matches_object(&obj(json!({"app": "db", "tier": "front"}))));
    }

    #[test]
    fn set_based_selectors_parse_and_match() {
        let s = LabelSelector::parse("app in (web, api),env notin (prod),owner,!legacy").unwrap();
        assert_eq!(
            s.requirements,
            vec![
                Requirement::In("app".into(), vec!["web".into(), "api".into()]),
                Requirement::NotIn("env".into(), vec!["prod".into()]),
                Requirement::Exists("owner".into()),
                Requirement::DoesNotExist("legacy".into()),
            ]
        );
        assert!(s.matches_object(&obj(json!({"app": "api", "owner": "me"}))));
        assert!(!s.matches_object(&obj(json!({"app": "api", "owner": "me", "legacy": "y"}))));
        assert!(!s.matches_object(&obj(json!({"app": "api"}))));
        assert!(!s.matches_object(&obj(json!({"app": "x", "owner": "me"}))));
    }

    #[test]
    fn an_empty_selector_matches_objects_without_labels() {
        let s = LabelSelector::parse("").unwrap();
        assert!(s.matches_object(&json!({"metadata": {}})));
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        for bad in ["app in web", "a=b,,c=d", "app in (a", "a=b c", "!"] {
            let e = LabelSelector::parse(bad).unwrap_err();
            assert_eq!(e.code(), 400, "{bad}");
        }
    }

    #[test]
    fn events_select_by_involved_object_and_nodes_by_unschedulable() {
        let ev = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "kubelet"}});
        let f = FieldSelector::parse_for(
            Some(Resource::Events),
            "involvedObject.name=p,involvedObject.kind=Pod,source=kubelet",
        )
        .unwrap();
        assert!(f.matches_object(&ev));
        let f =
            FieldSelector::parse_for(Some(Resource::Nodes), "spec.unschedulable=false").unwrap();
        assert!(f.matches_object(&json!({"spec": {}})));
        assert!(!f.matches_object(&json!({"spec": {"unschedulable": true}})));
        assert!(FieldSelector::parse_for(Some(Resource::Nodes), "involvedObject.name=p").is_err());
    }

    #[test]
    fn field_selectors_support_name_and_namespace_only() {
        let f = FieldSelector::parse("metadata.name=a,metadata.namespace!=other").unwrap();
        assert!(f.matches_object(&obj(json!({}))));
        let f = FieldSelector::parse("metadata.name==b").unwrap();
        assert!(!f.matches_object(&obj(json!({}))));
        assert_eq!(
            FieldSelector::parse("spec.nodeName=x").unwrap_err().code(),
            400
        );
    }
}
