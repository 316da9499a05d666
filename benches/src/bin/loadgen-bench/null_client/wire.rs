//! The encoding the null client asks for its lists. Its watches are read as JSON lines in
//! either case: the bench measures protobuf on the initial sync only.

use super::line_tally::LineTally;

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

    /// A list `request` as this format asks for it.
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

    /// What counts a watch's events.
    pub fn watch_tally(self) -> LineTally {
        LineTally::default()
    }
}
