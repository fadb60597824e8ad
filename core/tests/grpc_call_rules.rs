//! Rules of the gRPC call layer (`core/src/a2a/grpc/call.rs`) that the mutation run of that file
//! showed were not yet pinned down, each stated against what a caller sees: the request a call
//! encodes to, and the items a [`GrpcResponseDecoder`] yields.

use a2at_core::a2a::grpc::{
    GrpcMessage, GrpcResponseDecoder, ListTasksRequest, SendMessageResponse, encode_frame,
    encode_grpc_call,
};
use a2at_core::a2a::{
    A2aCall, CallKind, DecodeLimits, Message, ResponseItem, StreamResponse, Task,
};

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn limits() -> DecodeLimits {
    DecodeLimits {
        max_event_bytes: 64 * 1024,
        max_body_bytes: 128 * 1024,
    }
}

fn ok() -> Vec<(String, String)> {
    pairs(&[("grpc-status", "0")])
}

fn task_frame(id: &str) -> Vec<u8> {
    let task = Task {
        id: id.into(),
        ..Task::default()
    };
    encode_frame(&task.encode_proto()).unwrap()
}

fn stream_frame(id: &str) -> Vec<u8> {
    let ev = StreamResponse::Task(Task {
        id: id.into(),
        ..Task::default()
    });
    encode_frame(&ev.encode_proto()).unwrap()
}

/// The endpoint's tenant reaches a `ListTasks` request, as it does every other call: a tenant
/// dropped there lists another tenant's tasks, or none.
#[test]
fn a_list_tasks_call_carries_the_endpoint_tenant() {
    let r = encode_grpc_call(
        &A2aCall::ListTasks {
            context_id: "c",
            page_size: None,
        },
        Some("ep"),
        &[],
        None,
    )
    .unwrap();
    let back = ListTasksRequest::decode_proto(&r.body[5..]).unwrap();
    assert_eq!(back.tenant.as_deref(), Some("ep"));
    assert_eq!(back.context_id.as_deref(), Some("c"));
}

/// A content type of `application/grpc+proto` is gRPC: the message is decoded, not refused as
/// a foreign content type, since servers may name the codec explicitly.
#[test]
fn an_application_grpc_proto_content_type_is_decoded_as_grpc() {
    for ct in ["application/grpc+proto", "Application/GRPC; charset=x"] {
        let mut d = GrpcResponseDecoder::new(CallKind::GetTask, limits());
        d.on_head(200, &pairs(&[("content-type", ct)]));
        let mut out = Vec::new();
        d.on_body(&task_frame("t1"), &mut out);
        d.on_trailers(&ok(), &mut out);
        d.on_end(&mut out);
        assert_eq!(out.len(), 2, "{ct}: {out:?}");
        assert!(matches!(&out[0], ResponseItem::Event(StreamResponse::Task(t)) if t.id == "t1"));
    }
}

/// A gRPC error status in the trailers keeps the head's `Retry-After`: the retry rules read it
/// to wait as long as the server asked, whichever way the error arrived.
#[test]
fn a_grpc_error_status_keeps_the_retry_after_of_the_head() {
    let mut d = GrpcResponseDecoder::new(CallKind::SendMessage, limits());
    d.on_head(
        200,
        &pairs(&[("content-type", "application/grpc"), ("Retry-After", " 9 ")]),
    );
    let mut out = Vec::new();
    d.on_trailers(&pairs(&[("grpc-status", "14")]), &mut out);
    d.on_end(&mut out);
    match &out[0] {
        ResponseItem::Rejected(e) => assert_eq!(e.retry_after.as_deref(), Some("9")),
        other => panic!("{other:?}"),
    }
    assert_eq!(out.len(), 2);
}

/// Once a response has ended, later body bytes and trailers are ignored: `End` stays the last
/// item, so a driver that delivers late data cannot add events after the call was settled.
#[test]
fn nothing_is_decoded_after_the_end_of_a_response() {
    for kind in [CallKind::SubscribeToTask, CallKind::GetTask] {
        let mut d = GrpcResponseDecoder::new(kind, limits());
        d.on_head(200, &pairs(&[("content-type", "application/grpc")]));
        let mut out = Vec::new();
        d.on_end(&mut out);
        let settled = out.clone();
        d.on_body(&stream_frame("late"), &mut out);
        d.on_body(&task_frame("late"), &mut out);
        d.on_trailers(&ok(), &mut out);
        d.on_end(&mut out);
        assert_eq!(out, settled, "{kind:?}");
        assert!(matches!(out.last(), Some(ResponseItem::End { events: 0 })));
    }
}

/// Body bytes after the trailers are ignored, and only the first trailers settle the call: the
/// status is final, so a stream cannot grow events after it.
#[test]
fn nothing_is_decoded_after_the_trailers() {
    let mut d = GrpcResponseDecoder::new(CallKind::SubscribeToTask, limits());
    d.on_head(200, &pairs(&[("content-type", "application/grpc")]));
    let mut out = Vec::new();
    d.on_body(&stream_frame("t1"), &mut out);
    d.on_trailers(&ok(), &mut out);
    d.on_body(&stream_frame("late"), &mut out);
    d.on_trailers(&pairs(&[("grpc-status", "14")]), &mut out);
    d.on_end(&mut out);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[1], ResponseItem::End { events: 1 });

    let mut d = GrpcResponseDecoder::new(CallKind::SendMessage, limits());
    d.on_head(200, &pairs(&[("content-type", "application/grpc")]));
    let mut out = Vec::new();
    let msg = SendMessageResponse::Message(Message::default()).encode_proto();
    d.on_body(&encode_frame(&msg).unwrap(), &mut out);
    d.on_trailers(&ok(), &mut out);
    d.on_trailers(&ok(), &mut out);
    d.on_end(&mut out);
    assert_eq!(out.len(), 2, "{out:?}");
}

/// The trailers of a response already classified as an HTTP error or a trailers-only status do
/// not settle it again: the head's verdict is the only one, reported once.
#[test]
fn trailers_do_not_resettle_a_response_the_head_settled() {
    for head in [
        (503u16, pairs(&[("content-type", "text/plain")])),
        (200, pairs(&[("grpc-status", "5")])),
        (200, pairs(&[("content-type", "text/html")])),
    ] {
        let mut d = GrpcResponseDecoder::new(CallKind::GetTask, limits());
        d.on_head(head.0, &head.1);
        let mut out = Vec::new();
        d.on_body(b"x", &mut out);
        d.on_trailers(&pairs(&[("grpc-status", "14")]), &mut out);
        d.on_end(&mut out);
        assert_eq!(out.len(), 2, "{head:?}: {out:?}");
    }
}

/// A response that ends inside a frame and without trailers reports both faults: the cut frame
/// tells an operator the connection broke mid-message, not merely that the status was missing.
#[test]
fn a_response_cut_inside_a_frame_without_trailers_reports_the_cut_frame() {
    let frame = task_frame("t1");
    let mut d = GrpcResponseDecoder::new(CallKind::GetTask, limits());
    d.on_head(200, &pairs(&[("content-type", "application/grpc")]));
    let mut out = Vec::new();
    d.on_body(&frame[..frame.len() - 1], &mut out);
    d.on_end(&mut out);
    assert_eq!(out.len(), 3, "{out:?}");
    assert!(
        matches!(&out[0], ResponseItem::Malformed(e) if e.message.contains("ended inside a frame")),
        "{out:?}"
    );
    assert!(
        matches!(&out[1], ResponseItem::Malformed(e) if e.message.contains("without trailers")),
        "{out:?}"
    );
    assert_eq!(out[2], ResponseItem::End { events: 0 });
}
