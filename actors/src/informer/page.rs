//! A list page split into its objects, each decoded on its own: one item that is not valid
//! UTF-8 (or not an object of the resource) is reported and skipped, and the others are kept.
//! Only the page's frame (its metadata, `items` as an array) must decode, or the page fails as
//! a whole. Errors say where the JSON broke, never what it said.

use crate::client::response::json_error_site;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The text of a body, with every invalid UTF-8 sequence replaced by U+FFFD, and where each
/// replacement went (byte offsets into the text, ascending).
pub struct LossyText<'a> {
    text: Cow<'a, str>,
    replaced: Vec<usize>,
}

impl<'a> LossyText<'a> {
    /// Reads `bytes`, borrowing them when they are valid UTF-8.
    pub fn new(bytes: &'a [u8]) -> Self {
        if let Ok(text) = std::str::from_utf8(bytes) {
            return Self {
                text: Cow::Borrowed(text),
                replaced: Vec::new(),
            };
        }
        let mut text = String::with_capacity(bytes.len());
        let mut replaced = Vec::new();
        for chunk in bytes.utf8_chunks() {
            text.push_str(chunk.valid());
            if !chunk.invalid().is_empty() {
                replaced.push(text.len());
                text.push(char::REPLACEMENT_CHARACTER);
            }
        }
        Self {
            text: Cow::Owned(text),
            replaced,
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Replacements inside `part`, a slice of [`text`](Self::text).
    fn replacements_in(&self, part: &str) -> usize {
        let start = part.as_ptr() as usize - self.text.as_ptr() as usize;
        let end = start + part.len();
        let first = self.replaced.partition_point(|&at| at < start);
        let past = self.replaced.partition_point(|&at| at < end);
        past - first
    }
}

/// One item of a page.
#[derive(Debug)]
pub enum Item<'a> {
    /// Its JSON, valid UTF-8.
    Json(&'a RawValue),
    /// Its JSON held bytes that are not UTF-8 (shown replaced, for naming it).
    InvalidUtf8(&'a RawValue),
}

/// A decoded page.
#[derive(Debug)]
pub struct Page<'a> {
    /// The list's resourceVersion.
    pub resource_version: Option<String>,
    /// The token of the next page, if there is one.
    pub continue_token: Option<String>,
    /// The items, in order.
    pub items: Vec<Item<'a>>,
    /// The list carries `metadata.shardInfo`: the server applied the `shardSelector` asked for
    /// (KEP-5866). A server without the feature ignores the selector and sends every object.
    pub shard_info: bool,
}

/// Why a page could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// The page is not a list.
    #[error("the list page does not decode ({site}; its {bytes} bytes are not logged)")]
    Shape {
        /// Where the JSON broke.
        site: String,
        /// The body's size.
        bytes: usize,
    },
    /// Bytes outside the items are not UTF-8.
    #[error("the list page's metadata is not valid UTF-8")]
    InvalidUtf8,
    /// A protobuf page is not a list.
    #[error("the protobuf list page does not decode: {0}")]
    Protobuf(#[from] tidemark_engine::proto::ProtoError),
}

#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

/// A list's `metadata`: what a page's frame and its head read.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListMeta {
    #[serde(default)]
    pub(super) resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    pub(super) continue_token: Option<String>,
    #[serde(default)]
    pub(super) shard_info: Option<serde::de::IgnoredAny>,
}

/// Splits `body` (read with [`LossyText::new`]) into its items.
pub fn split<'a>(body: &'a LossyText<'_>) -> Result<Page<'a>, PageError> {
    let frame: Frame<'a> = serde_json::from_str(body.text()).map_err(|e| PageError::Shape {
        site: json_error_site(&e),
        bytes: body.text().len(),
    })?;
    let raw_items = frame.items.unwrap_or_default();
    let mut in_items = 0;
    let items = raw_items
        .into_iter()
        .map(|raw| {
            let bad = body.replacements_in(raw.get());
            in_items += bad;
            if bad == 0 {
                Item::Json(raw)
            } else {
                Item::InvalidUtf8(raw)
            }
        })
        .collect();
    if in_items < body.replaced.len() {
        return Err(PageError::InvalidUtf8);
    }
    Ok(Page {
        resource_version: frame.metadata.resource_version,
        continue_token: frame.metadata.continue_token.filter(|c| !c.is_empty()),
        items,
        shard_info: frame.metadata.shard_info.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_with(items: &[&[u8]]) -> Vec<u8> {
        let mut body =
            br#"{"kind":"List","metadata":{"resourceVersion":"9","continue":"c"},"items":["#
                .to_vec();
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(item);
        }
        body.extend_from_slice(b"]}");
        body
    }

    #[test]
    fn one_item_with_invalid_utf8_is_singled_out_and_the_others_are_kept() {
        let body = page_with(&[
            br#"{"metadata":{"name":"a"}}"#,
            b"{\"metadata\":{\"name\":\"b\xff\xfe\"}}",
            br#"{"metadata":{"name":"c","note":"caf\u00e9"}}"#,
        ]);
        let text = LossyText::new(&body);
        let page = split(&text).expect("the page decodes");
        assert_eq!(page.resource_version.as_deref(), Some("9"));
        assert_eq!(page.continue_token.as_deref(), Some("c"));
        let kinds: Vec<bool> = page
            .items
            .iter()
            .map(|i| matches!(i, Item::Json(_)))
            .collect();
        assert_eq!(kinds, [true, false, true]);
    }

    #[test]
    fn a_genuine_replacement_character_is_not_invalid_utf8() {
        let body = page_with(&["{\"name\":\"\u{FFFD}\"}".as_bytes()]);
        let text = LossyText::new(&body);
        let page = split(&text).expect("decodes");
        assert!(matches!(page.items[0], Item::Json(_)));
    }

    #[test]
    fn a_page_that_is_not_a_list_fails_without_quoting_its_body() {
        let body = br#"{"metadata":{"resourceVersion":5},"items":[{"env":"hunter2"}]}"#;
        let text = LossyText::new(body);
        let error = split(&text).expect_err("resourceVersion is a number");
        let message = error.to_string();
        assert!(
            !message.contains("hunter2") && !message.contains("integer"),
            "{message}"
        );
        assert!(message.contains("data error at line 1"), "{message}");
    }

    #[test]
    fn invalid_utf8_outside_the_items_fails_the_page() {
        let body = b"{\"metadata\":{\"resourceVersion\":\"9\xff\"},\"items\":[]}";
        let text = LossyText::new(body);
        assert!(matches!(split(&text), Err(PageError::InvalidUtf8)));
    }

    #[test]
    fn a_sharded_list_says_so_with_its_shard_info() {
        let sharded = LossyText::new(
            br#"{"metadata":{"resourceVersion":"3","shardInfo":{"selector":"shardRange(object.metadata.namespace, '0x0', '0x8')"}},"items":[]}"#,
        );
        assert!(split(&sharded).expect("decodes").shard_info);
        let plain = LossyText::new(br#"{"metadata":{"resourceVersion":"3"},"items":[]}"#);
        assert!(!split(&plain).expect("decodes").shard_info);
    }

    #[test]
    fn null_items_are_an_empty_page() {
        let text = LossyText::new(br#"{"metadata":{"resourceVersion":"3"},"items":null}"#);
        assert!(split(&text).expect("decodes").items.is_empty());
    }
}
