//! The metadata of a JSON list page (its resourceVersion and continue token), read from the
//! page's first bytes as they stream past, with the informer's own head reader
//! ([`read_head`]): the items themselves are never kept or parsed.

use memchr::memmem;
use tidemark_actors::informer::head::read_head;

const ITEMS_KEY: &[u8] = b"\"items\":[";
/// A list head longer than this has no items key where a list page has it.
pub const HEAD_LIMIT: usize = 64 << 10;

/// A list page's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListHead {
    /// The list's resourceVersion (where a watch after it starts).
    pub resource_version: String,
    /// The token of the next page; `None` on the last.
    pub continue_token: Option<String>,
}

/// Why a page's metadata could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    /// The first bytes never reached the items.
    #[error("no \"items\" in the first {HEAD_LIMIT} bytes of a list page")]
    TooLong,
    /// The page ended before its items began.
    #[error("a list page ended before its items")]
    Ended,
    /// The metadata is not what a list's is.
    #[error("a list page's metadata does not read as a list's")]
    Unreadable,
}

/// Collects a page's first bytes until its items begin. Only the head is copied when the first
/// chunk holds it, as it does on every page of the bench server.
#[derive(Debug, Default)]
pub struct HeadReader {
    head: Vec<u8>,
    read: Option<ListHead>,
}

impl HeadReader {
    /// Reads the next chunk of the page; chunks after the head are ignored.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), HeadError> {
        if self.read.is_some() {
            return Ok(());
        }
        if self.head.is_empty()
            && let Some(at) = memmem::find(chunk, ITEMS_KEY)
        {
            return self.parse(&chunk[..at + ITEMS_KEY.len()]);
        }
        // The key may straddle the last chunk and this one.
        let search_from = self.head.len().saturating_sub(ITEMS_KEY.len() - 1);
        let room = HEAD_LIMIT.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        match memmem::find(&self.head[search_from..], ITEMS_KEY) {
            Some(at) => {
                let head = std::mem::take(&mut self.head);
                self.parse(&head[..search_from + at + ITEMS_KEY.len()])
            }
            None if self.head.len() >= HEAD_LIMIT => Err(HeadError::TooLong),
            None => Ok(()),
        }
    }

    /// Reads `head` (the page up to its items' opening bracket).
    fn parse(&mut self, head: &[u8]) -> Result<(), HeadError> {
        let read = read_head(head).ok_or(HeadError::Unreadable)?;
        self.read = Some(ListHead {
            resource_version: read.resource_version.unwrap_or_default(),
            continue_token: read.continue_token,
        });
        Ok(())
    }

    /// The metadata, once the page is read.
    pub fn finish(self) -> Result<ListHead, HeadError> {
        self.read.ok_or(HeadError::Ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &[u8] = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"42:500"},"items":[{"metadata":{"name":"a","resourceVersion":"7"}},{"metadata":{"name":"b"}}]}"#;

    fn read(page: &[u8], chunk: usize) -> Result<ListHead, HeadError> {
        let mut reader = HeadReader::default();
        for c in page.chunks(chunk) {
            reader.feed(c)?;
        }
        reader.finish()
    }

    #[test]
    fn the_head_gives_the_version_and_token_however_the_page_is_cut() {
        for chunk in 1..=PAGE.len() {
            let head = read(PAGE, chunk).expect("a head");
            assert_eq!(head.resource_version, "42", "chunks of {chunk}");
            assert_eq!(head.continue_token.as_deref(), Some("42:500"));
        }
    }

    #[test]
    fn the_last_page_has_no_token() {
        let page = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":""},"items":[]}"#;
        let head = read(page, 16).expect("a head");
        assert_eq!(head.continue_token, None);
        let page = br#"{"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[]}"#;
        assert_eq!(read(page, 16).expect("a head").continue_token, None);
    }

    #[test]
    fn a_page_without_items_or_with_a_bad_head_is_an_error() {
        assert!(matches!(
            read(br#"{"kind":"Status","code":500}"#, 8),
            Err(HeadError::Ended)
        ));
        assert!(matches!(
            read(br#"{"metadata":{"resourceVersion":7},"items":[]}"#, 8),
            Err(HeadError::Unreadable)
        ));
        let endless = [b' '; HEAD_LIMIT + 10];
        assert!(matches!(read(&endless, 4096), Err(HeadError::TooLong)));
    }
}
