//! A protobuf watch read frame by frame (each a 4-byte length and a `WatchEvent`), under the
//! same cap as a JSON watch's lines, and the one reader the watch loop uses for either format.

use super::lines::{EventReader, LineError, LineReader, Splitter};
use bytes::Bytes;
use tidemark_engine::proto::{Frames, ProtoError};

/// A protobuf watch: frames of at most a limit.
pub type FrameReader<B> = EventReader<B, ProtobufFrames>;

impl<B> FrameReader<B> {
    /// Reads `body`, refusing frames longer than `limit` bytes.
    pub fn new(body: B, limit: usize) -> Self {
        EventReader::with(body, ProtobufFrames::new(limit))
    }
}

/// Length-delimited protobuf frames of at most a limit.
pub struct ProtobufFrames(Frames);

impl ProtobufFrames {
    /// Frames of at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self(Frames::new(limit))
    }
}

impl Splitter for ProtobufFrames {
    fn push(&mut self, data: &[u8]) {
        self.0.push(data);
    }

    fn take(&mut self, out: &mut Vec<Bytes>, max: usize) -> Result<(), LineError> {
        while out.len() < max {
            match self.0.next_frame() {
                Ok(Some(frame)) => out.push(Bytes::from(frame)),
                Ok(None) => break,
                Err(ProtoError::FrameTooLong { limit, .. }) => {
                    return Err(LineError::TooLong { limit });
                }
                Err(other) => return Err(LineError::Body(other.into())),
            }
        }
        Ok(())
    }
}

/// A watch body read as JSON lines or protobuf frames, as its `Content-Type` says.
pub enum WatchReader<B> {
    /// `application/json`: one event per line.
    Lines(LineReader<B>),
    /// `application/vnd.kubernetes.protobuf;stream=watch`: length-delimited events.
    Frames(FrameReader<B>),
}

impl<B> WatchReader<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    /// The next batch of events' bytes (lines or frames).
    pub async fn next_batch(&mut self, max: usize) -> Result<Vec<Bytes>, LineError> {
        match self {
            WatchReader::Lines(lines) => lines.next_batch(max).await,
            WatchReader::Frames(frames) => frames.next_batch(max).await,
        }
    }

    /// Whether the events are protobuf.
    pub fn is_protobuf(&self) -> bool {
        matches!(self, WatchReader::Frames(_))
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

    fn body(chunks: Vec<Vec<u8>>) -> Chunks {
        let frames: Vec<_> = chunks
            .into_iter()
            .map(|c| Ok(http_body::Frame::data(Bytes::from(c))))
            .collect();
        StreamBody::new(futures::stream::iter(frames))
    }

    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(payload);
        out
    }

    #[tokio::test]
    async fn frames_split_across_chunks_come_out_whole_and_a_cut_last_one_is_dropped() {
        let mut stream = framed(b"first");
        stream.extend(framed(b"second"));
        stream.extend(&framed(b"cut off")[..5]);
        let (a, b) = stream.split_at(7);
        let mut reader = FrameReader::new(body(vec![a.to_vec(), b.to_vec()]), 64);
        let batch = reader.next_batch(10).await.expect("frames");
        assert_eq!(batch, [Bytes::from("first"), Bytes::from("second")]);
        assert!(reader.next_batch(10).await.expect("end").is_empty());
    }

    #[tokio::test]
    async fn a_frame_declaring_more_than_the_cap_ends_the_stream() {
        let mut reader = FrameReader::new(body(vec![framed(&[b'x'; 100])]), 64);
        let error = reader.next_batch(10).await.expect_err("too long");
        assert!(matches!(error, LineError::TooLong { limit: 64 }));
    }
}
