//! Rules of the protobuf wire reader (`core/src/a2a/grpc/wire.rs`) that the mutation run of that
//! file showed were not yet pinned down, each stated against what `GrpcMessage::decode_proto`
//! of a public message answers.

use a2at_core::a2a::grpc::{GetTaskRequest, GrpcMessage, WireError};
use proptest::prelude::*;

/// The largest field number protobuf allows: 2^29 - 1.
const MAX_FIELD: u64 = (1 << 29) - 1;

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A `GetTaskRequest` with id `t-1` followed by a varint field of the given number.
fn get_task_with_field(number: u64) -> Vec<u8> {
    let mut b = vec![0x12, 0x03, b't', b'-', b'1'];
    push_varint(&mut b, number << 3);
    push_varint(&mut b, 7);
    b
}

/// Field number 2^29 - 1 is still a field (unknown here, so skipped) and 2^29 is the first tag
/// that is invalid: a reader that draws the line one off either rejects a valid message from a
/// newer schema or accepts a corrupt tag.
#[test]
fn the_largest_field_number_is_skipped_and_the_next_one_is_an_invalid_tag() {
    let g = GetTaskRequest::decode_proto(&get_task_with_field(MAX_FIELD)).unwrap();
    assert_eq!(g.id, "t-1");
    assert_eq!(
        GetTaskRequest::decode_proto(&get_task_with_field(MAX_FIELD + 1)),
        Err(WireError::InvalidTag {
            message: "lf.a2a.v1.GetTaskRequest",
            tag: (MAX_FIELD + 1) << 3,
        })
    );
}

proptest! {
    /// Every field number from 4 (past the known ones) to 2^29 - 1 is an unknown field that is
    /// skipped, and every number above it is an invalid tag, so the bound is a clean cut.
    #[test]
    fn field_numbers_up_to_the_protobuf_maximum_are_fields_and_above_it_are_invalid_tags(
        valid in 4u64..=MAX_FIELD,
        invalid in (MAX_FIELD + 1)..(1u64 << 60),
    ) {
        let g = GetTaskRequest::decode_proto(&get_task_with_field(valid)).unwrap();
        prop_assert_eq!(g.id, "t-1");
        prop_assert_eq!(
            GetTaskRequest::decode_proto(&get_task_with_field(invalid)),
            Err(WireError::InvalidTag {
                message: "lf.a2a.v1.GetTaskRequest",
                tag: invalid << 3,
            })
        );
    }
}
