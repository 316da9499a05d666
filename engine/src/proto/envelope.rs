//! What wraps an object on the wire: the `k8s\0` prefix and `runtime.Unknown` around every
//! object and list, a `*List`'s metadata and items, a watch event (`metav1.WatchEvent` with the
//! object as a `RawExtension`), and `metav1.Status` for errors. Field numbers are those of
//! `k8s.io/apimachinery`'s `generated.proto`.

use super::wire::{Fields, Value, WireError};

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch: length-delimited `WatchEvent`s.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The four bytes before every protobuf object: `k8s` and encoding style 0 (`runtime.Unknown`).
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf body is not what the API server sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// Not a protobuf message.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// An object without the `k8s\0` prefix.
    #[error("protobuf object without the k8s\\0 prefix")]
    NoMagic,
    /// A field the message must carry is absent.
    #[error("protobuf {message} has no {field}")]
    Missing {
        /// The message.
        message: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A string field that is not UTF-8, or a number where a string belongs.
    #[error("protobuf {message}.{field} is not a string")]
    NotAString {
        /// The message.
        message: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A `runtime.Unknown` whose content is encoded (gzip) or not protobuf.
    #[error("protobuf object encoded as {0:?}, not plain protobuf")]
    Encoding(String),
    /// A watch frame longer than the limit.
    #[error("protobuf watch frame of {len} bytes is over the limit of {limit}")]
    FrameTooLong {
        /// The frame's declared length.
        len: usize,
        /// The limit.
        limit: usize,
    },
}

fn string<'a>(
    value: Value<'a>,
    message: &'static str,
    field: &'static str,
) -> Result<&'a str, ProtoError> {
    value.str().ok_or(ProtoError::NotAString { message, field })
}

/// A `runtime.Unknown`: an object with its type, its bytes not yet read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unknown<'a> {
    /// `typeMeta.apiVersion`.
    pub api_version: &'a str,
    /// `typeMeta.kind`: `Pod`, `PodList`, `Status`, ...
    pub kind: &'a str,
    /// The object's own message (`Pod`, `PodList`, ...).
    pub raw: &'a [u8],
}

impl<'a> Unknown<'a> {
    /// Reads `k8s\0` and the `runtime.Unknown` after it.
    pub fn read(bytes: &'a [u8]) -> Result<Self, ProtoError> {
        let body = bytes.strip_prefix(MAGIC).ok_or(ProtoError::NoMagic)?;
        let mut unknown = Unknown::default();
        for field in Fields::new(body) {
            match field? {
                (1, Value::Bytes(type_meta)) => {
                    for field in Fields::new(type_meta) {
                        match field? {
                            (1, v) => unknown.api_version = string(v, "TypeMeta", "apiVersion")?,
                            (2, v) => unknown.kind = string(v, "TypeMeta", "kind")?,
                            _ => {}
                        }
                    }
                }
                (2, Value::Bytes(raw)) => unknown.raw = raw,
                (3, v) => {
                    let encoding = string(v, "Unknown", "contentEncoding")?;
                    if !encoding.is_empty() {
                        return Err(ProtoError::Encoding(encoding.to_string()));
                    }
                }
                (4, v) => {
                    let content_type = string(v, "Unknown", "contentType")?;
                    if !content_type.is_empty() && content_type != MEDIA_TYPE {
                        return Err(ProtoError::Encoding(content_type.to_string()));
                    }
                }
                _ => {}
            }
        }
        Ok(unknown)
    }
}

/// A `*List` (`PodList`, `ReplicaSetList`, ...): its `ListMeta` and each item's message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct List<'a> {
    /// `metadata.resourceVersion`.
    pub resource_version: Option<&'a str>,
    /// `metadata.continue`, when more pages follow.
    pub continue_token: Option<&'a str>,
    /// The items, each an object's message without prefix (lists embed their items bare).
    pub items: Vec<&'a [u8]>,
}

impl<'a> List<'a> {
    /// Reads a list's message (the `raw` of its [`Unknown`]).
    pub fn read(raw: &'a [u8]) -> Result<Self, ProtoError> {
        let mut list = List::default();
        for field in Fields::new(raw) {
            match field? {
                (1, Value::Bytes(meta)) => {
                    for field in Fields::new(meta) {
                        match field? {
                            (2, v) => {
                                list.resource_version =
                                    Some(string(v, "ListMeta", "resourceVersion")?)
                            }
                            (3, v) => {
                                let token = string(v, "ListMeta", "continue")?;
                                list.continue_token = Some(token).filter(|t| !t.is_empty());
                            }
                            _ => {}
                        }
                    }
                }
                (2, Value::Bytes(item)) => list.items.push(item),
                _ => {}
            }
        }
        Ok(list)
    }
}

/// One `metav1.WatchEvent` of a protobuf watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchEvent<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub kind: &'a str,
    /// The object, prefixed and wrapped as [`Unknown::read`] reads it.
    pub object: Unknown<'a>,
}

impl<'a> WatchEvent<'a> {
    /// Reads one frame of a watch.
    pub fn read(frame: &'a [u8]) -> Result<Self, ProtoError> {
        let (mut kind, mut object) = (None, None);
        for field in Fields::new(frame) {
            match field? {
                (1, v) => kind = Some(string(v, "WatchEvent", "type")?),
                (2, Value::Bytes(extension)) => {
                    for field in Fields::new(extension) {
                        if let (1, Value::Bytes(raw)) = field? {
                            object = Some(raw);
                        }
                    }
                }
                _ => {}
            }
        }
        let missing = |field| ProtoError::Missing {
            message: "WatchEvent",
            field,
        };
        Ok(WatchEvent {
            kind: kind.ok_or(missing("type"))?,
            object: Unknown::read(object.ok_or(missing("object"))?)?,
        })
    }
}

/// A `metav1.Status`: what an error answer or a watch's `ERROR` event carries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    /// `code`, the HTTP status it stands for.
    pub code: i32,
    /// `reason`: `Expired`, `NotFound`, ...
    pub reason: String,
    /// `message`.
    pub message: String,
}

impl Status {
    /// Reads a Status's message (the `raw` of its [`Unknown`]).
    pub fn read(raw: &[u8]) -> Result<Self, ProtoError> {
        let mut status = Status::default();
        for field in Fields::new(raw) {
            match field? {
                (3, v) => status.message = string(v, "Status", "message")?.to_string(),
                (4, v) => status.reason = string(v, "Status", "reason")?.to_string(),
                (6, v) => status.code = v.int32().unwrap_or(0),
                _ => {}
            }
        }
        Ok(status)
    }
}

/// Cuts a protobuf watch into its frames: each is a 4-byte big-endian length and that many
/// bytes. Bytes arrive in chunks of any size; a frame over `limit` is an error, not a buffer
/// grown without bound.
#[derive(Debug)]
pub struct Frames {
    buffer: Vec<u8>,
    start: usize,
    limit: usize,
}

impl Frames {
    /// A framer refusing frames longer than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            buffer: Vec::new(),
            start: 0,
            limit,
        }
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 && self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
        }
        self.buffer.extend_from_slice(chunk);
    }

    /// The next whole frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, ProtoError> {
        let pending = &self.buffer[self.start..];
        let Some(header) = pending.get(..4) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if len > self.limit {
            return Err(ProtoError::FrameTooLong {
                len,
                limit: self.limit,
            });
        }
        let Some(frame) = pending.get(4..4 + len) else {
            return Ok(None);
        };
        let frame = frame.to_vec();
        self.start += 4 + len;
        if self.start > self.buffer.len() / 2 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        Ok(Some(frame))
    }

    /// Bytes of a frame begun but not ended (a stream closed here was cut mid-event).
    pub fn partial(&self) -> usize {
        self.buffer.len() - self.start
    }
}

#[cfg(test)]
/// `k8s\0` and a `runtime.Unknown` of `kind` around `raw` (the tests' objects; the simulated
/// servers write their own, `tidemark_loadgen::protobuf`).
pub(crate) fn wrap(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut w = super::wire::Writer::default();
    w.message(1, |t| {
        t.bytes(1, api_version.as_bytes());
        t.bytes(2, kind.as_bytes());
    });
    w.bytes(2, raw);
    w.bytes(3, b"");
    w.bytes(4, b"");
    let mut out = Vec::with_capacity(MAGIC.len() + w.bytes.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&w.bytes);
    out
}

#[cfg(test)]
/// One watch frame: the length, then a `WatchEvent` of `kind` around `object` (as [`wrap`]
/// makes it).
pub(crate) fn watch_frame(kind: &str, object: &[u8]) -> Vec<u8> {
    let mut w = super::wire::Writer::default();
    w.bytes(1, kind.as_bytes());
    w.message(2, |e| e.bytes(1, object));
    let mut out = Vec::with_capacity(4 + w.bytes.len());
    out.extend_from_slice(&(w.bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(&w.bytes);
    out
}

#[cfg(test)]
/// A `metav1.Status`'s message.
pub(crate) fn status_message(code: i32, reason: &str, message: &str) -> Vec<u8> {
    let mut w = super::wire::Writer::default();
    w.message(1, |_| {});
    w.bytes(2, b"Failure");
    w.bytes(3, message.as_bytes());
    w.bytes(4, reason.as_bytes());
    w.int(6, i64::from(code));
    w.bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_unwrapped_from_its_prefix_and_unknown() {
        let bytes = wrap("v1", "Pod", b"\x0a\x00");
        let unknown = Unknown::read(&bytes).expect("decodes");
        assert_eq!((unknown.api_version, unknown.kind), ("v1", "Pod"));
        assert_eq!(unknown.raw, b"\x0a\x00");
        assert_eq!(
            Unknown::read(b"{\"kind\":\"Pod\"}"),
            Err(ProtoError::NoMagic)
        );
    }

    #[test]
    fn a_watch_frame_holds_its_event_type_and_object() {
        let status = wrap("v1", "Status", &status_message(410, "Expired", "too old"));
        let frame = watch_frame("ERROR", &status);
        let mut frames = Frames::new(1 << 20);
        frames.push(&frame[..3]);
        assert_eq!(frames.next_frame(), Ok(None));
        frames.push(&frame[3..]);
        let body = frames
            .next_frame()
            .expect("no error")
            .expect("a whole frame");
        assert_eq!(frames.partial(), 0);
        let event = WatchEvent::read(&body).expect("decodes");
        assert_eq!((event.kind, event.object.kind), ("ERROR", "Status"));
        let status = Status::read(event.object.raw).expect("decodes");
        assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_before_it_is_buffered() {
        let mut frames = Frames::new(16);
        frames.push(&1000u32.to_be_bytes());
        assert_eq!(
            frames.next_frame(),
            Err(ProtoError::FrameTooLong {
                len: 1000,
                limit: 16
            })
        );
    }

    #[test]
    fn gzip_content_is_refused_by_name() {
        let mut w = super::super::wire::Writer::default();
        w.bytes(2, b"x");
        w.bytes(3, b"gzip");
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&w.bytes);
        assert_eq!(
            Unknown::read(&bytes),
            Err(ProtoError::Encoding("gzip".into()))
        );
    }
}
