//! Mapping kube-rs errors onto the engine's write error classes.

use tidemark_engine::{WriteError, WriteErrorKind};

/// Classifies a kube-rs error the way a controller must react to it.
pub fn classify(error: &kube::Error) -> WriteError {
    let kind = match error {
        kube::Error::Api(status) => match (status.code, status.reason.as_str()) {
            (409, "AlreadyExists") => WriteErrorKind::AlreadyExists,
            (409, _) => WriteErrorKind::Conflict,
            (404, _) => WriteErrorKind::NotFound,
            (400 | 422, _) => WriteErrorKind::Invalid,
            (429, _) => WriteErrorKind::Throttled,
            _ => WriteErrorKind::Server,
        },
        kube::Error::SerdeError(_) => WriteErrorKind::Server,
        _ => WriteErrorKind::Transport,
    };
    let message = match error {
        kube::Error::Api(status) => {
            format!("{} ({} {})", status.message, status.code, status.reason)
        }
        other => other.to_string(),
    };
    WriteError { kind, message }
}
