//! The bench Pods in protobuf, rendered from templates as their JSON is: each variant's JSON,
//! placeholders in place, is written once as a `Pod` message and split into a tree whose
//! leaves hold the placeholders; rendering fills them and writes each enclosing length again.
//! A changed Pod then costs microseconds instead of a JSON parse and an encode, so the bench
//! server can churn over protobuf as fast as over JSON.

use super::pods::{PodFields, PodTemplates, Template};
use crate::protobuf::schema::{Field, Kind, POD};
use crate::protobuf::{EncodeError, encode_pod, varint_len, write_varint as varint};

/// The integer written where the JSON template has `"@@RESTARTS@@"` (a number in the Pod, so
/// not a string placeholder); no other integer field of the bench Pod holds it.
const RESTARTS_SENTINEL: i64 = 1_999_999_937;

/// A `map<string, string>` entry.
const STRING_ENTRY: &[Field] = &[("key", 1, Kind::Str), ("value", 2, Kind::Str)];
/// A `map<string, Quantity>` entry.
const QUANTITY_ENTRY: &[Field] = &[
    ("key", 1, Kind::Str),
    ("value", 2, Kind::Msg(&[("string", 1, Kind::Str)])),
];
/// `FieldsV1`: its raw JSON.
const FIELDS_V1: &[Field] = &[("raw", 1, Kind::Str)];

/// Part of a message.
#[derive(Debug, Clone)]
enum Node {
    /// Whole fields (keys, lengths and values) without a placeholder.
    Fixed(Vec<u8>),
    /// A length-delimited field whose bytes hold placeholders.
    Text { key: Vec<u8>, template: Template },
    /// The container's restart count (a varint).
    Restarts { key: Vec<u8> },
    /// An embedded message with placeholders inside.
    Nested { key: Vec<u8>, children: Vec<Node> },
}

/// Why a template could not be split (the encoder wrote something this reader does not know).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The JSON template was not written.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The template text is not JSON once the restart count is a number.
    #[error("the Pod template is not JSON: {0}")]
    Json(String),
    /// The written message could not be read back.
    #[error("the written Pod message is cut short or of an unknown wire type")]
    Wire,
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Result<u64, TemplateError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at).ok_or(TemplateError::Wire)?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(value);
        }
    }
    Err(TemplateError::Wire)
}

/// The kind `schema` gives field `tag`, looking through inlined structs' own numbers.
fn kind_of(schema: &[Field], tag: u32) -> Option<Kind> {
    schema
        .iter()
        .find(|(_, number, _)| *number == tag)
        .map(|(_, _, kind)| *kind)
}

/// Splits `message` (fields of `schema`) into nodes.
fn split(message: &[u8], schema: &[Field]) -> Result<Vec<Node>, TemplateError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut at = 0;
    while at < message.len() {
        let start = at;
        let key = read_varint(message, &mut at)?;
        let key_bytes = message.get(start..at).ok_or(TemplateError::Wire)?.to_vec();
        let tag = (key >> 3) as u32;
        let node = match key & 7 {
            0 => {
                let value = read_varint(message, &mut at)?;
                if value == RESTARTS_SENTINEL as u64 {
                    Node::Restarts { key: key_bytes }
                } else {
                    Node::Fixed(message.get(start..at).ok_or(TemplateError::Wire)?.to_vec())
                }
            }
            2 => {
                let len = read_varint(message, &mut at)? as usize;
                let end = at.checked_add(len).ok_or(TemplateError::Wire)?;
                let payload = message.get(at..end).ok_or(TemplateError::Wire)?;
                at = end;
                let kind = kind_of(schema, tag);
                let inner: Option<&[Field]> = match kind {
                    Some(Kind::Msg(inner) | Kind::Msgs(inner) | Kind::Inline(inner)) => Some(inner),
                    Some(Kind::StrMap) => Some(STRING_ENTRY),
                    Some(Kind::QuantityMap) => Some(QUANTITY_ENTRY),
                    Some(Kind::RawJson) => Some(FIELDS_V1),
                    _ => None,
                };
                match inner {
                    _ if matches!(kind, Some(Kind::Time)) => {
                        Node::Fixed(message.get(start..end).ok_or(TemplateError::Wire)?.to_vec())
                    }
                    Some(inner) => {
                        let children = split(payload, inner)?;
                        if children.iter().all(|c| matches!(c, Node::Fixed(_))) {
                            Node::Fixed(
                                message.get(start..end).ok_or(TemplateError::Wire)?.to_vec(),
                            )
                        } else {
                            Node::Nested {
                                key: key_bytes,
                                children,
                            }
                        }
                    }
                    None => {
                        let text = std::str::from_utf8(payload).map_err(|_| TemplateError::Wire)?;
                        let template = Template::new(text);
                        if template.has_placeholders() {
                            Node::Text {
                                key: key_bytes,
                                template,
                            }
                        } else {
                            Node::Fixed(
                                message.get(start..end).ok_or(TemplateError::Wire)?.to_vec(),
                            )
                        }
                    }
                }
            }
            _ => return Err(TemplateError::Wire),
        };
        match (nodes.last_mut(), node) {
            (Some(Node::Fixed(previous)), Node::Fixed(more)) => previous.extend_from_slice(&more),
            (_, node) => nodes.push(node),
        }
    }
    Ok(nodes)
}

/// What a render measures before it writes: the placeholders' text, each embedded message's
/// length (in the order the nodes are met), so the message is written once, in place.
#[derive(Default)]
struct Measured {
    texts: Vec<u8>,
    text_lengths: Vec<usize>,
    nested_lengths: Vec<usize>,
}

/// The bytes `nodes` render to; fills `measured`.
fn measure(nodes: &[Node], pod: &PodFields<'_>, measured: &mut Measured) -> usize {
    let mut total = 0;
    for node in nodes {
        total += match node {
            Node::Fixed(bytes) => bytes.len(),
            Node::Restarts { key } => key.len() + varint_len(pod.restarts),
            Node::Text { key, template } => {
                let before = measured.texts.len();
                template.render_into(&mut measured.texts, pod);
                let len = measured.texts.len() - before;
                measured.text_lengths.push(len);
                key.len() + varint_len(len as u64) + len
            }
            Node::Nested { key, children } => {
                let slot = measured.nested_lengths.len();
                measured.nested_lengths.push(0);
                let len = measure(children, pod, measured);
                measured.nested_lengths[slot] = len;
                key.len() + varint_len(len as u64) + len
            }
        };
    }
    total
}

/// Cursors into a [`Measured`], taken in the order [`measure`] filled it.
struct Cursors {
    text: usize,
    text_index: usize,
    nested_index: usize,
}

fn write(nodes: &[Node], pod: &PodFields<'_>, m: &Measured, at: &mut Cursors, out: &mut Vec<u8>) {
    for node in nodes {
        match node {
            Node::Fixed(bytes) => out.extend_from_slice(bytes),
            Node::Restarts { key } => {
                out.extend_from_slice(key);
                varint(out, pod.restarts);
            }
            Node::Text { key, .. } => {
                let len = m.text_lengths.get(at.text_index).copied().unwrap_or(0);
                at.text_index += 1;
                out.extend_from_slice(key);
                varint(out, len as u64);
                out.extend_from_slice(m.texts.get(at.text..at.text + len).unwrap_or_default());
                at.text += len;
            }
            Node::Nested { key, children } => {
                let len = m.nested_lengths.get(at.nested_index).copied().unwrap_or(0);
                at.nested_index += 1;
                out.extend_from_slice(key);
                varint(out, len as u64);
                write(children, pod, m, at, out);
            }
        }
    }
}

fn render(nodes: &[Node], pod: &PodFields<'_>, out: &mut Vec<u8>) {
    let mut measured = Measured::default();
    let total = measure(nodes, pod, &mut measured);
    out.reserve(total);
    let mut at = Cursors {
        text: 0,
        text_index: 0,
        nested_index: 0,
    };
    write(nodes, pod, &measured, &mut at, out);
}

/// The bench Pods' protobuf templates: the same Pods [`PodTemplates`] renders as JSON.
#[derive(Debug, Clone)]
pub struct PodProtobufTemplates {
    json: PodTemplates,
    variants: Vec<Vec<Node>>,
}

impl PodProtobufTemplates {
    /// Splits each of `json`'s variants.
    pub fn new(json: &PodTemplates) -> Result<Self, TemplateError> {
        let variants = json
            .texts()
            .iter()
            .map(|text| {
                let text = text.replace("\"@@RESTARTS@@\"", &RESTARTS_SENTINEL.to_string());
                let value: serde_json::Value =
                    serde_json::from_str(&text).map_err(|e| TemplateError::Json(e.to_string()))?;
                split(&encode_pod(&value)?, POD)
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            json: json.clone(),
            variants,
        })
    }

    /// Pod `index` at resourceVersion `rv` with `restarts` container restarts, as its `Pod`
    /// message (a list item: no envelope), appended to `out`.
    pub fn render_into(&self, out: &mut Vec<u8>, index: u64, rv: u64, restarts: u64) {
        let (variant, owner, namespace) = self.json.identity(index);
        if let Some(nodes) = self.variants.get(variant) {
            let pod = PodFields {
                index,
                owner,
                namespace: &namespace,
                rv,
                restarts,
            };
            render(nodes, &pod, out);
        }
    }

    /// Pod `index`'s message.
    pub fn render(&self, index: u64, rv: u64, restarts: u64) -> Vec<u8> {
        let mut out = Vec::new();
        self.render_into(&mut out, index, rv, restarts);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_pod_is_the_message_its_json_is_written_as() {
        let json = PodTemplates::new(37);
        let protobuf = PodProtobufTemplates::new(&json).expect("templates");
        for (index, rv, restarts) in [
            (0, 1, 0),
            (1, 99, 1),
            (2, 128, 127),
            (3, 1_000_000, 128),
            (77, 4_711, 300),
            (1_234_567, 9_999_999_999, 70_000),
        ] {
            let value: serde_json::Value =
                serde_json::from_slice(&json.render(index, rv, restarts)).expect("JSON");
            assert_eq!(
                protobuf.render(index, rv, restarts),
                encode_pod(&value).expect("encode"),
                "Pod {index} at {rv} with {restarts} restarts"
            );
        }
    }

    #[test]
    fn only_fields_with_placeholders_are_split() {
        let protobuf = PodProtobufTemplates::new(&PodTemplates::new(3)).expect("templates");
        for nodes in &protobuf.variants {
            // metadata, spec (node name fixed: whole), status: at most three top-level nodes
            // and the spec is one fixed run.
            assert!(nodes.len() <= 3, "{} top-level nodes", nodes.len());
            assert!(matches!(nodes.first(), Some(Node::Nested { .. })));
        }
    }
}
