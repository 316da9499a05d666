//! Counts a JSON watch stream's lines as its chunks arrive, and notes each line's
//! resourceVersion without decoding the line or copying it: the first `"resourceVersion":"` of
//! a line is its object's, because kube-apiserver (and the bench server) write an event's
//! `type` first and an object's `metadata` before its `spec` and `status`, and any JSON nested
//! in a string (an annotation) has its quotes escaped.
//!
//! Only the few bytes of a version split between two chunks are copied.

use memchr::memmem;

const VERSION_KEY: &[u8] = b"\"resourceVersion\":\"";
/// The longest version match: the key, the 20 digits of `u64::MAX` and the closing quote.
const LONGEST_MATCH: usize = VERSION_KEY.len() + 21;

/// What a stretch of one line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// A complete version.
    Found(u64),
    /// The key starts here, its value runs past the end of the stretch.
    Cut(usize),
    /// No version (nor a key cut short by the stretch's end, unless it is a prefix of the key).
    Absent,
}

fn scan(stretch: &[u8]) -> Scan {
    let Some(at) = memmem::find(stretch, VERSION_KEY) else {
        return Scan::Absent;
    };
    let value = &stretch[at + VERSION_KEY.len()..];
    match memchr::memchr(b'"', value) {
        Some(end) => parse_digits(&value[..end]).map_or(Scan::Absent, Scan::Found),
        None if stretch.len() - at < LONGEST_MATCH => Scan::Cut(at),
        None => Scan::Absent,
    }
}

fn parse_digits(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            .flatten()
    })
}

/// The lines of a watch stream seen so far, and the highest version of a complete line.
#[derive(Debug, Default)]
pub struct LineTally {
    /// Complete lines (events and bookmarks).
    lines: u64,
    /// The highest version of a complete line.
    version: Option<u64>,
    /// The current line's version, once found.
    line_version: Option<u64>,
    /// The current line's last bytes searched, while its version is not found: a key or value
    /// the chunk boundary cut.
    tail: Vec<u8>,
}

impl LineTally {
    /// Reads the next chunk of the stream.
    pub fn feed(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        loop {
            match memchr::memchr(b'\n', rest) {
                Some(end) => {
                    self.search(&rest[..end]);
                    self.end_line();
                    rest = &rest[end + 1..];
                }
                None => {
                    self.search(rest);
                    return;
                }
            }
        }
    }

    /// Complete lines read.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The highest resourceVersion of a complete line.
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    fn end_line(&mut self) {
        self.lines += 1;
        if let Some(v) = self.line_version.take() {
            self.version = Some(self.version.map_or(v, |seen| seen.max(v)));
        }
        self.tail.clear();
    }

    fn search(&mut self, stretch: &[u8]) {
        if self.line_version.is_some() || stretch.is_empty() {
            return;
        }
        if !self.tail.is_empty() {
            // A match cut by the last chunk ends within the first LONGEST_MATCH bytes of this
            // one; when this stretch is longer, a match wholly inside it is left to the
            // stretch's own scan below.
            let reach = stretch.len().min(LONGEST_MATCH);
            self.tail.extend_from_slice(&stretch[..reach]);
            match scan(&self.tail) {
                Scan::Found(v) => {
                    self.line_version = Some(v);
                    return;
                }
                found if reach == stretch.len() => {
                    let from = resume_at(&self.tail, found);
                    self.tail.drain(..from);
                    return;
                }
                _ => self.tail.clear(),
            }
        }
        match scan(stretch) {
            Scan::Found(v) => self.line_version = Some(v),
            found => self
                .tail
                .extend_from_slice(&stretch[resume_at(stretch, found)..]),
        }
    }
}

/// Where in `searched` a match finishing in the next chunk could start: at a cut match, or in
/// the last bytes, which may begin the key.
fn resume_at(searched: &[u8], found: Scan) -> usize {
    match found {
        Scan::Cut(at) => at,
        _ => searched.len().saturating_sub(VERSION_KEY.len() - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_loadgen::bench::pods::PodTemplates;

    fn event(rv: u64) -> Vec<u8> {
        let pod = PodTemplates::new(3).render(7, rv, 1);
        let mut line = b"{\"type\":\"MODIFIED\",\"object\":".to_vec();
        line.extend_from_slice(&pod);
        line.extend_from_slice(b"}\n");
        line
    }

    fn stream(versions: &[u64]) -> Vec<u8> {
        let mut out = br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"10"}}}"#.to_vec();
        out.push(b'\n');
        for &v in versions {
            out.extend_from_slice(&event(v));
        }
        out
    }

    #[test]
    fn a_bench_pods_first_version_is_its_own() {
        let mut tally = LineTally::default();
        tally.feed(&event(123_456));
        assert_eq!((tally.lines(), tally.version()), (1, Some(123_456)));
    }

    #[test]
    fn every_cut_of_the_stream_counts_the_same_lines_and_version() {
        let bytes = stream(&[11, 12, 9_000_000_013]);
        for size in [1, 2, 7, 19, 20, 39, 40, 41, 100, 1_000, 4_096, bytes.len()] {
            let mut tally = LineTally::default();
            for chunk in bytes.chunks(size) {
                tally.feed(chunk);
            }
            assert_eq!(tally.lines(), 4, "chunks of {size}");
            assert_eq!(tally.version(), Some(9_000_000_013), "chunks of {size}");
        }
    }

    #[test]
    fn a_line_is_counted_at_its_newline_only() {
        let bytes = event(42);
        let mut tally = LineTally::default();
        tally.feed(&bytes[..bytes.len() - 1]);
        assert_eq!((tally.lines(), tally.version()), (0, None));
        tally.feed(b"\n");
        assert_eq!((tally.lines(), tally.version()), (1, Some(42)));
    }

    #[test]
    fn an_escaped_version_inside_a_string_is_not_the_objects() {
        let line = br#"{"type":"MODIFIED","object":{"metadata":{"annotations":{"a":"{\"resourceVersion\":\"5\"}"},"resourceVersion":"8"}}}"#;
        let mut tally = LineTally::default();
        tally.feed(line);
        tally.feed(b"\n");
        assert_eq!(tally.version(), Some(8));
    }

    #[test]
    fn a_line_without_a_version_counts_but_moves_nothing() {
        let mut tally = LineTally::default();
        tally.feed(b"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}\n");
        tally.feed(b"{\"resourceVersion\":\"12x\"}\n");
        assert_eq!((tally.lines(), tally.version()), (2, None));
    }

    #[test]
    fn the_version_is_the_highest_seen() {
        let mut tally = LineTally::default();
        tally.feed(&stream(&[30, 20]));
        assert_eq!(tally.version(), Some(30));
    }
}
