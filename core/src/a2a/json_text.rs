//! Compact JSON text written byte for byte as `serde_json::to_writer` writes it, with a string
//! escaper that looks at eight bytes at a time where serde_json looks at one.
//!
//! Request bodies are mostly strings (ids, text, metadata), so escaping them was the largest
//! part of encoding a request. The writer is a `serde::Serializer`, so every type keeps its one
//! `Serialize` impl. It writes only what it is sure serde_json writes the same way: a map key
//! that is not a string, byte arrays, enum variants with data and serde_json's private
//! structs make it give up, and the whole value is then written by serde_json instead.

use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeSeq, Serializer};

/// Appends the compact JSON text of `value` to `out`: the same bytes as
/// `serde_json::to_writer(out, value)`, and the same error when that fails.
pub(crate) fn write_compact<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> serde_json::Result<()> {
    let start = out.len();
    if value.serialize(Compact { out: &mut *out }).is_ok() {
        return Ok(());
    }
    out.truncate(start);
    serde_json::to_writer(out, value)
}

/// How many bytes from the start of `bytes` a JSON string holds as they are: neither a quote,
/// a backslash nor a control character. Eight bytes are tested at a time.
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // A byte of `x` is zero exactly when the lowest flagged byte of this is; flags above the
    // lowest may be false, which is why only the lowest is used.
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut at = 0;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let flagged = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
        if flagged != 0 {
            return at + (flagged.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + chunks
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(chunks.remainder().len())
}

/// Writes `s` as a JSON string: quoted, with serde_json's escapes (the short ones where JSON
/// has them, `\u00xx` in lowercase hex for the other control characters).
fn write_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let mut rest = s.as_bytes();
    loop {
        let run = plain_run(rest);
        out.extend_from_slice(&rest[..run]);
        let Some((&byte, after)) = rest[run..].split_first() else {
            break;
        };
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0d => out.extend_from_slice(b"\\r"),
            control => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(control >> 4)]);
                out.push(HEX[usize::from(control & 0xf)]);
            }
        }
        rest = after;
    }
    out.push(b'"');
}

/// The reason this writer gives up; never seen outside, as serde_json then writes the value.
fn declined() -> serde_json::Error {
    ser::Error::custom("written by serde_json instead")
}

/// The names of serde_json's own structs (its raw values and arbitrary-precision numbers),
/// which it writes as something other than an object.
fn is_serde_json_private(name: &str) -> bool {
    name.starts_with("$serde_json")
}

struct Compact<'o> {
    out: &'o mut Vec<u8>,
}

/// Numbers are written by serde_json itself (integers through `itoa`, floats through `ryu`,
/// non-finite floats as `null`), so they are the same by construction.
macro_rules! number_by_serde_json {
    ($($method:ident: $t:ty),*) => {$(
        fn $method(self, v: $t) -> serde_json::Result<()> {
            serde_json::to_writer(&mut *self.out, &v)
        }
    )*};
}

impl<'o> Serializer for Compact<'o> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Members<'o>;
    type SerializeTuple = Members<'o>;
    type SerializeTupleStruct = Members<'o>;
    type SerializeTupleVariant = Impossible<(), serde_json::Error>;
    type SerializeMap = Members<'o>;
    type SerializeStruct = Members<'o>;
    type SerializeStructVariant = Impossible<(), serde_json::Error>;

    fn serialize_bool(self, v: bool) -> serde_json::Result<()> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    number_by_serde_json!(
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_u128: u128, serialize_f32: f32, serialize_f64: f64
    );

    fn serialize_char(self, v: char) -> serde_json::Result<()> {
        write_string(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, v: &str) -> serde_json::Result<()> {
        write_string(self.out, v);
        Ok(())
    }

    fn serialize_bytes(self, _: &[u8]) -> serde_json::Result<()> {
        Err(declined())
    }

    fn serialize_none(self) -> serde_json::Result<()> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> serde_json::Result<()> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> serde_json::Result<()> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> serde_json::Result<()> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> serde_json::Result<()> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> serde_json::Result<()> {
        if is_serde_json_private(name) {
            return Err(declined());
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> serde_json::Result<()> {
        Err(declined())
    }

    fn serialize_seq(self, _: Option<usize>) -> serde_json::Result<Members<'o>> {
        self.out.push(b'[');
        Ok(Members {
            out: self.out,
            first: true,
            close: b']',
        })
    }

    fn serialize_tuple(self, len: usize) -> serde_json::Result<Members<'o>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> serde_json::Result<Members<'o>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> serde_json::Result<Self::SerializeTupleVariant> {
        Err(declined())
    }

    fn serialize_map(self, _: Option<usize>) -> serde_json::Result<Members<'o>> {
        self.out.push(b'{');
        Ok(Members {
            out: self.out,
            first: true,
            close: b'}',
        })
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> serde_json::Result<Members<'o>> {
        if is_serde_json_private(name) {
            return Err(declined());
        }
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> serde_json::Result<Self::SerializeStructVariant> {
        Err(declined())
    }
}

/// An open array or object.
struct Members<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
    close: u8,
}

impl Members<'_> {
    fn separate(&mut self) {
        if !std::mem::replace(&mut self.first, false) {
            self.out.push(b',');
        }
    }

    fn end_members(self) -> serde_json::Result<()> {
        self.out.push(self.close);
        Ok(())
    }
}

impl SerializeSeq for Members<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> serde_json::Result<()> {
        self.separate();
        value.serialize(Compact {
            out: &mut *self.out,
        })
    }

    fn end(self) -> serde_json::Result<()> {
        self.end_members()
    }
}

impl ser::SerializeTuple for Members<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> serde_json::Result<()> {
        SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> serde_json::Result<()> {
        self.end_members()
    }
}

impl ser::SerializeTupleStruct for Members<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> serde_json::Result<()> {
        SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> serde_json::Result<()> {
        self.end_members()
    }
}

impl SerializeMap for Members<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> serde_json::Result<()> {
        self.separate();
        let at = self.out.len();
        key.serialize(Compact {
            out: &mut *self.out,
        })?;
        // A key written as a string is written as serde_json writes it; any other key (which
        // serde_json quotes or refuses) is left to serde_json.
        if self.out.get(at) != Some(&b'"') {
            return Err(declined());
        }
        self.out.push(b':');
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> serde_json::Result<()> {
        value.serialize(Compact {
            out: &mut *self.out,
        })
    }

    fn end(self) -> serde_json::Result<()> {
        self.end_members()
    }
}

impl ser::SerializeStruct for Members<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> serde_json::Result<()> {
        SerializeMap::serialize_entry(self, key, value)
    }

    fn end(self) -> serde_json::Result<()> {
        self.end_members()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::a2a::types::{Message, Part, Role, SendMessageConfiguration, SendMessageRequest};
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    /// The writer's text of `value`, checked to be serde_json's, byte for byte.
    fn written<T: Serialize + ?Sized>(value: &T) -> String {
        let mut out = b"before ".to_vec();
        write_compact(&mut out, value).unwrap();
        let expected = [b"before ".as_slice(), &serde_json::to_vec(value).unwrap()].concat();
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&expected)
        );
        String::from_utf8(out.split_off(7)).unwrap()
    }

    /// Whether the writer wrote `value` itself rather than leaving it to serde_json.
    fn written_here<T: Serialize + ?Sized>(value: &T) -> bool {
        value
            .serialize(Compact {
                out: &mut Vec::new(),
            })
            .is_ok()
    }

    #[test]
    fn the_plain_run_stops_at_the_first_byte_that_needs_attention() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        for at in 0..text.len() {
            for stop in [b'"', b'\\', 0x00, 0x1f] {
                let mut bytes = text.as_bytes().to_vec();
                bytes[at] = stop;
                // A later stop must not hide behind the first one.
                if at + 3 < bytes.len() {
                    bytes[at + 3] = b'"';
                }
                assert_eq!(plain_run(&bytes), at, "{stop:#x} at {at}");
            }
        }
        assert_eq!(plain_run(text.as_bytes()), text.len());
        assert_eq!(plain_run("é ~\u{7f} €".as_bytes()), "é ~\u{7f} €".len());
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let every_control: String = (0u8..0x20).map(char::from).collect();
        assert_eq!(
            written(every_control.as_str()),
            r#""\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f""#
        );
        assert_eq!(
            written(r#"a "quoted" \ path / ü € 😀 del"#),
            r#""a \"quoted\" \\ path / ü € 😀 del""#
        );
        assert_eq!(
            written("a long run of plain text, then\n"),
            r#""a long run of plain text, then\n""#
        );
        assert_eq!(written(""), r#""""#);
        assert_eq!(written(&'"'), r#""\"""#);
    }

    #[test]
    fn a_send_request_is_written_as_serde_json_writes_it() {
        let request = SendMessageRequest {
            tenant: Some("t\u{1}".into()),
            message: Message {
                message_id: "m-1".into(),
                context_id: Some("c\"1".into()),
                task_id: None,
                role: Role::User,
                parts: vec![
                    Part::text("line one\nline two"),
                    Part::data(
                        json!({"n": 1.5, "big": u64::MAX, "neg": -3, "nested": [null, true]}),
                    ),
                ],
                metadata: Some(Map::from_iter([("k\\".to_owned(), json!("v"))])),
                extensions: vec!["urn:x".into()],
                reference_task_ids: Vec::new(),
            },
            configuration: Some(SendMessageConfiguration {
                accepted_output_modes: vec!["text/plain".into()],
                history_length: Some(0),
                return_immediately: true,
            }),
            metadata: None,
        };
        assert!(written_here(&request));
        assert!(
            written(&request).starts_with(r#"{"tenant":"t\u0001","message":{"messageId":"m-1""#)
        );
    }

    #[test]
    fn what_serde_json_writes_its_own_way_is_left_to_it() {
        use std::collections::BTreeMap;
        let by_number: BTreeMap<u32, &str> = BTreeMap::from([(1, "one"), (2, "two")]);
        assert!(!written_here(&by_number));
        assert_eq!(written(&by_number), r#"{"1":"one","2":"two"}"#);
        let by_flag: BTreeMap<bool, u8> = BTreeMap::from([(true, 1)]);
        assert!(!written_here(&by_flag));
        assert_eq!(written(&by_flag), r#"{"true":1}"#);
        assert!(!written_here(serde_bytes_like()));
        assert_eq!(written(serde_bytes_like()), "[1,2]");
        let with_data: Result<u8, String> = Err("no".into());
        assert!(!written_here(&with_data));
        assert_eq!(written(&with_data), r#"{"Err":"no"}"#);
        // serde_json's error for a key it cannot write is the one the caller gets.
        let by_list: BTreeMap<Vec<u8>, u8> = BTreeMap::from([(vec![1], 1)]);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let our_error = write_compact(&mut ours, &by_list).unwrap_err().to_string();
        let their_error = serde_json::to_writer(&mut theirs, &by_list)
            .unwrap_err()
            .to_string();
        assert_eq!(our_error, their_error);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn serde_json_private_structs_are_left_to_it() {
        // With its `arbitrary_precision` or `raw_value` feature on, which another crate in a
        // build can turn on, serde_json writes these structs as bare text, not as objects.
        assert!(!written_here(&Private::Struct));
        assert!(!written_here(&Private::Newtype));
        assert_eq!(
            written(&Private::Struct),
            r#"{"$serde_json::private::Number":"1"}"#
        );
        assert_eq!(written(&Private::Newtype), r#""1""#);
    }

    enum Private {
        Struct,
        Newtype,
    }

    impl Serialize for Private {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeStruct;
            const NAME: &str = "$serde_json::private::Number";
            match self {
                Private::Struct => {
                    let mut fields = s.serialize_struct(NAME, 1)?;
                    fields.serialize_field(NAME, "1")?;
                    fields.end()
                }
                Private::Newtype => s.serialize_newtype_struct(NAME, "1"),
            }
        }
    }

    /// A value whose `Serialize` writes bytes.
    fn serde_bytes_like() -> &'static Bytes {
        &Bytes
    }

    struct Bytes;

    impl Serialize for Bytes {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&[1, 2])
        }
    }

    #[test]
    fn numbers_and_plain_shapes_are_written_here() {
        let value = json!({"f": 0.1, "e": 1e300, "i": i64::MIN, "u": u64::MAX, "z": -0.0,
                           "list": [1, "two", [], {}], "none": null, "yes": true});
        assert!(written_here(&value));
        assert_eq!(written(&value), value.to_string());
        assert_eq!(
            written(&(1u8, 'x', (), Some(2i128), None::<u8>, f32::NAN)),
            r#"[1,"x",null,2,null,null]"#
        );
    }

    #[test]
    fn every_serde_shape_is_written_as_serde_json_writes_it() {
        #[derive(serde::Serialize)]
        struct Unit;
        #[derive(serde::Serialize)]
        struct Newtype(&'static str);
        #[derive(serde::Serialize)]
        struct Pair(u8, Unit);
        #[derive(serde::Serialize)]
        struct Fields {
            name: Newtype,
            pair: Pair,
            kind: Kind,
        }
        #[derive(serde::Serialize)]
        enum Kind {
            Plain,
        }
        let fields = Fields {
            name: Newtype("n\\"),
            pair: Pair(7, Unit),
            kind: Kind::Plain,
        };
        assert!(written_here(&fields));
        assert_eq!(
            written(&fields),
            r#"{"name":"n\\","pair":[7,null],"kind":"Plain"}"#
        );
        let numbers = (
            -1i8, -2i16, -3i32, -4i64, -5i128, 1u8, 2u16, 3u32, 4u64, 5u128,
        );
        assert!(written_here(&numbers));
        assert_eq!(written(&numbers), "[-1,-2,-3,-4,-5,1,2,3,4,5]");
        let floats = (0.5f32, f32::INFINITY, -1.25f64, f64::NAN);
        assert_eq!(written(&floats), "[0.5,null,-1.25,null]");
        assert_eq!(
            written(&('é', '\n', [true, false])),
            r#"["é","\n",[true,false]]"#
        );
    }

    #[test]
    fn enum_variants_with_data_are_left_to_serde_json() {
        #[derive(serde::Serialize)]
        enum Shaped {
            Newtype(u8),
            Tuple(u8, u8),
            Struct { a: u8 },
        }
        for (value, text) in [
            (Shaped::Newtype(1), r#"{"Newtype":1}"#),
            (Shaped::Tuple(1, 2), r#"{"Tuple":[1,2]}"#),
            (Shaped::Struct { a: 3 }, r#"{"Struct":{"a":3}}"#),
        ] {
            assert!(!written_here(&value));
            assert_eq!(written(&value), text);
        }
    }

    /// Any JSON value: floats, integers at both ends, every kind of character in strings and
    /// member names.
    pub(crate) fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\"\\\\\u{0}-\u{1f}\u{7f}a-c\u{e9}\u{1F600}]{0,20}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-c\"\\\\\u{1}\n]{0,10}", inner), 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_value_is_written_as_serde_json_writes_it(v in any_json()) {
            prop_assert!(written_here(&v));
            written(&v);
        }

        #[test]
        fn any_message_is_written_as_serde_json_writes_it(
            id in any::<String>(),
            text in any::<String>(),
            data in any_json(),
            context in proptest::option::of(any::<String>()),
        ) {
            let message = Message {
                message_id: id,
                context_id: context,
                parts: vec![Part::text(text), Part::data(data)],
                role: Role::Agent,
                ..Message::default()
            };
            prop_assert!(written_here(&message));
            written(&message);
        }
    }
}
