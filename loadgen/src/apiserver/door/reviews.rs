//! TokenReview, SubjectAccessReview, SelfSubjectAccessReview and TokenRequest: what a
//! component serving its own port (kube-controller-manager's `/metrics`) asks the API
//! server, and how a ServiceAccount gets a token.

use std::time::Duration;

use serde_json::{Value, json};

use super::Door;
use crate::apiserver::status::ApiError;
use crate::rbac::{Attributes, Decision, ResourceAttributes, UserInfo};

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn spec_of<'a>(body: &'a Value, kind: &str) -> Result<&'a Value, ApiError> {
    let spec = &body["spec"];
    if spec.is_object() {
        Ok(spec)
    } else {
        Err(ApiError::invalid(kind, "", "spec: Required value"))
    }
}

/// The attributes a (Self)SubjectAccessReview spec asks about.
fn review_attributes(spec: &Value, kind: &str) -> Result<Attributes, ApiError> {
    let res = &spec["resourceAttributes"];
    let non = &spec["nonResourceAttributes"];
    match (res.is_object(), non.is_object()) {
        (true, false) => Ok(Attributes::Resource(ResourceAttributes {
            verb: text(&res["verb"]),
            api_group: text(&res["group"]),
            api_version: text(&res["version"]),
            resource: text(&res["resource"]),
            subresource: text(&res["subresource"]),
            namespace: text(&res["namespace"]),
            name: text(&res["name"]),
        })),
        (false, true) => Ok(Attributes::NonResource {
            verb: text(&non["verb"]),
            path: text(&non["path"]),
        }),
        _ => Err(ApiError::invalid(
            kind,
            "",
            "spec.resourceAttributes: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}

fn access_status(decision: Decision) -> Value {
    match decision {
        Decision::Allow => json!({"allowed": true}),
        Decision::Deny { reason } if reason.is_empty() => json!({"allowed": false}),
        Decision::Deny { reason } => json!({"allowed": false, "reason": reason}),
    }
}

/// Answers a review: `plural` is one of [`crate::apiserver::discovery::REVIEWS`]; `caller` is the
/// authenticated user (needed by SelfSubjectAccessReview).
pub(crate) fn review(
    door: &Door,
    plural: &str,
    caller: Option<&UserInfo>,
    body: &Value,
) -> Result<Value, ApiError> {
    let (api_version, kind, status) = match plural {
        "tokenreviews" => {
            let spec = spec_of(body, "TokenReview")?;
            let token = text(&spec["token"]);
            let status = match door.user_of_token(&token) {
                Some(user) => json!({
                    "authenticated": true,
                    "user": {"username": user.name, "uid": user.uid, "groups": user.groups},
                    "audiences": spec["audiences"].as_array().cloned().unwrap_or_default(),
                }),
                None => json!({"authenticated": false, "error": "invalid bearer token"}),
            };
            ("authentication.k8s.io/v1", "TokenReview", status)
        }
        "subjectaccessreviews" => {
            let spec = spec_of(body, "SubjectAccessReview")?;
            let user = UserInfo {
                name: text(&spec["user"]),
                uid: text(&spec["uid"]),
                groups: strings(&spec["groups"]),
            };
            if user.name.is_empty() && user.groups.is_empty() {
                return Err(ApiError::invalid(
                    "SubjectAccessReview",
                    "",
                    "spec.user: Invalid value: \"\": at least one of user or group must be specified",
                ));
            }
            let attrs = review_attributes(spec, "SubjectAccessReview")?;
            let status = access_status(door.authorize(&user, &attrs));
            ("authorization.k8s.io/v1", "SubjectAccessReview", status)
        }
        "selfsubjectaccessreviews" => {
            let spec = spec_of(body, "SelfSubjectAccessReview")?;
            let attrs = review_attributes(spec, "SelfSubjectAccessReview")?;
            let status = match caller {
                Some(user) => access_status(door.authorize(user, &attrs)),
                None => json!({"allowed": false, "reason": "no authenticated user"}),
            };
            ("authorization.k8s.io/v1", "SelfSubjectAccessReview", status)
        }
        other => return Err(ApiError::bad_request(format!("unknown review {other}"))),
    };
    Ok(json!({
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {"creationTimestamp": null},
        "spec": body["spec"],
        "status": status,
    }))
}

/// Upstream's bounds on `expirationSeconds`: at least 10 minutes, 1 hour by default.
const MIN_EXPIRATION: u64 = 600;
const DEFAULT_EXPIRATION: u64 = 3600;

/// Answers a TokenRequest for ServiceAccount `namespace/name`.
pub(crate) fn token_request(
    door: &Door,
    namespace: &str,
    name: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    let seconds = spec["expirationSeconds"]
        .as_u64()
        .unwrap_or(DEFAULT_EXPIRATION);
    if seconds < MIN_EXPIRATION {
        return Err(ApiError::invalid(
            "TokenRequest",
            name,
            "spec.expirationSeconds: Invalid value: may not specify a duration less than 10 minutes",
        ));
    }
    let token = door
        .tokens
        .issue_for_service_account(&door.store, namespace, name, Duration::from_secs(seconds))
        .map_err(|_| ApiError::not_found("serviceaccounts", name))?;
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(
            i64::try_from(seconds).unwrap_or(i64::MAX),
        ))
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
        "spec": {
            "audiences": spec["audiences"].as_array().cloned().unwrap_or_default(),
            "expirationSeconds": seconds,
            "boundObjectRef": null,
        },
        "status": {"token": token, "expirationTimestamp": expires},
    }))
}
