//! A list page's head: its metadata read from the bytes before `"items":`, without scanning the
//! items. kube-apiserver writes a list's `metadata` before its `items` (the order of the Go
//! struct's fields), so the continue token is known at once and the next page is fetched while
//! this one is still being split and decoded. A page whose head does not read that way (items
//! first, or a key the head cannot place) has no head, and the informer waits for the full split.

use super::page::ListMeta;
use memchr::memmem;
use serde::Deserialize;

/// What the head of a page says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageHead {
    /// The list's resourceVersion.
    pub resource_version: Option<String>,
    /// The token of the next page (an empty token is none).
    pub continue_token: Option<String>,
    /// The list carries `metadata.shardInfo`.
    pub shard_info: bool,
}

#[derive(Deserialize)]
struct Head {
    metadata: ListMeta,
}

/// The head of `body`, when its metadata comes before its items.
pub fn read_head(body: &[u8]) -> Option<PageHead> {
    let at = memmem::find(body, br#""items":"#)?;
    let mut head = Vec::with_capacity(at + 3);
    head.extend_from_slice(&body[..at]);
    // The bytes before the items end with the comma after the metadata; closing the object
    // there reads the head as a list without items.
    let trimmed = head.trim_ascii_end().len();
    head.truncate(trimmed);
    if head.pop() != Some(b',') {
        return None;
    }
    head.push(b'}');
    let parsed: Head = serde_json::from_slice(&head).ok()?;
    Some(PageHead {
        resource_version: parsed.metadata.resource_version,
        continue_token: parsed.metadata.continue_token.filter(|c| !c.is_empty()),
        shard_info: parsed.metadata.shard_info.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_gives_version_token_and_shard_info_without_the_items() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"41","continue":"eyJ2Ijo","shardInfo":{"selector":"x"}},"items":[{"not":"read"#;
        assert_eq!(
            read_head(body),
            Some(PageHead {
                resource_version: Some("41".into()),
                continue_token: Some("eyJ2Ijo".into()),
                shard_info: true,
            })
        );
    }

    #[test]
    fn the_last_page_has_no_token() {
        let body = br#"{"metadata":{"resourceVersion":"41","continue":""}, "items": []}"#;
        let head = read_head(body).expect("reads");
        assert_eq!(head.continue_token, None);
        assert!(!head.shard_info);
    }

    #[test]
    fn items_before_the_metadata_leave_no_head() {
        assert_eq!(
            read_head(br#"{"items":[],"metadata":{"resourceVersion":"1"}}"#),
            None
        );
        assert_eq!(
            read_head(br#"{"kind":"List","items":[],"metadata":{"continue":"c"}}"#),
            None
        );
    }

    #[test]
    fn a_page_without_items_or_with_a_broken_head_has_none() {
        assert_eq!(read_head(br#"{"metadata":{"resourceVersion":"1"}}"#), None);
        assert_eq!(
            read_head(br#"{"metadata":{"resourceVersion":1},"items":[]}"#),
            None
        );
        assert_eq!(read_head(br#"{"metadata":{"resourceV"items":[]}"#), None);
    }
}
