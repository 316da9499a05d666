//! Watch lines read from a response body with a cap on their length. A server (or a proxy) that
//! sends bytes and never a newline cannot make the manager buffer without end: past the cap the
//! line is an error, and the caller drops the stream.

use bytes::{Buf, Bytes, BytesMut};
use futures::FutureExt as _;
use http_body_util::BodyExt as _;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why the stream of lines ended badly.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// A line grew past the cap.
    #[error("a watch line grew past {limit} bytes without a newline")]
    TooLong {
        /// The cap.
        limit: usize,
    },
    /// The body failed.
    #[error("reading the watch stream: {0}")]
    Body(#[source] BoxError),
}

/// Cuts the bytes of a watch body into events: lines for JSON, length-delimited frames for
/// protobuf ([`super::frames`]).
pub trait Splitter {
    /// Adds bytes as they arrived.
    fn push(&mut self, data: &[u8]);
    /// Moves whole events into `out`, up to `max` in it.
    fn take(&mut self, out: &mut Vec<Bytes>, max: usize) -> Result<(), LineError>;
}

/// A body read in batches of whole events, as its [`Splitter`] cuts them.
pub struct EventReader<B, S> {
    body: B,
    splitter: S,
    /// How the body ended, once it has, while events before it are still being handed out.
    ended: Option<Result<(), LineError>>,
}

/// A JSON watch: lines of at most a limit.
pub type LineReader<B> = EventReader<B, Lines>;

impl<B> LineReader<B> {
    /// Reads `body`, refusing lines longer than `limit` bytes.
    pub fn new(body: B, limit: usize) -> Self {
        EventReader::with(body, Lines::new(limit))
    }
}

impl<B, S> EventReader<B, S> {
    /// Reads `body` with `splitter`.
    pub fn with(body: B, splitter: S) -> Self {
        Self {
            body,
            splitter,
            ended: None,
        }
    }
}

impl<B, S> EventReader<B, S>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
    S: Splitter,
{
    /// Waits for at least one whole event, then takes every event already received, up to
    /// `max`. Empty at the end of the stream (a partial last event is dropped, as kube-rs does).
    pub async fn next_batch(&mut self, max: usize) -> Result<Vec<Bytes>, LineError> {
        let mut events = Vec::new();
        self.splitter.take(&mut events, max)?;
        while events.is_empty() {
            if let Some(end) = self.ended.take() {
                self.ended = Some(Ok(()));
                return end.map(|()| events);
            }
            let frame = self.body.frame().await;
            self.receive(frame);
            self.splitter.take(&mut events, max)?;
        }
        while events.len() < max && self.ended.is_none() {
            let Some(frame) = self.body.frame().now_or_never() else {
                break;
            };
            self.receive(frame);
            self.splitter.take(&mut events, max)?;
        }
        Ok(events)
    }

    fn receive(&mut self, frame: Option<Result<http_body::Frame<Bytes>, B::Error>>) {
        match frame {
            None => self.ended = Some(Ok(())),
            Some(Err(e)) => self.ended = Some(Err(LineError::Body(e.into()))),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.splitter.push(&data);
                }
            }
        }
    }
}

/// Lines of at most `limit` bytes.
pub struct Lines {
    buffer: BytesMut,
    /// Bytes at the start of `buffer` known to hold no newline.
    scanned: usize,
    limit: usize,
}

impl Lines {
    /// Lines of at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            buffer: BytesMut::new(),
            scanned: 0,
            limit,
        }
    }
}

impl Splitter for Lines {
    fn push(&mut self, data: &[u8]) {
        self.buffer.extend_from_slice(data);
    }

    fn take(&mut self, lines: &mut Vec<Bytes>, max: usize) -> Result<(), LineError> {
        while lines.len() < max {
            let Some(at) = self.buffer[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buffer.len();
                break;
            };
            let end = self.scanned + at;
            if end > self.limit {
                return Err(LineError::TooLong { limit: self.limit });
            }
            let line = self.buffer.split_to(end).freeze();
            self.buffer.advance(1);
            self.scanned = 0;
            if !line.iter().all(u8::is_ascii_whitespace) {
                lines.push(line);
            }
        }
        if self.scanned > self.limit {
            return Err(LineError::TooLong { limit: self.limit });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::StreamBody;
    use std::convert::Infallible;

    type Chunks = StreamBody<
        futures::stream::Iter<std::vec::IntoIter<Result<http_body::Frame<Bytes>, Infallible>>>,
    >;

    fn body(chunks: &[&[u8]]) -> Chunks {
        let frames: Vec<_> = chunks
            .iter()
            .map(|c| Ok(http_body::Frame::data(Bytes::copy_from_slice(c))))
            .collect();
        StreamBody::new(futures::stream::iter(frames))
    }

    #[tokio::test]
    async fn lines_split_across_frames_come_out_whole_and_in_one_batch() {
        let mut reader = LineReader::new(body(&[b"{\"a\":", b"1}\n{\"b\"", b":2}\n\n"]), 64);
        let batch = reader.next_batch(10).await.expect("lines");
        assert_eq!(batch, [Bytes::from("{\"a\":1}"), Bytes::from("{\"b\":2}")]);
        assert!(reader.next_batch(10).await.expect("end").is_empty());
    }

    #[tokio::test]
    async fn a_batch_stops_at_its_maximum_and_the_rest_follows() {
        let mut reader = LineReader::new(body(&[b"1\n2\n3\n"]), 64);
        assert_eq!(reader.next_batch(2).await.expect("lines").len(), 2);
        assert_eq!(
            reader.next_batch(2).await.expect("lines"),
            [Bytes::from("3")]
        );
    }

    #[tokio::test]
    async fn bytes_without_a_newline_past_the_cap_are_an_error_not_a_growing_buffer() {
        let chunk = [b'x'; 100];
        let chunks: Vec<&[u8]> = std::iter::repeat_n(&chunk[..], 50).collect();
        let mut reader = LineReader::new(body(&chunks), 1000);
        let error = reader.next_batch(10).await.expect_err("too long");
        assert!(matches!(error, LineError::TooLong { limit: 1000 }));
        assert!(
            reader.splitter.buffer.len() <= 1100,
            "buffered {}",
            reader.splitter.buffer.len()
        );
    }

    #[tokio::test]
    async fn a_complete_line_over_the_cap_is_refused_too() {
        let line = [vec![b'y'; 300], b"\n".to_vec()].concat();
        let mut reader = LineReader::new(body(&[&line]), 100);
        assert!(matches!(
            reader.next_batch(10).await,
            Err(LineError::TooLong { limit: 100 })
        ));
    }

    #[tokio::test]
    async fn a_partial_last_line_is_dropped_at_the_end() {
        let mut reader = LineReader::new(body(&[b"1\n2"]), 64);
        assert_eq!(
            reader.next_batch(10).await.expect("line"),
            [Bytes::from("1")]
        );
        assert!(reader.next_batch(10).await.expect("end").is_empty());
    }
}
