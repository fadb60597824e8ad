//! The boundary of the machines: [`Input`]s the driver feeds in, [`Output`]s it carries out.
//!
//! Bytes cross this boundary raw: the core builds request bodies and headers and decodes
//! response bytes itself, so every runtime shares all protocol behaviour and a recorded trace
//! of inputs replays byte for byte.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::SharedStr;
use crate::a2a::HttpMethod;
use crate::event::Event;
use crate::host::{HostReply, HostRequest};
use crate::ids::{CallId, OpId};
use crate::result::ExecutionResult;

/// Something that happened, fed to a machine with the time it happened.
///
/// An input for an unknown, finished or abandoned id is dropped without effect: this is how a
/// late host answer or a late HTTP response is ignored and never acted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Input {
    /// A host callback finished.
    HostReply {
        /// The call being answered.
        call: CallId,
        /// The answer.
        reply: HostReply,
    },
    /// The status line and headers of an HTTP response arrived.
    ResponseHead {
        /// The exchange.
        op: OpId,
        /// HTTP status code.
        status: u16,
        /// Response headers, names as received.
        headers: Vec<HeaderField>,
    },
    /// A chunk of the response body arrived (any size, any split).
    ResponseBody {
        /// The exchange.
        op: OpId,
        /// The bytes.
        #[serde(with = "bytes_as_text")]
        chunk: Vec<u8>,
    },
    /// The response trailers arrived (after the last body chunk, before
    /// [`Input::ResponseEnd`]). gRPC carries the call's status in them; the JSON bindings
    /// ignore them.
    ResponseTrailers {
        /// The exchange.
        op: OpId,
        /// Trailer fields, names as received.
        trailers: Vec<HeaderField>,
    },
    /// The response body ended normally.
    ResponseEnd {
        /// The exchange.
        op: OpId,
    },
    /// The exchange failed before or during the response (connect, TLS, I/O, timeout).
    TransportFailed {
        /// The exchange.
        op: OpId,
        /// What went wrong.
        error: TransportError,
    },
    /// The host cancelled the run: cancel every known non-final remote task, drop late results.
    Cancel,
}

/// A response header or trailer field: name and value. Either text may be borrowed from a
/// `'static` string, so a driver can hand over the names and values every response repeats
/// (`content-type`, `application/json`, …) without copying them; a trace reads every field
/// back as owned text.
pub type HeaderField = (HeaderText, HeaderText);

/// The value of the first header or trailer field named `name`, compared without case.
pub(crate) fn field_value<'f, N: AsRef<str>, V: AsRef<str>>(
    fields: &'f [(N, V)],
    name: &str,
) -> Option<&'f str> {
    fields
        .iter()
        .find(|(n, _)| n.as_ref().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
}

/// The media type of a `Content-Type` value: the part before any parameter, trimmed, in the
/// case it was sent in (media types compare without case).
pub(crate) fn media_type(content_type: &str) -> &str {
    content_type
        .split_once(';')
        .map_or(content_type, |(media, _)| media)
        .trim()
}

/// A transport-level failure reported by the driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportError {
    /// Broad class of the failure.
    pub kind: TransportErrorKind,
    /// Description safe to log (no secrets).
    pub message: String,
}

/// Broad classes of transport failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The connection could not be established.
    Connect,
    /// TLS handshake or verification failed.
    Tls,
    /// The connection broke while sending or receiving.
    Io,
    /// Authentication headers could not be produced (provider error, missing credentials).
    Auth,
    /// The engine restarted while the exchange was open: whether its request reached the
    /// agent is unknown, and its answer is lost. A send is looked up like any send whose
    /// outcome is unknown; when the lookup finds no task, the same message (same `messageId`)
    /// is sent again.
    Restarted,
    /// Anything else.
    Other,
}

/// Something the machine wants done, drained with `poll_output()`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Output {
    /// Call a host callback; answer with [`Input::HostReply`] carrying the same `call`.
    CallHost {
        /// Correlates the answer.
        call: CallId,
        /// The question.
        request: HostRequest,
    },
    /// The machine no longer needs the answer (budget expired, run cancelled). The driver may
    /// drop the callback's future; an answer that still arrives is ignored.
    AbandonHostCall {
        /// The abandoned call.
        call: CallId,
    },
    /// Carry out an HTTP exchange and feed back head, body chunks and end (or a failure).
    Transmit(HttpRequest),
    /// Stop an HTTP exchange (drop the connection); anything that still arrives is ignored.
    AbortTransmit {
        /// The exchange.
        op: OpId,
    },
    /// Deliver an event to the host's event sink.
    Event(Event),
    /// The run is over; no more outputs follow. The result is shared with
    /// [`crate::Run::result`] rather than copied: once the run is dropped, `Arc::try_unwrap`
    /// takes it without a copy.
    Finished(Arc<ExecutionResult>),
}

// A busy run keeps its output queue's room between turns (eight outputs once a step has
// started), so every byte of `Output` is paid eight times by each run that waits on an
// exchange. The large host questions are boxed for that reason; a new variant that is larger
// than a request to send should be boxed too.
const _: () = assert!(core::mem::size_of::<Output>() <= core::mem::size_of::<HttpRequest>());

/// What an HTTP exchange is for; lets the driver log and limit without parsing bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OpPurpose {
    /// The first send of a task (unary or streaming).
    Send,
    /// A negotiation reply on an existing task or context.
    Reply,
    /// `GetTask` observation of a waiting task.
    Poll,
    /// `SubscribeToTask` after a stream was cut.
    Resubscribe,
    /// `ListTasks` by context id, to find the task of a send whose outcome is unknown.
    Lookup,
    /// `CancelTask` cleanup of a known non-final remote task.
    Cancel,
}

/// A request header's name or value: borrowed when it is one of the engine's fixed texts
/// (`A2A-Version`, `application/json`, …), owned when it varies.
pub type HeaderText = Cow<'static, str>;

/// Local correlation fields for protocol logs; never sent on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Correlation {
    /// The run's execution id (shared by every request of the run).
    pub execution_id: SharedStr,
    /// The step name.
    pub step: SharedStr,
    /// The subtask index.
    pub subtask_index: u32,
    /// The logical task id.
    pub logical_task_id: SharedStr,
    /// The invocation's A2A context id.
    pub context_id: String,
    /// The remote task id, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task_id: Option<String>,
}

/// One HTTP exchange to carry out. Headers and body are final except for authentication, which
/// the driver adds for `agent` (its card is in the engine's directory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// Correlates the response inputs.
    pub op: OpId,
    /// The agent (card name) addressed.
    pub agent: SharedStr,
    /// What the exchange is for.
    pub purpose: OpPurpose,
    /// HTTP method.
    #[serde(with = "method_name")]
    pub method: HttpMethod,
    /// Absolute URL.
    pub url: String,
    /// Request headers (without authentication). The engine's own names and fixed values are
    /// borrowed, so building a request copies only what varies.
    pub headers: Vec<(HeaderText, HeaderText)>,
    /// Request body (empty for GET).
    #[serde(with = "bytes_as_text")]
    pub body: Vec<u8>,
    /// Whether the response is expected to be a long-lived event stream (no read timeout).
    pub streaming: bool,
    /// Whether the exchange must use HTTP/2 (the gRPC binding): prior knowledge on `http://`,
    /// ALPN `h2` on `https://`; the response trailers are fed back as
    /// [`Input::ResponseTrailers`]. HTTP/1.1 otherwise.
    #[serde(default, skip_serializing_if = "core::ops::Not::not")]
    pub http2: bool,
    /// Local correlation fields for logs (shared: the engine keeps the same fields for the
    /// exchange's answer and its cleanup).
    pub correlation: Arc<Correlation>,
}

mod method_name {
    use crate::a2a::HttpMethod;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(m: &HttpMethod, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<HttpMethod, D::Error> {
        match String::deserialize(d)?.as_str() {
            "GET" => Ok(HttpMethod::Get),
            "POST" => Ok(HttpMethod::Post),
            other => Err(serde::de::Error::custom(format!(
                "unknown HTTP method {other}"
            ))),
        }
    }
}

/// Bodies are JSON text almost always; store them as UTF-8 text when they are, base64 otherwise,
/// so traces stay readable.
mod bytes_as_text {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Binary { base64: String },
    }

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Repr::Text(text.to_owned()).serialize(s),
            Err(_) => Repr::Binary {
                base64: base64::engine::general_purpose::STANDARD.encode(bytes),
            }
            .serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        match Repr::deserialize(d)? {
            Repr::Text(t) => Ok(t.into_bytes()),
            Repr::Binary { base64 } => base64::engine::general_purpose::STANDARD
                .decode(base64)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// A caller bug: the call did not fit the machine's state. The machine is left unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiMisuse {
    /// `now` was earlier than a time already handled.
    #[error("time went backwards: {now} is earlier than {last}")]
    TimeWentBackwards {
        /// The latest time handled so far.
        last: crate::Timestamp,
        /// The offending time.
        now: crate::Timestamp,
    },
    /// The run already finished; inputs are no longer accepted.
    #[error("the run has finished")]
    Finished,
    /// A host reply of the wrong kind for the call it answers.
    #[error("{call} expected an answer to {expected}, got one to {got}")]
    ReplyKindMismatch {
        /// The call.
        call: CallId,
        /// The callback that was asked.
        expected: &'static str,
        /// The callback the reply belongs to.
        got: &'static str,
    },
}

impl HostReply {
    /// The callback this reply answers.
    pub fn callback_name(&self) -> &'static str {
        match self {
            HostReply::Task(_) => "on_task",
            HostReply::SelfTask(_) => "on_self_task",
            HostReply::Route(_) => "on_route",
            HostReply::Negotiation(_) => "on_negotiation",
            HostReply::InputRequired(_) => "on_input_required",
        }
    }
}
