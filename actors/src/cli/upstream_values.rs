//! Values kube-controller-manager takes that Tidemark narrows: `--kube-api-content-type` (JSON
//! only, protobuf falls back to it) and `--leader-elect-resource-lock` (Leases only).

/// JSON, the content type Tidemark speaks to the API server.
pub const JSON: &str = "application/json";

/// Protobuf, kube-controller-manager's default; accepted, and JSON is used instead.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The only `--leader-elect-resource-lock`.
pub const LEASES: &str = "leases";

/// A value upstream may take that Tidemark refuses, with why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamValueError {
    /// Neither JSON nor protobuf.
    #[error("content type {0:?} is not one the API server speaks: give {PROTOBUF} or {JSON}")]
    ContentType(String),
    /// A lock other than a Lease.
    #[error(
        "resource lock {0:?} is not supported: Tidemark elects its leader through a coordination.k8s.io Lease only ({LEASES}); upstream removed the endpoints and configmaps locks too"
    )]
    ResourceLock(String),
}

/// `--kube-api-content-type`: JSON or protobuf, kept as given (protobuf brings a start-up
/// warning, see `RunArgs::warnings`).
pub fn parse_content_type(text: &str) -> Result<String, UpstreamValueError> {
    match text {
        JSON | PROTOBUF => Ok(text.to_string()),
        other => Err(UpstreamValueError::ContentType(other.to_string())),
    }
}

/// `--leader-elect-resource-lock`: `leases` only.
pub fn parse_resource_lock(text: &str) -> Result<String, UpstreamValueError> {
    match text {
        LEASES => Ok(text.to_string()),
        other => Err(UpstreamValueError::ResourceLock(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_protobuf_are_accepted_and_anything_else_says_why_not() {
        assert_eq!(parse_content_type(JSON), Ok(JSON.to_string()));
        assert_eq!(parse_content_type(PROTOBUF), Ok(PROTOBUF.to_string()));
        let err = parse_content_type("application/yaml").expect_err("yaml");
        assert!(err.to_string().contains("or application/json"), "{err}");
    }

    #[test]
    fn only_a_lease_lock_is_accepted() {
        assert_eq!(parse_resource_lock("leases"), Ok("leases".to_string()));
        for lock in ["endpointsleases", "configmapsleases", "endpoints"] {
            let err = parse_resource_lock(lock).expect_err(lock);
            assert!(
                err.to_string()
                    .contains("through a coordination.k8s.io Lease"),
                "{err}"
            );
        }
    }
}
