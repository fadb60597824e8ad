//! Rules of the parsed JSON the ProtoJSON decoders read (`core/src/a2a/dom.rs`), stated against
//! what a caller sees: a response body is read into a tree that borrows from the bytes, a host
//! hands in a `serde_json::Value`, and both must give the same decoded types and the same
//! errors. The bytes side is reached through a [`ResponseDecoder`], the `Value` side through
//! [`StreamResponse::from_json`].

mod common;

use a2at_core::a2a::{Binding, CallKind, PartContent, ResponseItem, StreamResponse};
use common::decode_with;
use proptest::prelude::*;
use serde_json::{Value, json};

fn json_head() -> Vec<(String, String)> {
    vec![("Content-Type".to_owned(), "application/json".to_owned())]
}

/// A JSON document as written on the wire: strings and member names may be written with
/// `\u` escapes (which the borrowed tree must copy), and an object may repeat a name.
#[derive(Debug, Clone)]
enum Doc {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String, bool),
    Arr(Vec<Doc>),
    Obj(Vec<(String, bool, Doc)>),
}

fn write_str(out: &mut String, s: &str, escaped: bool) {
    if escaped {
        out.push('"');
        for u in s.encode_utf16() {
            out.push_str(&format!("\\u{u:04x}"));
        }
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).unwrap());
    }
}

impl Doc {
    fn write(&self, out: &mut String) {
        match self {
            Doc::Null => out.push_str("null"),
            Doc::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Doc::Int(i) => out.push_str(&i.to_string()),
            Doc::UInt(u) => out.push_str(&u.to_string()),
            Doc::Float(f) => out.push_str(&serde_json::to_string(f).unwrap()),
            Doc::Str(s, e) => write_str(out, s, *e),
            Doc::Arr(items) => {
                out.push('[');
                for (i, d) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    d.write(out);
                }
                out.push(']');
            }
            Doc::Obj(members) => {
                out.push('{');
                for (i, (k, e, d)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k, *e);
                    out.push(':');
                    d.write(out);
                }
                out.push('}');
            }
        }
    }

    fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

const NAMES: &[&str] = &[
    "task",
    "message",
    "statusUpdate",
    "artifactUpdate",
    "id",
    "contextId",
    "taskId",
    "messageId",
    "role",
    "parts",
    "text",
    "raw",
    "url",
    "data",
    "file",
    "bytes",
    "uri",
    "kind",
    "metadata",
    "status",
    "state",
    "artifacts",
    "artifact",
    "history",
    "append",
    "lastChunk",
    "extensions",
    "mediaType",
    "filename",
    "name",
    "x",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]{0,6}",
        "\\PC{0,6}",
        Just(String::new()),
        Just("\"q\\\\/\u{e9}\u{1f600}".to_owned()),
    ]
}

fn esc() -> impl Strategy<Value = bool> {
    prop::bool::weighted(0.3)
}

fn leaf() -> BoxedStrategy<Doc> {
    prop_oneof![
        Just(Doc::Null),
        any::<bool>().prop_map(Doc::Bool),
        any::<i64>().prop_map(Doc::Int),
        (-3i64..40).prop_map(Doc::Int),
        any::<u64>().prop_map(Doc::UInt),
        any::<f64>().prop_map(Doc::Float),
        (-4i32..40).prop_map(|i| Doc::Float(f64::from(i))),
        (text(), esc()).prop_map(|(s, e)| Doc::Str(s, e)),
    ]
    .boxed()
}

/// Any JSON value, its member names mostly the ones the decoders look for.
fn junk() -> BoxedStrategy<Doc> {
    leaf()
        .prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Doc::Arr),
                prop::collection::vec(
                    (
                        prop::sample::select(NAMES).prop_map(str::to_owned),
                        esc(),
                        inner
                    ),
                    0..4
                )
                .prop_map(Doc::Obj),
            ]
        })
        .boxed()
}

/// A string member value; now and then something that is not one.
fn s(choices: &'static [&'static str]) -> BoxedStrategy<Doc> {
    prop_oneof![
        16 => (prop::sample::select(choices), esc()).prop_map(|(c, e)| Doc::Str(c.to_owned(), e)),
        2 => (text(), esc()).prop_map(|(t, e)| Doc::Str(t, e)),
        1 => junk(),
    ]
    .boxed()
}

/// An object with each `required` member and each `optional` one present or not, a member
/// now and then preceded by a decoy of the same name (a repeated name reads as its last
/// value), and now and then a junk value instead of the object.
fn obj_with(
    required: Vec<(&'static str, BoxedStrategy<Doc>)>,
    optional: Vec<(&'static str, BoxedStrategy<Doc>)>,
) -> BoxedStrategy<Doc> {
    let each: Vec<_> = required
        .into_iter()
        .map(|(k, v)| (k, (esc(), v).prop_map(Some).boxed()))
        .chain(
            optional
                .into_iter()
                .map(|(k, v)| (k, prop::option::weighted(0.6, (esc(), v)).boxed())),
        )
        .map(|(k, v)| {
            (v, prop::option::weighted(0.1, junk())).prop_map(move |(m, decoy)| {
                let mut out = Vec::new();
                if let Some((e, v)) = m {
                    if let Some(d) = decoy {
                        out.push((k.to_owned(), false, d));
                    }
                    out.push((k.to_owned(), e, v));
                }
                out
            })
        })
        .collect();
    prop_oneof![
        20 => each.prop_map(|ms| Doc::Obj(ms.into_iter().flatten().collect())),
        1 => junk(),
    ]
    .boxed()
}

fn obj(members: Vec<(&'static str, BoxedStrategy<Doc>)>) -> BoxedStrategy<Doc> {
    obj_with(Vec::new(), members)
}

/// A `Struct` member: mostly an object, its values anything.
fn meta() -> BoxedStrategy<Doc> {
    prop_oneof![
        4 => prop::collection::vec(
            (prop::sample::select(NAMES).prop_map(str::to_owned), esc(), junk()),
            0..4
        )
        .prop_map(Doc::Obj),
        1 => junk(),
    ]
    .boxed()
}

fn list(item: BoxedStrategy<Doc>) -> BoxedStrategy<Doc> {
    prop_oneof![
        10 => prop::collection::vec(item, 0..3).prop_map(Doc::Arr),
        1 => junk(),
    ]
    .boxed()
}

fn int_like() -> BoxedStrategy<Doc> {
    prop_oneof![
        (-2i64..5).prop_map(Doc::Int),
        (-2i32..5).prop_map(|i| Doc::Float(f64::from(i))),
        ((-2i32..5), esc()).prop_map(|(i, e)| Doc::Str(i.to_string(), e)),
        junk(),
    ]
    .boxed()
}

fn bool_like() -> BoxedStrategy<Doc> {
    prop_oneof![4 => any::<bool>().prop_map(Doc::Bool), 1 => junk()].boxed()
}

const IDS: &[&str] = &["t1", "c1", "m1", "a1", "", "\u{e9}t"];
const BASE64: &[&str] = &["aGk=", "aGk", "-_8", "", "not base64!", "a b c d"];

fn part() -> BoxedStrategy<Doc> {
    let file = || {
        obj(vec![
            ("bytes", s(BASE64)),
            ("uri", s(&["https://x/f", ""])),
            ("mimeType", s(&["text/plain"])),
            ("name", s(&["f.txt"])),
        ])
    };
    let extras = || {
        vec![
            ("kind", s(&["text", "file", "data"])),
            ("metadata", meta()),
            ("filename", s(&["a.bin"])),
            ("mediaType", s(&["application/json"])),
        ]
    };
    prop_oneof![
        3 => obj_with(vec![("text", s(&["hello", ""]))], extras()),
        3 => obj_with(vec![("raw", s(BASE64))], extras()),
        2 => obj_with(vec![("url", s(&["https://x/y"]))], extras()),
        3 => obj_with(vec![("data", junk())], extras()),
        2 => obj_with(vec![("file", file())], extras()),
        1 => obj(
            [
                ("text", s(&["hello"])),
                ("raw", s(BASE64)),
                ("url", s(&["https://x/y"])),
                ("data", junk()),
                ("file", file()),
            ]
            .into_iter()
            .chain(extras())
            .collect()
        ),
    ]
    .boxed()
}

fn message() -> BoxedStrategy<Doc> {
    obj(vec![
        ("kind", s(&["message"])),
        ("messageId", s(IDS)),
        (
            "role",
            s(&["ROLE_USER", "ROLE_AGENT", "agent", "user", "ROLE_X"]),
        ),
        ("parts", list(part())),
        ("contextId", s(IDS)),
        ("taskId", s(IDS)),
        ("metadata", meta()),
        ("extensions", list(s(&["urn:e"]))),
        ("referenceTaskIds", list(s(IDS))),
    ])
}

fn state() -> BoxedStrategy<Doc> {
    prop_oneof![
        s(&[
            "TASK_STATE_COMPLETED",
            "TASK_STATE_WORKING",
            "TASK_STATE_FAILED",
            "completed",
            "working",
            "input-required",
            "TASK_STATE_NOPE",
        ]),
        int_like(),
    ]
    .boxed()
}

fn status() -> BoxedStrategy<Doc> {
    obj(vec![
        ("state", state()),
        ("message", message()),
        ("timestamp", s(&["2025-01-01T00:00:00Z"])),
    ])
}

fn artifact() -> BoxedStrategy<Doc> {
    obj(vec![
        ("artifactId", s(IDS)),
        ("name", s(&["out"])),
        ("description", s(&["d"])),
        ("parts", list(part())),
        ("metadata", meta()),
        ("extensions", list(s(&["urn:e"]))),
    ])
}

fn task() -> BoxedStrategy<Doc> {
    obj(vec![
        ("kind", s(&["task"])),
        ("id", s(IDS)),
        ("contextId", s(IDS)),
        ("status", status()),
        ("artifacts", list(artifact())),
        ("history", list(message())),
        ("metadata", meta()),
    ])
}

fn status_update() -> BoxedStrategy<Doc> {
    obj(vec![
        ("kind", s(&["status-update"])),
        ("taskId", s(IDS)),
        ("contextId", s(IDS)),
        ("status", status()),
        ("final", bool_like()),
        ("metadata", meta()),
    ])
}

fn artifact_update() -> BoxedStrategy<Doc> {
    obj(vec![
        ("kind", s(&["artifact-update"])),
        ("taskId", s(IDS)),
        ("contextId", s(IDS)),
        ("artifact", artifact()),
        ("append", bool_like()),
        ("lastChunk", bool_like()),
        ("metadata", meta()),
    ])
}

/// A send/stream response object: one payload member (sometimes two or none), or a bare
/// payload. A body that is not an object is refused before any decoding.
fn response() -> BoxedStrategy<Doc> {
    prop_oneof![
        4 => obj_with(vec![("task", task())], vec![]),
        4 => obj_with(vec![("message", message())], vec![]),
        3 => obj_with(vec![("statusUpdate", status_update())], vec![]),
        3 => obj_with(vec![("artifactUpdate", artifact_update())], vec![]),
        1 => obj(vec![("task", task()), ("message", message())]),
        2 => task(),
        2 => message(),
        1 => junk(),
    ]
    .prop_filter("an object body", |d| matches!(d, Doc::Obj(_)))
    .boxed()
}

/// What the bytes side gives for `body`: the decoded payload, or the message of the
/// malformed item.
fn decode_bytes(body: &str) -> Result<StreamResponse, String> {
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendMessage,
        "",
        200,
        &json_head(),
        body.as_bytes(),
        7,
    );
    match items.as_slice() {
        [ResponseItem::Event(sr), ResponseItem::End { events: 1 }] => Ok(sr.clone()),
        [ResponseItem::Malformed(e), ResponseItem::End { events: 0 }] => Err(e.message.clone()),
        other => panic!("unexpected items for {body}: {other:?}"),
    }
}

/// What the `Value` side gives for `body`, worded as the decoder words a payload error.
fn decode_value(body: &str) -> Result<StreamResponse, String> {
    let v: Value = serde_json::from_str(body).unwrap();
    StreamResponse::from_json(&v).map_err(|e| format!("invalid A2A payload at {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(768))]

    /// A response body read straight from its bytes decodes to the same payload, or fails
    /// with the same error at the same path, as the same body read into a `Value` first:
    /// escaped strings and names, repeated names, numbers of every kind and nested data alike.
    /// A host that decodes a stored `Value` must see what the live decoder saw.
    #[test]
    fn bytes_and_a_value_of_the_same_body_decode_alike(doc in response()) {
        let body = doc.text();
        prop_assert_eq!(decode_bytes(&body), decode_value(&body), "{}", body);
    }
}

/// A member name written with escapes names the same member as the plain name: the borrowed
/// tree copies such a name rather than lending it, and must copy it whole.
#[test]
fn a_member_name_written_with_escapes_names_the_same_member() {
    let body = r#"{"\u0074ask":{"\u0069d":"t\u0031","st\u0061tus":{"state":"TASK_STATE_COMPLETED"},
        "metadata":{"k\u00e9y":"v","plain":1}}}"#;
    let Ok(StreamResponse::Task(t)) = decode_bytes(body) else {
        panic!("not a task: {:?}", decode_bytes(body));
    };
    assert_eq!(t.id, "t1");
    assert_eq!(t.status.state.as_str(), "TASK_STATE_COMPLETED");
    let md = t.metadata.expect("metadata");
    assert_eq!(md.get("k\u{e9}y"), Some(&json!("v")));
    assert_eq!(md.get("plain"), Some(&json!(1)));
    assert_eq!(decode_bytes(body), decode_value(body));
}

/// A repeated member name reads as its last value, as it does in a `Value` map: the two trees
/// must agree on which of two conflicting members counts.
#[test]
fn a_repeated_member_name_reads_as_its_last_value() {
    let body = r#"{"message":{"messageId":"first","role":"ROLE_USER","messageId":"last",
        "parts":[{"text":"a","text":"b"}]}}"#;
    let Ok(StreamResponse::Message(m)) = decode_bytes(body) else {
        panic!("not a message: {:?}", decode_bytes(body));
    };
    assert_eq!(m.message_id, "last");
    assert_eq!(m.parts[0].content, PartContent::Text("b".to_owned()));
    assert_eq!(decode_bytes(body), decode_value(body));
}

/// A `data` part keeps its JSON as sent (numbers, escaped strings and nested objects), whether
/// it was read from bytes or handed in as a `Value`: the data is the agent's output.
#[test]
fn a_data_part_keeps_its_json_as_sent() {
    let data = json!({"n": -3, "u": 18446744073709551615u64, "f": 1.5, "s": "q\"\u{e9}",
        "a": [null, true, {"k": []}], "o": {}});
    let body = json!({"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"data":data}]}})
        .to_string();
    for got in [decode_bytes(&body), decode_value(&body)] {
        let Ok(StreamResponse::Message(m)) = got else {
            panic!("not a message: {got:?}");
        };
        assert_eq!(m.parts[0].content, PartContent::Data(data.clone()));
    }
}
