//! The gRPC binding's codec (`lf.a2a.v1.A2AService`): protobuf messages, gRPC message framing,
//! status mapping, request encoding and incremental response decoding.
//!
//! It maps the wire to the same Rust types the JSON bindings use ([`Message`], [`Task`],
//! [`StreamResponse`], …) and the same [`ResponseItem`]s, so a driver only moves bytes and the
//! engine cannot tell the bindings apart. Like the rest of the core it is pure and
//! synchronous: the driver sends the [`GrpcRequest`] over HTTP/2 and feeds the response head,
//! body chunks and trailers into a [`GrpcResponseDecoder`].
//!
//! # Why hand-written protobuf
//!
//! The client needs a dozen messages, and they must land in the crate's existing types rather
//! than in generated structs. With `prost` derives the crate would carry a second, parallel
//! set of structs plus conversions both ways, and still need hand-written code for
//! `Struct`/`Value` ↔ JSON and `Timestamp` ↔ RFC 3339. Writing the four wire types directly
//! ([`wire`]) keeps one mapping per message, adds no dependency, and puts the hostile-input
//! rules where they are visible: lengths are checked against the bytes left before slicing,
//! `Struct`/`Value` nesting is bounded by [`MAX_STRUCT_DEPTH`], unknown fields are skipped,
//! wrong wire types and truncation are typed [`WireError`]s.
//!
//! [`Message`]: crate::a2a::Message
//! [`Task`]: crate::a2a::Task
//! [`StreamResponse`]: crate::a2a::StreamResponse
//! [`ResponseItem`]: crate::a2a::ResponseItem

pub mod call;
pub mod frame;
pub mod messages;
pub mod status;
pub mod wire;

pub use call::{
    GRPC_SERVICE, GrpcEncodeError, GrpcRequest, GrpcResponseDecoder, encode_grpc_call, grpc_timeout,
};
pub use frame::{FRAME_HEADER_LEN, FrameDecoder, FrameError, encode_frame};

pub use messages::{
    CancelTaskRequest, GetTaskRequest, GrpcMessage, ListTasksRequest, ListTasksResponse,
    MAX_STRUCT_DEPTH, SendMessageResponse, SubscribeToTaskRequest, format_timestamp,
    parse_timestamp,
};
pub use status::{GrpcCode, GrpcStatusError, status_error, status_from_trailers};
pub use wire::WireError;
