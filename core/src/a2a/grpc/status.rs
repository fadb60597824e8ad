//! gRPC status (`grpc-status`, `grpc-message`, `grpc-status-details-bin`) projected to the
//! same [`ProtocolError`] codes the JSON bindings produce.
//!
//! Rules, in order:
//! 1. an `ErrorInfo` in the `google.rpc.Status` details (located like in the JSON bindings: by
//!    type URL ending in `google.rpc.ErrorInfo`, else the first detail with a reason) gives the
//!    reason: code `a2a.<reason>`;
//! 2. else a `grpc-message` that starts with an A2A error class name (`TaskNotFoundError: …`,
//!    what Python SDK servers without rich status send) gives that error's reason;
//! 3. else the status code itself: `UNIMPLEMENTED` (what a gRPC server answers for a method it
//!    does not serve) is `METHOD_NOT_FOUND`, `INTERNAL` is `INTERNAL_ERROR`; every other code
//!    is `a2a.http.<status>` with the HTTP equivalent of the code.
//!
//! [`ProtocolError::http_status`] is what the retry rules read, so it follows the HTTP binding:
//! for a reason of the A2A error table it is the spec HTTP status of that error (so
//! `UNIMPLEMENTED` + `UNSUPPORTED_OPERATION` is a permanent 400, not a 501), otherwise the
//! standard gRPC-to-HTTP mapping (`UNAVAILABLE` → 503, `RESOURCE_EXHAUSTED` → 429,
//! `DEADLINE_EXCEEDED` → 504, …). [`ProtocolError::status`] holds the gRPC code name.

use super::wire::{Reader, WireError};
use crate::a2a::error::{
    ProtocolError, error_info_reason, http_status_for_rpc_code, reason_code, reason_for_rpc_code,
    redact_json, redact_str,
};
use crate::a2a::protojson::{decode_base64, encode_base64};
use crate::io::field_value;
use serde_json::{Map, Value};

/// A gRPC status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrpcCode {
    /// 0.
    Ok,
    /// 1.
    Cancelled,
    /// 2; also any number this client does not know.
    Unknown,
    /// 3.
    InvalidArgument,
    /// 4.
    DeadlineExceeded,
    /// 5.
    NotFound,
    /// 6.
    AlreadyExists,
    /// 7.
    PermissionDenied,
    /// 8.
    ResourceExhausted,
    /// 9.
    FailedPrecondition,
    /// 10.
    Aborted,
    /// 11.
    OutOfRange,
    /// 12.
    Unimplemented,
    /// 13.
    Internal,
    /// 14.
    Unavailable,
    /// 15.
    DataLoss,
    /// 16.
    Unauthenticated,
}

const CODES: [GrpcCode; 17] = [
    GrpcCode::Ok,
    GrpcCode::Cancelled,
    GrpcCode::Unknown,
    GrpcCode::InvalidArgument,
    GrpcCode::DeadlineExceeded,
    GrpcCode::NotFound,
    GrpcCode::AlreadyExists,
    GrpcCode::PermissionDenied,
    GrpcCode::ResourceExhausted,
    GrpcCode::FailedPrecondition,
    GrpcCode::Aborted,
    GrpcCode::OutOfRange,
    GrpcCode::Unimplemented,
    GrpcCode::Internal,
    GrpcCode::Unavailable,
    GrpcCode::DataLoss,
    GrpcCode::Unauthenticated,
];

impl GrpcCode {
    /// The code of a number; numbers above 16 are `Unknown`, as gRPC clients treat them.
    pub fn from_number(n: u32) -> GrpcCode {
        usize::try_from(n)
            .ok()
            .and_then(|i| CODES.get(i).copied())
            .unwrap_or(GrpcCode::Unknown)
    }

    /// The canonical name, e.g. `NOT_FOUND`.
    pub fn as_str(self) -> &'static str {
        match self {
            GrpcCode::Ok => "OK",
            GrpcCode::Cancelled => "CANCELLED",
            GrpcCode::Unknown => "UNKNOWN",
            GrpcCode::InvalidArgument => "INVALID_ARGUMENT",
            GrpcCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            GrpcCode::NotFound => "NOT_FOUND",
            GrpcCode::AlreadyExists => "ALREADY_EXISTS",
            GrpcCode::PermissionDenied => "PERMISSION_DENIED",
            GrpcCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            GrpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcCode::Aborted => "ABORTED",
            GrpcCode::OutOfRange => "OUT_OF_RANGE",
            GrpcCode::Unimplemented => "UNIMPLEMENTED",
            GrpcCode::Internal => "INTERNAL",
            GrpcCode::Unavailable => "UNAVAILABLE",
            GrpcCode::DataLoss => "DATA_LOSS",
            GrpcCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The HTTP status of the code in the standard gRPC/HTTP mapping (`google.rpc.Code`).
    pub fn http_status(self) -> u16 {
        match self {
            GrpcCode::Ok => 200,
            GrpcCode::Cancelled => 499,
            GrpcCode::Unknown | GrpcCode::Internal | GrpcCode::DataLoss => 500,
            GrpcCode::InvalidArgument | GrpcCode::FailedPrecondition | GrpcCode::OutOfRange => 400,
            GrpcCode::DeadlineExceeded => 504,
            GrpcCode::NotFound => 404,
            GrpcCode::AlreadyExists | GrpcCode::Aborted => 409,
            GrpcCode::PermissionDenied => 403,
            GrpcCode::ResourceExhausted => 429,
            GrpcCode::Unimplemented => 501,
            GrpcCode::Unavailable => 503,
            GrpcCode::Unauthenticated => 401,
        }
    }
}

/// Why the end of a gRPC response carries no usable status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcStatusError {
    /// The response ended without trailers (and the head carried no `grpc-status`).
    #[error("gRPC response ended without trailers (no grpc-status)")]
    NoTrailers,
    /// Trailers arrived without `grpc-status`.
    #[error("gRPC trailers carry no grpc-status")]
    NoStatus,
    /// A `grpc-status` that is not a decimal number.
    #[error("grpc-status {0:?} is not a number")]
    BadStatus(String),
}

/// Whether these headers (response head or trailers) carry `grpc-status`.
pub fn has_status<N: AsRef<str>, V: AsRef<str>>(headers: &[(N, V)]) -> bool {
    field_value(headers, "grpc-status").is_some()
}

/// Reads the status from trailers (or from the head of a trailers-only response): `Ok(None)`
/// for `OK`, `Ok(Some(error))` for any other code.
pub fn status_from_trailers<N: AsRef<str>, V: AsRef<str>>(
    trailers: &[(N, V)],
) -> Result<Option<ProtocolError>, GrpcStatusError> {
    let raw = field_value(trailers, "grpc-status").ok_or(GrpcStatusError::NoStatus)?;
    let n: u32 = raw
        .trim()
        .parse()
        .map_err(|_| GrpcStatusError::BadStatus(raw.to_owned()))?;
    let code = GrpcCode::from_number(n);
    if code == GrpcCode::Ok {
        return Ok(None);
    }
    Ok(Some(status_error(
        code,
        field_value(trailers, "grpc-message"),
        field_value(trailers, "grpc-status-details-bin"),
    )))
}

/// Projects a non-OK status to a [`ProtocolError`] (see the module docs). `message` is the
/// raw (percent-encoded) `grpc-message`; `details_bin` the raw `grpc-status-details-bin`.
/// Undecodable details are kept out of the error rather than failing it: the status code
/// alone is still a valid answer.
pub fn status_error(
    code: GrpcCode,
    message: Option<&str>,
    details_bin: Option<&str>,
) -> ProtocolError {
    let rich = details_bin
        .and_then(decode_base64)
        .and_then(|b| decode_rpc_status(&b).ok());
    let mut message = message.map(percent_decode).unwrap_or_default();
    let mut details = Value::Null;
    if let Some((rich_message, rich_details)) = rich {
        if message.is_empty() {
            message = rich_message;
        }
        details = Value::Array(rich_details);
    }
    let reason = error_info_reason(&details)
        .or_else(|| class_name_reason(&message))
        .or_else(|| {
            match code {
                GrpcCode::Unimplemented => Some("METHOD_NOT_FOUND"),
                GrpcCode::Internal => Some("INTERNAL_ERROR"),
                _ => None,
            }
            .map(str::to_owned)
        });
    let http_status = reason
        .as_deref()
        .and_then(a2a_http_status)
        .unwrap_or_else(|| code.http_status());
    redact_json(&mut details);
    ProtocolError {
        code: match &reason {
            Some(r) => reason_code(r),
            None => format!("a2a.http.{http_status}"),
        },
        message: redact_str(&message),
        http_status: Some(http_status),
        rpc_code: None,
        reason,
        status: Some(code.as_str().to_owned()),
        details,
        retry_after: None,
        headers: Vec::new(),
    }
}

const A2A_RPC_CODES: [i64; 14] = [
    -32001, -32002, -32003, -32004, -32005, -32006, -32007, -32008, -32009, -32700, -32600, -32601,
    -32602, -32603,
];

/// The spec HTTP status of a reason in the A2A error table (compared in normalised form, so
/// `INTERNAL` matches `INTERNAL_ERROR`).
fn a2a_http_status(reason: &str) -> Option<u16> {
    let code = reason_code(reason);
    A2A_RPC_CODES.iter().find_map(|c| {
        let r = reason_for_rpc_code(*c)?;
        (reason_code(r) == code)
            .then(|| http_status_for_rpc_code(*c))
            .flatten()
    })
}

/// `TaskNotFoundError: …` → `TASK_NOT_FOUND`, only for error names of the A2A table.
fn class_name_reason(message: &str) -> Option<String> {
    let (class, _) = message.split_once(':')?;
    let simple = class.trim().strip_suffix("Error")?;
    if simple.is_empty() || !simple.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let mut reason = String::new();
    for (i, c) in simple.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            reason.push('_');
        }
        reason.push(c.to_ascii_uppercase());
    }
    // JSONParseError spells its acronym in capitals; the table says JSON_PARSE.
    let reason = reason.replace("J_S_O_N", "JSON");
    a2a_http_status(&reason).map(|_| reason)
}

/// Decodes a `grpc-message` value: `%XX` sequences are UTF-8 bytes; a `%` not followed by two
/// hex digits is kept as it is (gRPC asks clients never to fail on a bad message).
pub fn percent_decode(s: &str) -> String {
    crate::urlenc::percent_decode(s)
}

/// Decodes a `google.rpc.Status` (`code` 1, `message` 2, `details` 3 = `google.protobuf.Any`)
/// into its message and its details as the JSON bindings show them: an `ErrorInfo` as
/// `{"@type", "reason", "domain", "metadata"}`, any other detail as `{"@type", "value"}` with
/// the value in base64.
pub fn decode_rpc_status(bytes: &[u8]) -> Result<(String, Vec<Value>), WireError> {
    let mut message = String::new();
    let mut details = Vec::new();
    let mut r = Reader::new(bytes, "google.rpc.Status");
    while let Some(f) = r.next_field()? {
        match f.number {
            2 => message = f.string()?,
            3 => details.push(decode_any(f.bytes()?)?),
            _ => {}
        }
    }
    Ok((message, details))
}

fn decode_any(bytes: &[u8]) -> Result<Value, WireError> {
    let mut type_url = String::new();
    let mut value: &[u8] = &[];
    let mut r = Reader::new(bytes, "google.protobuf.Any");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => type_url = f.string()?,
            2 => value = f.bytes()?,
            _ => {}
        }
    }
    let mut out = Map::new();
    out.insert("@type".to_owned(), Value::String(type_url.clone()));
    if type_url.ends_with("google.rpc.ErrorInfo") {
        let (mut reason, mut domain, mut metadata) = (String::new(), String::new(), Map::new());
        let mut r = Reader::new(value, "google.rpc.ErrorInfo");
        while let Some(f) = r.next_field()? {
            match f.number {
                1 => reason = f.string()?,
                2 => domain = f.string()?,
                3 => {
                    let (mut k, mut v) = (String::new(), String::new());
                    let mut e = Reader::new(f.bytes()?, "google.rpc.ErrorInfo.MetadataEntry");
                    while let Some(ef) = e.next_field()? {
                        match ef.number {
                            1 => k = ef.string()?,
                            2 => v = ef.string()?,
                            _ => {}
                        }
                    }
                    metadata.insert(k, Value::String(v));
                }
                _ => {}
            }
        }
        out.insert("reason".to_owned(), Value::String(reason));
        out.insert("domain".to_owned(), Value::String(domain));
        out.insert("metadata".to_owned(), Value::Object(metadata));
    } else {
        out.insert("value".to_owned(), Value::String(encode_base64(value)));
    }
    Ok(Value::Object(out))
}
