//! One watch line read into what it says, borrowing the line: the event's object is decoded
//! straight from its bytes, with no copy of its JSON (kube's `WatchEvent<Box<RawValue>>` copies
//! each object before the projection reads it).

use super::decode::decode;
use crate::client::response::json_error_site;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use tidemark_engine::{DecodeError, Object, Resource, ResourceVersion};

/// What a watch line says.
#[derive(Debug)]
pub enum WatchLine {
    /// ADDED or MODIFIED; the flag is true when the object was read leniently.
    Applied(Object, bool),
    /// DELETED (the object's last state); the flag as for `Applied`.
    Deleted(Object, bool),
    /// A BOOKMARK: the watch has seen everything up to this version.
    Bookmark(ResourceVersion),
    /// An ERROR event with its Status.
    Error {
        /// The Status' `code` (410: the version is gone).
        code: u16,
        /// `message (code reason)`, for the log.
        description: String,
    },
}

/// Why a watch line could not be read. Neither says what the line held.
#[derive(Debug, thiserror::Error)]
pub enum LineFault {
    /// The line is not a watch event.
    #[error("malformed watch event ({site})")]
    Malformed {
        /// Where the JSON broke, or what was missing.
        site: String,
    },
    /// The event is well formed but its object is not one of the resource.
    #[error("the event's object {object} cannot be decoded: {error}")]
    Undecodable {
        /// The object's namespace/name, when it has one.
        object: String,
        /// Why.
        #[source]
        error: DecodeError,
    },
}

#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize)]
struct BookmarkObject {
    metadata: BookmarkMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    resource_version: String,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: u16,
    #[serde(default)]
    message: String,
    #[serde(default)]
    reason: String,
}

fn malformed(site: impl Into<String>) -> LineFault {
    LineFault::Malformed { site: site.into() }
}

/// Reads one watch line of `resource`.
pub fn read_line(resource: Resource, line: &[u8]) -> Result<WatchLine, LineFault> {
    let frame: Frame<'_> =
        serde_json::from_slice(line).map_err(|e| malformed(json_error_site(&e)))?;
    let object = |raw: &RawValue| {
        decode(resource, raw).map_err(|error| LineFault::Undecodable {
            object: super::describe(raw.get()),
            error,
        })
    };
    match &*frame.kind {
        "ADDED" | "MODIFIED" => {
            object(frame.object).map(|(object, lenient)| WatchLine::Applied(object, lenient))
        }
        "DELETED" => {
            object(frame.object).map(|(object, lenient)| WatchLine::Deleted(object, lenient))
        }
        "BOOKMARK" => {
            let bookmark: BookmarkObject = serde_json::from_str(frame.object.get())
                .map_err(|e| malformed(format!("bookmark: {}", json_error_site(&e))))?;
            ResourceVersion::parse(&bookmark.metadata.resource_version)
                .map(WatchLine::Bookmark)
                .map_err(|_| malformed("bookmark: resourceVersion is not a version"))
        }
        "ERROR" => {
            let status: Status = serde_json::from_str(frame.object.get())
                .map_err(|e| malformed(format!("error event: {}", json_error_site(&e))))?;
            Ok(WatchLine::Error {
                code: status.code,
                description: format!("{} ({} {})", status.message, status.code, status.reason),
            })
        }
        _ => Err(malformed("unknown event type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = r#"{"metadata":{"namespace":"demo","name":"web-1","uid":"u1","resourceVersion":"12"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}"#;

    fn line(kind: &str, object: &str) -> Vec<u8> {
        format!(r#"{{"type":"{kind}","object":{object}}}"#).into_bytes()
    }

    #[test]
    fn an_added_pod_is_decoded_from_the_line_itself() {
        let read = read_line(Resource::Pods, &line("ADDED", POD)).expect("reads");
        let WatchLine::Applied(object, lenient) = read else {
            panic!("not applied: {read:?}");
        };
        assert!(!lenient);
        assert_eq!(object.key().to_string(), "demo/web-1");
        assert_eq!(object.resource_version().map(|v| v.get()), Some(12));
    }

    #[test]
    fn modified_and_deleted_carry_their_object() {
        assert!(matches!(
            read_line(Resource::Pods, &line("MODIFIED", POD)),
            Ok(WatchLine::Applied(..))
        ));
        assert!(matches!(
            read_line(Resource::Pods, &line("DELETED", POD)),
            Ok(WatchLine::Deleted(..))
        ));
    }

    #[test]
    fn a_bookmark_gives_its_version() {
        let bookmark = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"77","annotations":{"k8s.io/initial-events-end":"true"}}}"#;
        let read = read_line(Resource::Pods, &line("BOOKMARK", bookmark)).expect("reads");
        assert!(matches!(read, WatchLine::Bookmark(v) if v.get() == 77));
    }

    #[test]
    fn an_error_event_keeps_its_code_and_says_why() {
        let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5 (90)","reason":"Expired","code":410}"#;
        let read = read_line(Resource::Pods, &line("ERROR", status)).expect("reads");
        let WatchLine::Error { code, description } = read else {
            panic!("not an error: {read:?}");
        };
        assert_eq!(code, 410);
        assert_eq!(
            description,
            "too old resource version: 5 (90) (410 Expired)"
        );
    }

    #[test]
    fn a_line_that_is_not_an_event_is_malformed_without_quoting_it() {
        for bad in [
            &br#"{"type":"ADDED"}"#[..],
            br#"{"type":"SOMETHING","object":{}}"#,
            br#"{"type":"BOOKMARK","object":{"metadata":{}}}"#,
            br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"hunter2"}}}"#,
            b"not json hunter2",
        ] {
            let fault = read_line(Resource::Pods, bad).expect_err("malformed");
            assert!(matches!(fault, LineFault::Malformed { .. }), "{fault:?}");
            assert!(!fault.to_string().contains("hunter2"), "{fault}");
        }
    }

    #[test]
    fn an_object_of_the_wrong_shape_is_undecodable_and_named_by_its_key() {
        let not_a_pod = r#"{"metadata":{"namespace":"demo","name":"odd","uid":7}}"#;
        let fault = read_line(Resource::Pods, &line("ADDED", not_a_pod)).expect_err("fails");
        assert!(
            matches!(&fault, LineFault::Undecodable { object, .. } if object == "demo/odd"),
            "{fault:?}"
        );
    }

    #[test]
    fn an_escaped_event_type_still_reads() {
        let escaped = format!(r#"{{"type":"ADD\u0045D","object":{POD}}}"#);
        assert!(matches!(
            read_line(Resource::Pods, escaped.as_bytes()),
            Ok(WatchLine::Applied(..))
        ));
    }
}
