//! Failures as the real API server reports them: [`ApiError`] and its `Status` body.

use serde_json::{Value, json};

/// One entry of `Status.details.causes`: which field is wrong and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCause {
    /// Machine-readable reason, e.g. `FieldValueRequired`.
    pub reason: String,
    /// Human-readable message, e.g. `Required value`.
    pub message: String,
    /// The field path, e.g. `spec.containers[0].image`.
    pub field: String,
}

/// A failed request, one variant per `Status` reason the server uses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 404: the object (or path) does not exist.
    #[error("{message}")]
    NotFound {
        /// Kind (or resource) of the missing object.
        kind: String,
        /// Name of the missing object.
        name: String,
        /// Human-readable message.
        message: String,
    },
    /// 409: an object with that name already exists.
    #[error("{message}")]
    AlreadyExists {
        /// Resource of the object.
        kind: String,
        /// Name of the object.
        name: String,
        /// Human-readable message.
        message: String,
    },
    /// 409: optimistic concurrency or a precondition failed.
    #[error("{message}")]
    Conflict {
        /// Resource of the object.
        kind: String,
        /// Name of the object.
        name: String,
        /// Human-readable message.
        message: String,
    },
    /// 410: the requested resourceVersion is compacted.
    #[error("{message}")]
    Expired {
        /// Human-readable message.
        message: String,
    },
    /// 422: the object fails validation.
    #[error("{message}")]
    Invalid {
        /// Kind of the object.
        kind: String,
        /// Name of the object (may be empty).
        name: String,
        /// Human-readable message.
        message: String,
        /// The fields at fault (`details.causes`).
        causes: Vec<StatusCause>,
    },
    /// 400: the request is malformed.
    #[error("{message}")]
    BadRequest {
        /// Human-readable message.
        message: String,
    },
    /// 405: the verb is not supported on this path.
    #[error("{message}")]
    MethodNotAllowed {
        /// Human-readable message.
        message: String,
    },
    /// 415: the body's content type is not supported.
    #[error("{message}")]
    UnsupportedMediaType {
        /// Human-readable message.
        message: String,
    },
    /// 413: the body is too large.
    #[error("{message}")]
    RequestEntityTooLarge {
        /// Human-readable message.
        message: String,
    },
    /// 504: the server could not serve the request in time.
    #[error("{message}")]
    Timeout {
        /// Human-readable message.
        message: String,
    },
    /// 401: no valid credentials (the message is only "Unauthorized", as upstream's).
    #[error("Unauthorized")]
    Unauthorized,
    /// 500: an internal failure.
    #[error("{message}")]
    Internal {
        /// Human-readable message.
        message: String,
    },
}

impl ApiError {
    /// 404 for `resource` `name`.
    pub fn not_found(resource: &str, name: &str) -> Self {
        ApiError::NotFound {
            kind: resource.to_string(),
            name: name.to_string(),
            message: format!("{resource} \"{name}\" not found"),
        }
    }

    /// 409 AlreadyExists for `resource` `name`.
    pub fn already_exists(resource: &str, name: &str) -> Self {
        ApiError::AlreadyExists {
            kind: resource.to_string(),
            name: name.to_string(),
            message: format!("{resource} \"{name}\" already exists"),
        }
    }

    /// 409 Conflict for a stale resourceVersion.
    pub fn conflict_modified(resource: &str, name: &str) -> Self {
        ApiError::Conflict {
            kind: resource.to_string(),
            name: name.to_string(),
            message: format!(
                "Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            ),
        }
    }

    /// 409 Conflict with a custom explanation (e.g. a failed precondition).
    pub fn conflict(resource: &str, name: &str, why: &str) -> Self {
        ApiError::Conflict {
            kind: resource.to_string(),
            name: name.to_string(),
            message: format!("Operation cannot be fulfilled on {resource} \"{name}\": {why}"),
        }
    }

    /// 410 Expired with `message`.
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::Expired {
            message: message.into(),
        }
    }

    /// 422 Invalid.
    pub fn invalid(kind: &str, name: &str, why: &str) -> Self {
        ApiError::Invalid {
            kind: kind.to_string(),
            name: name.to_string(),
            message: format!("{kind} \"{name}\" is invalid: {why}"),
            causes: Vec::new(),
        }
    }

    /// 422 Invalid with one cause per field at fault, worded as upstream.
    pub fn invalid_causes(kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let parts: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let why = match parts.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        ApiError::Invalid {
            kind: kind.to_string(),
            name: name.to_string(),
            message: format!("{kind} \"{name}\" is invalid: {why}"),
            causes,
        }
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            message: message.into(),
        }
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        match self {
            ApiError::NotFound { .. } => 404,
            ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } => 409,
            ApiError::Expired { .. } => 410,
            ApiError::Invalid { .. } => 422,
            ApiError::BadRequest { .. } => 400,
            ApiError::MethodNotAllowed { .. } => 405,
            ApiError::UnsupportedMediaType { .. } => 415,
            ApiError::RequestEntityTooLarge { .. } => 413,
            ApiError::Timeout { .. } => 504,
            ApiError::Unauthorized => 401,
            ApiError::Internal { .. } => 500,
        }
    }

    /// The `Status.reason`, as the real server spells it.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::NotFound { .. } => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } => "Conflict",
            ApiError::Expired { .. } => "Expired",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::BadRequest { .. } => "BadRequest",
            ApiError::MethodNotAllowed { .. } => "MethodNotAllowed",
            ApiError::UnsupportedMediaType { .. } => "UnsupportedMediaType",
            ApiError::RequestEntityTooLarge { .. } => "RequestEntityTooLarge",
            ApiError::Timeout { .. } => "Timeout",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::Internal { .. } => "InternalError",
        }
    }

    /// The `Status` object for this failure.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code(),
        });
        let details = match self {
            ApiError::NotFound { kind, name, .. }
            | ApiError::AlreadyExists { kind, name, .. }
            | ApiError::Conflict { kind, name, .. } => Some(json!({"name": name, "kind": kind})),
            ApiError::Invalid {
                kind, name, causes, ..
            } => {
                let causes: Vec<Value> = causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
                Some(json!({"name": name, "kind": kind, "causes": causes}))
            }
            _ => None,
        };
        if let (Some(d), Some(obj)) = (details, status.as_object_mut()) {
            obj.insert("details".to_string(), d);
        }
        status
    }
}

/// `Required value` (upstream `FieldValueRequired`).
pub const REQUIRED: &str = "FieldValueRequired";

/// `Invalid value` (upstream `FieldValueInvalid`).
pub const INVALID: &str = "FieldValueInvalid";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_status_carries_reason_code_and_details() {
        let s = ApiError::conflict_modified("pods", "a").to_status();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["status"], "Failure");
        assert_eq!(s["reason"], "Conflict");
        assert_eq!(s["code"], 409);
        assert_eq!(s["details"]["name"], "a");
        assert!(
            s["message"]
                .as_str()
                .is_some_and(|m| m.contains("the object has been modified"))
        );
    }
}
