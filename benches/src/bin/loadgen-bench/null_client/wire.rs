//! The encoding the null client asks for: its lists, and its Pod watch (the bench server
//! writes ReplicaSets in JSON whatever is asked).

use super::frame_tally::FrameTally;
use super::line_tally::LineTally;
use tidemark_engine::Resource;

/// The wire format of lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WireFormat {
    /// JSON: no `Accept` header, the server's default.
    #[default]
    Json,
    /// Protobuf first, as Tidemark's informer asks for Pods (`TIDEMARK_BENCH_PROTOBUF=1`).
    Protobuf,
}

impl WireFormat {
    /// The format of this run.
    pub fn of_run() -> Self {
        if crate::seed::protobuf() {
            WireFormat::Protobuf
        } else {
            WireFormat::Json
        }
    }

    /// A list or watch `request` as this format asks for it.
    pub fn ask(self, mut request: http::Request<Vec<u8>>) -> http::Request<Vec<u8>> {
        if self == WireFormat::Protobuf {
            request.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static(
                    "application/vnd.kubernetes.protobuf, application/json",
                ),
            );
        }
        request
    }

    /// The format `resource`'s watch is read in: protobuf frames for Pods when asked.
    pub fn of_watch(self, resource: Resource) -> Self {
        if resource == Resource::Pods {
            self
        } else {
            WireFormat::Json
        }
    }

    /// What counts a watch's events.
    pub fn watch_tally(self) -> Tally {
        match self {
            WireFormat::Json => Tally::Lines(LineTally::default()),
            WireFormat::Protobuf => Tally::Frames(FrameTally::default()),
        }
    }
}

/// Counts a watch's events: JSON lines or protobuf frames.
#[derive(Debug)]
pub enum Tally {
    /// JSON lines.
    Lines(LineTally),
    /// Length-prefixed protobuf frames.
    Frames(FrameTally),
}

impl Tally {
    /// Reads the next chunk.
    pub fn feed(&mut self, chunk: &[u8]) {
        match self {
            Tally::Lines(t) => t.feed(chunk),
            Tally::Frames(t) => t.feed(chunk),
        }
    }

    /// Complete events (bookmarks included).
    pub fn events(&self) -> u64 {
        match self {
            Tally::Lines(t) => t.lines(),
            Tally::Frames(t) => t.frames(),
        }
    }

    /// The highest resourceVersion of a complete event.
    pub fn version(&self) -> Option<u64> {
        match self {
            Tally::Lines(t) => t.version(),
            Tally::Frames(t) => t.version(),
        }
    }
}
