//! A2A protocol v1.0 client types and codecs: ProtoJSON types, JSON-RPC, HTTP+JSON and gRPC bindings, SSE, error envelopes, AgentCards.
//!
//! * [`types`]: the data model with tolerant ProtoJSON reading (v0.3 shapes included) and
//!   strict v1.0 writing.
//! * [`card`]: AgentCards, normalisation, validation, extension checks.
//! * [`binding`]: interface selection, request encoding, incremental response decoding.
//! * [`sse`]: the incremental SSE decoder.
//! * [`error`]: error envelopes, projection to `a2a.<reason>` codes, redaction.
//! * [`grpc`]: the gRPC binding's codec: protobuf messages, framing, status mapping.
//! * [`assembly`]: per-invocation response accumulation (artifact deltas, received messages).
//!
//! Everything is pure and synchronous: no I/O, no clock, no randomness.

pub mod assembly;
pub mod binding;
pub mod card;
mod dom;
pub mod error;
pub mod grpc;
mod json_text;
pub mod protojson;
pub mod sse;
pub mod types;

pub use assembly::{ReceivedMessage, ResponseAccumulator};
pub use binding::{
    A2A_VERSION, A2aCall, Binding, CallKind, DecodeLimits, EncodedRequest, Endpoint, HttpMethod,
    ResponseDecoder, ResponseItem, encode_call, select_endpoint,
};
pub use card::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    CardError, CardProblem, CardSetError, RequiredExtensionError, SecurityRequirement,
    SecurityScheme, check_required_extensions, validate_cards,
};
pub use error::{ProtocolError, redact_json};
pub use protojson::{DecodeError, DecodeErrorKind};
pub use sse::{SseDecoder, SseError, SseEvent};
pub use types::{
    Artifact, ListTasksParams, Message, Part, PartContent, RemoteTaskStatus, Role,
    SendMessageConfiguration, SendMessageRequest, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskPage, TaskState, TaskStatusUpdateEvent,
};
