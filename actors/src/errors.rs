//! Mapping kube-rs errors onto the engine's write error classes, with messages that never
//! carry a response body.

use tidemark_engine::{WriteError, WriteErrorKind};

/// The reason kube-rs gives a Status it made up from an error body that was not one (the
/// body itself becomes the message).
const UNPARSED_ERROR_BODY: &str = "Failed to parse error data";

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
    WriteError {
        kind,
        message: describe(error),
    }
}

/// A kube-rs error in words that quote no response body: serde_json's messages quote the
/// offending value, and kube-rs makes an error body that is not a Status the message.
pub fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if status.reason == UNPARSED_ERROR_BODY => format!(
            "HTTP {} with a body that is not a Status ({} bytes, not logged)",
            status.code,
            status.message.len()
        ),
        kube::Error::Api(status) => {
            format!("{} ({} {})", status.message, status.code, status.reason)
        }
        kube::Error::SerdeError(e) => format!(
            "the response does not decode ({})",
            crate::client::response::json_error_site(e)
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_that_does_not_decode_is_described_without_its_value() {
        let serde = serde_json::from_str::<u32>(r#""hunter2""#).expect_err("a string");
        let e = classify(&kube::Error::SerdeError(serde));
        assert!(!e.message.contains("hunter2"), "{}", e.message);
        let status =
            kube::core::Status::failure("<html>hunter2</html>", UNPARSED_ERROR_BODY).with_code(502);
        let e = classify(&kube::Error::Api(status.boxed()));
        assert!(!e.message.contains("hunter2"), "{}", e.message);
        assert!(e.message.contains("502"), "{}", e.message);
    }
}
