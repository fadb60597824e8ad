//! The gRPC side of the scripted agents: a gRPC request (`/lf.a2a.v1.A2AService/<Method>`, one
//! framed protobuf message) read into the same [`AgentRequest`](crate::agent::AgentRequest) the JSON bindings give, and an
//! agent's answer, written in HTTP+JSON form, carried over into gRPC: every SSE event or JSON
//! result becomes one protobuf frame, the end of the body an `OK` status in the trailers, and an
//! error envelope a trailers-only response with `grpc-status`, `grpc-message` and
//! `grpc-status-details-bin` (a `google.rpc.Status` holding the envelope's `ErrorInfo`), the
//! way the Python SDK's `GrpcHandler` answers. Answers that are not A2A envelopes (an overloaded
//! proxy's 503) stay plain HTTP.

use a2at_core::a2a::grpc::{
    CancelTaskRequest, FrameDecoder, GetTaskRequest, GrpcMessage, ListTasksRequest,
    ListTasksResponse, SendMessageResponse, SubscribeToTaskRequest, encode_frame,
};
use a2at_core::a2a::protojson::encode_base64;
use a2at_core::a2a::{SendMessageRequest, StreamResponse, Task, binding::percent_encode_segment};
use serde_json::{Value, json};

use crate::agent::AgentReply;

/// The method path prefix of the A2A gRPC service.
pub const SERVICE_PATH: &str = "/lf.a2a.v1.A2AService/";

/// The method and JSON parameters (as the HTTP+JSON binding spells them) of a gRPC request to
/// `url`, or `None` when `url` is not a gRPC method path. An undecodable body gives `Null`
/// parameters (the agent then answers as to any bad request).
pub fn decode_request(url: &str, body: &[u8]) -> Option<(String, Value)> {
    let path = url.split('?').next().unwrap_or("");
    let method = path.split(SERVICE_PATH).nth(1)?.to_owned();
    let mut frames = Vec::new();
    let framed = FrameDecoder::new(usize::MAX).push(body, &mut frames);
    let message = match (framed, frames.as_slice()) {
        (Ok(()), [one]) => one.as_slice(),
        _ => return Some((method, Value::Null)),
    };
    let params = match method.as_str() {
        "SendMessage" | "SendStreamingMessage" => SendMessageRequest::decode_proto(message)
            .map(|r| r.to_json_with_tenant(r.tenant.as_deref()))
            .ok(),
        "GetTask" => GetTaskRequest::decode_proto(message).ok().map(|r| {
            let mut p = json!({"id": r.id});
            if let Some(h) = r.history_length {
                p["historyLength"] = json!(h.to_string());
            }
            p
        }),
        "CancelTask" => CancelTaskRequest::decode_proto(message)
            .ok()
            .map(|r| json!({"id": r.id})),
        "SubscribeToTask" => SubscribeToTaskRequest::decode_proto(message)
            .ok()
            .map(|r| json!({"id": r.id})),
        "ListTasks" => ListTasksRequest::decode_proto(message).ok().map(|r| {
            let mut p = json!({});
            if let Some(c) = r.context_id {
                p["contextId"] = json!(c);
            }
            if let Some(n) = r.page_size {
                p["pageSize"] = json!(n.to_string());
            }
            if let Some(h) = r.history_length {
                p["historyLength"] = json!(h.to_string());
            }
            p
        }),
        _ => None,
    };
    Some((method, params.unwrap_or(Value::Null)))
}

fn grpc_head() -> Vec<(String, String)> {
    vec![("content-type".to_owned(), "application/grpc".to_owned())]
}

fn ok_trailers() -> Vec<(String, String)> {
    vec![("grpc-status".to_owned(), "0".to_owned())]
}

fn content_type(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.to_ascii_lowercase())
        .unwrap_or_default()
}

/// One SSE chunk (`data: {json}\r\n\r\n`) as a framed `StreamResponse`.
fn sse_chunk_frame(chunk: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(chunk);
    let data = text
        .trim()
        .strip_prefix("data:")
        .map(str::trim)
        .unwrap_or_default();
    let event: Value = serde_json::from_str(data).expect("the agent writes JSON events");
    let event = StreamResponse::from_json(&event).expect("the agent writes valid events");
    encode_frame(&event.encode_proto()).expect("small message")
}

/// The framed unary result of `method` from its HTTP+JSON body.
fn result_frame(method: &str, body: &Value) -> Vec<u8> {
    let message = match method {
        "GetTask" | "CancelTask" => Task::from_json(body)
            .expect("the agent writes valid tasks")
            .encode_proto(),
        "ListTasks" => {
            let tasks = body["tasks"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .map(|t| Task::from_json(t).expect("valid listed task"))
                        .collect()
                })
                .unwrap_or_default();
            ListTasksResponse {
                tasks,
                ..ListTasksResponse::default()
            }
            .encode_proto()
        }
        _ => {
            let response = match StreamResponse::from_json(body).expect("valid send result") {
                StreamResponse::Task(t) => SendMessageResponse::Task(t),
                StreamResponse::Message(m) => SendMessageResponse::Message(m),
                other => panic!("a send result is a task or a message, not {other:?}"),
            };
            response.encode_proto()
        }
    };
    encode_frame(&message).expect("small message")
}

fn push_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn push_bytes(out: &mut Vec<u8>, field: u8, bytes: &[u8]) {
    out.push((field << 3) | 2);
    push_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The gRPC status code the Python SDK uses for an error of this HTTP status.
fn grpc_code(http_status: u16) -> u64 {
    match http_status {
        400 => 9,  // FAILED_PRECONDITION
        401 => 16, // UNAUTHENTICATED
        403 => 7,  // PERMISSION_DENIED
        404 => 5,  // NOT_FOUND
        500 => 13, // INTERNAL
        _ => 2,    // UNKNOWN
    }
}

/// The trailers of an error: status, message and a `google.rpc.Status` with the `ErrorInfo`.
fn error_trailers(http_status: u16, error: &Value) -> Vec<(String, String)> {
    let code = grpc_code(http_status);
    let message = error["message"].as_str().unwrap_or("").to_owned();
    let mut status = Vec::new();
    status.push(0x08);
    push_varint(&mut status, code);
    push_bytes(&mut status, 2, message.as_bytes());
    for info in error["details"].as_array().into_iter().flatten() {
        let mut encoded = Vec::new();
        push_bytes(
            &mut encoded,
            1,
            info["reason"].as_str().unwrap_or("").as_bytes(),
        );
        push_bytes(
            &mut encoded,
            2,
            info["domain"].as_str().unwrap_or("").as_bytes(),
        );
        let mut any = Vec::new();
        push_bytes(&mut any, 1, b"type.googleapis.com/google.rpc.ErrorInfo");
        push_bytes(&mut any, 2, &encoded);
        push_bytes(&mut status, 3, &any);
    }
    vec![
        ("grpc-status".to_owned(), code.to_string()),
        ("grpc-message".to_owned(), percent_encode_segment(&message)),
        (
            "grpc-status-details-bin".to_owned(),
            encode_base64(&status).trim_end_matches('=').to_owned(),
        ),
    ]
}

/// The agent's HTTP+JSON answer to `method`, carried over into gRPC.
pub fn to_grpc(method: &str, reply: AgentReply) -> AgentReply {
    match reply {
        AgentReply::Http {
            delay,
            status,
            headers,
            chunks,
            chunk_gap,
            end,
        } => {
            let ct = content_type(&headers);
            if ct.starts_with("text/event-stream") {
                return AgentReply::Grpc {
                    delay,
                    headers: grpc_head(),
                    frames: chunks.iter().map(|c| sse_chunk_frame(c)).collect(),
                    frame_gap: chunk_gap,
                    trailers: end.then(ok_trailers),
                };
            }
            if !ct.starts_with("application/json") {
                return AgentReply::Http {
                    delay,
                    status,
                    headers,
                    chunks,
                    chunk_gap,
                    end,
                };
            }
            let body: Value =
                serde_json::from_slice(&chunks.concat()).expect("the agent writes JSON");
            if let Some(error) = body.get("error") {
                // Trailers-only: the status travels in the response head.
                let mut head = grpc_head();
                head.extend(error_trailers(status, error));
                return AgentReply::Grpc {
                    delay,
                    headers: head,
                    frames: Vec::new(),
                    frame_gap: chunk_gap,
                    trailers: Some(Vec::new()),
                };
            }
            AgentReply::Grpc {
                delay,
                headers: grpc_head(),
                frames: vec![result_frame(method, &body)],
                frame_gap: chunk_gap,
                trailers: end.then(ok_trailers),
            }
        }
        AgentReply::Cut {
            delay,
            headers,
            chunks,
            chunk_gap,
        } => {
            let chunks = if content_type(&headers).starts_with("text/event-stream") {
                chunks.iter().map(|c| sse_chunk_frame(c)).collect()
            } else {
                // A cut unary answer: its result frame if the whole body was sent, else nothing.
                match serde_json::from_slice::<Value>(&chunks.concat()) {
                    Ok(body) if body.get("error").is_none() => vec![result_frame(method, &body)],
                    _ => Vec::new(),
                }
            };
            AgentReply::Cut {
                delay,
                headers: grpc_head(),
                chunks,
                chunk_gap,
            }
        }
        other => other,
    }
}
