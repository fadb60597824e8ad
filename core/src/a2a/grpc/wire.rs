//! Protobuf wire primitives: varints, tags, length-delimited fields, fixed-width numbers.
//!
//! The reader never trusts a length: every length-delimited field is checked against the bytes
//! actually left before it is sliced, so hostile input cannot make it allocate or read beyond
//! the buffer. Unknown fields of the four supported wire types are skipped; groups (wire types
//! 3 and 4, deprecated since proto2) and the undefined wire types 6 and 7 are errors.

/// Why protobuf bytes could not be decoded into an A2A message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The input ended inside a varint.
    #[error("{message}: truncated varint")]
    TruncatedVarint {
        /// The message being decoded.
        message: &'static str,
    },
    /// A varint longer than the 10 bytes a 64-bit value needs.
    #[error("{message}: varint longer than 10 bytes")]
    VarintTooLong {
        /// The message being decoded.
        message: &'static str,
    },
    /// A tag with field number 0 or a field number above 2^29 - 1.
    #[error("{message}: invalid field number in tag {tag}")]
    InvalidTag {
        /// The message being decoded.
        message: &'static str,
        /// The raw tag value.
        tag: u64,
    },
    /// Wire type 3, 4 (groups), 6 or 7.
    #[error("{message}: field {field} has unsupported wire type {wire_type}")]
    UnsupportedWireType {
        /// The message being decoded.
        message: &'static str,
        /// The field number.
        field: u32,
        /// The wire type found.
        wire_type: u8,
    },
    /// A length-delimited field longer than the bytes left in its enclosing message.
    #[error("{message}: field {field} declares {len} bytes but only {remaining} remain")]
    LengthOverflow {
        /// The message being decoded.
        message: &'static str,
        /// The field number.
        field: u32,
        /// The declared length.
        len: u64,
        /// The bytes left in the enclosing message.
        remaining: usize,
    },
    /// The input ended inside a fixed-width (32- or 64-bit) field.
    #[error("{message}: field {field} is truncated")]
    TruncatedFixed {
        /// The message being decoded.
        message: &'static str,
        /// The field number.
        field: u32,
    },
    /// A known field arrived with a wire type that its declared type never uses.
    #[error("{message}: field {field} has wire type {found}, expected {expected}")]
    WrongWireType {
        /// The message being decoded.
        message: &'static str,
        /// The field number.
        field: u32,
        /// The wire type the field's type uses.
        expected: u8,
        /// The wire type found.
        found: u8,
    },
    /// A `string` field that is not UTF-8 (proto3 requires UTF-8).
    #[error("{message}: field {field} is not valid UTF-8")]
    InvalidUtf8 {
        /// The message being decoded.
        message: &'static str,
        /// The field number.
        field: u32,
    },
    /// `google.protobuf.Struct`/`ListValue` nested deeper than the limit.
    #[error("Struct/ListValue nested deeper than {limit} levels")]
    TooDeep {
        /// The nesting limit.
        limit: usize,
    },
    /// A `google.protobuf.Value` number that is NaN or infinite: JSON cannot hold it.
    #[error("google.protobuf.Value: number {0} is not finite and has no JSON form")]
    NonFiniteNumber(String),
    /// A `google.protobuf.Timestamp` outside 0001-01-01 to 9999-12-31 or with nanos outside
    /// 0..=999,999,999.
    #[error("google.protobuf.Timestamp out of range: seconds {seconds}, nanos {nanos}")]
    TimestampOutOfRange {
        /// The seconds field.
        seconds: i64,
        /// The nanos field.
        nanos: i32,
    },
    /// A required field that is absent.
    #[error("{message}: required field {field} is missing")]
    Missing {
        /// The message being decoded.
        message: &'static str,
        /// The field name.
        field: &'static str,
    },
    /// A `Part` with none of text, raw, url, data.
    #[error("Part has no content (text, raw, url or data)")]
    PartWithoutContent,
    /// A response whose payload oneof is empty.
    #[error("{message} has no payload")]
    NoPayload {
        /// The message being decoded.
        message: &'static str,
    },
}

pub(crate) const VARINT: u8 = 0;
pub(crate) const I64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const I32: u8 = 5;

/// One field value as it appears on the wire; interpreted by the message decoders.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Raw<'a> {
    Varint(u64),
    I64(u64),
    Len(&'a [u8]),
    /// A fixed 32-bit field; no message of this client has one, so its value is skipped.
    I32,
}

impl<'a> Raw<'a> {
    fn wire_type(&self) -> u8 {
        match self {
            Raw::Varint(_) => VARINT,
            Raw::I64(_) => I64,
            Raw::Len(_) => LEN,
            Raw::I32 => I32,
        }
    }

    fn wrong(&self, f: &Field<'_>, expected: u8) -> WireError {
        WireError::WrongWireType {
            message: f.message,
            field: f.number,
            expected,
            found: self.wire_type(),
        }
    }
}

/// A decoded field: its number, value and the message it belongs to (for error reports).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field<'a> {
    pub(crate) message: &'static str,
    pub(crate) number: u32,
    pub(crate) raw: Raw<'a>,
}

impl<'a> Field<'a> {
    pub(crate) fn bytes(&self) -> Result<&'a [u8], WireError> {
        match self.raw {
            Raw::Len(b) => Ok(b),
            other => Err(other.wrong(self, LEN)),
        }
    }

    pub(crate) fn string(&self) -> Result<String, WireError> {
        let b = self.bytes()?;
        core::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| WireError::InvalidUtf8 {
                message: self.message,
                field: self.number,
            })
    }

    /// A string where `""` (the proto3 default) means absent.
    pub(crate) fn opt_string(&self) -> Result<Option<String>, WireError> {
        self.string().map(|s| (!s.is_empty()).then_some(s))
    }

    pub(crate) fn varint(&self) -> Result<u64, WireError> {
        match self.raw {
            Raw::Varint(v) => Ok(v),
            other => Err(other.wrong(self, VARINT)),
        }
    }

    /// `int32`/enum: the low 32 bits, as protobuf specifies for out-of-range varints.
    pub(crate) fn int32(&self) -> Result<i32, WireError> {
        self.varint().map(|v| v as u32 as i32)
    }

    pub(crate) fn int64(&self) -> Result<i64, WireError> {
        self.varint().map(|v| v as i64)
    }

    pub(crate) fn boolean(&self) -> Result<bool, WireError> {
        self.varint().map(|v| v != 0)
    }

    pub(crate) fn double(&self) -> Result<f64, WireError> {
        match self.raw {
            Raw::I64(v) => Ok(f64::from_bits(v)),
            other => Err(other.wrong(self, I64)),
        }
    }
}

/// Iterates over the fields of one message.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    message: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], message: &'static str) -> Self {
        Reader { buf, message }
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut value = 0u64;
        for (i, &b) in self.buf.iter().enumerate() {
            if i == 10 {
                return Err(WireError::VarintTooLong {
                    message: self.message,
                });
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                self.buf = &self.buf[i + 1..];
                return Ok(value);
            }
        }
        if self.buf.len() >= 10 {
            return Err(WireError::VarintTooLong {
                message: self.message,
            });
        }
        Err(WireError::TruncatedVarint {
            message: self.message,
        })
    }

    fn fixed<const N: usize>(&mut self, field: u32) -> Result<[u8; N], WireError> {
        let Some((head, rest)) = self.buf.split_first_chunk::<N>() else {
            return Err(WireError::TruncatedFixed {
                message: self.message,
                field,
            });
        };
        self.buf = rest;
        Ok(*head)
    }

    /// The next field, or `None` at the end of the message.
    pub(crate) fn next_field(&mut self) -> Result<Option<Field<'a>>, WireError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let number = tag >> 3;
        if number == 0 || number > (1 << 29) - 1 {
            return Err(WireError::InvalidTag {
                message: self.message,
                tag,
            });
        }
        let number = number as u32;
        let raw = match (tag & 7) as u8 {
            VARINT => Raw::Varint(self.varint()?),
            I64 => Raw::I64(u64::from_le_bytes(self.fixed::<8>(number)?)),
            LEN => {
                let len = self.varint()?;
                let remaining = self.buf.len();
                let n = usize::try_from(len)
                    .ok()
                    .filter(|n| *n <= remaining)
                    .ok_or(WireError::LengthOverflow {
                        message: self.message,
                        field: number,
                        len,
                        remaining,
                    })?;
                let (b, rest) = self.buf.split_at(n);
                self.buf = rest;
                Raw::Len(b)
            }
            I32 => {
                self.fixed::<4>(number)?;
                Raw::I32
            }
            wire_type => {
                return Err(WireError::UnsupportedWireType {
                    message: self.message,
                    field: number,
                    wire_type,
                });
            }
        };
        Ok(Some(Field {
            message: self.message,
            number,
            raw,
        }))
    }
}

/// Appends protobuf fields to a buffer.
#[derive(Default)]
pub(crate) struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Writer::default()
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn tag(&mut self, field: u32, wire_type: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire_type));
    }

    pub(crate) fn bytes(&mut self, field: u32, b: &[u8]) {
        self.tag(field, LEN);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// Writes a string even when empty (for oneof members and required fields).
    pub(crate) fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    /// Writes a string unless it is `None` or `""` (proto3 omits defaults).
    pub(crate) fn opt_string(&mut self, field: u32, s: Option<&str>) {
        if let Some(s) = s.filter(|s| !s.is_empty()) {
            self.string(field, s);
        }
    }

    pub(crate) fn strings(&mut self, field: u32, items: &[String]) {
        for s in items {
            self.string(field, s);
        }
    }

    pub(crate) fn uint64(&mut self, field: u32, v: u64) {
        self.tag(field, VARINT);
        self.varint(v);
    }

    /// `int32`/enum: negative values are sign-extended to ten bytes, as protobuf specifies.
    pub(crate) fn int32(&mut self, field: u32, v: i32) {
        self.uint64(field, i64::from(v) as u64);
    }

    pub(crate) fn int64(&mut self, field: u32, v: i64) {
        self.uint64(field, v as u64);
    }

    /// `true` only: `false` is the proto3 default.
    pub(crate) fn flag(&mut self, field: u32, b: bool) {
        if b {
            self.uint64(field, 1);
        }
    }

    pub(crate) fn double(&mut self, field: u32, v: f64) {
        self.tag(field, I64);
        self.buf.extend_from_slice(&v.to_bits().to_le_bytes());
    }

    /// A nested message; its length is only known once it is written, hence the scratch
    /// buffer.
    pub(crate) fn message(&mut self, field: u32, write: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::new();
        write(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(b: &[u8]) -> Result<Vec<(u32, u8)>, WireError> {
        let mut r = Reader::new(b, "T");
        let mut out = Vec::new();
        while let Some(f) = r.next_field()? {
            out.push((f.number, f.raw.wire_type()));
        }
        Ok(out)
    }

    #[test]
    fn varints_round_trip_at_their_boundaries() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut w = Writer::new();
            w.uint64(1, v);
            let b = w.into_bytes();
            let mut r = Reader::new(&b, "T");
            let f = r.next_field().unwrap().unwrap();
            assert_eq!(f.varint().unwrap(), v);
            assert!(r.next_field().unwrap().is_none());
        }
        let mut w = Writer::new();
        w.uint64(1, 300);
        assert_eq!(w.into_bytes(), [0x08, 0xac, 0x02]);
    }

    #[test]
    fn negative_int32_is_ten_bytes_and_reads_back() {
        let mut w = Writer::new();
        w.int32(3, -1);
        let b = w.into_bytes();
        assert_eq!(b.len(), 11);
        let f = Reader::new(&b, "T").next_field().unwrap().unwrap();
        assert_eq!(f.int32().unwrap(), -1);
    }

    #[test]
    fn hostile_framing_is_a_typed_error() {
        assert_eq!(
            fields(&[0x08, 0x80]),
            Err(WireError::TruncatedVarint { message: "T" })
        );
        assert_eq!(
            fields(&[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]),
            Err(WireError::VarintTooLong { message: "T" })
        );
        assert_eq!(
            fields(&[0x00, 0x01]),
            Err(WireError::InvalidTag {
                message: "T",
                tag: 0
            })
        );
        assert_eq!(
            fields(&[0x0b]),
            Err(WireError::UnsupportedWireType {
                message: "T",
                field: 1,
                wire_type: 3
            })
        );
        assert_eq!(
            fields(&[0x0a, 0x05, b'a']),
            Err(WireError::LengthOverflow {
                message: "T",
                field: 1,
                len: 5,
                remaining: 1
            })
        );
        // A length near u64::MAX must not be sliced or allocated.
        assert!(matches!(
            fields(&[
                0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]),
            Err(WireError::LengthOverflow { .. })
        ));
        assert_eq!(
            fields(&[0x09, 1, 2, 3]),
            Err(WireError::TruncatedFixed {
                message: "T",
                field: 1
            })
        );
        assert_eq!(
            fields(&[0x0d, 1, 2, 3, 4, 0x10, 7]),
            Ok(vec![(1, I32), (2, VARINT)])
        );
    }

    #[test]
    fn a_wrong_wire_type_is_reported_with_the_field() {
        let b = [0x08, 0x01];
        let f = Reader::new(&b, "Message").next_field().unwrap().unwrap();
        assert_eq!(
            f.string(),
            Err(WireError::WrongWireType {
                message: "Message",
                field: 1,
                expected: LEN,
                found: VARINT
            })
        );
    }
}
