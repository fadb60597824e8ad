//! Rules of the gRPC status projection (`core/src/a2a/grpc/status.rs`) that the mutation run of
//! that file showed were not yet pinned down, each stated against the [`ProtocolError`] a caller
//! gets from `status_error`: its code, reason and the HTTP status the retry rules read.

use a2at_core::a2a::ProtocolError;
use a2at_core::a2a::grpc::{GrpcCode, status_error};

/// Every error of the A2A table: the class name a Python SDK server puts in `grpc-message`, the
/// reason it stands for, and the spec HTTP status of that error (a2a-wire §4.1).
const A2A_ERRORS: [(&str, &str, u16); 14] = [
    ("TaskNotFoundError", "TASK_NOT_FOUND", 404),
    ("TaskNotCancelableError", "TASK_NOT_CANCELABLE", 400),
    (
        "PushNotificationNotSupportedError",
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
        400,
    ),
    ("UnsupportedOperationError", "UNSUPPORTED_OPERATION", 400),
    (
        "ContentTypeNotSupportedError",
        "CONTENT_TYPE_NOT_SUPPORTED",
        400,
    ),
    ("InvalidAgentResponseError", "INVALID_AGENT_RESPONSE", 500),
    (
        "ExtendedAgentCardNotConfiguredError",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        400,
    ),
    (
        "ExtensionSupportRequiredError",
        "EXTENSION_SUPPORT_REQUIRED",
        400,
    ),
    ("VersionNotSupportedError", "VERSION_NOT_SUPPORTED", 400),
    ("JSONParseError", "JSON_PARSE", 400),
    ("InvalidRequestError", "INVALID_REQUEST", 400),
    ("MethodNotFoundError", "METHOD_NOT_FOUND", 404),
    ("InvalidParamsError", "INVALID_PARAMS", 400),
    ("InternalError", "INTERNAL", 500),
];

fn from_message(code: GrpcCode, message: &str) -> ProtocolError {
    status_error(code, Some(message), None)
}

/// Every A2A error named by its class in `grpc-message` takes the reason and the spec HTTP
/// status of the A2A table, whatever the gRPC code: a server that sends `CANCELLED` (499) with
/// `TaskNotFoundError: …` means a permanent 404, and the retry rules must read it so.
#[test]
fn every_a2a_error_class_in_grpc_message_gives_its_reason_and_spec_http_status() {
    for (class, reason, http) in A2A_ERRORS {
        let e = from_message(
            GrpcCode::Cancelled,
            &format!("{class}: something went wrong"),
        );
        assert_eq!(e.reason.as_deref(), Some(reason), "{class}");
        let code = match reason {
            "INTERNAL" => "a2a.internal_error".to_owned(),
            _ => format!("a2a.{}", reason.to_ascii_lowercase()),
        };
        assert_eq!(e.code, code, "{class}");
        assert_eq!(e.http_status, Some(http), "{class}");
        assert_eq!(e.status.as_deref(), Some("CANCELLED"), "{class}");
    }
}

/// A class name only counts when it is one identifier: `Task NotFoundError: …` is prose, not an
/// A2A error class, so the status code speaks (a free-text message must not pick an error).
#[test]
fn a_class_name_with_a_space_or_no_name_before_error_is_not_an_a2a_error() {
    for message in [
        "Task NotFoundError: x",
        "Task-NotFoundError: x",
        "Error: x",
        " Error : x",
    ] {
        let e = from_message(GrpcCode::Cancelled, message);
        assert_eq!(
            (e.code.as_str(), e.reason.as_deref(), e.http_status),
            ("a2a.http.499", None, Some(499)),
            "{message:?}"
        );
    }
}
