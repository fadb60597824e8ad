//! Rules of the protobuf mapping of the `lf.a2a.v1` messages and of the well-known
//! `google.protobuf.Struct`/`Value`/`ListValue` types they embed, stated against encoded bytes
//! and decoded values: how deep a `Struct`/`ListValue` may nest (the outermost level counting
//! as one, both kinds counting alike), which `Value` kind wins when several are sent, how
//! every `Value` kind is written even at its default, and that a message's metadata map is
//! read back wherever it is sent, even empty.

mod common;

use a2at_core::a2a::grpc::{CancelTaskRequest, GrpcMessage, MAX_STRUCT_DEPTH, WireError};
use a2at_core::a2a::{
    Artifact, Message, Part, PartContent, SendMessageRequest, Task, TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
};
use common::{json_value, object, proto_round_trip};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// One container per entry of `kinds` around the string `"x"`, `kinds[0]` the outermost:
/// `true` is an object (one member `"k"`), `false` a list (one item).
fn nested(kinds: &[bool]) -> Value {
    kinds.iter().rev().fold(json!("x"), |inner, &object| {
        if object {
            json!({ "k": inner })
        } else {
            json!([inner])
        }
    })
}

/// `levels` objects around the string `"x"`.
fn nested_objects(levels: usize) -> Value {
    nested(&vec![true; levels])
}

/// A text part carrying `metadata`.
fn text_with_metadata(metadata: Map<String, Value>) -> Part {
    let mut p = Part::text("t");
    p.metadata = Some(metadata);
    p
}

fn too_deep() -> Result<Part, WireError> {
    Err(WireError::TooDeep {
        limit: MAX_STRUCT_DEPTH,
    })
}

/// The bytes of the `google.protobuf.Value` a data part holding `v` carries (the part's field
/// 4, its tag and length stripped).
fn value_bytes(v: &Value) -> Vec<u8> {
    let part = Part::data(v.clone()).encode_proto();
    assert_eq!(part[0], 0x22, "data is field 4, length-delimited");
    let (mut len, mut at, mut shift) = (0usize, 1, 0);
    loop {
        let b = part[at];
        len |= usize::from(b & 0x7f) << shift;
        at += 1;
        shift += 7;
        if b < 0x80 {
            break;
        }
    }
    assert_eq!(part.len(), at + len, "the part holds only its data");
    part[at..].to_vec()
}

/// A data part whose `Value` is the given bytes.
fn data_part_of(value: &[u8]) -> Vec<u8> {
    let mut out = vec![0x22];
    let mut n = value.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(value);
    out
}

fn data_of(bytes: &[u8]) -> Result<Value, WireError> {
    Part::decode_proto(bytes).map(|p| match p.content {
        PartContent::Data(v) => v,
        other => panic!("not a data part: {other:?}"),
    })
}

/// A data part may hold exactly `MAX_STRUCT_DEPTH` nested `Struct`s, the outermost counting
/// as one, and not one more: the bound keeps hostile input from exhausting the decoder's
/// stack, and it must not refuse a depth it promises to accept.
#[test]
fn objects_nest_in_a_data_part_up_to_the_limit_and_no_deeper() {
    let deepest = Part::data(nested_objects(MAX_STRUCT_DEPTH));
    assert_eq!(Part::decode_proto(&deepest.encode_proto()), Ok(deepest));
    let beyond = Part::data(nested_objects(MAX_STRUCT_DEPTH + 1));
    assert_eq!(Part::decode_proto(&beyond.encode_proto()), too_deep());
}

/// A metadata map is itself the first `Struct` level: with the objects it holds it may nest
/// `MAX_STRUCT_DEPTH` levels deep and not one more.
#[test]
fn a_metadata_map_counts_as_the_first_struct_level() {
    let deepest = text_with_metadata(object(nested_objects(MAX_STRUCT_DEPTH)));
    assert_eq!(Part::decode_proto(&deepest.encode_proto()), Ok(deepest));
    let beyond = text_with_metadata(object(nested_objects(MAX_STRUCT_DEPTH + 1)));
    assert_eq!(Part::decode_proto(&beyond.encode_proto()), too_deep());
}

/// Objects and lists count alike towards the bound, whichever kind sits at the limit: a list
/// inside objects is refused one level beyond it as an object inside lists is.
#[test]
fn objects_and_lists_count_alike_at_the_limit() {
    for last_is_object in [true, false] {
        let mut kinds = vec![!last_is_object; MAX_STRUCT_DEPTH - 1];
        kinds.push(last_is_object);
        let deepest = Part::data(nested(&kinds));
        assert_eq!(
            Part::decode_proto(&deepest.encode_proto()),
            Ok(deepest),
            "{last_is_object}"
        );
        kinds.push(last_is_object);
        let beyond = Part::data(nested(&kinds));
        assert_eq!(
            Part::decode_proto(&beyond.encode_proto()),
            too_deep(),
            "{last_is_object}"
        );
    }
}

/// `null_value` is an enum (a varint) whose number carries nothing: any number reads as
/// `null`, and the field with another wire type is an error, not something to skip.
#[test]
fn a_null_value_is_a_varint_whatever_its_number() {
    assert_eq!(data_of(&data_part_of(&[0x08, 0x00])), Ok(Value::Null));
    assert_eq!(data_of(&data_part_of(&[0x08, 0x05])), Ok(Value::Null));
    assert_eq!(
        data_of(&data_part_of(&[0x0a, 0x00])),
        Err(WireError::WrongWireType {
            message: "google.protobuf.Value",
            field: 1,
            expected: 0,
            found: 2,
        })
    );
}

/// A `Value` with no kind set (the proto default), or only fields this client does not know,
/// reads as `null`.
#[test]
fn a_value_without_a_kind_reads_as_null() {
    assert_eq!(data_of(&data_part_of(&[])), Ok(Value::Null));
    assert_eq!(data_of(&data_part_of(&[0x38, 0x01])), Ok(Value::Null));
}

/// Every member of the `kind` oneof is written even at its default value, since its presence
/// is the value: `false`, `0`, `""`, `{}` and `[]` must not come back as `null`.
#[test]
fn every_value_kind_is_written_even_at_its_default() {
    let cases: [(Value, &[u8]); 6] = [
        (Value::Null, &[0x08, 0x00]),
        (json!(0.0), &[0x11, 0, 0, 0, 0, 0, 0, 0, 0]),
        (json!(""), &[0x1a, 0x00]),
        (json!(false), &[0x20, 0x00]),
        (json!({}), &[0x2a, 0x00]),
        (json!([]), &[0x32, 0x00]),
    ];
    for (v, bytes) in cases {
        assert_eq!(value_bytes(&v), bytes, "{v}");
        assert_eq!(data_of(&data_part_of(bytes)), Ok(v));
    }
}

/// Whatever two kinds a `Value` carries, the one sent last is the value (oneof rule), so a
/// later `null` or `false` replaces an earlier string or object.
#[test]
fn of_two_value_kinds_the_last_sent_wins() {
    let kinds = [
        Value::Null,
        json!(2.5),
        json!("s"),
        json!(false),
        json!({"k": 1.0}),
        json!([true]),
    ];
    for first in &kinds {
        for last in &kinds {
            let mut bytes = value_bytes(first);
            bytes.extend_from_slice(&value_bytes(last));
            assert_eq!(
                data_of(&data_part_of(&bytes)),
                Ok(last.clone()),
                "{first} then {last}"
            );
        }
    }
}

/// A `Struct` entry without a value holds `null`, one without a key is the empty name.
#[test]
fn a_struct_entry_without_key_or_value_reads_as_empty_name_and_null() {
    // Value {5 struct_value {1 fields {1 key "a"}}}
    let no_value = [0x2a, 0x05, 0x0a, 0x03, 0x0a, 0x01, b'a'];
    assert_eq!(data_of(&data_part_of(&no_value)), Ok(json!({"a": null})));
    // Value {5 struct_value {1 fields {2 value {4 bool true}}}}
    let no_key = [0x2a, 0x06, 0x0a, 0x04, 0x12, 0x02, 0x20, 0x01];
    assert_eq!(data_of(&data_part_of(&no_key)), Ok(json!({"": true})));
}

/// Every message with a `metadata` field reads it back, and a present map reads as `Some`
/// even when empty: an extension's metadata must reach the workflow from any event.
#[test]
fn metadata_survives_in_every_message_even_empty() {
    let maps = [Map::new(), object(json!({"k": "v", "n": {"x": [1.5]}}))];
    for m in maps {
        let md = Some(m);
        proto_round_trip(&Part {
            metadata: md.clone(),
            ..Part::text("t")
        });
        proto_round_trip(&Message {
            metadata: md.clone(),
            ..Message::default()
        });
        proto_round_trip(&Artifact {
            metadata: md.clone(),
            ..Artifact::default()
        });
        proto_round_trip(&Task {
            metadata: md.clone(),
            ..Task::default()
        });
        proto_round_trip(&TaskStatusUpdateEvent {
            metadata: md.clone(),
            ..TaskStatusUpdateEvent::default()
        });
        proto_round_trip(&TaskArtifactUpdateEvent {
            metadata: md.clone(),
            ..TaskArtifactUpdateEvent::default()
        });
        proto_round_trip(&SendMessageRequest {
            metadata: md.clone(),
            ..SendMessageRequest::default()
        });
        proto_round_trip(&CancelTaskRequest {
            metadata: md,
            ..CancelTaskRequest::default()
        });
    }
}

/// A `TaskArtifactUpdateEvent` has the bytes the proto's field numbers give (task_id 1,
/// context_id 2, artifact 3, append 4, last_chunk 5, metadata 6), and those bytes read back as
/// the event.
#[test]
fn an_artifact_update_has_the_bytes_the_proto_field_numbers_give() {
    let event = TaskArtifactUpdateEvent {
        task_id: "t".into(),
        context_id: Some("c".into()),
        artifact: Artifact {
            artifact_id: "a".into(),
            ..Artifact::default()
        },
        append: true,
        last_chunk: true,
        metadata: Some(Map::new()),
    };
    #[rustfmt::skip]
    let golden: &[u8] = &[
        0x0a, 0x01, b't',         // 1 task_id "t"
        0x12, 0x01, b'c',         // 2 context_id "c"
        0x1a, 0x03,               // 3 artifact, 3 bytes
          0x0a, 0x01, b'a',       //   1 artifact_id "a"
        0x20, 0x01,               // 4 append true
        0x28, 0x01,               // 5 last_chunk true
        0x32, 0x00,               // 6 metadata, an empty Struct
    ];
    assert_eq!(event.encode_proto(), golden);
    assert_eq!(TaskArtifactUpdateEvent::decode_proto(golden), Ok(event));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any nesting of objects and lists decodes to itself while it is at most
    /// `MAX_STRUCT_DEPTH` levels deep, and is refused as too deep beyond: in a data part and
    /// in a metadata map (one level already).
    #[test]
    fn nesting_decodes_exactly_up_to_the_limit(
        kinds in proptest::collection::vec(any::<bool>(), 1..=MAX_STRUCT_DEPTH + 3),
    ) {
        let data = Part::data(nested(&kinds));
        let want = if kinds.len() <= MAX_STRUCT_DEPTH { Ok(data.clone()) } else { too_deep() };
        prop_assert_eq!(Part::decode_proto(&data.encode_proto()), want);

        let meta = text_with_metadata(std::iter::once(("m".to_owned(), nested(&kinds))).collect());
        let want = if kinds.len() < MAX_STRUCT_DEPTH { Ok(meta.clone()) } else { too_deep() };
        prop_assert_eq!(Part::decode_proto(&meta.encode_proto()), want);
    }

    /// `Value.kind` is a oneof: when a `Value` carries two kinds, the one sent last is the
    /// value, whichever kinds they are.
    #[test]
    fn the_last_value_kind_sent_wins(first in json_value(3, 4), last in json_value(3, 4)) {
        let mut bytes = value_bytes(&first);
        bytes.extend_from_slice(&value_bytes(&last));
        prop_assert_eq!(data_of(&data_part_of(&bytes)), Ok(last));
    }
}
