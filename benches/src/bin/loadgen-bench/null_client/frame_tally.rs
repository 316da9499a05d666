//! Counts a protobuf watch stream's frames as its chunks arrive, and notes each frame's
//! resourceVersion from its first bytes only: a `WatchEvent`'s object, its `runtime.Unknown`'s
//! raw message, the Pod's `metadata` (its first field), `resourceVersion` (field 6, after the
//! name, namespace and uid). The rest of each frame is stepped over, not copied.

/// Bytes of a frame's start kept to find its version (a bench Pod's is within its first 200).
const HEAD: usize = 512;

/// The frames of a watch stream seen so far, and the highest version of a complete frame.
#[derive(Debug, Default)]
pub struct FrameTally {
    frames: u64,
    version: Option<u64>,
    /// The current frame's length prefix, while it is cut by a chunk's end.
    prefix: Vec<u8>,
    /// Bytes of the current frame still to come (0: between frames).
    remaining: usize,
    /// The current frame's first bytes.
    head: Vec<u8>,
}

impl FrameTally {
    /// Reads the next chunk of the stream.
    pub fn feed(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while !rest.is_empty() {
            if self.remaining == 0 {
                let need = 4 - self.prefix.len();
                let take = need.min(rest.len());
                self.prefix.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if self.prefix.len() < 4 {
                    return;
                }
                let mut length = [0u8; 4];
                length.copy_from_slice(&self.prefix);
                self.prefix.clear();
                self.remaining = u32::from_be_bytes(length) as usize;
                self.head.clear();
                if self.remaining == 0 {
                    self.end_frame();
                }
                continue;
            }
            let take = self.remaining.min(rest.len());
            let keep = HEAD.saturating_sub(self.head.len()).min(take);
            self.head.extend_from_slice(&rest[..keep]);
            rest = &rest[take..];
            self.remaining -= take;
            if self.remaining == 0 {
                self.end_frame();
            }
        }
    }

    /// Complete frames read.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The highest resourceVersion of a complete frame.
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    fn end_frame(&mut self) {
        self.frames += 1;
        if let Some(v) = version_in(&self.head) {
            self.version = Some(self.version.map_or(v, |seen| seen.max(v)));
        }
    }
}

fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(value);
        }
    }
    None
}

/// The bytes of length-delimited field `number` in `message`, cut at `message`'s end when the
/// field runs past it (only the head of the frame is kept).
fn field(message: &[u8], number: u64) -> Option<&[u8]> {
    let mut at = 0;
    while at < message.len() {
        let key = varint(message, &mut at)?;
        match key & 7 {
            0 => {
                varint(message, &mut at)?;
            }
            2 => {
                let len = usize::try_from(varint(message, &mut at)?).ok()?;
                let end = at.saturating_add(len);
                if key >> 3 == number {
                    return message.get(at..end.min(message.len()));
                }
                at = end;
            }
            _ => return None,
        }
    }
    None
}

/// A frame's object's resourceVersion, from the frame's head.
fn version_in(head: &[u8]) -> Option<u64> {
    let object = field(head, 2)?;
    let unknown = field(object, 1)?.strip_prefix(b"k8s\0")?;
    let pod = field(unknown, 2)?;
    let metadata = field(pod, 1)?;
    let version = field(metadata, 6)?;
    std::str::from_utf8(version).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_loadgen::bench::pods::PodTemplates;
    use tidemark_loadgen::bench::pods_protobuf::PodProtobufTemplates;
    use tidemark_loadgen::protobuf::{bookmark_pod, watch_frame, wrap};

    fn stream() -> Vec<u8> {
        let templates = PodProtobufTemplates::new(&PodTemplates::new(3)).expect("templates");
        let mut out = Vec::new();
        for rv in [41, 42, 7] {
            out.extend(watch_frame(
                "MODIFIED",
                &wrap("v1", "Pod", &templates.render(rv, rv, 1)),
            ));
        }
        out.extend(watch_frame("BOOKMARK", &bookmark_pod("43")));
        out
    }

    #[test]
    fn every_frame_is_counted_and_the_highest_version_kept_however_the_chunks_fall() {
        let stream = stream();
        for size in [1, 3, 4, 5, 200, 513, 4096, stream.len()] {
            let mut tally = FrameTally::default();
            for chunk in stream.chunks(size) {
                tally.feed(chunk);
            }
            assert_eq!(
                (tally.frames(), tally.version()),
                (4, Some(43)),
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn a_frame_cut_short_is_not_counted() {
        let stream = stream();
        let mut tally = FrameTally::default();
        tally.feed(&stream[..stream.len() - 1]);
        assert_eq!((tally.frames(), tally.version()), (3, Some(42)));
    }
}
