//! The protobuf wire format read field by field from borrowed bytes: what a projection keeps is
//! read, everything else (managedFields, the Pod spec's containers) is stepped over by its length.
//!
//! Written here rather than taken from prost: prost's wire primitives sit in a `#[doc(hidden)]`
//! module meant for its generated code, and a generated type would allocate every field the
//! projections drop. The reader never allocates.

/// Why bytes are not a protobuf message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The bytes end inside a field.
    #[error("protobuf truncated at byte {at}")]
    Truncated {
        /// Offset of the field that runs past the end.
        at: usize,
    },
    /// A varint longer than ten bytes.
    #[error("protobuf varint too long at byte {at}")]
    VarintTooLong {
        /// Offset of the varint.
        at: usize,
    },
    /// A wire type protobuf does not define, or the deprecated groups.
    #[error("protobuf wire type {wire_type} at byte {at} is not supported")]
    WireType {
        /// The wire type read.
        wire_type: u8,
        /// Offset of the field's key.
        at: usize,
    },
    /// Field number 0, which no message has.
    #[error("protobuf field number 0 at byte {at}")]
    FieldZero {
        /// Offset of the field's key.
        at: usize,
    },
}

/// One field's value, borrowed from the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0: int32, int64, bool, enum.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: a string, bytes, an embedded message or a packed repeated field.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// The bytes of a length-delimited field (`None` for a number).
    pub fn bytes(self) -> Option<&'a [u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// A string field; `None` if it is a number or not UTF-8.
    pub fn str(self) -> Option<&'a str> {
        self.bytes().and_then(|b| std::str::from_utf8(b).ok())
    }

    /// A varint field as int64 (protobuf's `int64` and `int32` both sign-extend to 64 bits).
    pub fn int64(self) -> Option<i64> {
        match self {
            Value::Varint(v) => Some(v as i64),
            _ => None,
        }
    }

    /// A varint field as int32: `None` if it does not fit.
    pub fn int32(self) -> Option<i32> {
        self.int64().and_then(|v| i32::try_from(v).ok())
    }

    /// A bool field.
    pub fn bool(self) -> Option<bool> {
        match self {
            Value::Varint(v) => Some(v != 0),
            _ => None,
        }
    }
}

/// The fields of one message, in wire order. Stops at the first error, which it yields.
///
/// ```
/// use tidemark_engine::proto::wire::{Fields, Value};
/// // field 1 = "web" (length-delimited), field 7 = 3 (varint)
/// let message = [0x0a, 3, b'w', b'e', b'b', 0x38, 3];
/// let fields: Vec<_> = Fields::new(&message).collect::<Result<_, _>>().unwrap();
/// assert_eq!(fields, [(1, Value::Bytes(b"web")), (7, Value::Varint(3))]);
/// ```
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
    failed: bool,
}

impl<'a> Fields<'a> {
    /// The fields of `message`.
    pub fn new(message: &'a [u8]) -> Self {
        Self {
            bytes: message,
            at: 0,
            failed: false,
        }
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let start = self.at;
        let mut value = 0u64;
        for shift in 0..10 {
            let Some(&byte) = self.bytes.get(self.at) else {
                return Err(WireError::Truncated { at: start });
            };
            self.at += 1;
            value |= u64::from(byte & 0x7f) << (shift * 7);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(WireError::VarintTooLong { at: start })
    }

    fn take(&mut self, len: usize, start: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .at
            .checked_add(len)
            .filter(|end| *end <= self.bytes.len())
            .ok_or(WireError::Truncated { at: start })?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn field(&mut self) -> Result<(u32, Value<'a>), WireError> {
        let start = self.at;
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| WireError::FieldZero { at: start })?;
        if number == 0 {
            return Err(WireError::FieldZero { at: start });
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let b = self.take(8, start)?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| WireError::Truncated { at: start })?;
                Value::Bytes(self.take(len, start)?)
            }
            5 => {
                let b = self.take(4, start)?;
                Value::Fixed32(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
            }
            other => {
                return Err(WireError::WireType {
                    wire_type: other as u8,
                    at: start,
                });
            }
        };
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at >= self.bytes.len() {
            return None;
        }
        let field = self.field();
        self.failed = field.is_err();
        Some(field)
    }
}

/// Appends protobuf fields to a buffer, for the tests (the simulated servers write their own).
#[cfg(test)]
#[derive(Debug, Default, Clone)]
pub(crate) struct Writer {
    /// The message so far.
    pub bytes: Vec<u8>,
}

#[cfg(test)]
impl Writer {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
    }

    fn key(&mut self, number: u32, wire_type: u8) {
        self.varint((u64::from(number) << 3) | u64::from(wire_type));
    }

    /// A varint field (int32 and int64 negative values take ten bytes, as protobuf says).
    pub fn int(&mut self, number: u32, value: i64) {
        self.key(number, 0);
        self.varint(value as u64);
    }

    /// A bool field.
    pub fn bool(&mut self, number: u32, value: bool) {
        self.int(number, i64::from(value));
    }

    /// A length-delimited field: a string, bytes or an encoded message.
    pub fn bytes(&mut self, number: u32, value: &[u8]) {
        self.key(number, 2);
        self.varint(value.len() as u64);
        self.bytes.extend_from_slice(value);
    }

    /// An embedded message written by `write`.
    pub fn message(&mut self, number: u32, write: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        write(&mut inner);
        self.bytes(number, &inner.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<Vec<(u32, Value<'_>)>, WireError> {
        Fields::new(bytes).collect()
    }

    #[test]
    fn what_the_writer_writes_the_reader_reads_back() {
        let mut w = Writer::default();
        w.bytes(1, b"web-0");
        w.int(7, -2);
        w.bool(6, true);
        w.message(8, |t| t.int(1, 1_764_687_818));
        let inner = {
            let mut t = Writer::default();
            t.int(1, 1_764_687_818);
            t.bytes
        };
        assert_eq!(
            read(&w.bytes).expect("decodes"),
            [
                (1, Value::Bytes(b"web-0")),
                (7, Value::Varint(-2i64 as u64)),
                (6, Value::Varint(1)),
                (8, Value::Bytes(&inner)),
            ]
        );
        assert_eq!(Value::Varint(-2i64 as u64).int32(), Some(-2));
    }

    #[test]
    fn a_field_running_past_the_end_is_truncated_and_ends_the_walk() {
        let bytes = [0x0a, 5, b'w', b'e'];
        let mut fields = Fields::new(&bytes);
        assert_eq!(fields.next(), Some(Err(WireError::Truncated { at: 0 })));
        assert_eq!(fields.next(), None);
    }

    #[test]
    fn groups_and_field_zero_are_refused() {
        assert_eq!(
            read(&[0x0b]),
            Err(WireError::WireType {
                wire_type: 3,
                at: 0
            })
        );
        assert_eq!(read(&[0x00, 0x01]), Err(WireError::FieldZero { at: 0 }));
        assert_eq!(
            read(&[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]),
            Err(WireError::VarintTooLong { at: 1 })
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_reader(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            for field in Fields::new(&bytes) {
                if field.is_err() {
                    break;
                }
            }
        }
    }
}
