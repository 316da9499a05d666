//! A protobuf watch read frame by frame (each a 4-byte length and a `WatchEvent`), under the
//! same cap as a JSON watch's lines, and the one reader the watch loop uses for either format.

use super::lines::{LineError, LineReader};
use bytes::Bytes;
use futures::FutureExt as _;
use http_body_util::BodyExt as _;
use tidemark_engine::proto::{Frames, ProtoError};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Splits a protobuf watch body into frames of at most `limit` bytes.
pub struct FrameReader<B> {
    body: B,
    frames: Frames,
    limit: usize,
    ended: Option<Result<(), LineError>>,
}

impl<B> FrameReader<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// Reads `body`, refusing frames longer than `limit` bytes.
    pub fn new(body: B, limit: usize) -> Self {
        Self {
            body,
            frames: Frames::new(limit),
            limit,
            ended: None,
        }
    }

    /// Waits for at least one whole frame, then takes every frame already received, up to
    /// `max`. Empty at the end of the stream (a partial last frame is dropped).
    pub async fn next_batch(&mut self, max: usize) -> Result<Vec<Bytes>, LineError> {
        let mut batch = Vec::new();
        self.take(&mut batch, max)?;
        while batch.is_empty() {
            if let Some(end) = self.ended.take() {
                self.ended = Some(Ok(()));
                return end.map(|()| batch);
            }
            let frame = self.body.frame().await;
            self.receive(frame);
            self.take(&mut batch, max)?;
        }
        while batch.len() < max && self.ended.is_none() {
            let Some(frame) = self.body.frame().now_or_never() else {
                break;
            };
            self.receive(frame);
            self.take(&mut batch, max)?;
        }
        Ok(batch)
    }

    fn receive(&mut self, frame: Option<Result<http_body::Frame<Bytes>, B::Error>>) {
        match frame {
            None => self.ended = Some(Ok(())),
            Some(Err(e)) => self.ended = Some(Err(LineError::Body(e.into()))),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.frames.push(&data);
                }
            }
        }
    }

    fn take(&mut self, batch: &mut Vec<Bytes>, max: usize) -> Result<(), LineError> {
        while batch.len() < max {
            match self.frames.next_frame() {
                Ok(Some(frame)) => batch.push(Bytes::from(frame)),
                Ok(None) => break,
                Err(ProtoError::FrameTooLong { .. }) | Err(_) => {
                    return Err(LineError::TooLong { limit: self.limit });
                }
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
    B::Error: Into<BoxError>,
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
