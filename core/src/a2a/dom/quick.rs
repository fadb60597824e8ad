//! A direct reader of the JSON that answers are made of, into the same [`Json`] tree that
//! serde_json's reader builds, for a fraction of the instructions.
//!
//! It reads only what it is certain to read exactly as serde_json does, and gives up on the
//! rest: a number serde_json refuses, a lone surrogate escape, nesting deeper than
//! [`MAX_DEPTH`], and every kind of malformed text. Giving up returns `None`, and the caller
//! reads the same text with serde_json, so an error and anything rare come out exactly as they
//! did: this reader decides only how fast a tree is built, never what it holds. A float is
//! converted by serde_json itself (it rounds some decimals its own way), from the number's
//! text alone.

use super::{Json, JsonNumber, JsonObject};
use crate::a2a::json_text::plain_run;
use bumpalo::Bump;

/// How deep arrays and objects may nest before the reader gives up (serde_json's own limit is
/// 128; a deeper document is read, or refused, by serde_json).
const MAX_DEPTH: u32 = 64;

/// The tree of `text` if this reader is sure of it, else `None` (read it with serde_json).
pub(super) fn read<'a>(text: &'a str, arena: &'a Bump) -> Option<Json<'a>> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        at: 0,
        arena,
        depth: 0,
        members: Vec::with_capacity(16),
    };
    let value = reader.value()?;
    reader.skip_whitespace();
    (reader.at == reader.bytes.len()).then_some(value)
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    arena: &'a Bump,
    depth: u32,
    /// The members of every open array and object, innermost last; an array's have empty
    /// names. A finished list is copied into the arena at its exact length, so the tree
    /// wastes no room on lists that grew.
    members: Vec<(&'a str, Json<'a>)>,
}

impl<'a> Reader<'a> {
    /// Moves past the bytes `wanted` accepts and says how many there were. The position moves
    /// once by a counted length, never one step at a time in a loop.
    fn skip_while(&mut self, wanted: impl Fn(u8) -> bool) -> usize {
        let run = self.bytes[self.at..]
            .iter()
            .take_while(|b| wanted(**b))
            .count();
        self.at += run;
        run
    }

    fn skip_whitespace(&mut self) {
        let is_whitespace = |b: u8| matches!(b, b' ' | b'\n' | b'\t' | b'\r');
        // Compact answers have none between tokens: one test, not a run, in the common case.
        if self.bytes.get(self.at).is_some_and(|b| is_whitespace(*b)) {
            self.skip_while(is_whitespace);
        }
    }

    /// The next byte after whitespace, consumed.
    fn next_token(&mut self) -> Option<u8> {
        self.skip_whitespace();
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn value(&mut self) -> Option<Json<'a>> {
        match self.next_token()? {
            b'"' => self.string().map(Json::String),
            b'{' => self.object(),
            b'[' => self.array(),
            b't' => self.literal(b"rue", Json::Bool(true)),
            b'f' => self.literal(b"alse", Json::Bool(false)),
            b'n' => self.literal(b"ull", Json::Null),
            b'-' => self.number(self.at - 1, false),
            b'0'..=b'9' => {
                self.at -= 1;
                self.number(self.at, true)
            }
            _ => None,
        }
    }

    fn literal(&mut self, rest: &[u8], value: Json<'a>) -> Option<Json<'a>> {
        let end = self.at + rest.len();
        (self.bytes.get(self.at..end)? == rest).then(|| {
            self.at = end;
            value
        })
    }

    /// A number starting at `start` (its sign, if any, already read). An integer serde_json
    /// reads as an integer is read here. Any other number (a fraction, an exponent, `-0`, an
    /// integer past `u64::MAX` or below `i64::MIN`) becomes the float that serde_json's own
    /// reading of that number gives, as it does inside a document; one it refuses gives up.
    fn number(&mut self, start: usize, positive: bool) -> Option<Json<'a>> {
        let digits_start = self.at;
        let digits = self.skip_while(|b| b.is_ascii_digit());
        let leading_zero = digits > 1 && self.bytes[digits_start] == b'0';
        if digits == 0 || leading_zero {
            return None;
        }
        let is_float = matches!(self.bytes.get(self.at), Some(b'.' | b'e' | b'E'));
        let significand = self.bytes[digits_start..self.at]
            .iter()
            .try_fold(0u64, |s, d| {
                s.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            });
        let integer = match significand {
            Some(s) if !is_float => {
                if positive {
                    Some(JsonNumber::PosInt(s))
                } else {
                    // serde_json reads `-0` as a float, and so anything below `i64::MIN`.
                    0i64.checked_sub_unsigned(s)
                        .filter(|n| *n < 0)
                        .map(JsonNumber::NegInt)
                }
            }
            _ => None,
        };
        if let Some(integer) = integer {
            return Some(Json::Number(integer));
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.skip_digits();
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            self.skip_digits();
        }
        let float: f64 = serde_json::from_str(self.text.get(start..self.at)?).ok()?;
        Some(Json::Number(JsonNumber::Float(float)))
    }

    fn skip_digits(&mut self) {
        self.skip_while(|b| b.is_ascii_digit());
    }

    /// A string's contents after its opening quote, borrowed from the text unless it has
    /// escapes.
    fn string(&mut self) -> Option<&'a str> {
        let start = self.at;
        let stop = start + plain_run(&self.bytes[start..]);
        match self.bytes.get(stop)? {
            b'"' => {
                self.at = stop + 1;
                // The quote is ASCII, so both ends are character boundaries.
                self.text.get(start..stop)
            }
            b'\\' => self.escaped_string(start, stop),
            _ => None, // a control character, which JSON does not allow in a string
        }
    }

    /// The rest of a string whose first escape is at `escape`, unescaped into the arena.
    fn escaped_string(&mut self, start: usize, mut escape: usize) -> Option<&'a str> {
        let mut out = bumpalo::collections::String::new_in(self.arena);
        let mut plain_from = start;
        loop {
            out.push_str(self.text.get(plain_from..escape)?);
            let code = *self.bytes.get(escape + 1)?;
            self.at = escape + 2;
            match code {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => out.push(self.unicode_escape()?),
                _ => return None,
            }
            plain_from = self.at;
            let stop = plain_from + plain_run(&self.bytes[plain_from..]);
            match self.bytes.get(stop)? {
                b'"' => {
                    out.push_str(self.text.get(plain_from..stop)?);
                    self.at = stop + 1;
                    return Some(out.into_bump_str());
                }
                b'\\' => escape = stop,
                _ => return None,
            }
        }
    }

    /// The character of a `\u` escape whose four hex digits start at `self.at`; a surrogate
    /// pair takes both escapes. A lone surrogate gives up (serde_json refuses it in text): a
    /// low one is no `char`.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
                    return None;
                }
                self.at += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return None;
                }
                0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
            }
            _ => first,
        };
        char::from_u32(code)
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        let mut code = 0;
        for &d in digits {
            code = code * 16 + char::from(d).to_digit(16)?;
        }
        self.at += 4;
        Some(code)
    }

    fn open(&mut self) -> Option<usize> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(self.members.len())
    }

    fn array(&mut self) -> Option<Json<'a>> {
        let first = self.open()?;
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
        } else {
            loop {
                let item = self.value()?;
                self.members.push(("", item));
                match self.next_token()? {
                    b',' => {}
                    b']' => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        let items = self
            .arena
            .alloc_slice_fill_iter(self.members.drain(first..).map(|(_, item)| item));
        Some(Json::Array(items))
    }

    fn object(&mut self) -> Option<Json<'a>> {
        let first = self.open()?;
        if self.next_token()? != b'}' {
            self.at -= 1;
            loop {
                if self.next_token()? != b'"' {
                    return None;
                }
                let name = self.string()?;
                if self.next_token()? != b':' {
                    return None;
                }
                let value = self.value()?;
                self.members.push((name, value));
                match self.next_token()? {
                    b',' => {}
                    b'}' => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        let members = self.arena.alloc_slice_copy(&self.members[first..]);
        self.members.truncate(first);
        Some(Json::Object(JsonObject(members)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::json_text::tests::any_json;
    use proptest::prelude::*;

    /// serde_json's reading of `text` into the tree, the reference.
    fn by_serde<'a>(text: &'a str, arena: &'a Bump) -> Result<Json<'a>, serde_json::Error> {
        Json::read(&mut serde_json::Deserializer::from_str(text), arena)
    }

    /// The quick reading, checked against serde_json's whenever the quick reader is sure.
    fn agreed(text: &str) -> Option<String> {
        let (quick_arena, serde_arena) = (Bump::new(), Bump::new());
        let quick = read(text, &quick_arena)?;
        let reference = by_serde(text, &serde_arena);
        // Debug tells `-0.0` from `0.0`, which `PartialEq` does not.
        let reference = reference
            .map(|tree| format!("{tree:?}"))
            .map_err(|e| e.to_string());
        assert_eq!(Ok(format!("{quick:?}")), reference, "{text:?}");
        reference.ok()
    }

    fn is_read(text: &str) -> bool {
        agreed(text).is_some()
    }

    #[test]
    fn an_answer_is_read_as_serde_json_reads_it() {
        let answer = r#"{"jsonrpc":"2.0","id":"7","result":{"task":{"id":"t-1","contextId":"c",
            "status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-12-02T10:39:06Z"},
            "artifacts":[{"artifactId":"a","name":"result","parts":[{"text":"done: ü €"}]}],
            "metadata":{"n":42,"neg":-7,"ok":true,"no":false,"none":null,"list":[],"obj":{}}}}}"#;
        assert!(is_read(answer));
    }

    #[test]
    fn escapes_are_unescaped_as_serde_json_does() {
        assert!(is_read(r#""a\"b\\c\/d\be\ff\ng\rh\ti""#));
        assert!(is_read(r#"{"k\u00e9y":"\u20ac and \ud83d\ude00, \u0000"}"#));
        assert!(is_read(r#"["\uD83D\uDE00\u00E9"]"#));
        assert_eq!(agreed(r#""x\ny""#).as_deref(), Some(r#"String("x\ny")"#));
    }

    #[test]
    fn a_repeated_name_keeps_both_members_in_order() {
        let tree = agreed(r#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(
            tree,
            r#"Object(JsonObject([("a", Number(PosInt(1))), ("a", Number(PosInt(2)))]))"#
        );
    }

    #[test]
    fn integers_serde_json_reads_as_integers_are_read() {
        assert_eq!(agreed("0").as_deref(), Some("Number(PosInt(0))"));
        assert!(is_read("9999999999999999999"));
        assert!(is_read("18446744073709551615"));
        assert!(is_read("-9223372036854775807"));
        assert_eq!(agreed("-12").as_deref(), Some("Number(NegInt(-12))"));
        assert_eq!(
            agreed(" [ 1 , 2 ]\n\t\r").as_deref(),
            Some("Array([Number(PosInt(1)), Number(PosInt(2))])")
        );
    }

    #[test]
    fn other_numbers_are_the_floats_serde_json_reads() {
        for (text, tree) in [
            ("1.5", "Number(Float(1.5))"),
            ("1e3", "Number(Float(1000.0))"),
            ("2E-1", "Number(Float(0.2))"),
            ("-0", "Number(Float(-0.0))"),
            ("-0.0e+0", "Number(Float(-0.0))"),
            (
                "0.1000000000000000055511151231257827021181583404541015625",
                "Number(Float(0.1))",
            ),
            (
                "-9223372036854775808",
                "Number(NegInt(-9223372036854775808))",
            ),
            (
                "-9223372036854775809",
                "Number(Float(-9.223372036854776e18))",
            ),
            (
                "18446744073709551616",
                "Number(Float(1.8446744073709552e19))",
            ),
            (
                "[1e-400,2.5E+2]",
                "Array([Number(Float(0.0)), Number(Float(250.0))])",
            ),
        ] {
            assert_eq!(agreed(text).as_deref(), Some(tree), "{text}");
        }
    }

    #[test]
    fn what_serde_json_refuses_is_left_to_it_for_its_error() {
        for text in [
            r#""\ud800""#,
            r#""\udc00x""#,
            r#""\ud800\u0041""#,
            "1e400",
            "-1e400",
        ] {
            assert!(!is_read(text), "{text}");
            let arena = Bump::new();
            assert!(by_serde(text, &arena).is_err(), "{text}");
        }
    }

    #[test]
    fn malformed_text_is_left_to_serde_json_for_its_error() {
        for text in [
            "",
            " ",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1:2}",
            "[1 2]",
            "01",
            "-",
            "-a",
            "tru",
            "nul",
            "nulls",
            "\"open",
            "\"a\u{1}b\"",
            r#""\x""#,
            r#""\u12g4""#,
            "[1]]",
            "{\"a\":1}x",
            "\u{feff}1",
            "[",
            "{",
            "{\"a\"",
            "{\"a\":",
            "\"a\\",
        ] {
            assert!(!is_read(text), "{text:?}");
            let arena = Bump::new();
            assert!(by_serde(text, &arena).is_err(), "{text:?}");
        }
    }

    #[test]
    fn siblings_do_not_count_as_nesting() {
        let siblings = |open: &str, close: &str| {
            format!(
                "[{}]",
                vec![format!("{open}{close}"); 2 * MAX_DEPTH as usize].join(",")
            )
        };
        assert!(is_read(&siblings("[", "]")));
        assert!(is_read(&siblings("{", "}")));
        assert!(is_read(&siblings("{\"a\":[", "]}")));
    }

    #[test]
    fn nesting_past_the_quick_limit_is_left_to_serde_json() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(is_read(&nested(MAX_DEPTH as usize)));
        assert!(!is_read(&nested(MAX_DEPTH as usize + 1)));
        let arena = Bump::new();
        assert!(by_serde(&nested(MAX_DEPTH as usize + 1), &arena).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn written_json_is_read_as_serde_json_reads_it(v in any_json(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            };
            prop_assert!(agreed(&text).is_some(), "{}", text);
        }

        #[test]
        fn damaged_json_is_never_read_differently(
            v in any_json(),
            cuts in prop::collection::vec((any::<prop::sample::Index>(), 0u8..128), 1..4),
        ) {
            let mut bytes = serde_json::to_vec(&v).unwrap();
            for (at, byte) in cuts {
                if bytes.is_empty() {
                    break;
                }
                let at = at.index(bytes.len());
                if byte < 32 && byte % 2 == 0 {
                    bytes.remove(at);
                } else {
                    bytes[at] = byte;
                }
            }
            if let Ok(text) = std::str::from_utf8(&bytes) {
                agreed(text);
            }
        }
    }
}
