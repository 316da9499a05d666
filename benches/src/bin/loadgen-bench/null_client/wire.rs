//! The encoding the null client asks for and how it frames a watch. JSON only: a protobuf
//! variant would ask for `application/vnd.kubernetes.protobuf` and count a watch's
//! length-prefixed frames instead of its lines, once Tidemark's informer reads protobuf too.

use super::line_tally::LineTally;

/// The wire format of lists and watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WireFormat {
    /// JSON, what Tidemark's informer reads: its requests carry no `Accept` header, and the
    /// server's default is JSON.
    #[default]
    Json,
}

impl WireFormat {
    /// `request` as this format asks for it.
    pub fn ask(self, request: http::Request<Vec<u8>>) -> http::Request<Vec<u8>> {
        match self {
            WireFormat::Json => request,
        }
    }

    /// What counts a watch's events in this format.
    pub fn watch_tally(self) -> LineTally {
        match self {
            WireFormat::Json => LineTally::default(),
        }
    }
}
