//! One protobuf watch frame read into what it says: the `WatchEvent`'s type and its object,
//! decoded from protobuf (Pods) with the same answers as [`super::event::read_line`].

use super::event::{LineFault, WatchLine};
use tidemark_engine::proto::wire::{Fields, Value};
use tidemark_engine::proto::{Status, WatchEvent};
use tidemark_engine::{Object, Resource, ResourceVersion};

fn malformed(site: impl Into<String>) -> LineFault {
    LineFault::Malformed { site: site.into() }
}

/// Reads one protobuf watch frame of `resource`.
pub fn read_frame(resource: Resource, frame: &[u8]) -> Result<WatchLine, LineFault> {
    let event = WatchEvent::read(frame).map_err(|e| malformed(e.to_string()))?;
    let raw = event.object.raw;
    let object = || {
        Object::decode_protobuf(resource, raw).map_err(|error| LineFault::Undecodable {
            object: describe(raw),
            error,
        })
    };
    match event.kind {
        "ADDED" | "MODIFIED" => object().map(|(o, flagged)| WatchLine::Applied(o, flagged)),
        "DELETED" => object().map(|(o, flagged)| WatchLine::Deleted(o, flagged)),
        "BOOKMARK" => {
            let version =
                meta_string(raw, 6).ok_or_else(|| malformed("bookmark: no resourceVersion"))?;
            ResourceVersion::parse(&version)
                .map(WatchLine::Bookmark)
                .map_err(|_| malformed("bookmark: resourceVersion is not a version"))
        }
        "ERROR" => {
            let status = Status::read(raw).map_err(|e| malformed(format!("error event: {e}")))?;
            Ok(WatchLine::Error {
                code: u16::try_from(status.code).unwrap_or(0),
                description: format!("{} ({} {})", status.message, status.code, status.reason),
            })
        }
        _ => Err(malformed("unknown event type")),
    }
}

/// Field `number` of an object's `metadata` (field 1), as text.
fn meta_string(object: &[u8], number: u32) -> Option<String> {
    let meta = Fields::new(object)
        .map_while(Result::ok)
        .find_map(|(n, v)| (n == 1).then_some(v))
        .and_then(Value::bytes)?;
    Fields::new(meta)
        .map_while(Result::ok)
        .find_map(|(n, v)| (n == number).then_some(v))
        .and_then(Value::str)
        .map(str::to_string)
}

/// The namespace/name of a protobuf object that could not be decoded: all a log line shows.
pub fn describe(object: &[u8]) -> String {
    let part = |n| meta_string(object, n).unwrap_or_else(|| "?".into());
    format!("{}/{}", part(3), part(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_loadgen::protobuf::{encode_pod, status, watch_frame, wrap};

    fn pod(name: &str, uid: &str, version: &str) -> Vec<u8> {
        let json = serde_json::json!({"metadata": {"name": name, "namespace": "demo",
            "uid": uid, "resourceVersion": version}});
        wrap("v1", "Pod", &encode_pod(&json).expect("a Pod"))
    }

    /// The frame without its 4-byte length, as the reader hands it out.
    fn event(kind: &str, object: &[u8]) -> Vec<u8> {
        watch_frame(kind, object)[4..].to_vec()
    }

    #[test]
    fn an_added_pod_bookmark_and_error_read_as_their_json_do() {
        let added = read_frame(Resource::Pods, &event("ADDED", &pod("web-1", "u1", "12")));
        let Ok(WatchLine::Applied(object, false)) = added else {
            panic!("not applied: {added:?}");
        };
        assert_eq!(object.key().to_string(), "demo/web-1");
        assert_eq!(object.resource_version().map(|v| v.get()), Some(12));
        let bookmark = read_frame(Resource::Pods, &event("BOOKMARK", &pod("", "", "40")));
        assert!(matches!(bookmark, Ok(WatchLine::Bookmark(v)) if v.get() == 40));
        let gone = status(410, "Expired", "too old");
        let error = read_frame(Resource::Pods, &event("ERROR", &gone));
        assert!(matches!(error, Ok(WatchLine::Error { code: 410, .. })));
    }

    #[test]
    fn a_pod_without_identity_is_undecodable_and_named_by_its_key() {
        let fault = read_frame(Resource::Pods, &event("MODIFIED", &pod("web-2", "", "13")))
            .expect_err("no uid");
        assert!(
            matches!(&fault, LineFault::Undecodable { object, .. } if object == "demo/web-2"),
            "{fault}"
        );
    }

    #[test]
    fn bytes_that_are_no_watch_event_are_malformed() {
        assert!(matches!(
            read_frame(Resource::Pods, b"\x0a\x05AD"),
            Err(LineFault::Malformed { .. })
        ));
    }
}
