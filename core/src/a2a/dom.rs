//! The parsed JSON the ProtoJSON decoders read: either a `serde_json::Value` the host handed
//! in, or a [`Json`] tree parsed straight from response bytes.
//!
//! A response body is read once into [`Json`], whose strings and member names borrow from the
//! bytes (only strings with escapes are copied) and whose objects are member lists rather
//! than hash maps; the decoders then copy out just the strings the types keep. The tree's
//! lists and copied strings live in one arena the caller owns: a response's tree costs one
//! allocation and nothing to take apart, where a list per array and object cost one each
//! (and more as they grew) and a walk over the tree to drop. Reading the same bytes into a
//! `Value` first would allocate every name and string, hash every member and drop it all
//! again. Both trees give the same decoded types and the same errors.

use bumpalo::Bump;
use bumpalo::collections::Vec as ArenaVec;
use core::fmt;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

mod quick;

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
    Number(Number),
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
            Value::Number(n) => View::Number(n.clone()),
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

/// A JSON value parsed from bytes, borrowing its strings where it can; its lists and copied
/// strings live in the arena given to [`Json::parse`]. Nothing in it needs dropping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    Number(JsonNumber),
    String(&'a str),
    Array(&'a [Json<'a>]),
    Object(JsonObject<'a>),
}

/// A number as the parser read it (the same three kinds as `serde_json::Number`, kept here
/// so that the tree holds nothing to drop).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum JsonNumber {
    PosInt(u64),
    NegInt(i64),
    Float(f64),
}

impl JsonNumber {
    /// The `serde_json` number; `None` for a float JSON cannot hold, which reads as null as it
    /// does in a `Value`.
    fn to_number(self) -> Option<Number> {
        match self {
            JsonNumber::PosInt(u) => Some(u.into()),
            JsonNumber::NegInt(i) => Some(i.into()),
            JsonNumber::Float(f) => Number::from_f64(f),
        }
    }
}

// The arena never runs destructors: the tree must hold nothing that owns memory.
const _: () = assert!(!core::mem::needs_drop::<Json<'static>>());

/// The members of a [`Json`] object in document order, repeated names included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct JsonObject<'a>(&'a [(&'a str, Json<'a>)]);

impl<'a> Json<'a> {
    /// Parses `bytes` as one JSON document (trailing whitespace only), with serde_json's
    /// nesting limit; the tree's lists and copied strings go into `arena`.
    pub(crate) fn parse(bytes: &'a [u8], arena: &'a Bump) -> Result<Json<'a>, serde_json::Error> {
        // A body checked as UTF-8 once is read by the string reader, which does not check each
        // string again; any other body goes through the byte reader, which names the position
        // of the bad byte.
        match core::str::from_utf8(bytes) {
            Ok(text) => Self::parse_str(text, arena),
            Err(_) => Self::read(&mut serde_json::Deserializer::from_slice(bytes), arena),
        }
    }

    /// [`Json::parse`] of text already known to be UTF-8.
    pub(crate) fn parse_str(text: &'a str, arena: &'a Bump) -> Result<Json<'a>, serde_json::Error> {
        // Most answers are read by the quick reader; what it is not sure of, serde_json reads.
        match quick::read(text, arena) {
            Some(tree) => Ok(tree),
            None => Self::read(&mut serde_json::Deserializer::from_str(text), arena),
        }
    }

    /// An arena sized for the tree of a `len`-byte document: a few times the text, so a
    /// typical response needs one block, and bounded, so a large one grows on demand.
    pub(crate) fn arena_for(len: usize) -> Bump {
        // A2A answers' trees take 2.5 to 3.1 times their text, and bumpalo rounds a block up
        // to a power of two, which covers the rest in most cases. Four times the text took
        // twice the block a small answer needs.
        Bump::with_capacity((len.saturating_mul(11) / 4).min(64 * 1024))
    }

    fn read<R: serde_json::de::Read<'a>>(
        de: &mut serde_json::Deserializer<R>,
        arena: &'a Bump,
    ) -> Result<Json<'a>, serde_json::Error> {
        let v = JsonSeed { arena }.deserialize(&mut *de)?;
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
            Json::Number(n) => n.to_number().map_or(View::Null, View::Number),
            Json::String(s) => View::String(s),
            Json::Array(a) => View::Array(a),
            Json::Object(o) => View::Object(o),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => n.to_number().map_or(Value::Null, Value::Number),
            Json::String(s) => Value::String((*s).to_owned()),
            Json::Array(a) => Value::Array(a.iter().map(Dom::to_value).collect()),
            Json::Object(o) => Value::Object(o.to_map()),
        }
    }
}

impl<'a> DomObject for JsonObject<'a> {
    type Value = Json<'a>;

    fn get(&self, key: &str) -> Option<&Json<'a>> {
        // A repeated name reads as its last value, as it does in a `Value` map.
        self.0.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::with_capacity(self.0.len());
        for (k, v) in self.0 {
            m.insert((*k).to_owned(), v.to_value());
        }
        m
    }
}

/// Reads one [`Json`] value from serde_json's readers, which lend every string without
/// escapes and copy the others through a scratch buffer (`visit_str`, copied into the arena);
/// they never hand over an owned `String` and read `null` as unit.
struct JsonSeed<'a> {
    arena: &'a Bump,
}

impl<'a> DeserializeSeed<'a> for JsonSeed<'a> {
    type Value = Json<'a>;

    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<Json<'a>, D::Error> {
        d.deserialize_any(JsonVisitor { arena: self.arena })
    }
}

struct JsonVisitor<'a> {
    arena: &'a Bump,
}

impl<'a> Visitor<'a> for JsonVisitor<'a> {
    type Value = Json<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json<'a>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Json<'a>, E> {
        // The same kinds as `Number::from`: a non-negative integer is a positive one.
        Ok(Json::Number(match u64::try_from(i) {
            Ok(u) => JsonNumber::PosInt(u),
            Err(_) => JsonNumber::NegInt(i),
        }))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Json<'a>, E> {
        Ok(Json::Number(JsonNumber::PosInt(u)))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Json<'a>, E> {
        // A float JSON cannot hold reads as null when viewed (`JsonNumber::to_number`).
        Ok(Json::Number(JsonNumber::Float(f)))
    }

    fn visit_borrowed_str<E>(self, s: &'a str) -> Result<Json<'a>, E> {
        Ok(Json::String(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json<'a>, E> {
        Ok(Json::String(self.arena.alloc_str(s)))
    }

    fn visit_unit<E>(self) -> Result<Json<'a>, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'a>>(self, mut seq: A) -> Result<Json<'a>, A::Error> {
        let mut items = ArenaVec::new_in(self.arena);
        while let Some(v) = seq.next_element_seed(JsonSeed { arena: self.arena })? {
            items.push(v);
        }
        Ok(Json::Array(items.into_bump_slice()))
    }

    fn visit_map<A: MapAccess<'a>>(self, mut map: A) -> Result<Json<'a>, A::Error> {
        let mut members = ArenaVec::new_in(self.arena);
        while let Some(k) = map.next_key_seed(KeySeed { arena: self.arena })? {
            let v = map.next_value_seed(JsonSeed { arena: self.arena })?;
            members.push((k, v));
        }
        Ok(Json::Object(JsonObject(members.into_bump_slice())))
    }
}

/// Reads a member name, borrowing it when it has no escapes.
struct KeySeed<'a> {
    arena: &'a Bump,
}

impl<'a> DeserializeSeed<'a> for KeySeed<'a> {
    type Value = &'a str;

    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<&'a str, D::Error> {
        d.deserialize_str(KeyVisitor { arena: self.arena })
    }
}

struct KeyVisitor<'a> {
    arena: &'a Bump,
}

impl<'a> Visitor<'a> for KeyVisitor<'a> {
    type Value = &'a str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, s: &'a str) -> Result<&'a str, E> {
        Ok(s)
    }

    fn visit_str<E>(self, s: &str) -> Result<&'a str, E> {
        Ok(self.arena.alloc_str(s))
    }
}
