//! Pods answered in protobuf when a client asks for it first (`Accept:
//! application/vnd.kubernetes.protobuf, application/json`, as kube-controller-manager sends):
//! lists as a `PodList`, watches as length-delimited `WatchEvent`s, errors as a `Status`. The
//! store keeps JSON; each answer is written from it by [`crate::protobuf`].
//!
//! What cannot be written in protobuf (a field the schema has no number for, a value of the
//! wrong type: only a test's hostile object) is answered in JSON from then on for that server,
//! as a real API server answers in JSON what it cannot encode; a watch already open in protobuf
//! ends with an `ERROR` event saying why, so its client asks again.

use crate::protobuf::{self, EncodeError};
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt as _;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this server still answers Pods in protobuf.
#[derive(Debug, Default, Clone)]
pub struct ProtobufPods {
    refused: Arc<AtomicBool>,
}

impl ProtobufPods {
    /// Whether a request with `accept` for Pods is answered in protobuf.
    pub fn serves(&self, accept: Option<&str>) -> bool {
        protobuf::prefers_protobuf(accept) && !self.refused.load(Ordering::Relaxed)
    }

    fn refuse(&self, why: &EncodeError) {
        if !self.refused.swap(true, Ordering::Relaxed) {
            tracing::warn!(error = %why, "a Pod cannot be written in protobuf: Pods are answered in JSON from now on");
        }
    }

    /// A list's JSON as a protobuf `PodList`; `None` (and JSON from now on) if an item cannot be
    /// written.
    pub fn list(&self, json: &[u8]) -> Option<Response> {
        match list_body(json) {
            Ok(body) => Some(response(StatusCode::OK, protobuf::MEDIA_TYPE, body)),
            Err(e) => {
                self.refuse(&e);
                None
            }
        }
    }

    /// A watch's JSON lines (one per chunk, as the store's watch sends them) as protobuf frames.
    pub fn watch(&self, json: Body) -> Response {
        let this = self.clone();
        let mut ended = false;
        let frames = json.into_data_stream().filter_map(move |chunk| {
            let out = match chunk {
                Ok(line) if !ended => match protobuf::frame_from_json_event(&line) {
                    Ok(frame) => Some(Ok::<_, axum::Error>(Bytes::from(frame))),
                    Err(e) => {
                        this.refuse(&e);
                        ended = true;
                        let status = protobuf::status(
                            500,
                            "InternalError",
                            &format!("cannot encode as protobuf: {e}"),
                        );
                        Some(Ok(Bytes::from(protobuf::watch_frame("ERROR", &status))))
                    }
                },
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            };
            futures::future::ready(out)
        });
        response(
            StatusCode::OK,
            protobuf::WATCH_MEDIA_TYPE,
            Body::from_stream(frames),
        )
    }
}

/// An error as a protobuf `Status`.
pub fn error(code: u16, status: &Value) -> Response {
    let text = |k: &str| {
        status
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let body = protobuf::status(code, &text("reason"), &text("message"));
    response(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        protobuf::MEDIA_TYPE,
        body,
    )
}

fn response(code: StatusCode, media: &'static str, body: impl Into<Body>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, http::HeaderValue::from_static(media));
    r
}

fn wrong(path: &str, expected: &'static str) -> EncodeError {
    EncodeError::WrongType {
        path: path.to_string(),
        expected,
    }
}

fn list_body(json: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let list: Value = serde_json::from_slice(json).map_err(|_| wrong("list", "JSON"))?;
    let meta = &list["metadata"];
    let items = list["items"]
        .as_array()
        .ok_or_else(|| wrong("items", "an array"))?;
    let encoded = items
        .iter()
        .map(protobuf::encode_pod)
        .collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
    let body = protobuf::list(
        meta["resourceVersion"].as_str().unwrap_or(""),
        meta["continue"].as_str(),
        &refs,
    );
    Ok(protobuf::wrap("v1", "PodList", &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_that_cannot_be_written_sends_the_server_back_to_json_for_good() {
        let pods = ProtobufPods::default();
        let kcm = Some("application/vnd.kubernetes.protobuf, application/json");
        assert!(pods.serves(kcm));
        let fine = br#"{"kind":"PodList","metadata":{"resourceVersion":"3"},"items":[{"metadata":{"name":"a"}}]}"#;
        assert!(pods.list(fine).is_some());
        let odd = br#"{"kind":"PodList","metadata":{"resourceVersion":"4"},"items":[{"metadata":{"name":"a"},"spec":{"notAField":1}}]}"#;
        assert!(pods.list(odd).is_none(), "answered in JSON instead");
        assert!(!pods.serves(kcm), "and from then on");
    }
}
