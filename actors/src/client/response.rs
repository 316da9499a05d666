//! Reading an API response ourselves instead of through kube-rs' `request`, which logs the
//! whole body of a response that does not decode (at WARN) and of an error that is not a
//! Status (at DEBUG): a body carries Pod env values and Secret data. A failure here says the
//! status code and the Status' reason and message, or the size of a body it does not show.

use bytes::Bytes;
use serde::Deserialize;

/// Why a request got no usable body.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    /// The request failed before an answer (transport, the deadline).
    #[error(transparent)]
    Send(kube::Error),
    /// The server answered with an error Status.
    #[error("{message} ({code} {reason})")]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The Status' reason (`Expired`, `Forbidden`, ...).
        reason: String,
        /// The Status' message.
        message: String,
    },
    /// The server answered with an error and a body that is not a Status.
    #[error("HTTP {code} with a body that is not a Status ({bytes} bytes, not logged)")]
    Opaque {
        /// The HTTP status code.
        code: u16,
        /// The body's size.
        bytes: usize,
    },
    /// The body could not be read in full.
    #[error("reading the response: {0}")]
    Body(kube::Error),
    /// The body is larger than the caller takes.
    #[error("the response is larger than {limit} bytes")]
    TooLarge {
        /// The most the caller takes.
        limit: usize,
    },
}

impl ResponseError {
    /// The HTTP status code, when the server answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            Self::Status { code, .. } | Self::Opaque { code, .. } => Some(*code),
            Self::Send(_) | Self::Body(_) | Self::TooLarge { .. } => None,
        }
    }
}

/// Where a JSON document broke, without what it said (`data error at line 1 column 40`): the
/// message serde_json gives quotes the offending value, which may be a Secret's.
pub fn json_error_site(error: &serde_json::Error) -> String {
    let category = match error.classify() {
        serde_json::error::Category::Io => "I/O",
        serde_json::error::Category::Syntax => "syntax",
        serde_json::error::Category::Data => "data",
        serde_json::error::Category::Eof => "truncated",
    };
    format!(
        "{category} error at line {} column {}",
        error.line(),
        error.column()
    )
}

/// The error a failed response's `body` stands for.
pub fn status_error(code: u16, body: &[u8]) -> ResponseError {
    #[derive(Deserialize)]
    struct StatusBody {
        #[serde(default)]
        kind: String,
        #[serde(default)]
        reason: String,
        #[serde(default)]
        message: String,
    }
    if let Ok(status) = tidemark_engine::proto::Unknown::read(body)
        .and_then(|unknown| tidemark_engine::proto::Status::read(unknown.raw))
    {
        return ResponseError::Status {
            code,
            reason: status.reason,
            message: status.message,
        };
    }
    match serde_json::from_slice::<StatusBody>(body) {
        Ok(s) if s.kind == "Status" => ResponseError::Status {
            code,
            reason: s.reason,
            message: s.message,
        },
        _ => ResponseError::Opaque {
            code,
            bytes: body.len(),
        },
    }
}

/// Sends `request` and reads its whole body, of at most `limit` bytes; a status other than 2xx
/// is an error.
pub async fn fetch(
    client: &kube::Client,
    request: http::Request<Vec<u8>>,
    limit: usize,
) -> Result<Bytes, ResponseError> {
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .map_err(ResponseError::Send)?;
    let status = response.status();
    let body = read_at_most(response.into_body(), limit).await?;
    if status.is_success() {
        Ok(body)
    } else {
        Err(status_error(status.as_u16(), &body))
    }
}

/// Reads `body` whole, refusing more than `limit` bytes. The frames are kept as they arrive
/// and joined once at the end: a list page of several megabytes is copied once, not once per
/// doubling of a growing buffer (and not at all when it came in one frame).
pub async fn read_at_most(
    mut body: kube::client::Body,
    limit: usize,
) -> Result<Bytes, ResponseError> {
    use http_body_util::BodyExt as _;
    let mut frames: Vec<Bytes> = Vec::new();
    let mut length = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(ResponseError::Body)?;
        if let Ok(data) = frame.into_data() {
            if length + data.len() > limit {
                return Err(ResponseError::TooLarge { limit });
            }
            length += data.len();
            frames.push(data);
        }
    }
    Ok(join(frames, length))
}

/// The frames as one buffer of `length` bytes.
fn join(frames: Vec<Bytes>, length: usize) -> Bytes {
    if let [only] = frames.as_slice() {
        return only.clone();
    }
    let mut joined = bytes::BytesMut::with_capacity(length);
    for frame in &frames {
        joined.extend_from_slice(frame);
    }
    joined.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_joined_in_order_into_one_buffer_of_their_length() {
        let frames = vec![
            Bytes::from_static(b"{\"a\":"),
            Bytes::from_static(b"1"),
            Bytes::from_static(b"}"),
        ];
        let joined = join(frames, 7);
        assert_eq!(&joined[..], b"{\"a\":1}");
        assert_eq!(
            join(vec![Bytes::from_static(b"one")], 3),
            Bytes::from_static(b"one")
        );
        assert!(join(Vec::new(), 0).is_empty());
    }

    #[test]
    fn a_json_error_site_never_quotes_the_value() {
        let error = serde_json::from_str::<u32>(r#""hunter2""#).expect_err("a string");
        assert!(
            error.to_string().contains("hunter2"),
            "serde_json quotes it"
        );
        let site = json_error_site(&error);
        assert!(!site.contains("hunter2"), "{site}");
        assert!(site.starts_with("data error at line 1"), "{site}");
    }

    #[test]
    fn an_error_status_keeps_its_message_and_any_other_body_only_its_size() {
        let status = br#"{"kind":"Status","code":410,"reason":"Expired","message":"too old"}"#;
        let e = status_error(410, status);
        assert_eq!(e.to_string(), "too old (410 Expired)");
        let html = b"<html>password=hunter2</html>";
        let e = status_error(502, html);
        assert_eq!(e.code(), Some(502));
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
