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

/// Splits a body into lines of at most `limit` bytes.
pub struct LineReader<B> {
    body: B,
    buffer: BytesMut,
    /// Bytes at the start of `buffer` known to hold no newline.
    scanned: usize,
    limit: usize,
    /// How the body ended, once it has, while lines before it are still being handed out.
    ended: Option<Result<(), LineError>>,
}

impl<B> LineReader<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// Reads `body`, refusing lines longer than `limit` bytes.
    pub fn new(body: B, limit: usize) -> Self {
        Self {
            body,
            buffer: BytesMut::new(),
            scanned: 0,
            limit,
            ended: None,
        }
    }

    /// Waits for at least one complete line, then takes every line already received, up to
    /// `max`. Empty at the end of the stream (a partial last line is dropped, as kube-rs does).
    pub async fn next_batch(&mut self, max: usize) -> Result<Vec<Bytes>, LineError> {
        let mut lines = Vec::new();
        self.take_lines(&mut lines, max)?;
        while lines.is_empty() {
            if let Some(end) = self.ended.take() {
                self.ended = Some(Ok(()));
                return end.map(|()| lines);
            }
            let frame = self.body.frame().await;
            self.receive(frame);
            self.take_lines(&mut lines, max)?;
        }
        while lines.len() < max && self.ended.is_none() {
            let Some(frame) = self.body.frame().now_or_never() else {
                break;
            };
            self.receive(frame);
            self.take_lines(&mut lines, max)?;
        }
        Ok(lines)
    }

    fn receive(&mut self, frame: Option<Result<http_body::Frame<Bytes>, B::Error>>) {
        match frame {
            None => self.ended = Some(Ok(())),
            Some(Err(e)) => self.ended = Some(Err(LineError::Body(e.into()))),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.buffer.extend_from_slice(&data);
                }
            }
        }
    }

    fn take_lines(&mut self, lines: &mut Vec<Bytes>, max: usize) -> Result<(), LineError> {
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
            reader.buffer.len() <= 1100,
            "buffered {}",
            reader.buffer.len()
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
