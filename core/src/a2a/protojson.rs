//! ProtoJSON reading and writing helpers shared by every A2A type.
//!
//! Reading is tolerant in the ways ProtoJSON allows (a2a-wire §0): `null` and `""` count as
//! absent for optional strings, integers may arrive as integral doubles (`1.0`) or numeric
//! strings (`"10"`), unknown members are ignored. Type mismatches are reported as a
//! [`DecodeError`] naming the JSON path and what was wrong; no input ever panics.

use super::dom::{Dom, DomObject, View};
use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use core::fmt;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// Why a JSON document is not a valid A2A payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct DecodeError {
    /// JSON path of the offending value, e.g. `$.task.status.message.parts[0]`.
    pub path: String,
    /// What was wrong with it.
    pub kind: DecodeErrorKind,
}

/// The problem found at [`DecodeError::path`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    /// The value has the wrong JSON type.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// The JSON type that was expected.
        expected: &'static str,
        /// The JSON type that was found.
        found: &'static str,
    },
    /// A number or numeric string that is not an integer in the field's range.
    #[error("not an integer in range: {0}")]
    BadInteger(String),
    /// A `raw` member that is not base64 (standard or URL-safe, padded or not).
    #[error("invalid base64 bytes")]
    BadBase64,
    /// A part with none of `text`, `raw`, `url`, `data` (or v0.3 `file`).
    #[error("part has no content member (text, raw, url or data)")]
    PartWithoutContent,
    /// A part with two content members (a oneof violation).
    #[error("part has more than one content member: {first} and {second}")]
    PartWithTwoContents {
        /// The first content member found.
        first: &'static str,
        /// The second content member found.
        second: &'static str,
    },
    /// A v0.3 `file` part whose `file` object holds neither `bytes` nor `uri`.
    #[error("v0.3 file part has neither bytes nor uri")]
    FileWithoutContent,
    /// A stream/send response object carrying none of the payload members.
    #[error("no payload member (task, message, statusUpdate or artifactUpdate)")]
    NoPayload,
    /// A stream/send response object carrying two payload members.
    #[error("more than one payload member: {first} and {second}")]
    TwoPayloads {
        /// The first payload member found.
        first: &'static str,
        /// The second payload member found.
        second: &'static str,
    },
    /// A v0.3 `kind` discriminator that names no known object.
    #[error("unknown kind {0:?}")]
    UnknownKind(String),
    /// A required value that is missing.
    #[error("missing required member")]
    Missing,
    /// The bytes are not JSON at all.
    #[error("invalid JSON: {0}")]
    Json(String),
}

/// A cheap, lazily formatted JSON path used while decoding.
#[derive(Clone, Copy)]
pub(crate) enum Path<'a> {
    /// The document root.
    Root,
    /// A member of an object.
    Key(&'a Path<'a>, &'a str),
    /// An element of an array.
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    pub(crate) fn key(&'a self, k: &'a str) -> Path<'a> {
        Path::Key(self, k)
    }
    pub(crate) fn index(&'a self, i: usize) -> Path<'a> {
        Path::Index(self, i)
    }
    pub(crate) fn err(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError {
            path: self.to_string(),
            kind,
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => f.write_str("$"),
            Path::Key(p, k) => write!(f, "{p}.{k}"),
            Path::Index(p, i) => write!(f, "{p}[{i}]"),
        }
    }
}

/// Name of the JSON type of `v`, for error messages.
pub(crate) fn type_name<D: Dom>(v: &D) -> &'static str {
    match v.view() {
        View::Null => "null",
        View::Bool(_) => "boolean",
        View::Number(_) => "number",
        View::String(_) => "string",
        View::Array(_) => "array",
        View::Object(_) => "object",
    }
}

pub(crate) fn wrong<D: Dom>(path: &Path<'_>, expected: &'static str, v: &D) -> DecodeError {
    path.err(DecodeErrorKind::WrongType {
        expected,
        found: type_name(v),
    })
}

/// The value as an object, or a typed error.
pub(crate) fn as_object<'v, D: Dom>(
    v: &'v D,
    path: &Path<'_>,
) -> Result<&'v D::Object, DecodeError> {
    match v.view() {
        View::Object(o) => Ok(o),
        _ => Err(wrong(path, "object", v)),
    }
}

/// A member that is present and not `null`.
pub(crate) fn member<'v, O: DomObject>(m: &'v O, key: &str) -> Option<&'v O::Value> {
    m.get(key).filter(|v| !matches!(v.view(), View::Null))
}

/// An optional string: absent, `null` and `""` are all `None`.
pub(crate) fn opt_string<O: DomObject>(
    m: &O,
    key: &str,
    path: &Path<'_>,
) -> Result<Option<String>, DecodeError> {
    let Some(v) = member(m, key) else {
        return Ok(None);
    };
    match v.view() {
        View::String("") => Ok(None),
        View::String(s) => Ok(Some(s.to_owned())),
        _ => Err(wrong(&path.key(key), "string", v)),
    }
}

/// A string with proto3 default semantics: absent/`null` is `""`.
pub(crate) fn string<O: DomObject>(
    m: &O,
    key: &str,
    path: &Path<'_>,
) -> Result<String, DecodeError> {
    Ok(opt_string(m, key, path)?.unwrap_or_default())
}

/// A boolean; absent/`null` is `false`.
pub(crate) fn boolean<O: DomObject>(
    m: &O,
    key: &str,
    path: &Path<'_>,
) -> Result<bool, DecodeError> {
    Ok(opt_bool(m, key, path)?.unwrap_or(false))
}

/// An optional boolean (proto3 `optional bool`).
pub(crate) fn opt_bool<O: DomObject>(
    m: &O,
    key: &str,
    path: &Path<'_>,
) -> Result<Option<bool>, DecodeError> {
    let Some(v) = member(m, key) else {
        return Ok(None);
    };
    match v.view() {
        View::Bool(b) => Ok(Some(b)),
        _ => Err(wrong(&path.key(key), "boolean", v)),
    }
}

/// Reads an integer the ProtoJSON way: a JSON number with an integral value (`3`, `3.0`,
/// `3e0`) or a string holding one (`"3"`).
pub(crate) fn integer<D: Dom>(v: &D, path: &Path<'_>) -> Result<i64, DecodeError> {
    let bad = || {
        path.err(DecodeErrorKind::BadInteger(short(
            &v.to_value().to_string(),
        )))
    };
    match v.view() {
        View::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i)
            } else if n.is_u64() {
                Err(bad())
            } else {
                float_to_int(n.as_f64().unwrap_or(f64::NAN)).ok_or_else(bad)
            }
        }
        View::String(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                Ok(i)
            } else if t.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) && !t.is_empty()
            {
                t.parse::<f64>().ok().and_then(float_to_int).ok_or_else(bad)
            } else {
                Err(bad())
            }
        }
        _ => Err(wrong(path, "integer", v)),
    }
}

fn float_to_int(f: f64) -> Option<i64> {
    // 2^63 is exactly representable; anything at or above it does not fit.
    if f.is_finite()
        && f.fract() == 0.0
        && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f)
    {
        Some(f as i64)
    } else {
        None
    }
}

/// An optional `int32` member.
pub(crate) fn opt_i32<O: DomObject>(
    m: &O,
    key: &str,
    path: &Path<'_>,
) -> Result<Option<i32>, DecodeError> {
    match member(m, key) {
        None => Ok(None),
        Some(v) => {
            let p = path.key(key);
            let i = integer(v, &p)?;
            i32::try_from(i)
                .map(Some)
                .map_err(|_| p.err(DecodeErrorKind::BadInteger(i.to_string())))
        }
    }
}

/// An optional object member (`Struct`); `{}` is kept as `Some(empty)`.
pub(crate) fn opt_struct<O: DomObject>(
    m: &O,
    key: &str,
    path: &Path<'_>,
) -> Result<Option<Map<String, Value>>, DecodeError> {
    let Some(v) = member(m, key) else {
        return Ok(None);
    };
    match v.view() {
        View::Object(o) => Ok(Some(o.to_map())),
        _ => Err(wrong(&path.key(key), "object", v)),
    }
}

/// A repeated member decoded element by element; absent/`null` is empty.
pub(crate) fn list<O: DomObject, T>(
    m: &O,
    key: &str,
    path: &Path<'_>,
    mut f: impl FnMut(&O::Value, &Path<'_>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let Some(v) = member(m, key) else {
        return Ok(Vec::new());
    };
    match v.view() {
        View::Array(items) => {
            // Sized exactly: decoded lists (a task's artifacts, an artifact's parts) are kept
            // as they are, and collecting through `Result` would leave room for four.
            let p = path.key(key);
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                out.push(f(v, &p.index(i))?);
            }
            Ok(out)
        }
        _ => Err(wrong(&path.key(key), "array", v)),
    }
}

/// A repeated string member.
pub(crate) fn string_list<O: DomObject>(
    m: &O,
    key: &str,
    path: &Path<'_>,
) -> Result<Vec<String>, DecodeError> {
    list(m, key, path, |v, p| match v.view() {
        View::String(s) => Ok(s.to_owned()),
        _ => Err(wrong(p, "string", v)),
    })
}

/// Decodes base64 bytes: standard or URL-safe alphabet, padded or unpadded, ASCII whitespace
/// ignored.
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let normalised: String = s
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    LENIENT.decode(normalised.as_bytes()).ok()
}

/// Encodes bytes as standard padded base64 (the ProtoJSON output form).
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Builds JSON objects in proto field order, omitting defaults.
pub(crate) struct ObjectWriter(Map<String, Value>);

impl ObjectWriter {
    pub(crate) fn new() -> Self {
        ObjectWriter(Map::new())
    }
    /// Always writes the member.
    pub(crate) fn put(&mut self, key: &str, v: Value) -> &mut Self {
        self.0.insert(key.to_owned(), v);
        self
    }
    /// Writes a string unless it is empty.
    pub(crate) fn str(&mut self, key: &str, s: &str) -> &mut Self {
        if !s.is_empty() {
            self.put(key, Value::String(s.to_owned()));
        }
        self
    }
    /// Writes an optional string unless it is `None` or empty.
    pub(crate) fn opt_str(&mut self, key: &str, s: &Option<String>) -> &mut Self {
        if let Some(s) = s {
            self.str(key, s);
        }
        self
    }
    /// Writes `true`; `false` is the default and is omitted.
    pub(crate) fn flag(&mut self, key: &str, b: bool) -> &mut Self {
        if b {
            self.put(key, Value::Bool(true));
        }
        self
    }
    /// Writes an optional boolean when present (presence matters).
    pub(crate) fn opt_bool(&mut self, key: &str, b: Option<bool>) -> &mut Self {
        if let Some(b) = b {
            self.put(key, Value::Bool(b));
        }
        self
    }
    /// Writes an optional object when present (even when empty: `Struct` has presence).
    pub(crate) fn opt_struct(&mut self, key: &str, m: &Option<Map<String, Value>>) -> &mut Self {
        if let Some(m) = m {
            self.put(key, Value::Object(m.clone()));
        }
        self
    }
    /// Writes a list unless it is empty.
    pub(crate) fn list<T>(&mut self, key: &str, items: &[T], f: impl Fn(&T) -> Value) -> &mut Self {
        if !items.is_empty() {
            self.put(key, Value::Array(items.iter().map(f).collect()));
        }
        self
    }
    /// Writes a list of strings unless it is empty.
    pub(crate) fn strings(&mut self, key: &str, items: &[String]) -> &mut Self {
        self.list(key, items, |s| Value::String(s.clone()))
    }
    pub(crate) fn finish(&mut self) -> Value {
        Value::Object(core::mem::take(&mut self.0))
    }
}

/// Writes an object's members in proto field order straight to a serializer, omitting
/// defaults: the same rules as [`ObjectWriter`] without building a `Value` first.
pub(crate) struct FieldWriter<M>(M);

impl<M: SerializeMap> FieldWriter<M> {
    pub(crate) fn begin<S>(s: S) -> Result<Self, S::Error>
    where
        S: Serializer<SerializeMap = M, Error = M::Error>,
    {
        Ok(FieldWriter(s.serialize_map(None)?))
    }
    /// Always writes the member.
    pub(crate) fn put<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        v: &T,
    ) -> Result<&mut Self, M::Error> {
        self.0.serialize_entry(key, v)?;
        Ok(self)
    }
    /// Writes a string unless it is empty.
    pub(crate) fn str(&mut self, key: &str, s: &str) -> Result<&mut Self, M::Error> {
        if !s.is_empty() {
            self.put(key, s)?;
        }
        Ok(self)
    }
    /// Writes an optional string unless it is `None` or empty.
    pub(crate) fn opt_str(&mut self, key: &str, s: &Option<String>) -> Result<&mut Self, M::Error> {
        match s {
            Some(s) => self.str(key, s),
            None => Ok(self),
        }
    }
    /// Writes `true`; `false` is the default and is omitted.
    pub(crate) fn flag(&mut self, key: &str, b: bool) -> Result<&mut Self, M::Error> {
        if b {
            self.put(key, &true)?;
        }
        Ok(self)
    }
    /// Writes an optional value when present (`Struct`, messages, integers: presence matters).
    pub(crate) fn opt<T: Serialize>(
        &mut self,
        key: &str,
        v: &Option<T>,
    ) -> Result<&mut Self, M::Error> {
        if let Some(v) = v {
            self.put(key, v)?;
        }
        Ok(self)
    }
    /// Writes a list unless it is empty.
    pub(crate) fn list<T: Serialize>(
        &mut self,
        key: &str,
        items: &[T],
    ) -> Result<&mut Self, M::Error> {
        if !items.is_empty() {
            self.put(key, items)?;
        }
        Ok(self)
    }
    pub(crate) fn end(self) -> Result<M::Ok, M::Error> {
        self.0.end()
    }
}

/// The `Value` form of a type whose `Serialize` writes ProtoJSON.
pub(crate) fn value_of<T: Serialize>(v: &T) -> Value {
    // The writers only use string member names, so building a `Value` cannot fail.
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Shortens a string for error messages (at most 120 characters).
pub(crate) fn short(s: &str) -> String {
    const MAX: usize = 120;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(MAX).collect();
        t.push('…');
        t
    }
}

/// Implements `Deserialize` through the type's tolerant `decode` of a `Value`; `Serialize` is
/// written by hand.
macro_rules! deserialize_via_decode {
    ($t:ty) => {
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
                <$t>::decode(&v, &$crate::a2a::protojson::Path::Root)
                    .map_err(<D::Error as serde::de::Error>::custom)
            }
        }
    };
}
pub(crate) use deserialize_via_decode;

/// Implements `Serialize`/`Deserialize` through the type's `to_json`/`from_json`.
macro_rules! via_protojson {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&self.to_json(), s)
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
                <$t>::from_json(&v).map_err(<D::Error as serde::de::Error>::custom)
            }
        }
    };
}
pub(crate) use via_protojson;
