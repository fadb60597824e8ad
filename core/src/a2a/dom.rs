//! The parsed JSON the ProtoJSON decoders read: either a `serde_json::Value` the host handed
//! in, or a [`Json`] tree parsed straight from response bytes.
//!
//! A response body is read once into [`Json`], whose strings and member names borrow from the
//! bytes (only strings with escapes are copied) and whose objects are member lists rather
//! than hash maps; the decoders then copy out just the strings the types keep. Reading the
//! same bytes into a `Value` first would allocate every name and string, hash every member
//! and drop it all again. Both trees give the same decoded types and the same errors.

use core::fmt;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// A parsed JSON value the decoders can read.
pub(crate) trait Dom: Sized {
    /// The object representation.
    type Object: DomObject<Value = Self>;
    /// What kind of value this is, with borrowed contents.
    fn view(&self) -> View<'_, Self>;
    /// An owned `Value` copy (for `data` parts, metadata and error messages).
    fn to_value(&self) -> Value;
}

/// An object of a [`Dom`].
pub(crate) trait DomObject {
    /// The value representation.
    type Value: Dom<Object = Self>;
    /// The member named `key`, `null` included; the last one when the name is repeated.
    fn get(&self, key: &str) -> Option<&Self::Value>;
    /// An owned copy.
    fn to_map(&self) -> Map<String, Value>;
}

/// One value of a [`Dom`], by kind.
pub(crate) enum View<'v, D: Dom> {
    Null,
    Bool(bool),
    Number(&'v Number),
    String(&'v str),
    Array(&'v [D]),
    Object(&'v D::Object),
}

impl Dom for Value {
    type Object = Map<String, Value>;

    fn view(&self) -> View<'_, Value> {
        match self {
            Value::Null => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Number(n) => View::Number(n),
            Value::String(s) => View::String(s),
            Value::Array(a) => View::Array(a),
            Value::Object(o) => View::Object(o),
        }
    }

    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl DomObject for Map<String, Value> {
    type Value = Value;

    fn get(&self, key: &str) -> Option<&Value> {
        Map::get(self, key)
    }

    fn to_map(&self) -> Map<String, Value> {
        self.clone()
    }
}

/// A JSON value parsed from bytes, borrowing its strings where it can.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(JsonObject<'a>),
}

/// The members of a [`Json`] object in document order, repeated names included.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct JsonObject<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> Json<'a> {
    /// Parses `bytes` as one JSON document (trailing whitespace only), with serde_json's
    /// nesting limit.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Json<'a>, serde_json::Error> {
        // A body checked as UTF-8 once is read by the string reader, which does not check each
        // string again; any other body goes through the byte reader, which names the position
        // of the bad byte.
        match core::str::from_utf8(bytes) {
            Ok(text) => Self::parse_str(text),
            Err(_) => Self::read(&mut serde_json::Deserializer::from_slice(bytes)),
        }
    }

    /// [`Json::parse`] of text already known to be UTF-8.
    pub(crate) fn parse_str(text: &'a str) -> Result<Json<'a>, serde_json::Error> {
        Self::read(&mut serde_json::Deserializer::from_str(text))
    }

    fn read<R: serde_json::de::Read<'a>>(
        de: &mut serde_json::Deserializer<R>,
    ) -> Result<Json<'a>, serde_json::Error> {
        let v = JsonSeed.deserialize(&mut *de)?;
        de.end()?;
        Ok(v)
    }
}

impl<'a> Dom for Json<'a> {
    type Object = JsonObject<'a>;

    fn view(&self) -> View<'_, Self> {
        match self {
            Json::Null => View::Null,
            Json::Bool(b) => View::Bool(*b),
            Json::Number(n) => View::Number(n),
            Json::String(s) => View::String(s),
            Json::Array(a) => View::Array(a),
            Json::Object(o) => View::Object(o),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.as_ref().to_owned()),
            Json::Array(a) => Value::Array(a.iter().map(Dom::to_value).collect()),
            Json::Object(o) => Value::Object(o.to_map()),
        }
    }
}

impl<'a> DomObject for JsonObject<'a> {
    type Value = Json<'a>;

    fn get(&self, key: &str) -> Option<&Json<'a>> {
        // A repeated name reads as its last value, as it does in a `Value` map.
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::with_capacity(self.0.len());
        for (k, v) in &self.0 {
            m.insert(k.as_ref().to_owned(), v.to_value());
        }
        m
    }
}

/// Reads one [`Json`] value from serde_json's slice reader, which lends every string without
/// escapes and copies the others through a scratch buffer (`visit_str`); it never hands over
/// an owned `String` and reads `null` as unit.
struct JsonSeed;

impl<'de> DeserializeSeed<'de> for JsonSeed {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(i.into()))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(u.into()))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Json<'de>, E> {
        // The same rule as `Value`: a float JSON cannot hold reads as null.
        Ok(Number::from_f64(f).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_owned())))
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(v) = seq.next_element_seed(JsonSeed)? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(k) = map.next_key_seed(KeySeed)? {
            let v = map.next_value_seed(JsonSeed)?;
            members.push((k, v));
        }
        Ok(Json::Object(JsonObject(members)))
    }
}

/// Reads a member name, borrowing it when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s.to_owned()))
    }
}
