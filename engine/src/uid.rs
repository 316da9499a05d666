//! An object's `metadata.uid`, kept as its 16 bytes when it is a canonical UUID (what every API
//! server assigns) and as the string it came as otherwise (a UID from the network can be any
//! text, and must come back exactly as it was sent).

use serde::{Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// An object's `metadata.uid`: tells apart two objects that had the same name at different times.
///
/// Ordered and compared as its text, whichever way it is kept.
#[derive(Clone)]
pub struct Uid(Kept);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Kept {
    /// A UUID written in lower case, 8-4-4-4-12 hex digits: its bytes.
    Uuid([u8; 16]),
    /// Any other text, upper-case UUIDs included (so it is written back as it came).
    Text(Arc<str>),
}

/// Where the hyphens of a canonical UUID stand.
const HYPHENS: [usize; 4] = [8, 13, 18, 23];
const CANONICAL_LEN: usize = 36;

fn lower_hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    }
}

/// The bytes of `text` if it is a UUID in canonical lower-case form.
fn canonical_uuid(text: &str) -> Option<[u8; 16]> {
    let bytes = text.as_bytes();
    if bytes.len() != CANONICAL_LEN || HYPHENS.iter().any(|&at| bytes[at] != b'-') {
        return None;
    }
    let mut digits = bytes
        .iter()
        .enumerate()
        .filter(|(at, _)| !HYPHENS.contains(at))
        .map(|(_, &b)| lower_hex_digit(b));
    let mut out = [0u8; 16];
    for byte in &mut out {
        let high = digits.next()??;
        let low = digits.next()??;
        *byte = high << 4 | low;
    }
    Some(out)
}

fn canonical_text(bytes: &[u8; 16]) -> [u8; CANONICAL_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'-'; CANONICAL_LEN];
    let mut at = 0;
    for byte in bytes {
        if HYPHENS.contains(&at) {
            at += 1;
        }
        out[at] = HEX[usize::from(byte >> 4)];
        out[at + 1] = HEX[usize::from(byte & 0xf)];
        at += 2;
    }
    out
}

impl Uid {
    /// A UID from its text.
    pub fn new(uid: impl AsRef<str>) -> Self {
        let text = uid.as_ref();
        match canonical_uuid(text) {
            Some(bytes) => Self(Kept::Uuid(bytes)),
            None => Self(Kept::Text(Arc::from(text))),
        }
    }

    /// The UID's text, exactly as it came.
    pub fn text(&self) -> UidText<'_> {
        match &self.0 {
            Kept::Uuid(bytes) => UidText::Uuid(canonical_text(bytes)),
            Kept::Text(text) => UidText::Borrowed(text),
        }
    }
}

/// A UID's text: built on the stack for a UUID, borrowed otherwise.
#[derive(Clone, Copy)]
pub enum UidText<'a> {
    /// A canonical UUID's 36 ASCII characters.
    Uuid([u8; CANONICAL_LEN]),
    /// Any other UID.
    Borrowed(&'a str),
}

impl Deref for UidText<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            // Only hex digits and hyphens are written into it, so it is always UTF-8.
            UidText::Uuid(ascii) => std::str::from_utf8(ascii).unwrap_or_default(),
            UidText::Borrowed(text) => text,
        }
    }
}

impl fmt::Display for UidText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for UidText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for UidText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
}

impl PartialEq<str> for UidText<'_> {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for UidText<'_> {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

impl From<UidText<'_>> for String {
    fn from(text: UidText<'_>) -> String {
        text.to_string()
    }
}

impl PartialEq for Uid {
    fn eq(&self, other: &Self) -> bool {
        // Text never holds a canonical lower-case UUID, so the two forms never name one UID.
        self.0 == other.0
    }
}

impl Eq for Uid {}

impl Hash for Uid {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialOrd for Uid {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Uid {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            // Big-endian bytes order as their lower-case hex does, hyphens standing alike.
            (Kept::Uuid(a), Kept::Uuid(b)) => a.cmp(b),
            _ => (*self.text()).cmp(&*other.text()),
        }
    }
}

impl PartialEq<str> for Uid {
    fn eq(&self, other: &str) -> bool {
        match &self.0 {
            Kept::Uuid(bytes) => canonical_uuid(other).is_some_and(|b| b == *bytes),
            Kept::Text(text) => **text == *other,
        }
    }
}

impl PartialEq<&str> for Uid {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uid({:?})", &*self.text())
    }
}

impl Serialize for Uid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const UUID: &str = "0f6c6e2a-7e2a-4c1d-8b6f-00000000002a";

    #[test]
    fn a_canonical_uuid_is_kept_as_bytes_and_written_back_as_it_came() {
        let uid = Uid::new(UUID);
        assert!(matches!(uid.0, Kept::Uuid(_)));
        assert_eq!(&*uid.text(), UUID);
        assert_eq!(uid.to_string(), UUID);
        assert_eq!(uid, Uid::new(String::from(UUID)));
        assert!(uid == UUID);
    }

    #[test]
    fn upper_case_and_other_text_come_back_exactly() {
        for text in [
            "0F6C6E2A-7E2A-4C1D-8B6F-00000000002A",
            "0f6c6e2a-7e2a-4c1d-8b6f-00000000002A",
            "rs-uid-web-1",
            "",
            "0f6c6e2a7e2a4c1d8b6f00000000002a",
            "0f6c6e2a-7e2a-4c1d-8b6f-00000000002a ",
            "0f6c6e2a-7e2a-4c1d-8b6f+00000000002a",
            "0f6c6e2a-7e2a-4c1d-8b6f-00000000002g",
            "ééééééé-7e2a-4c1d-8b6f-000000000",
        ] {
            let uid = Uid::new(text);
            assert!(matches!(uid.0, Kept::Text(_)), "{text:?}");
            assert_eq!(&*uid.text(), text);
            assert!(uid == text);
            assert_ne!(uid, Uid::new(UUID));
        }
    }

    #[test]
    fn upper_and_lower_case_of_one_uuid_are_different_uids() {
        assert_ne!(Uid::new(UUID), Uid::new(UUID.to_uppercase()));
        assert!(Uid::new(UUID) != UUID.to_uppercase().as_str());
    }

    #[test]
    fn it_serialises_as_its_text() {
        let value = serde_json::json!({"uid": Uid::new(UUID), "text": Uid::new(UUID).text()});
        assert_eq!(value["uid"], UUID);
        assert_eq!(value["text"], UUID);
    }

    fn uid_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<[u8; 16]>().prop_map(|b| String::from_utf8_lossy(&canonical_text(&b)).into()),
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            ".{0,40}",
        ]
    }

    proptest! {
        #[test]
        fn any_text_round_trips(text in uid_text()) {
            let uid = Uid::new(&text);
            prop_assert_eq!(&*uid.text(), text.as_str());
            prop_assert!(uid == text.as_str());
        }

        #[test]
        fn order_and_equality_are_those_of_the_text(a in uid_text(), b in uid_text()) {
            let (x, y) = (Uid::new(&a), Uid::new(&b));
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            prop_assert_eq!(x == y, a == b);
        }
    }
}
